//! dnstap logs as traces: reading them ([`DnstapReader`]) and writing traces as dnstap
//! ([`DnstapWriter`]).
//!
//! Frame Streams and the dnstap messages are `ldplayer-dnstap`'s; this module maps them onto
//! [`Record`]s. The dependency points this way (trace on dnstap, as trace on `pcap-parser`) so
//! that [`crate::open`] detects dnstap by its content like any other format, compressed or
//! not, and every reader of traces (the CLI's commands, experiments, the lab) reads it with no
//! dispatch of its own; `ldplayer-dnstap` stays a codec that knows nothing of traces.
//!
//! Each message of a chosen type ([`DnstapTypes`]) becomes one record:
//! - a query type (`CLIENT_QUERY`, `RESOLVER_QUERY`...) carries `query_message` from the query
//!   address and port to the response address and port at `query_time`;
//! - a response type carries `response_message` the other way at `response_time`;
//! - `SocketProtocol` gives the transport: UDP and DNSCrypt over UDP are `udp`, TCP and
//!   DNSCrypt over TCP `tcp`, DOT `tls`, DOH `https`, DOQ `quic`; a message that says none is
//!   taken as UDP;
//! - dnstap has no connection identifier: the messages of a connection transport between the
//!   same two endpoints share a connection number, a hash of the endpoints (no memory kept).
//!
//! What cannot be used is skipped and counted by its reason: a frame that is not protobuf
//! (`dnstap-not-protobuf`), an unknown message type (`dnstap-unknown-type`), a message without
//! the DNS message of its direction (`dnstap-no-message`) or its time (`dnstap-bad-time`), the
//! frames of a stream whose content type is not `protobuf:dnstap.Dnstap`
//! (`dnstap-content-type`), a control frame that does not decode or data outside a stream
//! (`dnstap-bad-frame`), a file that ends inside a frame (`file-truncated`); on a collector's
//! connection, a frame a writer cut short by going away (`dnstap-cut-frame`, [`collect`]).
//! Every whole frame before the damage is read.

pub mod collect;

use crate::input::{cut_reason, Position};
use crate::record::{Proto, Record};
use crate::sink::{drive, Sink, SinkError, Source, TraceError};
use crate::skip::SkipReason;
use bytes::Bytes;
use ldplayer_dnstap::fstrm::{
    ControlType, Frame, FrameError, FrameReader, FrameWriter, DNSTAP_CONTENT_TYPE,
};
use ldplayer_dnstap::{Census, MessageType, Tap, TapError, Transport};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::str::FromStr;

pub use ldplayer_dnstap::fstrm::sniff;

/// A set of dnstap message types: the ones a reader turns into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DnstapTypes(u16);

impl DnstapTypes {
    /// The client side of a server: `CLIENT_QUERY` and `CLIENT_RESPONSE`, what it was asked and
    /// answered (the default of `replay`, `inspect` and `convert`).
    pub const CLIENT: DnstapTypes = DnstapTypes(1 << 5 | 1 << 6);
    /// The responses a resolver received from upstream (`RESOLVER_RESPONSE`), what
    /// `zones build` rebuilds a hierarchy from.
    pub const RESOLVER_RESPONSE: DnstapTypes = DnstapTypes(1 << 4);
    /// A resolver's upstream traffic: `RESOLVER_QUERY` and `RESOLVER_RESPONSE`.
    pub const RESOLVER: DnstapTypes = DnstapTypes(1 << 3 | 1 << 4);
    /// Every type.
    pub const ALL: DnstapTypes = DnstapTypes(0x7ffe);

    /// The set of `types`.
    pub fn of(types: impl IntoIterator<Item = MessageType>) -> DnstapTypes {
        DnstapTypes(types.into_iter().fold(0, |s, t| s | 1 << t.code()))
    }

    /// True when `kind` is in the set.
    pub fn contains(self, kind: MessageType) -> bool {
        self.0 & 1 << kind.code() != 0
    }

    /// The types in the set, in code order.
    pub fn iter(self) -> impl Iterator<Item = MessageType> {
        MessageType::ALL
            .into_iter()
            .filter(move |t| self.contains(*t))
    }
}

impl Default for DnstapTypes {
    /// [`DnstapTypes::CLIENT`].
    fn default() -> Self {
        DnstapTypes::CLIENT
    }
}

impl fmt::Display for DnstapTypes {
    /// `CLIENT_QUERY,CLIENT_RESPONSE`, as `--dnstap-types` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(|t| t.name()).collect();
        f.write_str(&names.join(","))
    }
}

impl FromStr for DnstapTypes {
    type Err = String;
    /// A comma-separated list of type names (`CLIENT_QUERY,CLIENT_RESPONSE`, any case), or
    /// `all`.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(DnstapTypes::ALL);
        }
        let types = s
            .split(',')
            .filter(|t| !t.trim().is_empty())
            .map(MessageType::from_str)
            .collect::<Result<Vec<_>, _>>()?;
        if types.is_empty() {
            return Err("no dnstap type given (say CLIENT_QUERY,CLIENT_RESPONSE, or all)".into());
        }
        Ok(DnstapTypes::of(types))
    }
}

/// The transport of a record for a dnstap `SocketProtocol` (UDP when it says none).
pub fn proto_of(transport: Option<Transport>) -> Proto {
    match transport {
        None | Some(Transport::Udp) | Some(Transport::DnsCryptUdp) => Proto::Udp,
        Some(Transport::Tcp) | Some(Transport::DnsCryptTcp) => Proto::Tcp,
        Some(Transport::Dot) => Proto::Tls,
        Some(Transport::Doh) => Proto::Https,
        Some(Transport::Doq) => Proto::Quic,
    }
}

/// The dnstap `SocketProtocol` of a record's transport.
pub fn transport_of(proto: Proto) -> Transport {
    match proto {
        Proto::Udp => Transport::Udp,
        Proto::Tcp => Transport::Tcp,
        Proto::Tls => Transport::Dot,
        Proto::Https => Transport::Doh,
        Proto::Quic => Transport::Doq,
    }
}

/// The connection number of a message between `a` and `b` over `proto`: 0 for UDP, else a
/// non-zero hash of the two endpoints in either order (both directions share it).
pub fn connection_of(proto: Proto, a: SocketAddr, b: SocketAddr) -> u64 {
    if !proto.is_connection() {
        return 0;
    }
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mix = |h: u64, x: u64| {
        let z = (h ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z ^ (z >> 29)
    };
    let ip = |s: SocketAddr| crate::stable_hash(s.ip()) ^ u64::from(s.port()) << 48;
    let h = mix(mix(proto as u64 + 1, ip(lo)), ip(hi));
    h.max(1)
}

/// The record of a decoded message, or why it has none.
pub fn record_of(tap: &Tap) -> Result<Record<'_>, SkipReason> {
    let wire = tap.wire().ok_or(SkipReason::DnstapNoMessage)?;
    let time_ns = tap.time_ns().ok_or(SkipReason::DnstapBadTime)?;
    let (src, dst) = tap.endpoints();
    let proto = proto_of(tap.transport);
    Ok(Record {
        time_ns,
        src,
        dst,
        proto,
        conn: connection_of(proto, src, dst),
        wire,
    })
}

fn tap_skip(e: &TapError) -> SkipReason {
    match e {
        TapError::NotProtobuf(_) => SkipReason::DnstapNotProtobuf,
        TapError::UnknownType(_) => SkipReason::DnstapUnknownType,
        TapError::NoMessage => SkipReason::DnstapNoMessage,
    }
}

/// Whether the frames being read belong to a dnstap stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// Before the first `START`, or after a `STOP`.
    Outside,
    /// In a stream of `protobuf:dnstap.Dnstap` (or of no content type said).
    Dnstap,
    /// In a stream of another content type.
    Foreign,
}

/// Reads a dnstap file (Frame Streams of `protobuf:dnstap.Dnstap`) as a trace: one record per
/// message of the chosen types; see the [module](self) for the mapping and what is skipped.
pub struct DnstapReader<R: Read> {
    frames: FrameReader<R>,
    types: DnstapTypes,
    census: Census,
    stream: Stream,
    position: Position,
    /// Data frames read, the location of skips.
    item: u64,
}

impl<R: Read> DnstapReader<R> {
    /// A reader of `input` keeping the messages of `types`.
    pub fn new(input: R, types: DnstapTypes) -> Self {
        DnstapReader {
            frames: FrameReader::new(input),
            types,
            census: Census::default(),
            stream: Stream::Outside,
            position: Position::default(),
            item: 0,
        }
    }

    /// A handle that follows how far the reader has read (see [`Position`]).
    pub fn position(&self) -> Position {
        self.position.clone()
    }

    /// The messages read so far by type and identity, of every type (chosen or not).
    pub fn census(&self) -> &Census {
        &self.census
    }

    /// The types kept.
    pub fn types(&self) -> DnstapTypes {
        self.types
    }

    /// Reads every frame into `sink`.
    fn read(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        loop {
            let frame = match self.frames.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                Err(FrameError::Io(e)) => match cut_reason(&e) {
                    Some(reason) => {
                        sink.skipped(reason, self.item + 1);
                        return Ok(());
                    }
                    None => return Err(e.into()),
                },
                Err(FrameError::Truncated { .. }) => {
                    sink.skipped(SkipReason::TruncatedFile, self.item + 1);
                    return Ok(());
                }
                Err(e @ FrameError::TooLong { .. }) => {
                    return Err(TraceError::Format(format!(
                        "dnstap file damaged: {e}; the {} frames before it were read",
                        self.item
                    )))
                }
                Err(FrameError::BadControl { .. }) => {
                    self.position.set(self.frames.offset());
                    sink.skipped(SkipReason::DnstapBadFrame, self.item + 1);
                    continue;
                }
            };
            self.position.set(self.frames.offset());
            match frame {
                Frame::Control(c) => match c.kind {
                    ControlType::Start if c.names(DNSTAP_CONTENT_TYPE) => {
                        self.stream = Stream::Dnstap
                    }
                    ControlType::Start => self.stream = Stream::Foreign,
                    ControlType::Stop => self.stream = Stream::Outside,
                    // Handshake frames in a file, or frames of later versions: ignored.
                    _ => {}
                },
                Frame::Data(data) => {
                    self.item += 1;
                    let item = self.item;
                    match self.stream {
                        Stream::Dnstap => {}
                        Stream::Foreign => {
                            sink.skipped(SkipReason::DnstapContentType, item);
                            continue;
                        }
                        Stream::Outside => {
                            sink.skipped(SkipReason::DnstapBadFrame, item);
                            continue;
                        }
                    }
                    let tap = match Tap::decode(data) {
                        Ok(tap) => tap,
                        Err(e) => {
                            sink.skipped(tap_skip(&e), item);
                            continue;
                        }
                    };
                    self.census.add(&tap);
                    if !self.types.contains(tap.kind) {
                        continue;
                    }
                    match record_of(&tap) {
                        Ok(record) => sink.record(&record)?,
                        Err(reason) => sink.skipped(reason, item),
                    }
                }
            }
        }
    }
}

impl<R: Read> Source for DnstapReader<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        drive(sink, |sink| self.read(sink))
    }
}

/// Turns the data frames a collector receives ([`ldplayer_dnstap::collector`]) into records:
/// each message counted in the census, those of the chosen types passed to a sink, the
/// others left out, the ones that do not decode skipped by their reason.
#[derive(Debug, Default)]
pub struct FrameRecords {
    types: DnstapTypes,
    census: Census,
    frames: u64,
}

impl FrameRecords {
    /// Keeps the messages of `types`.
    pub fn new(types: DnstapTypes) -> Self {
        FrameRecords {
            types,
            census: Census::default(),
            frames: 0,
        }
    }

    /// Takes one data frame into `sink`.
    pub fn frame(&mut self, data: Bytes, sink: &mut dyn Sink) -> Result<(), SinkError> {
        self.frames += 1;
        let tap = match Tap::decode(data) {
            Ok(tap) => tap,
            Err(e) => {
                sink.skipped(tap_skip(&e), self.frames);
                return Ok(());
            }
        };
        self.census.add(&tap);
        if !self.types.contains(tap.kind) {
            return Ok(());
        }
        match record_of(&tap) {
            Ok(record) => sink.record(&record),
            Err(reason) => {
                sink.skipped(reason, self.frames);
                Ok(())
            }
        }
    }

    /// Data frames taken.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The messages taken, by type and identity.
    pub fn census(&self) -> &Census {
        &self.census
    }
}

/// Writes records as a dnstap file: one message per record, `CLIENT_QUERY` for a query and
/// `CLIENT_RESPONSE` for a response (by the QR bit; a message too short to have one is taken
/// as a query), unless [`DnstapWriter::with_types`] says otherwise.
pub struct DnstapWriter<W: Write> {
    frames: FrameWriter<W>,
    query: MessageType,
    version: Bytes,
    identity: Option<Bytes>,
}

impl<W: Write> DnstapWriter<W> {
    /// Starts a dnstap file on `out` (writes `START`). Give it a buffered writer.
    pub fn new(out: W) -> io::Result<Self> {
        Ok(DnstapWriter {
            frames: FrameWriter::new(out, DNSTAP_CONTENT_TYPE)?,
            query: MessageType::ClientQuery,
            version: Bytes::from(format!("ldplayer {}", env!("CARGO_PKG_VERSION"))),
            identity: None,
        })
    }

    /// Writes queries as `query` and responses as its counterpart (`RESOLVER_QUERY` and
    /// `RESOLVER_RESPONSE` for a resolver's upstream traffic, say).
    pub fn with_types(mut self, query: MessageType) -> Self {
        self.query = if query.is_query() {
            query
        } else {
            query.counterpart()
        };
        self
    }

    /// Names the writer in every message's `identity`.
    pub fn with_identity(mut self, identity: &str) -> Self {
        self.identity = Some(Bytes::copy_from_slice(identity.as_bytes()));
        self
    }

    /// Writes one record.
    pub fn write(&mut self, r: &Record<'_>) -> io::Result<()> {
        let is_response = r.wire.get(2).is_some_and(|b| b & 0x80 != 0);
        let kind = if is_response {
            self.query.counterpart()
        } else {
            self.query
        };
        let mut tap = Tap::new(
            kind,
            Some(transport_of(r.proto)),
            r.src,
            r.dst,
            r.time_ns,
            Bytes::copy_from_slice(r.wire),
        );
        tap.version = Some(self.version.clone());
        tap.identity = self.identity.clone();
        self.frames.write_frame(&tap.encode())
    }

    /// Messages written so far.
    pub fn written(&self) -> u64 {
        self.frames.frames()
    }

    /// Writes `STOP`, flushes, and returns the output.
    pub fn into_inner(self) -> io::Result<W> {
        self.frames.finish()
    }
}

impl<W: Write> Sink for DnstapWriter<W> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if record.time_ns < 0 {
            return Err(SinkError::Other(format!(
                "dnstap cannot hold a time before 1970 ({} ns)",
                record.time_ns
            )));
        }
        self.write(record)?;
        Ok(())
    }
}
