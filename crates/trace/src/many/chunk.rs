//! One file's share of a joined read: what its reader told its sink (records, skips, notes on
//! malformed messages, the parts of the capture left to the joiner), kept in order in chunks of
//! about [`CHUNK_BYTES`], for the merge in time order.
//!
//! An event is 24 bytes; what records and deferred parts carry (addresses, the message) goes
//! into the chunk's byte arena, so that a UDP packet costs about a hundred bytes besides its
//! message. Chunks go back to a pool once merged: fresh memory costs page faults.

use crate::capture::{Deferred, FragmentHeader};
use crate::record::{Proto, Record};
use crate::sink::{Sink, SinkError};
use crate::skip::SkipReason;
use ldplayer_dns::DnsError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};

/// About how many bytes of events a chunk holds before it is handed over.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// What a reader told its sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A packet begins (captures read in split mode): a group of its own.
    Packet { time_ns: i64, number: u64 },
    /// A record, its fields and message in the arena at `at`; `leads` when it begins a group
    /// (a trace's record, where no packets are told).
    Record { at: u32, leads: bool },
    /// An item skipped.
    Skipped(SkipReason, u64),
    /// The last record holds a malformed message.
    Malformed(DnsError, u64),
    /// A TCP segment or an IP fragment left to the joiner, in the arena at `at`.
    Deferred { at: u32 },
}

/// Events in order, and the bytes they carry.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    pub(super) events: Vec<Event>,
    bytes: Vec<u8>,
}

/// The time of the group an event begins, if it begins one.
pub(super) fn leads(chunk: &Chunk, event: &Event) -> Option<i64> {
    match *event {
        Event::Packet { time_ns, .. } => Some(time_ns),
        Event::Record { at, leads: true } => Some(chunk.i64_at(at as usize)),
        _ => None,
    }
}

impl Chunk {
    /// An empty chunk with room for [`CHUNK_BYTES`].
    fn with_capacity() -> Chunk {
        Chunk {
            events: Vec::with_capacity(CHUNK_BYTES / 3 / std::mem::size_of::<Event>()),
            bytes: Vec::with_capacity(CHUNK_BYTES * 2 / 3 + 128 * 1024),
        }
    }

    fn cost(&self) -> usize {
        self.events.len() * std::mem::size_of::<Event>() + self.bytes.len()
    }

    fn i64_at(&self, at: usize) -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[at..at + 8]);
        i64::from_le_bytes(b)
    }

    /// The record at `at` of the arena.
    pub(super) fn record(&self, at: u32) -> Record<'_> {
        let mut r = Reader {
            bytes: &self.bytes,
            at: at as usize,
        };
        let time_ns = r.i64();
        let conn = r.i64() as u64;
        let proto = Proto::from_code(r.u8()).unwrap_or(Proto::Udp);
        let src = r.socket();
        let dst = r.socket();
        Record {
            time_ns,
            src,
            dst,
            proto,
            conn,
            wire: r.prefixed(),
        }
    }

    /// The deferred part at `at` of the arena.
    pub(super) fn deferred(&self, at: u32) -> Deferred<'_> {
        let mut r = Reader {
            bytes: &self.bytes,
            at: at as usize,
        };
        match r.u8() {
            0 => {
                let src = r.socket();
                let dst = r.socket();
                Deferred::Segment {
                    src,
                    dst,
                    segment: r.prefixed(),
                }
            }
            _ => {
                let header = FragmentHeader {
                    src: r.ip(),
                    dst: r.ip(),
                    id: r.u32(),
                    proto: r.u8(),
                    offset: r.u32() as usize,
                    more: r.u8() != 0,
                };
                let depth = r.u8();
                Deferred::Fragment {
                    header,
                    depth,
                    payload: r.prefixed(),
                }
            }
        }
    }

    fn put_record(&mut self, r: &Record<'_>) -> u32 {
        let at = self.bytes.len() as u32;
        let b = &mut self.bytes;
        b.extend_from_slice(&r.time_ns.to_le_bytes());
        b.extend_from_slice(&r.conn.to_le_bytes());
        b.push(r.proto as u8);
        put_socket(b, r.src);
        put_socket(b, r.dst);
        put_prefixed(b, r.wire);
        at
    }

    fn put_deferred(&mut self, part: &Deferred<'_>) -> u32 {
        let at = self.bytes.len() as u32;
        let b = &mut self.bytes;
        match *part {
            Deferred::Packet { .. } => {}
            Deferred::Segment { src, dst, segment } => {
                b.push(0);
                put_socket(b, src);
                put_socket(b, dst);
                put_prefixed(b, segment);
            }
            Deferred::Fragment {
                header,
                depth,
                payload,
            } => {
                b.push(1);
                put_ip(b, header.src);
                put_ip(b, header.dst);
                b.extend_from_slice(&header.id.to_le_bytes());
                b.push(header.proto);
                b.extend_from_slice(&(header.offset as u32).to_le_bytes());
                b.push(u8::from(header.more));
                b.push(depth);
                put_prefixed(b, payload);
            }
        }
        at
    }
}

fn put_ip(b: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            b.push(4);
            b.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            b.push(6);
            b.extend_from_slice(&a.octets());
        }
    }
}

fn put_socket(b: &mut Vec<u8>, s: SocketAddr) {
    put_ip(b, s.ip());
    b.extend_from_slice(&s.port().to_le_bytes());
}

/// `bytes` after their length (a `u32`), as [`Reader::prefixed`] reads them back.
fn put_prefixed(b: &mut Vec<u8>, bytes: &[u8]) {
    b.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    b.extend_from_slice(bytes);
}

/// Reads back what a chunk's arena holds (written by this module: always well formed).
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        s
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4));
        u32::from_le_bytes(b)
    }
    /// Bytes written by [`put_prefixed`]: their length, then them.
    fn prefixed(&mut self) -> &'a [u8] {
        let len = self.u32() as usize;
        self.take(len)
    }
    fn i64(&mut self) -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8));
        i64::from_le_bytes(b)
    }
    fn ip(&mut self) -> IpAddr {
        if self.u8() == 4 {
            let mut a = [0u8; 4];
            a.copy_from_slice(self.take(4));
            IpAddr::V4(Ipv4Addr::from(a))
        } else {
            let mut a = [0u8; 16];
            a.copy_from_slice(self.take(16));
            IpAddr::V6(Ipv6Addr::from(a))
        }
    }
    fn socket(&mut self) -> SocketAddr {
        let ip = self.ip();
        let mut p = [0u8; 2];
        p.copy_from_slice(self.take(2));
        SocketAddr::new(ip, u16::from_le_bytes(p))
    }
}

/// Chunks merged, for the readers to fill again.
#[derive(Debug, Clone, Default)]
pub(super) struct Pool(Arc<Mutex<Vec<Chunk>>>);

/// Most chunks kept for reuse (64 MiB).
const POOL_CHUNKS: usize = 64;

impl Pool {
    fn take(&self) -> Chunk {
        let reused = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_else(Chunk::with_capacity)
    }

    /// Keeps `chunk` (emptied) for another reader.
    pub(super) fn give(&self, mut chunk: Chunk) {
        if chunk.events.capacity() == 0 {
            return;
        }
        chunk.events.clear();
        chunk.bytes.clear();
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_CHUNKS {
            pool.push(chunk);
        }
    }
}

/// What the joiner gets from a file's reader.
pub(super) enum Message {
    /// The next chunk of its events.
    Chunk(Chunk),
    /// The reader is done: how it ended, and what its times were.
    End(Result<(), crate::TraceError>, Span),
}

/// The times of a file's groups: its first and last, and the longest pause between two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Span {
    /// The first group's time (ns since the Unix epoch), if any.
    pub first_ns: Option<i64>,
    /// The latest group's time.
    pub last_ns: Option<i64>,
    /// The longest pause between a group and the latest one before it, ns.
    pub max_pause_ns: i64,
}

impl Span {
    fn add(&mut self, time_ns: i64) {
        if let Some(last) = self.last_ns {
            self.max_pause_ns = self.max_pause_ns.max(time_ns.saturating_sub(last));
        }
        self.first_ns.get_or_insert(time_ns);
        self.last_ns = Some(self.last_ns.map_or(time_ns, |l| l.max(time_ns)));
    }
}

/// The sink a file's reader runs into: events in chunks, handed to the joiner as they fill
/// (blocking while the joiner's channel for this file is full).
pub(super) struct ChunkSink {
    tx: SyncSender<Message>,
    pool: Pool,
    chunk: Chunk,
    /// A packet was seen: the file is a capture in split mode, whose groups are packets.
    packets: bool,
    pub(super) span: Span,
}

impl ChunkSink {
    pub(super) fn new(tx: SyncSender<Message>, pool: Pool) -> Self {
        ChunkSink {
            chunk: pool.take(),
            tx,
            pool,
            packets: false,
            span: Span::default(),
        }
    }

    /// Notes a group beginning at `time_ns`, handing the chunk over first when it is full.
    fn group(&mut self, time_ns: i64) -> Result<(), SinkError> {
        if self.chunk.cost() >= CHUNK_BYTES {
            self.send()?;
        }
        self.span.add(time_ns);
        Ok(())
    }

    fn send(&mut self) -> Result<(), SinkError> {
        if self.chunk.events.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.chunk, self.pool.take());
        self.tx
            .send(Message::Chunk(chunk))
            .map_err(|_| SinkError::Stopped)
    }
}

impl Sink for ChunkSink {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        let leads = !self.packets;
        if leads {
            self.group(r.time_ns)?;
        }
        let at = self.chunk.put_record(r);
        self.chunk.events.push(Event::Record { at, leads });
        Ok(())
    }

    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.chunk.events.push(Event::Skipped(reason, location));
    }

    fn malformed(&mut self, error: DnsError, location: u64) {
        self.chunk.events.push(Event::Malformed(error, location));
    }

    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        if let Deferred::Packet { time_ns, number } = part {
            self.packets = true;
            self.group(time_ns)?;
            self.chunk.events.push(Event::Packet { time_ns, number });
        } else {
            let at = self.chunk.put_deferred(&part);
            self.chunk.events.push(Event::Deferred { at });
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::new(IpAddr::from([192, 0, 2, last]), 53)
    }

    fn chunks(rx: &std::sync::mpsc::Receiver<Message>) -> Vec<Chunk> {
        rx.try_iter()
            .filter_map(|m| match m {
                Message::Chunk(c) => Some(c),
                Message::End(..) => None,
            })
            .collect()
    }

    /// A UDP record from 192.0.2.1 to 192.0.2.2 at `time_ns`.
    fn udp(time_ns: i64, wire: &[u8]) -> Record<'_> {
        Record {
            time_ns,
            src: addr(1),
            dst: addr(2),
            proto: Proto::Udp,
            conn: 0,
            wire,
        }
    }

    /// The times of the chunk's events that lead the merge, in order.
    fn leaders(chunk: &Chunk) -> Vec<i64> {
        chunk
            .events
            .iter()
            .filter_map(|e| leads(chunk, e))
            .collect()
    }

    #[test]
    fn events_are_small_and_their_fields_come_back() {
        assert!(std::mem::size_of::<Event>() <= 24);
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut sink = ChunkSink::new(tx, Pool::default());
        sink.skipped(SkipReason::BadBlock, 1);
        let wire = [7u8; 12];
        let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 5300);
        let record = |t| Record {
            time_ns: t,
            src: addr(1),
            dst: v6,
            proto: Proto::Tcp,
            conn: 9,
            wire: &wire,
        };
        sink.record(&record(10)).unwrap();
        sink.malformed(DnsError::Truncated, 2);
        sink.record(&record(5)).unwrap();
        sink.finish().unwrap();
        let chunk = chunks(&rx).pop().expect("a chunk");
        let leaders = leaders(&chunk);
        assert_eq!(leaders, [10, 5]);
        let Event::Record { at, .. } = chunk.events[1] else {
            panic!("a record")
        };
        assert_eq!(chunk.record(at), record(10));
        assert_eq!(chunk.events[2], Event::Malformed(DnsError::Truncated, 2));
        assert_eq!(
            (sink.span.first_ns, sink.span.last_ns),
            (Some(10), Some(10))
        );
    }

    #[test]
    fn packets_lead_their_records_and_deferred_parts() {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut sink = ChunkSink::new(tx, Pool::default());
        let wire = [1u8; 20];
        sink.deferred(Deferred::Packet {
            time_ns: 1_000,
            number: 1,
        })
        .unwrap();
        sink.record(&udp(1_000, &wire)).unwrap();
        sink.deferred(Deferred::Packet {
            time_ns: 4_000,
            number: 2,
        })
        .unwrap();
        let segment = Deferred::Segment {
            src: addr(1),
            dst: addr(2),
            segment: &[1, 2, 3],
        };
        let fragment = Deferred::Fragment {
            header: FragmentHeader {
                src: IpAddr::V6(Ipv6Addr::LOCALHOST),
                dst: addr(3).ip(),
                id: 77,
                proto: 17,
                offset: 1480,
                more: true,
            },
            depth: 1,
            payload: &[9; 5],
        };
        sink.deferred(segment).unwrap();
        sink.deferred(fragment).unwrap();
        sink.finish().unwrap();
        let chunk = chunks(&rx).pop().expect("a chunk");
        let leaders = leaders(&chunk);
        assert_eq!(leaders, [1_000, 4_000]);
        let parts: Vec<Deferred<'_>> = chunk
            .events
            .iter()
            .filter_map(|e| match *e {
                Event::Deferred { at } => Some(chunk.deferred(at)),
                _ => None,
            })
            .collect();
        assert_eq!(parts, [segment, fragment]);
        assert_eq!(sink.span.max_pause_ns, 3_000);
    }

    #[test]
    fn a_full_chunk_is_handed_over_at_a_group_and_memory_is_reused() {
        let (tx, rx) = std::sync::mpsc::sync_channel(64);
        let pool = Pool::default();
        let mut sink = ChunkSink::new(tx, pool.clone());
        let wire = vec![0u8; 1000];
        for t in 0..3_000 {
            sink.record(&udp(t, &wire)).unwrap();
        }
        sink.finish().unwrap();
        let chunks = chunks(&rx);
        assert!(chunks.len() >= 3, "{}", chunks.len());
        for c in chunks {
            assert!(leads(&c, &c.events[0]).is_some());
            pool.give(c);
        }
        assert!(pool.0.lock().unwrap().len() >= 3);
    }
}
