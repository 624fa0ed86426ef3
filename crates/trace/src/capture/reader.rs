//! Reading pcap and pcapng files block by block.

use super::decoder::PacketDecoder;
use super::options::CaptureOptions;
use super::ports::PortCensus;
use crate::input::{self, Position};
use crate::{drive, Sink, SkipReason, Source, TraceError};
use pcap_parser::pcapng::Block;
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use std::cell::RefCell;
use std::io::{self, Cursor, Read};
use std::rc::Rc;

/// Initial size of the block buffer.
const BUFFER_SIZE: usize = 1 << 20;
/// Largest block accepted; a larger length field is taken as corruption.
const MAX_BLOCK: usize = 64 << 20;
/// How much of the input is read at first to recognize the format.
const PREFIX: usize = 64 * 1024;

const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
const PCAP_MAGICS: [u32; 5] = [
    0xA1B2_C3D4,
    0xA1B2_3C4D,
    0xD4C3_B2A1,
    0x4D3C_B2A1,
    0xA1B2_CD34,
];

/// Reads DNS messages from a pcap or pcapng capture.
///
/// The format is recognized from the first bytes (pcap in either byte order, with microsecond
/// or nanosecond timestamps; pcapng with any number of sections and interfaces, each with its own
/// link type and timestamp resolution). Packets go through a [`PacketDecoder`]; see
/// [`CaptureOptions`] for what is kept and the memory bounds.
///
/// Anything that cannot be used is skipped and reported to the sink with a [`SkipReason`]; a
/// capture cut in the middle of its last block keeps what was read and reports
/// [`SkipReason::TruncatedFile`]. Only input that is not a capture at all, a read error, or a
/// block damaged so that the rest of the file cannot be found is an error, which names the
/// byte where the damaged block starts; the records read before it are all passed on (also
/// those TCP reassembly still held).
pub struct CaptureReader<R: Read> {
    opened: Option<Opened<R>>,
    options: CaptureOptions,
    census: PortCensus,
    position: Position,
    /// Decode in split mode ([`PacketDecoder::split`]).
    split: bool,
}

/// An input whose format is known, with the bytes read to recognize it.
struct Opened<R> {
    prefix: Vec<u8>,
    input: R,
    ng: bool,
    /// Initial block buffer size.
    capacity: usize,
}

impl<R: Read> CaptureReader<R> {
    /// A reader of `input` (any byte stream: a file, a decompressor, a slice) with `options`.
    ///
    /// Reads the first bytes to recognize the format: input that is not a pcap or pcapng
    /// capture is a [`TraceError::Format`] here already.
    pub fn new(input: R, options: CaptureOptions) -> Result<Self, TraceError> {
        Ok(CaptureReader {
            opened: Some(open(input)?),
            options,
            census: PortCensus::default(),
            position: Position::default(),
            split: false,
        })
    }

    /// The reader in split mode: TCP segments and IP fragments go to the sink undecoded, for
    /// a decoder that holds the state of several files (see [`PacketDecoder::split`]).
    pub fn split(mut self) -> Self {
        self.split = true;
        self
    }

    /// Where the reader is: the end of the last block it took, as it reads.
    pub fn position(&self) -> Position {
        self.position.clone()
    }

    /// The UDP and TCP ports of the packets read (complete once [`Source::run`] returned): when
    /// none was on the DNS ports, [`PortCensus::busiest`] says where the traffic was.
    pub fn census(&self) -> &PortCensus {
        &self.census
    }
}

impl<R: Read> Source for CaptureReader<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let opened = self.opened.take();
        let options = &self.options;
        let census = &mut self.census;
        let position = &self.position;
        let split = self.split;
        drive(sink, |sink| match opened {
            Some(opened) => read_opened(opened, options, split, sink, census, position),
            None => Err(TraceError::Format("the capture was already read".into())),
        })
    }
}

/// Decodes a whole capture held in memory; the entry point for fuzzing. Like
/// [`CaptureReader::run`], it calls the sink's `finish` at the end.
pub fn read_capture_bytes(
    data: &[u8],
    options: &CaptureOptions,
    sink: &mut dyn Sink,
) -> Result<(), TraceError> {
    drive(sink, |sink| {
        read_opened(
            open(data)?,
            options,
            false,
            sink,
            &mut PortCensus::default(),
            &Position::default(),
        )
    })
}

/// Passes reads through, keeping the first error so that it can be reported as it was
/// (pcap-parser turns every read error into a bare `ReadError`).
struct KeepError<R> {
    inner: R,
    error: Rc<RefCell<Option<io::Error>>>,
}

impl<R: Read> Read for KeepError<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let kind = e.kind();
                    self.error.borrow_mut().get_or_insert(e);
                    return Err(io::Error::from(kind));
                }
                Ok(n) => return Ok(n),
            }
        }
    }
}

fn not_capture() -> TraceError {
    TraceError::Format("not a pcap or pcapng capture".into())
}

/// Reads until `buf` holds `want` bytes or the input ends.
fn fill(input: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> io::Result<()> {
    while buf.len() < want {
        let old = buf.len();
        buf.resize(want, 0);
        match input.read(&mut buf[old..]) {
            Ok(0) => {
                buf.truncate(old);
                break;
            }
            Ok(n) => buf.truncate(old + n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => buf.truncate(old),
            Err(e) => {
                buf.truncate(old);
                // A compressed stream that ends early: the reader meets the error again
                // after the prefix, and counts it there.
                if input::cut_reason(&e).is_some() {
                    break;
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Recognizes the format from the first bytes.
fn open<R: Read>(mut input: R) -> Result<Opened<R>, TraceError> {
    // Recognize the format, and make sure the whole first header is in the first read that
    // pcap-parser makes.
    let mut prefix = Vec::new();
    fill(&mut input, &mut prefix, 24)?;
    if prefix.len() < 4 {
        return Err(not_capture());
    }
    let magic4 = [prefix[0], prefix[1], prefix[2], prefix[3]];
    let ng = magic4 == PCAPNG_MAGIC;
    let legacy = PCAP_MAGICS.contains(&u32::from_le_bytes(magic4))
        || PCAP_MAGICS.contains(&u32::from_be_bytes(magic4));
    if !ng && !legacy {
        return Err(not_capture());
    }
    let mut want = PREFIX;
    if ng && prefix.len() >= 12 {
        // The section header's length, in either byte order: read at least all of it.
        let le = u32::from_le_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]) as usize;
        let be = u32::from_be_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]) as usize;
        let bom_le = prefix[8..12] == [0x4D, 0x3C, 0x2B, 0x1A];
        let len = if bom_le { le } else { be };
        if len > BUFFER_SIZE / 2 {
            return Err(TraceError::Format(
                "pcapng section header block too large".into(),
            ));
        }
        want = want.max(len);
    }
    fill(&mut input, &mut prefix, want)?;
    // A small input is all in the prefix already: no need for a large buffer.
    let capacity = if prefix.len() < want {
        (prefix.len() + 64).max(4096)
    } else {
        BUFFER_SIZE
    };
    Ok(Opened {
        prefix,
        input,
        ng,
        capacity,
    })
}

/// Reads the capture; `census` gets the decoder's port census, also when reading fails;
/// `position` follows the blocks taken.
fn read_opened<R: Read>(
    opened: Opened<R>,
    options: &CaptureOptions,
    split: bool,
    sink: &mut dyn Sink,
    census: &mut PortCensus,
    position: &Position,
) -> Result<(), TraceError> {
    let Opened {
        prefix,
        input,
        ng,
        capacity,
    } = opened;
    let error = Rc::new(RefCell::new(None));
    let stream = Cursor::new(prefix).chain(KeepError {
        inner: input,
        error: error.clone(),
    });
    let decoder = PacketDecoder::new(options);
    let mut state = State {
        decoder: if split { decoder.split() } else { decoder },
        packets: 0,
        interfaces: Vec::new(),
        legacy: None,
        ng_big_endian: false,
        offset: 0,
        position: position.clone(),
    };
    let result = if ng {
        state.start(PcapNGReader::new(capacity, stream), capacity, sink, &error)
    } else {
        state.start(
            LegacyPcapReader::new(capacity, stream),
            capacity,
            sink,
            &error,
        )
    };
    // The messages still held (TCP streams, fragments) are passed on also when the capture
    // is damaged further on; not when the sink failed.
    let finished = match result {
        Err(e @ TraceError::Sink(_)) => Err(e),
        result => {
            let flushed = state
                .decoder
                .finish(state.packets, sink)
                .map_err(TraceError::Sink);
            result.and(flushed)
        }
    };
    *census = state.decoder.census().clone();
    finished
}

/// What a pcapng interface description says.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link: u32,
    tsresol: u8,
    tsoffset_s: i64,
}

/// A legacy pcap file's header.
#[derive(Debug, Clone, Copy)]
struct LegacyHeader {
    link: u32,
    nanos: bool,
    big_endian: bool,
    /// Size of a record header (16, or 24 in the old "modified" format).
    record_header: usize,
}

struct State {
    decoder: PacketDecoder,
    packets: u64,
    interfaces: Vec<Interface>,
    legacy: Option<LegacyHeader>,
    /// Byte order of the current pcapng section.
    ng_big_endian: bool,
    /// Where the next block starts in the input.
    offset: u64,
    position: Position,
}

/// Converts a pcapng timestamp in units of `tsresol` to nanoseconds.
fn ng_time(ts: u64, tsresol: u8, offset_s: i64) -> i64 {
    let ns: i128 = if tsresol & 0x80 != 0 {
        let shift = (tsresol & 0x7F) as u32;
        if shift >= 64 {
            0
        } else {
            (ts as i128 * 1_000_000_000) >> shift
        }
    } else {
        let exp = tsresol as u32;
        if exp <= 9 {
            ts as i128 * 10i128.pow(9 - exp)
        } else if exp <= 38 {
            ts as i128 / 10i128.pow(exp - 9)
        } else {
            0
        }
    };
    let ns = ns + offset_s as i128 * 1_000_000_000;
    ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

impl State {
    /// Runs the reader `made` for the capture's format (pcapng or legacy pcap), or says why it
    /// could not be made from the capture's first bytes: a file cut short in its header is a
    /// truncated capture, one that is neither format is refused.
    fn start<P: PcapReaderIterator>(
        &mut self,
        made: Result<P, PcapError<&'static [u8]>>,
        capacity: usize,
        sink: &mut dyn Sink,
        error: &Rc<RefCell<Option<io::Error>>>,
    ) -> Result<(), TraceError> {
        match made {
            Ok(r) => self.run(r, capacity, sink, error),
            Err(PcapError::Incomplete(_) | PcapError::UnexpectedEof | PcapError::Eof) => {
                sink.skipped(SkipReason::TruncatedFile, 1);
                Ok(())
            }
            Err(PcapError::ReadError) => read_failed(error, sink, 1),
            Err(_) => Err(not_capture()),
        }
    }

    fn run<P: PcapReaderIterator>(
        &mut self,
        mut reader: P,
        mut capacity: usize,
        sink: &mut dyn Sink,
        error: &Rc<RefCell<Option<io::Error>>>,
    ) -> Result<(), TraceError> {
        loop {
            match reader.next() {
                Ok((used, block)) => {
                    self.offset += used as u64;
                    self.position.set(self.offset);
                    self.block(block, sink)?;
                    reader.consume(used);
                }
                Err(PcapError::Eof) => return Ok(()),
                Err(PcapError::UnexpectedEof) => {
                    sink.skipped(SkipReason::TruncatedFile, self.packets + 1);
                    return Ok(());
                }
                Err(PcapError::ReadError) => return read_failed(error, sink, self.packets + 1),
                Err(PcapError::Incomplete(needed)) => {
                    let before = reader.data().len();
                    if reader.refill().is_err() {
                        return read_failed(error, sink, self.packets + 1);
                    }
                    if reader.data().len() == before && !reader.reader_exhausted() {
                        // No room left: the block is larger than the buffer.
                        capacity = grow(&mut reader, capacity, before + needed.max(1))
                            .map_err(|e| self.damaged(&e))?;
                    }
                }
                Err(PcapError::BufferTooSmall) => {
                    let needed = self.block_size(reader.data()).unwrap_or(capacity * 2);
                    capacity = grow(&mut reader, capacity, needed).map_err(|e| self.damaged(&e))?;
                    if reader.refill().is_err() {
                        return read_failed(error, sink, self.packets + 1);
                    }
                }
                Err(PcapError::HeaderNotRecognized) => return Err(not_capture()),
                Err(PcapError::NomError(..) | PcapError::OwnedNomError(..)) => {
                    // A damaged block. pcapng says its length: skip it if that is sane.
                    let skip = if self.legacy.is_none() {
                        block_len(reader.data()).filter(|&n| n <= reader.data().len())
                    } else {
                        None
                    };
                    match skip {
                        Some(n) => {
                            sink.skipped(SkipReason::BadBlock, self.packets + 1);
                            self.offset += n as u64;
                            reader.consume(n);
                        }
                        None => {
                            sink.skipped(SkipReason::BadBlock, self.packets + 1);
                            return Err(self.damaged("a block that does not parse"));
                        }
                    }
                }
            }
        }
    }

    fn block(&mut self, block: PcapBlockOwned<'_>, sink: &mut dyn Sink) -> Result<(), TraceError> {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy = Some(LegacyHeader {
                    link: h.network.0 as u32,
                    nanos: h.is_nanosecond_precision(),
                    big_endian: h.is_bigendian(),
                    record_header: if h.is_modified_format() { 24 } else { 16 },
                });
            }
            PcapBlockOwned::Legacy(b) => {
                self.packets += 1;
                let Some(h) = self.legacy else {
                    sink.skipped(SkipReason::BadBlock, self.packets);
                    return Ok(());
                };
                let frac = if h.nanos {
                    b.ts_usec as i64
                } else {
                    b.ts_usec as i64 * 1000
                };
                let time = b.ts_sec as i64 * 1_000_000_000 + frac;
                self.decoder
                    .packet(h.link, time, b.data, self.packets, sink)?;
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.ng_big_endian = shb.big_endian();
                self.interfaces.clear();
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.interfaces.push(Interface {
                    link: idb.linktype.0 as u32,
                    tsresol: idb.if_tsresol,
                    tsoffset_s: idb.if_tsoffset,
                });
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                self.packets += 1;
                let Some(iface) = self.interfaces.get(epb.if_id as usize) else {
                    sink.skipped(SkipReason::BadBlock, self.packets);
                    return Ok(());
                };
                let ts = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                let time = ng_time(ts, iface.tsresol, iface.tsoffset_s);
                self.decoder
                    .packet(iface.link, time, epb.packet_data(), self.packets, sink)?;
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                self.packets += 1;
                let Some(iface) = self.interfaces.first() else {
                    sink.skipped(SkipReason::BadBlock, self.packets);
                    return Ok(());
                };
                // No timestamp in a simple packet block: use the last one seen.
                let time = self.decoder.last_time();
                self.decoder
                    .packet(iface.link, time, spb.packet_data(), self.packets, sink)?;
            }
            PcapBlockOwned::NG(_) => {}
        }
        Ok(())
    }
}

impl State {
    /// The error for damage in the block that starts at [`State::offset`]: `what` it is.
    fn damaged(&self, what: &str) -> TraceError {
        TraceError::Format(format!(
            "capture damaged at byte {} (after packet {}): {what}",
            self.offset, self.packets
        ))
    }

    /// The size of the block at the start of `data`, as its header says.
    fn block_size(&self, data: &[u8]) -> Option<usize> {
        let u32_at = |at: usize, be: bool| -> Option<usize> {
            let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
            Some(if be {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            } as usize)
        };
        match self.legacy {
            Some(h) => Some(h.record_header + u32_at(8, h.big_endian)?),
            None => u32_at(4, self.ng_big_endian),
        }
    }
}

/// Ends the capture after a failed read: a compressed stream cut short or corrupt is the end
/// of the input, counted at `location` ([`input::cut_reason`]); any other read error is an error.
fn read_failed(
    error: &Rc<RefCell<Option<io::Error>>>,
    sink: &mut dyn Sink,
    location: u64,
) -> Result<(), TraceError> {
    let e = error
        .borrow_mut()
        .take()
        .unwrap_or_else(|| io::Error::other("read error"));
    match input::cut_reason(&e) {
        Some(reason) => {
            sink.skipped(reason, location);
            Ok(())
        }
        None => Err(TraceError::Io(e)),
    }
}

/// The length of the pcapng block at the start of `data`, if its two copies of it agree that
/// it is sane (at least 12, a multiple of 4).
fn block_len(data: &[u8]) -> Option<usize> {
    if data.len() < 12 {
        return None;
    }
    let le = u32::from_le_bytes([data[4], data[5], data[6], data[7]]) as usize;
    let be = u32::from_be_bytes([data[4], data[5], data[6], data[7]]) as usize;
    [le, be].into_iter().find(|&n| {
        n >= 12 && n % 4 == 0 && n <= MAX_BLOCK && data.len() >= n && {
            let t = &data[n - 4..n];
            let tail_le = u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize;
            let tail_be = u32::from_be_bytes([t[0], t[1], t[2], t[3]]) as usize;
            tail_le == n || tail_be == n
        }
    })
}

/// Grows the reader's buffer to hold at least `needed` bytes; fails past [`MAX_BLOCK`],
/// saying what is wrong.
fn grow<P: PcapReaderIterator>(
    reader: &mut P,
    capacity: usize,
    needed: usize,
) -> Result<usize, String> {
    let new = (capacity * 2).max(needed.saturating_add(needed / 2));
    if needed > MAX_BLOCK || new > 2 * MAX_BLOCK || !reader.grow(new) {
        return Err(format!(
            "a block of {needed} bytes, larger than the {MAX_BLOCK}-byte limit"
        ));
    }
    Ok(new)
}
