//! QUIC version 1 on the wire (RFC 9000 §12, §16–§19): variable-length integers, packet
//! headers, the frames a DNS-over-QUIC client reads and writes, and transport parameters.
//!
//! Everything here reads untrusted bytes: every length is checked and a malformed input is a
//! [`Malformed`] error, never a panic.

/// QUIC version 1.
pub const VERSION_1: u32 = 1;
/// The largest value a variable-length integer holds.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Bytes that are no valid QUIC (a frame or header cut short, a value out of range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// A cursor over received bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        let b = *self.buf.get(self.pos).ok_or(Malformed)?;
        self.pos += 1;
        Ok(b)
    }

    /// A big-endian 32-bit integer.
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(n).ok_or(Malformed)?;
        let b = self.buf.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(b)
    }

    /// A variable-length integer (RFC 9000 §16).
    pub fn varint(&mut self) -> Result<u64, Malformed> {
        let first = self.u8()?;
        let len = 1usize << (first >> 6);
        let mut v = u64::from(first & 0x3f);
        for &b in self.bytes(len - 1)? {
            v = (v << 8) | u64::from(b);
        }
        Ok(v)
    }

    /// A variable-length integer used as a length within this input.
    pub fn len(&mut self) -> Result<usize, Malformed> {
        usize::try_from(self.varint()?).map_err(|_| Malformed)
    }

    /// A length-prefixed byte string (a varint length).
    pub fn prefixed(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.len()?;
        self.bytes(n)
    }
}

/// How many bytes `v` takes as a variable-length integer.
pub fn varint_len(v: u64) -> usize {
    match v {
        0..=63 => 1,
        64..=16_383 => 2,
        16_384..=1_073_741_823 => 4,
        _ => 8,
    }
}

/// Appends `v` as a variable-length integer (values above [`VARINT_MAX`] are clamped, which
/// the callers never reach: offsets and counts stay far below it).
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    let v = v.min(VARINT_MAX);
    match varint_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Writes `v` as a two-byte variable-length integer at `at` (a packet's Length field, reserved
/// before its payload is known; `v` < 16,384).
pub fn patch_varint2(out: &mut [u8], at: usize, v: u16) {
    out[at..at + 2].copy_from_slice(&(v | 0x4000).to_be_bytes());
}

/// The packet number a truncated one stands for, given the largest received so far
/// (RFC 9000 Appendix A.3).
pub fn decode_packet_number(largest: Option<u64>, truncated: u64, bits: u32) -> u64 {
    let expected = largest.map_or(0, |l| l + 1);
    let win = 1u64 << bits;
    let hwin = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | truncated;
    if candidate + hwin <= expected && candidate < (1 << 62) - win {
        candidate + win
    } else if candidate > expected + hwin && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

/// The types of long-header packets (RFC 9000 §17.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongType {
    Initial,
    ZeroRtt,
    Handshake,
    Retry,
}

impl LongType {
    fn bits(self) -> u8 {
        match self {
            LongType::Initial => 0,
            LongType::ZeroRtt => 1,
            LongType::Handshake => 2,
            LongType::Retry => 3,
        }
    }
}

/// A received packet's header, up to its (still protected) packet number.
#[derive(Debug, PartialEq, Eq)]
pub enum Header<'a> {
    /// A Version Negotiation packet: the server speaks none of our versions.
    VersionNegotiation,
    /// A Retry packet: its source connection ID, token and the whole packet (for the
    /// integrity tag, the last 16 bytes).
    Retry { scid: &'a [u8], token: &'a [u8] },
    /// An Initial or Handshake packet (a client never receives 0-RTT).
    Long {
        ty: LongType,
        version: u32,
        dcid: &'a [u8],
        scid: &'a [u8],
    },
    /// A 1-RTT packet.
    Short { dcid: &'a [u8] },
}

/// Where a received packet lies in its datagram.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub header: Header<'a>,
    /// The offset of the packet number (from the packet's start).
    pub pn_offset: usize,
    /// The packet's length (the rest of the datagram for a short header or a Retry).
    pub len: usize,
}

/// Parses the header of the packet at the start of `datagram`; `local_cid_len` is the length
/// of the connection IDs this end chose (short headers do not carry it).
pub fn parse_header(datagram: &[u8], local_cid_len: usize) -> Result<Parsed<'_>, Malformed> {
    let mut r = Reader::new(datagram);
    let first = r.u8()?;
    if first & 0x80 == 0 {
        let dcid = r.bytes(local_cid_len)?;
        return Ok(Parsed {
            header: Header::Short { dcid },
            pn_offset: r.position(),
            len: datagram.len(),
        });
    }
    let version = r.u32()?;
    let dcid_len = usize::from(r.u8()?);
    let dcid = r.bytes(dcid_len)?;
    let scid_len = usize::from(r.u8()?);
    let scid = r.bytes(scid_len)?;
    if dcid_len > 20 || scid_len > 20 {
        return Err(Malformed);
    }
    if version == 0 {
        return Ok(Parsed {
            header: Header::VersionNegotiation,
            pn_offset: r.position(),
            len: datagram.len(),
        });
    }
    let ty = match (first >> 4) & 3 {
        0 => LongType::Initial,
        1 => LongType::ZeroRtt,
        2 => LongType::Handshake,
        _ => LongType::Retry,
    };
    if ty == LongType::Retry {
        let rest = datagram.len() - r.position();
        let token = r.bytes(rest.checked_sub(16).ok_or(Malformed)?)?;
        return Ok(Parsed {
            header: Header::Retry { scid, token },
            pn_offset: r.position(),
            len: datagram.len(),
        });
    }
    if ty == LongType::Initial {
        // A server's Initial carries an empty token.
        r.prefixed()?;
    }
    let length = r.len()?;
    let pn_offset = r.position();
    let len = pn_offset.checked_add(length).ok_or(Malformed)?;
    if len > datagram.len() || length < 20 {
        return Err(Malformed);
    }
    Ok(Parsed {
        header: Header::Long {
            ty,
            version,
            dcid,
            scid,
        },
        pn_offset,
        len,
    })
}

/// Writes a long header up to its packet number: the Length field is reserved as two bytes at
/// the returned offset, to be patched with [`patch_varint2`]. Returns (length offset,
/// packet number offset).
pub fn put_long_header(
    out: &mut Vec<u8>,
    ty: LongType,
    dcid: &[u8],
    scid: &[u8],
    token: Option<&[u8]>,
    pn: u32,
) -> (usize, usize) {
    // Fixed bit, long form, 4-byte packet numbers.
    out.push(0xc0 | (ty.bits() << 4) | 3);
    out.extend_from_slice(&VERSION_1.to_be_bytes());
    out.push(dcid.len() as u8);
    out.extend_from_slice(dcid);
    out.push(scid.len() as u8);
    out.extend_from_slice(scid);
    if let Some(token) = token {
        put_varint(out, token.len() as u64);
        out.extend_from_slice(token);
    }
    let length_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let pn_at = out.len();
    out.extend_from_slice(&pn.to_be_bytes());
    (length_at, pn_at)
}

/// Writes a short (1-RTT) header; returns the packet number's offset.
pub fn put_short_header(out: &mut Vec<u8>, dcid: &[u8], key_phase: bool, pn: u32) -> usize {
    out.push(0x40 | if key_phase { 0x04 } else { 0 } | 3);
    out.extend_from_slice(dcid);
    let pn_at = out.len();
    out.extend_from_slice(&pn.to_be_bytes());
    pn_at
}

/// A frame a client receives (RFC 9000 §19). Those it has no use for are parsed and skipped.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Padding,
    Ping,
    Ack {
        largest: u64,
        delay: u64,
        /// The acknowledged ranges after the first, undecoded ([`AckRanges`]).
        first_range: u64,
        ranges: &'a [u8],
        range_count: u64,
    },
    ResetStream {
        id: u64,
    },
    StopSending {
        id: u64,
    },
    Crypto {
        offset: u64,
        data: &'a [u8],
    },
    Stream {
        id: u64,
        offset: u64,
        data: &'a [u8],
        fin: bool,
    },
    MaxData(u64),
    /// MAX_STREAM_DATA: what the server now takes on stream `id` (RFC 9000 §19.10).
    MaxStreamData {
        id: u64,
        max: u64,
    },
    MaxStreamsBidi(u64),
    MaxStreamsUni(u64),
    NewConnectionId {
        seq: u64,
        retire_prior_to: u64,
        cid: &'a [u8],
        reset_token: [u8; 16],
    },
    PathChallenge([u8; 8]),
    ConnectionClose {
        code: u64,
        /// Whether the application closed it (0x1d) rather than the transport (0x1c).
        application: bool,
    },
    HandshakeDone,
    /// Parsed and of no use to a client (NEW_TOKEN, MAX_STREAM_DATA, the BLOCKED frames,
    /// RETIRE_CONNECTION_ID, PATH_RESPONSE).
    Ignored,
}

impl Frame<'_> {
    /// Whether the frame asks to be acknowledged (RFC 9002 §2).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding | Frame::Ack { .. } | Frame::ConnectionClose { .. }
        )
    }

    /// The acknowledged ranges, largest first, as inclusive (smallest, largest) pairs.
    pub fn ack_ranges(&self) -> AckRanges<'_> {
        match *self {
            Frame::Ack {
                largest,
                first_range,
                ranges,
                range_count,
                ..
            } => AckRanges {
                next: largest.checked_sub(first_range).map(|lo| (lo, largest)),
                rest: Reader::new(ranges),
                left: range_count,
            },
            _ => AckRanges {
                next: None,
                rest: Reader::new(&[]),
                left: 0,
            },
        }
    }
}

/// The ranges of an ACK frame (RFC 9000 §19.3.1), checked as they are read: a range below 0
/// ends the iteration.
pub struct AckRanges<'a> {
    next: Option<(u64, u64)>,
    rest: Reader<'a>,
    left: u64,
}

impl Iterator for AckRanges<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let current = self.next.take()?;
        if self.left > 0 {
            self.left -= 1;
            let (Ok(gap), Ok(len)) = (self.rest.varint(), self.rest.varint()) else {
                return Some(current);
            };
            self.next = current
                .0
                .checked_sub(gap + 2)
                .and_then(|hi| hi.checked_sub(len).map(|lo| (lo, hi)));
        }
        Some(current)
    }
}

/// Reads the next frame of a packet's payload.
pub fn next_frame<'a>(r: &mut Reader<'a>) -> Result<Frame<'a>, Malformed> {
    let ty = r.varint()?;
    Ok(match ty {
        0x00 => Frame::Padding,
        0x01 => Frame::Ping,
        0x02 | 0x03 => {
            let largest = r.varint()?;
            let delay = r.varint()?;
            let range_count = r.varint()?;
            let first_range = r.varint()?;
            let start = r.position();
            let mut rest = Reader::new(&r.buf[start..]);
            for _ in 0..range_count {
                rest.varint()?;
                rest.varint()?;
            }
            let ranges = r.bytes(rest.position())?;
            if ty == 0x03 {
                for _ in 0..3 {
                    r.varint()?;
                }
            }
            if first_range > largest {
                return Err(Malformed);
            }
            Frame::Ack {
                largest,
                delay,
                first_range,
                ranges,
                range_count,
            }
        }
        0x04 => {
            let id = r.varint()?;
            r.varint()?;
            r.varint()?;
            Frame::ResetStream { id }
        }
        0x05 => {
            let id = r.varint()?;
            r.varint()?;
            Frame::StopSending { id }
        }
        0x06 => {
            let offset = r.varint()?;
            let data = r.prefixed()?;
            Frame::Crypto { offset, data }
        }
        0x07 => {
            r.prefixed()?;
            Frame::Ignored
        }
        0x08..=0x0f => {
            let id = r.varint()?;
            let offset = if ty & 0x04 != 0 { r.varint()? } else { 0 };
            let data = if ty & 0x02 != 0 {
                r.prefixed()?
            } else {
                let rest = r.buf.len() - r.position();
                r.bytes(rest)?
            };
            if offset + data.len() as u64 > VARINT_MAX {
                return Err(Malformed);
            }
            Frame::Stream {
                id,
                offset,
                data,
                fin: ty & 0x01 != 0,
            }
        }
        0x10 => Frame::MaxData(r.varint()?),
        0x11 => Frame::MaxStreamData {
            id: r.varint()?,
            max: r.varint()?,
        },
        0x12 => Frame::MaxStreamsBidi(r.varint()?),
        0x13 => Frame::MaxStreamsUni(r.varint()?),
        0x14 | 0x16 | 0x17 | 0x19 => {
            r.varint()?;
            Frame::Ignored
        }
        0x15 => {
            r.varint()?;
            r.varint()?;
            Frame::Ignored
        }
        0x18 => {
            let seq = r.varint()?;
            let retire_prior_to = r.varint()?;
            let len = usize::from(r.u8()?);
            if !(1..=20).contains(&len) || retire_prior_to > seq {
                return Err(Malformed);
            }
            let cid = r.bytes(len)?;
            let mut reset_token = [0; 16];
            reset_token.copy_from_slice(r.bytes(16)?);
            Frame::NewConnectionId {
                seq,
                retire_prior_to,
                cid,
                reset_token,
            }
        }
        0x1a => {
            let mut data = [0; 8];
            data.copy_from_slice(r.bytes(8)?);
            Frame::PathChallenge(data)
        }
        0x1b => {
            r.bytes(8)?;
            Frame::Ignored
        }
        0x1c | 0x1d => {
            let code = r.varint()?;
            if ty == 0x1c {
                r.varint()?;
            }
            r.prefixed()?;
            Frame::ConnectionClose {
                code,
                application: ty == 0x1d,
            }
        }
        0x1e => Frame::HandshakeDone,
        _ => return Err(Malformed),
    })
}

/// Appends an ACK frame for `ranges` (inclusive, ascending, non-overlapping, at least one);
/// `delay` in units of 2^3 µs (the default exponent).
pub fn put_ack(out: &mut Vec<u8>, ranges: &[(u64, u64)], delay: u64) {
    let Some(&(lo, hi)) = ranges.last() else {
        return;
    };
    out.push(0x02);
    put_varint(out, hi);
    put_varint(out, delay);
    put_varint(out, ranges.len() as u64 - 1);
    put_varint(out, hi - lo);
    let mut smallest = lo;
    for &(lo, hi) in ranges.iter().rev().skip(1) {
        put_varint(out, smallest - hi - 2);
        put_varint(out, hi - lo);
        smallest = lo;
    }
}

/// Appends a CRYPTO frame.
pub fn put_crypto(out: &mut Vec<u8>, offset: u64, data: &[u8]) {
    out.push(0x06);
    put_varint(out, offset);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// Appends a STREAM frame with its offset and length.
pub fn put_stream(out: &mut Vec<u8>, id: u64, offset: u64, data: &[u8], fin: bool) {
    out.push(0x0e | u8::from(fin));
    put_varint(out, id);
    put_varint(out, offset);
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// Appends a STREAM_DATA_BLOCKED frame (RFC 9000 §19.13): stream `id` has data to send
/// beyond the server's `limit`.
pub fn put_stream_data_blocked(out: &mut Vec<u8>, id: u64, limit: u64) {
    out.push(0x15);
    put_varint(out, id);
    put_varint(out, limit);
}

/// The most bytes a STREAM frame's header takes (type, id, offset, length).
pub const STREAM_OVERHEAD: usize = 1 + 8 + 8 + 2;

/// Appends a transport-level CONNECTION_CLOSE (0x1c) or an application's (0x1d).
pub fn put_close(out: &mut Vec<u8>, code: u64, application: bool) {
    out.push(if application { 0x1d } else { 0x1c });
    put_varint(out, code);
    if !application {
        put_varint(out, 0);
    }
    put_varint(out, 0);
}

/// The transport parameters a client sends (RFC 9000 §18.2).
pub struct ClientParams<'a> {
    pub initial_scid: &'a [u8],
    pub max_idle_timeout_ms: u64,
    pub initial_max_data: u64,
    /// What the server may send on each stream this client opens.
    pub initial_max_stream_data_bidi_local: u64,
    /// Unidirectional streams the server may open (HTTP/3's control and QPACK streams; none
    /// for DoQ), and what it may send on each.
    pub initial_max_streams_uni: u64,
    pub initial_max_stream_data_uni: u64,
}

impl ClientParams<'_> {
    /// The parameters encoded for the TLS extension.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48);
        let mut put = |id: u64, value: &[u8]| {
            put_varint(&mut out, id);
            put_varint(&mut out, value.len() as u64);
            out.extend_from_slice(value);
        };
        let int = |v: u64| {
            let mut b = Vec::with_capacity(8);
            put_varint(&mut b, v);
            b
        };
        put(0x01, &int(self.max_idle_timeout_ms));
        put(0x04, &int(self.initial_max_data));
        put(0x05, &int(self.initial_max_stream_data_bidi_local));
        // No streams for the server to open (RFC 9250 §4.2: a DoQ server opens none).
        put(0x08, &int(0));
        put(0x09, &int(self.initial_max_streams_uni));
        if self.initial_max_streams_uni > 0 {
            put(0x07, &int(self.initial_max_stream_data_uni));
        }
        put(0x0f, self.initial_scid);
        out
    }
}

/// What a client needs of the server's transport parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerParams {
    pub original_dcid: Option<Vec<u8>>,
    pub initial_scid: Option<Vec<u8>>,
    pub retry_scid: Option<Vec<u8>>,
    pub max_idle_timeout_ms: u64,
    pub stateless_reset_token: Option<[u8; 16]>,
    pub initial_max_data: u64,
    /// What the server takes on each stream this client opens.
    pub initial_max_stream_data_bidi_remote: u64,
    pub initial_max_streams_bidi: u64,
    /// Unidirectional streams this client may open (HTTP/3's control stream).
    pub initial_max_streams_uni: u64,
    pub ack_delay_exponent: u64,
    pub max_ack_delay_ms: u64,
}

impl ServerParams {
    /// Decodes the server's parameters; unknown ones are skipped.
    pub fn decode(bytes: &[u8]) -> Result<ServerParams, Malformed> {
        let mut p = ServerParams {
            ack_delay_exponent: 3,
            max_ack_delay_ms: 25,
            ..ServerParams::default()
        };
        let mut r = Reader::new(bytes);
        while !r.is_empty() {
            let id = r.varint()?;
            let value = r.prefixed()?;
            let int = || {
                let mut v = Reader::new(value);
                let n = v.varint()?;
                if v.is_empty() {
                    Ok(n)
                } else {
                    Err(Malformed)
                }
            };
            match id {
                0x00 => p.original_dcid = Some(value.to_vec()),
                0x01 => p.max_idle_timeout_ms = int()?,
                0x02 => {
                    let token: [u8; 16] = value.try_into().map_err(|_| Malformed)?;
                    p.stateless_reset_token = Some(token);
                }
                0x04 => p.initial_max_data = int()?,
                0x06 => p.initial_max_stream_data_bidi_remote = int()?,
                0x08 => p.initial_max_streams_bidi = int()?,
                0x09 => p.initial_max_streams_uni = int()?,
                0x0a => p.ack_delay_exponent = int()?.min(20),
                0x0b => p.max_ack_delay_ms = int()?.min(1 << 14),
                0x0f => p.initial_scid = Some(value.to_vec()),
                0x10 => p.retry_scid = Some(value.to_vec()),
                _ => {}
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            1_073_741_823,
            1_073_741_824,
            VARINT_MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(Reader::new(&out).varint(), Ok(v));
        }
        // RFC 9000 §A.1's examples.
        assert_eq!(
            Reader::new(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]).varint(),
            Ok(151_288_809_941_952_652)
        );
        assert_eq!(
            Reader::new(&[0x9d, 0x7f, 0x3e, 0x7d]).varint(),
            Ok(494_878_333)
        );
        assert_eq!(Reader::new(&[0x7b, 0xbd]).varint(), Ok(15_293));
        assert_eq!(Reader::new(&[0x40]).varint(), Err(Malformed));
    }

    #[test]
    fn packet_numbers_decode_as_rfc_9000_a3() {
        assert_eq!(
            decode_packet_number(Some(0xa82f30ea), 0x9b32, 16),
            0xa82f9b32
        );
        assert_eq!(decode_packet_number(None, 0, 32), 0);
        assert_eq!(decode_packet_number(Some(5), 7, 32), 7);
    }

    #[test]
    fn ack_frames_round_trip_their_ranges() {
        let ranges = [(0, 2), (5, 5), (9, 20)];
        let mut out = Vec::new();
        put_ack(&mut out, &ranges, 7);
        let mut r = Reader::new(&out);
        let frame = next_frame(&mut r).unwrap();
        assert!(r.is_empty());
        let got: Vec<_> = frame.ack_ranges().collect();
        assert_eq!(got, [(9, 20), (5, 5), (0, 2)]);
        assert!(!frame.is_ack_eliciting());
    }

    #[test]
    fn stream_and_close_frames_parse() {
        let mut out = Vec::new();
        put_stream(&mut out, 8, 3, b"abc", true);
        put_close(&mut out, 0x10a, false);
        let mut r = Reader::new(&out);
        assert_eq!(
            next_frame(&mut r),
            Ok(Frame::Stream {
                id: 8,
                offset: 3,
                data: b"abc",
                fin: true
            })
        );
        assert_eq!(
            next_frame(&mut r),
            Ok(Frame::ConnectionClose {
                code: 0x10a,
                application: false
            })
        );
        assert!(r.is_empty());
    }

    #[test]
    fn cut_frames_and_headers_are_malformed_not_panics() {
        let mut out = Vec::new();
        put_stream(&mut out, 8, 3, b"abcdef", true);
        put_ack(&mut out, &[(1, 4), (7, 9)], 0);
        for cut in 0..out.len() {
            let mut r = Reader::new(&out[..cut]);
            while !r.is_empty() {
                if next_frame(&mut r).is_err() {
                    break;
                }
            }
        }
        let mut long = Vec::new();
        put_long_header(&mut long, LongType::Handshake, &[1; 8], &[2; 8], None, 0);
        for cut in 0..long.len() {
            assert!(parse_header(&long[..cut], 8).is_err(), "{cut}");
        }
    }

    #[test]
    fn transport_parameters_decode_and_reject_bad_lengths() {
        let mut enc = Vec::new();
        for (id, value) in [
            (0x01u64, vec![0x44, 0xe2]),
            (0x0f, vec![9; 4]),
            (0x99, vec![1]),
        ] {
            put_varint(&mut enc, id);
            put_varint(&mut enc, value.len() as u64);
            enc.extend_from_slice(&value);
        }
        let p = ServerParams::decode(&enc).unwrap();
        assert_eq!(p.max_idle_timeout_ms, 0x4e2);
        assert_eq!(p.initial_scid.as_deref(), Some(&[9u8; 4][..]));
        assert_eq!(p.ack_delay_exponent, 3);
        assert_eq!(ServerParams::decode(&[0x01, 0x05, 0x01]), Err(Malformed));
        assert_eq!(ServerParams::decode(&[0x02, 0x01, 0x01]), Err(Malformed));
    }
}
