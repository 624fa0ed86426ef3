//! One file's share of a joined read: what its reader told its sink (records, skips, notes on
//! malformed messages, the parts of the capture left to the joiner), kept in order in chunks of
//! about [`CHUNK_BYTES`], grouped by packet for the merge in time order.

use crate::capture::Deferred;
use crate::record::{Proto, Record};
use crate::sink::{Sink, SinkError};
use crate::skip::SkipReason;
use ldplayer_dns::DnsError;
use std::net::SocketAddr;
use std::sync::mpsc::SyncSender;

/// About how many bytes of events a chunk holds before it is handed over.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// What a reader told its sink.
#[derive(Debug, Clone, Copy)]
pub(super) enum Event {
    /// A record; its message is `bytes[at..at + len]` of the chunk.
    Record {
        time_ns: i64,
        src: SocketAddr,
        dst: SocketAddr,
        proto: Proto,
        conn: u64,
        at: u32,
        len: u32,
    },
    /// An item skipped.
    Skipped(SkipReason, u64),
    /// The last record holds a malformed message.
    Malformed(DnsError, u64),
    /// A part of a capture left to the joiner; its bytes are `bytes[at..at + len]`.
    Deferred {
        part: Deferred<'static>,
        at: u32,
        len: u32,
    },
}

/// Events in order, with where each group (a packet, or a record of a trace) begins.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    pub(super) events: Vec<Event>,
    pub(super) bytes: Vec<u8>,
    /// Each group's time and its first event; events before the first group form a group of
    /// their own at `i64::MIN` (skips told before any packet).
    pub(super) groups: Vec<(i64, usize)>,
}

impl Chunk {
    /// Its size in memory, roughly.
    fn cost(&self) -> usize {
        self.events.len() * std::mem::size_of::<Event>() + self.bytes.len() + self.groups.len() * 16
    }

    /// The events of group `g`.
    pub(super) fn group(&self, g: usize) -> &[Event] {
        let start = self.groups[g].1;
        let end = self.groups.get(g + 1).map_or(self.events.len(), |n| n.1);
        &self.events[start..end]
    }

    /// The bytes an event refers to.
    pub(super) fn bytes(&self, at: u32, len: u32) -> &[u8] {
        &self.bytes[at as usize..at as usize + len as usize]
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> (u32, u32) {
        let at = self.bytes.len() as u32;
        self.bytes.extend_from_slice(bytes);
        (at, bytes.len() as u32)
    }
}

/// What the joiner gets from a file's reader.
pub(super) enum Message {
    /// The next chunk of its events.
    Chunk(Chunk),
    /// The reader is done: how it ended (a [`crate::TraceError`] in words, for the note; the
    /// error itself), and what its times were.
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
    chunk: Chunk,
    /// A packet was seen: the file is a capture in split mode, whose groups are packets.
    packets: bool,
    pub(super) span: Span,
}

impl ChunkSink {
    pub(super) fn new(tx: SyncSender<Message>) -> Self {
        ChunkSink {
            tx,
            chunk: Chunk::default(),
            packets: false,
            span: Span::default(),
        }
    }

    /// Starts a group at `time_ns`, handing the chunk over first when it is full.
    fn group(&mut self, time_ns: i64) -> Result<(), SinkError> {
        if self.chunk.cost() >= CHUNK_BYTES {
            self.send()?;
        }
        self.span.add(time_ns);
        self.chunk.groups.push((time_ns, self.chunk.events.len()));
        Ok(())
    }

    /// Makes sure the events that follow belong to a group.
    fn in_group(&mut self) {
        if self.chunk.groups.is_empty() {
            self.chunk.groups.push((i64::MIN, self.chunk.events.len()));
        }
    }

    fn send(&mut self) -> Result<(), SinkError> {
        if self.chunk.events.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.chunk);
        self.tx
            .send(Message::Chunk(chunk))
            .map_err(|_| SinkError::Stopped)
    }
}

impl Sink for ChunkSink {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        if !self.packets {
            self.group(r.time_ns)?;
        }
        self.in_group();
        let (at, len) = self.chunk.push_bytes(r.wire);
        self.chunk.events.push(Event::Record {
            time_ns: r.time_ns,
            src: r.src,
            dst: r.dst,
            proto: r.proto,
            conn: r.conn,
            at,
            len,
        });
        Ok(())
    }

    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.in_group();
        self.chunk.events.push(Event::Skipped(reason, location));
    }

    fn malformed(&mut self, error: DnsError, location: u64) {
        self.in_group();
        self.chunk.events.push(Event::Malformed(error, location));
    }

    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        if let Deferred::Packet { time_ns, .. } = part {
            self.packets = true;
            self.group(time_ns)?;
        }
        self.in_group();
        let (at, len) = self.chunk.push_bytes(part.bytes());
        self.chunk.events.push(Event::Deferred {
            part: part.with_bytes(&[]),
            at,
            len,
        });
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.send()
    }
}

/// The address of an IP, for tests of the chunk layout.
#[cfg(test)]
pub(super) fn addr(last: u8) -> SocketAddr {
    SocketAddr::new(std::net::IpAddr::from([192, 0, 2, last]), 53)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_a_trace_are_groups_and_packets_group_what_follows() {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut sink = ChunkSink::new(tx);
        sink.skipped(SkipReason::BadBlock, 1);
        let wire = [0u8; 12];
        let record = |t| Record {
            time_ns: t,
            src: addr(1),
            dst: addr(2),
            proto: Proto::Udp,
            conn: 0,
            wire: &wire,
        };
        sink.record(&record(10)).unwrap();
        sink.record(&record(5)).unwrap();
        sink.finish().unwrap();
        let Message::Chunk(chunk) = rx.recv().unwrap() else {
            panic!("a chunk")
        };
        let keys: Vec<i64> = chunk.groups.iter().map(|g| g.0).collect();
        assert_eq!(keys, [i64::MIN, 10, 5]);
        assert_eq!(chunk.group(0).len(), 1);
        assert_eq!(sink.span.first_ns, Some(10));
        assert_eq!(sink.span.last_ns, Some(10));

        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut sink = ChunkSink::new(tx);
        sink.deferred(Deferred::Packet {
            time_ns: 1_000,
            number: 1,
        })
        .unwrap();
        sink.record(&record(1_000)).unwrap();
        sink.deferred(Deferred::Packet {
            time_ns: 4_000,
            number: 2,
        })
        .unwrap();
        sink.deferred(Deferred::Segment {
            src: addr(1),
            dst: addr(2),
            segment: &[1, 2, 3],
        })
        .unwrap();
        sink.finish().unwrap();
        let Message::Chunk(chunk) = rx.recv().unwrap() else {
            panic!("a chunk")
        };
        let keys: Vec<i64> = chunk.groups.iter().map(|g| g.0).collect();
        assert_eq!(keys, [1_000, 4_000]);
        assert_eq!(chunk.group(0).len(), 2);
        let Event::Deferred { at, len, .. } = chunk.group(1)[1] else {
            panic!("a segment")
        };
        assert_eq!(chunk.bytes(at, len), &[1, 2, 3]);
        assert_eq!(sink.span.max_pause_ns, 3_000);
    }
}
