//! The binary trace format: a versioned, length-prefixed stream of records for the replay hot
//! path.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! file header, 16 bytes:  magic "LDPTRACE" | version u16 = 1 | header length u16 = 16 | reserved u32
//! record, 8-byte aligned:
//!   0  u32  record length in bytes, padding included (a multiple of 8)
//!   4  u16  DNS message length
//!   6  u8   transport (0 udp, 1 tcp, 2 tls, 3 https, 4 quic)
//!   7  u8   address family bits: 1 = source is IPv6, 2 = destination is IPv6
//!   8  i64  time, nanoseconds since the Unix epoch
//!  16  u64  connection number (0: none)
//!  24  [16] source address (IPv4 in the first 4 bytes)
//!  40  [16] destination address
//!  56  u16  source port
//!  58  u16  destination port
//!  60  u32  reserved (0)
//!  64  the DNS message, then zero padding to the record length
//! ```
//!
//! Records start on 8-byte boundaries so that a memory-mapped file can be read in place
//! ([`MappedTrace`]), and every record states its own length so that readers skip fields they do
//! not know, which is how later versions extend the format.

use crate::input::Position;
use crate::record::{Proto, Record};
use crate::sink::{drive, Sink, SinkError, Source, TraceError};
use crate::skip::SkipReason;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

/// The first eight bytes of every binary trace.
pub const MAGIC: &[u8; 8] = b"LDPTRACE";
/// The format version this crate writes.
pub const VERSION: u16 = 1;
const FILE_HEADER_LEN: usize = 16;
/// Length of the fixed part of a record.
pub const RECORD_HEADER_LEN: usize = 64;

fn file_header() -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..10].copy_from_slice(&VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&(FILE_HEADER_LEN as u16).to_le_bytes());
    h
}

/// Encodes the fixed part of a record.
fn encode_header(r: &Record<'_>, out: &mut [u8; RECORD_HEADER_LEN]) -> usize {
    let len = (RECORD_HEADER_LEN + r.wire.len()).next_multiple_of(8);
    out[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    out[4..6].copy_from_slice(&(r.wire.len() as u16).to_le_bytes());
    out[6] = r.proto as u8;
    let (src, src6) = addr_bytes(r.src.ip());
    let (dst, dst6) = addr_bytes(r.dst.ip());
    out[7] = src6 as u8 | (dst6 as u8) << 1;
    out[8..16].copy_from_slice(&r.time_ns.to_le_bytes());
    out[16..24].copy_from_slice(&r.conn.to_le_bytes());
    out[24..40].copy_from_slice(&src);
    out[40..56].copy_from_slice(&dst);
    out[56..58].copy_from_slice(&r.src.port().to_le_bytes());
    out[58..60].copy_from_slice(&r.dst.port().to_le_bytes());
    out[60..64].fill(0);
    len
}

fn addr_bytes(ip: IpAddr) -> ([u8; 16], bool) {
    match ip {
        IpAddr::V4(a) => {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&a.octets());
            (b, false)
        }
        IpAddr::V6(a) => (a.octets(), true),
    }
}

fn decode_addr(b: &[u8], v6: bool, port: u16) -> SocketAddr {
    let ip = if v6 {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        IpAddr::V6(Ipv6Addr::from(a))
    } else {
        IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
    };
    SocketAddr::new(ip, port)
}

/// Why bytes are not a binary record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BadRecord {
    /// The record length cannot hold the header and message (the stream is out of step).
    Length,
    /// An unknown transport code (the record is skipped).
    Proto,
}

/// Decodes one record from `buf`, which holds at least the whole record.
fn decode(buf: &[u8]) -> Result<Record<'_>, BadRecord> {
    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    let wire_len = u16::from_le_bytes([buf[4], buf[5]]) as usize;
    if RECORD_HEADER_LEN + wire_len > len || len > buf.len() {
        return Err(BadRecord::Length);
    }
    let proto = Proto::from_code(buf[6]).ok_or(BadRecord::Proto)?;
    let flags = buf[7];
    let num = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().unwrap_or([0; 8]));
    Ok(Record {
        time_ns: num(8) as i64,
        conn: num(16),
        src: decode_addr(
            &buf[24..40],
            flags & 1 != 0,
            u16::from_le_bytes([buf[56], buf[57]]),
        ),
        dst: decode_addr(
            &buf[40..56],
            flags & 2 != 0,
            u16::from_le_bytes([buf[58], buf[59]]),
        ),
        proto,
        wire: &buf[RECORD_HEADER_LEN..RECORD_HEADER_LEN + wire_len],
    })
}

/// The error for a file header cut short: `have` of its `len` bytes.
fn header_cut(have: usize, len: usize) -> TraceError {
    TraceError::Format(format!(
        "binary trace header is cut short: {have} of its {len} bytes"
    ))
}

/// Checks the file header at the start of `head` (the whole file, or at least its first
/// [`FILE_HEADER_LEN`] bytes when it has them); returns the header length to skip.
fn check_file_header(head: &[u8]) -> Result<usize, TraceError> {
    if !head.starts_with(MAGIC) {
        return Err(TraceError::Format(
            "not an ldplayer binary trace (bad magic)".into(),
        ));
    }
    if head.len() < FILE_HEADER_LEN {
        return Err(header_cut(head.len(), FILE_HEADER_LEN));
    }
    let version = u16::from_le_bytes([head[8], head[9]]);
    if version != VERSION {
        return Err(TraceError::Format(format!(
            "binary trace version {version} is not supported (this build reads version {VERSION})"
        )));
    }
    let len = u16::from_le_bytes([head[10], head[11]]) as usize;
    if len < FILE_HEADER_LEN {
        return Err(TraceError::Format("binary trace header too short".into()));
    }
    Ok(len)
}

/// True when `head` starts like a binary trace.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Writes records as a binary trace.
pub struct BinaryWriter<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> BinaryWriter<W> {
    /// Starts a trace on `out` (writes the file header). Give it a buffered writer.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&file_header())?;
        Ok(BinaryWriter { out, written: 0 })
    }

    /// Writes one record.
    pub fn write(&mut self, r: &Record<'_>) -> io::Result<()> {
        if r.wire.len() > u16::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "DNS message longer than 65535 bytes",
            ));
        }
        let mut header = [0u8; RECORD_HEADER_LEN];
        let len = encode_header(r, &mut header);
        self.out.write_all(&header)?;
        self.out.write_all(r.wire)?;
        let pad = len - RECORD_HEADER_LEN - r.wire.len();
        self.out.write_all(&[0u8; 8][..pad])?;
        self.written += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Sink for BinaryWriter<W> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        Ok(self.write(record)?)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(self.out.flush()?)
    }
}

/// Reads a binary trace from a stream (a file, a pipe, a decompressor).
///
/// A record cut short at the end of the stream (a writer that was killed) is counted as
/// [`SkipReason::TruncatedFile`] and ends the trace without error; so does a compressed stream
/// cut short or corrupt ([`crate::input::cut_reason`]), counted once, with its own reason.
pub struct BinaryReader<R: Read> {
    input: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where `buf[0]` is in the input.
    base: u64,
    eof: bool,
    /// Why the stream ended early, until it is reported.
    cut: Option<SkipReason>,
    position: Position,
}

impl<R: Read> BinaryReader<R> {
    /// Reads and checks the file header.
    pub fn new(input: R) -> Result<Self, TraceError> {
        let mut r = BinaryReader {
            input,
            buf: vec![0u8; 1 << 20],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            cut: None,
            position: Position::default(),
        };
        r.fill(FILE_HEADER_LEN)?;
        let skip = check_file_header(&r.buf[r.start..r.end])?;
        r.fill(skip)?;
        if r.end - r.start < skip {
            return Err(header_cut(r.end - r.start, skip));
        }
        r.start += skip;
        r.position.set(r.offset());
        Ok(r)
    }

    /// Where the reader is: the end of the last record it took, as it reads.
    pub fn position(&self) -> Position {
        self.position.clone()
    }

    /// The offset in the input of the next byte to read.
    fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Makes at least `want` bytes available from `start`, unless the stream ends first.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        if self.end - self.start >= want || self.eof {
            return Ok(());
        }
        if self.start + want > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.base += self.start as u64;
            self.start = 0;
            if want > self.buf.len() {
                self.buf.resize(want.next_power_of_two(), 0);
            }
        }
        while self.end - self.start < want {
            let n = match self.input.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) => match crate::input::cut_reason(&e) {
                    Some(reason) => {
                        self.cut = Some(reason);
                        0
                    }
                    None => return Err(e),
                },
            };
            if n == 0 {
                self.eof = true;
                break;
            }
            self.end += n;
        }
        Ok(())
    }

    /// The next record, `Ok(None)` at the end of the trace, or the reason the next record was
    /// skipped (the caller goes on reading).
    pub fn next_record(&mut self) -> Result<Option<Result<Record<'_>, SkipReason>>, TraceError> {
        self.fill(RECORD_HEADER_LEN)?;
        let avail = self.end - self.start;
        if avail == 0 {
            return Ok(self.cut.take().map(Err));
        }
        if avail < RECORD_HEADER_LEN {
            self.start = self.end;
            return Ok(Some(Err(self
                .cut
                .take()
                .unwrap_or(SkipReason::TruncatedFile))));
        }
        let b = &self.buf[self.start..];
        let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if len < RECORD_HEADER_LEN
            || !len.is_multiple_of(8)
            || len > RECORD_HEADER_LEN + u16::MAX as usize + 8
        {
            return Err(TraceError::Format(format!(
                "binary trace damaged at byte {}: record length {len} is impossible",
                self.offset()
            )));
        }
        self.fill(len)?;
        if self.end - self.start < len {
            self.start = self.end;
            return Ok(Some(Err(self
                .cut
                .take()
                .unwrap_or(SkipReason::TruncatedFile))));
        }
        let at = self.start;
        let offset = self.offset();
        self.start += len;
        self.position.set(self.offset());
        match decode(&self.buf[at..at + len]) {
            Ok(r) => Ok(Some(Ok(r))),
            Err(BadRecord::Proto) => Ok(Some(Err(SkipReason::BinaryRecord))),
            Err(BadRecord::Length) => Err(TraceError::Format(format!(
                "binary trace damaged at byte {offset}: message longer than its record"
            ))),
        }
    }
}

impl<R: Read> Source for BinaryReader<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        drive(sink, |sink| {
            let mut n = 0u64;
            while let Some(item) = self.next_record()? {
                n += 1;
                match item {
                    Ok(r) => sink.record(&r)?,
                    Err(reason) => sink.skipped(reason, n),
                }
            }
            Ok(())
        })
    }
}

/// A binary trace read in place from a memory map: no copies, records borrowed from the file.
pub struct MappedTrace {
    map: memmap2::Mmap,
    data_start: usize,
}

impl MappedTrace {
    /// Maps `path` and checks its header.
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        let file = std::fs::File::open(path)?;
        // SAFETY: the map is read-only; a file truncated by another process while mapped would
        // fault, which is the documented risk of memory maps that callers accept by choosing them.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let data_start = check_file_header(&map)?;
        if data_start > map.len() {
            return Err(header_cut(map.len(), data_start));
        }
        Ok(MappedTrace { map, data_start })
    }

    /// Iterates over the records: `Err` items are skipped records; a damaged length ends the
    /// iteration with one last `Err(TruncatedFile)` or `Err(BinaryRecord)` ([`Source::run`]
    /// ends with an error naming the damage and where it is instead).
    pub fn records(&self) -> impl Iterator<Item = Result<Record<'_>, SkipReason>> + '_ {
        let mut pos = self.data_start;
        let data: &[u8] = &self.map;
        std::iter::from_fn(move || {
            mapped_record(data, &mut pos).map(|item| {
                item.map_err(|fault| match fault {
                    Fault::Skip(reason) => reason,
                    Fault::Damaged(_) => SkipReason::BinaryRecord,
                })
            })
        })
    }
}

/// Why a mapped record is not read.
enum Fault {
    /// It is skipped for this reason (the last one, when the file ends in it).
    Skip(SkipReason),
    /// Its length is impossible: the rest of the file cannot be found.
    Damaged(String),
}

/// The record at `*pos` of a mapped trace, `pos` moved past it (to the end after damage).
fn mapped_record<'a>(data: &'a [u8], pos: &mut usize) -> Option<Result<Record<'a>, Fault>> {
    if *pos >= data.len() {
        return None;
    }
    let at = *pos;
    let rest = &data[at..];
    if rest.len() < RECORD_HEADER_LEN {
        *pos = data.len();
        return Some(Err(Fault::Skip(SkipReason::TruncatedFile)));
    }
    let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
    if len < RECORD_HEADER_LEN || !len.is_multiple_of(8) {
        *pos = data.len();
        return Some(Err(Fault::Damaged(format!(
            "binary trace damaged at byte {at}: record length {len} is impossible"
        ))));
    }
    if len > rest.len() {
        *pos = data.len();
        return Some(Err(Fault::Skip(SkipReason::TruncatedFile)));
    }
    *pos += len;
    Some(match decode(&rest[..len]) {
        Ok(r) => Ok(r),
        Err(BadRecord::Proto) => Err(Fault::Skip(SkipReason::BinaryRecord)),
        Err(BadRecord::Length) => Err(Fault::Damaged(format!(
            "binary trace damaged at byte {at}: message longer than its record"
        ))),
    })
}

impl Source for MappedTrace {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let data: &[u8] = &self.map;
        let mut pos = self.data_start;
        drive(sink, |sink| {
            let mut n = 0u64;
            while let Some(item) = mapped_record(data, &mut pos) {
                n += 1;
                match item {
                    Ok(r) => sink.record(&r)?,
                    Err(Fault::Skip(reason)) => sink.skipped(reason, n),
                    Err(Fault::Damaged(what)) => return Err(TraceError::Format(what)),
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::Collect;
    use proptest::prelude::*;

    fn record_strategy() -> impl Strategy<Value = crate::RecordBuf> {
        (
            any::<i64>(),
            any::<SocketAddr>(),
            any::<SocketAddr>(),
            0u8..5,
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..600),
        )
            .prop_map(|(time_ns, src, dst, proto, conn, wire)| crate::RecordBuf {
                time_ns,
                src: SocketAddr::new(src.ip(), src.port()),
                dst: SocketAddr::new(dst.ip(), dst.port()),
                proto: Proto::from_code(proto).unwrap_or(Proto::Udp),
                conn,
                wire,
            })
    }

    fn plain(addr: SocketAddr) -> SocketAddr {
        // Flow info and scope id are not part of the format.
        SocketAddr::new(addr.ip(), addr.port())
    }

    proptest! {
        #[test]
        fn stream_and_map_round_trip(records in prop::collection::vec(record_strategy(), 0..40)) {
            let mut w = BinaryWriter::new(Vec::new()).unwrap();
            for r in &records {
                w.write(&r.as_record()).unwrap();
            }
            let bytes = w.into_inner().unwrap();
            let mut got = Collect::default();
            BinaryReader::new(&bytes[..]).unwrap().run(&mut got).unwrap();
            let want: Vec<_> = records.iter().map(|r| crate::RecordBuf { src: plain(r.src), dst: plain(r.dst), ..r.clone() }).collect();
            prop_assert_eq!(&got.records, &want);
            prop_assert_eq!(got.skipped.total(), 0);

            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), &bytes).unwrap();
            let mut mapped = Collect::default();
            MappedTrace::open(file.path()).unwrap().run(&mut mapped).unwrap();
            prop_assert_eq!(&mapped.records, &want);
        }

        #[test]
        fn cut_streams_keep_every_whole_record(records in prop::collection::vec(record_strategy(), 1..10), cut in any::<prop::sample::Index>()) {
            let mut w = BinaryWriter::new(Vec::new()).unwrap();
            let mut ends = vec![];
            for r in &records {
                w.write(&r.as_record()).unwrap();
                ends.push(w.out.len());
            }
            let bytes = w.into_inner().unwrap();
            let cut = FILE_HEADER_LEN + cut.index(bytes.len() - FILE_HEADER_LEN);
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            let mut got = Collect::default();
            BinaryReader::new(&bytes[..cut]).unwrap().run(&mut got).unwrap();
            prop_assert_eq!(got.records.len(), whole);
            prop_assert_eq!(got.skipped.get(SkipReason::TruncatedFile), u64::from(cut != FILE_HEADER_LEN && !ends.contains(&cut)));
        }
    }

    #[test]
    fn a_cut_header_is_told_from_other_files() {
        let mut header = file_header().to_vec();
        header[10..12].copy_from_slice(&24u16.to_le_bytes());
        for (bytes, want) in [
            (
                &header[..12],
                "binary trace header is cut short: 12 of its 16 bytes",
            ),
            (
                &header[..],
                "binary trace header is cut short: 16 of its 24 bytes",
            ),
            (&b"LDPTRAC"[..], "not an ldplayer binary trace (bad magic)"),
        ] {
            let e = BinaryReader::new(bytes).err().expect("refused");
            assert_eq!(e.to_string(), want);
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), bytes).unwrap();
            let e = MappedTrace::open(file.path()).err().expect("refused");
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn damage_is_named_with_its_offset_by_both_readers() {
        let mut w = BinaryWriter::new(Vec::new()).unwrap();
        let r = crate::RecordBuf {
            time_ns: 1,
            src: "10.0.0.1:1".parse().unwrap(),
            dst: "10.0.0.2:53".parse().unwrap(),
            proto: Proto::Udp,
            conn: 0,
            wire: vec![0; 12],
        };
        for _ in 0..3 {
            w.write(&r.as_record()).unwrap();
        }
        let mut bytes = w.into_inner().unwrap();
        // The third record (at 16 + 2 * 80) says it is 12 bytes long.
        bytes[176..180].copy_from_slice(&12u32.to_le_bytes());
        let want = "binary trace damaged at byte 176: record length 12 is impossible";
        let mut got = Collect::default();
        let e = BinaryReader::new(&bytes[..])
            .unwrap()
            .run(&mut got)
            .unwrap_err();
        assert_eq!((e.to_string().as_str(), got.records.len()), (want, 2));
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        let mut got = Collect::default();
        let e = MappedTrace::open(file.path())
            .unwrap()
            .run(&mut got)
            .unwrap_err();
        assert_eq!((e.to_string().as_str(), got.records.len()), (want, 2));
    }

    #[test]
    fn rejects_other_files() {
        assert!(matches!(
            BinaryReader::new(&b"hello world, this is text"[..]),
            Err(TraceError::Format(_))
        ));
        assert!(matches!(
            BinaryReader::new(&b""[..]),
            Err(TraceError::Format(_))
        ));
    }
}
