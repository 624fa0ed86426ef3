//! Writing records as a pcap capture.

use crate::{Proto, Record, Sink, SinkError};
use rustc_hash::FxHashMap;
use std::io::{self, BufWriter, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Magic of a nanosecond-resolution pcap file.
const MAGIC_NS: u32 = 0xA1B2_3C4D;
const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 262_144;
/// Largest TCP payload per segment.
const MSS: usize = 1460;
/// The link MTU: UDP datagrams larger than it are written as IP fragments.
const MTU: usize = 1500;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// Writes records as a little-endian, nanosecond-resolution pcap file of Ethernet frames.
///
/// Each record becomes IPv4 or IPv6 (IPv6 with IPv4-mapped addresses when the two endpoints
/// are of different families) with valid checksums, and synthetic MAC addresses derived from
/// the IP addresses:
/// - UDP records become one UDP datagram, written as IP fragments when it is larger than the
///   1500-byte MTU;
/// - TCP records get the two-byte length prefix and travel in segments with consistent
///   sequence numbers per connection and direction; each connection opens with a
///   SYN / SYN-ACK / ACK handshake at the time of its first message, so that Wireshark and
///   [`CaptureReader`](super::CaptureReader) see a clean stream. Records are grouped into
///   connections by their `conn` number and endpoints; TCP records without a connection
///   number (0) get one connection per pair of endpoints.
///
/// What a pcap cannot say is lost: DNS over TLS and HTTPS records are written as cleartext DNS
/// over TCP and read back as `tcp`; DNS over QUIC records are written as plain UDP and read
/// back as `udp`. They keep their ports, so reading them back needs those ports in
/// [`CaptureOptions::dns_ports`](super::CaptureOptions::dns_ports). Times before 1970 or after
/// 2106 cannot be written.
pub struct PcapWriter<W: Write> {
    out: BufWriter<W>,
    conns: FxHashMap<ConnKey, TcpConn>,
    /// The connection currently using each 4-tuple (client, server).
    tuples: FxHashMap<(SocketAddr, SocketAddr), ConnKey>,
    isn: u32,
    pkt: Vec<u8>,
    /// Scratch buffer for a TCP message with its length prefix.
    udp_buf: Vec<u8>,
    ip_id: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ConnKey {
    conn: u64,
    a: SocketAddr,
    b: SocketAddr,
}

struct TcpConn {
    client: SocketAddr,
    server: SocketAddr,
    /// Next sequence number from the client and from the server.
    next_c: u32,
    next_s: u32,
}

enum L4 {
    Udp,
    Tcp { seq: u32, ack: u32, flags: u8 },
}

impl<W: Write> PcapWriter<W> {
    /// A writer to `out` (buffered internally); writes the file header.
    pub fn new(out: W) -> io::Result<Self> {
        let mut w = PcapWriter {
            out: BufWriter::with_capacity(256 * 1024, out),
            conns: FxHashMap::default(),
            tuples: FxHashMap::default(),
            isn: 0x1000_0000,
            pkt: Vec::with_capacity(2048),
            udp_buf: Vec::new(),
            ip_id: 1,
        };
        w.header()?;
        Ok(w)
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }

    fn header(&mut self) -> io::Result<()> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        self.out.write_all(&h)
    }

    fn next_isn(&mut self) -> u32 {
        // Spread out, and different for every connection.
        self.isn = self.isn.wrapping_add(0x0101_0F3D);
        self.isn
    }

    fn tcp_record(&mut self, r: &Record<'_>, time: (u32, u32)) -> io::Result<()> {
        let (a, b) = if r.src <= r.dst {
            (r.src, r.dst)
        } else {
            (r.dst, r.src)
        };
        let key = ConnKey { conn: r.conn, a, b };
        if !self.conns.contains_key(&key) {
            // The client is the sender of the first query (or the receiver of a response).
            let is_response = r.wire.get(2).is_some_and(|f| f & 0x80 != 0);
            let (client, server) = if is_response {
                (r.dst, r.src)
            } else {
                (r.src, r.dst)
            };
            if let Some(old) = self.tuples.insert((client, server), key) {
                self.close(old, time)?;
            }
            if let Some(old) = self.tuples.remove(&(server, client)) {
                self.close(old, time)?;
            }
            let isn_c = self.next_isn();
            let isn_s = self.next_isn();
            self.packet(
                time,
                client,
                server,
                L4::Tcp {
                    seq: isn_c,
                    ack: 0,
                    flags: TCP_SYN,
                },
                &[],
            )?;
            self.packet(
                time,
                server,
                client,
                L4::Tcp {
                    seq: isn_s,
                    ack: isn_c.wrapping_add(1),
                    flags: TCP_SYN | TCP_ACK,
                },
                &[],
            )?;
            self.packet(
                time,
                client,
                server,
                L4::Tcp {
                    seq: isn_c.wrapping_add(1),
                    ack: isn_s.wrapping_add(1),
                    flags: TCP_ACK,
                },
                &[],
            )?;
            self.conns.insert(
                key,
                TcpConn {
                    client,
                    server,
                    next_c: isn_c.wrapping_add(1),
                    next_s: isn_s.wrapping_add(1),
                },
            );
        }
        let Some(c) = self.conns.get_mut(&key) else {
            return Ok(());
        };
        let from_client = r.src == c.client;
        let (mut seq, ack) = if from_client {
            (c.next_c, c.next_s)
        } else {
            (c.next_s, c.next_c)
        };
        let total = 2 + r.wire.len();
        if from_client {
            c.next_c = c.next_c.wrapping_add(total as u32);
        } else {
            c.next_s = c.next_s.wrapping_add(total as u32);
        }
        let mut stream = std::mem::take(&mut self.udp_buf);
        stream.clear();
        stream.extend_from_slice(&(r.wire.len() as u16).to_be_bytes());
        stream.extend_from_slice(r.wire);
        for chunk in stream.chunks(MSS) {
            self.packet(
                time,
                r.src,
                r.dst,
                L4::Tcp {
                    seq,
                    ack,
                    flags: TCP_PSH | TCP_ACK,
                },
                chunk,
            )?;
            seq = seq.wrapping_add(chunk.len() as u32);
        }
        self.udp_buf = stream;
        Ok(())
    }

    /// Closes a connection whose 4-tuple is reused: FIN from both sides, then the last ACK.
    fn close(&mut self, key: ConnKey, time: (u32, u32)) -> io::Result<()> {
        let Some(c) = self.conns.remove(&key) else {
            return Ok(());
        };
        let (cl, sv) = (c.client, c.server);
        self.packet(
            time,
            cl,
            sv,
            L4::Tcp {
                seq: c.next_c,
                ack: c.next_s,
                flags: TCP_FIN | TCP_ACK,
            },
            &[],
        )?;
        self.packet(
            time,
            sv,
            cl,
            L4::Tcp {
                seq: c.next_s,
                ack: c.next_c.wrapping_add(1),
                flags: TCP_FIN | TCP_ACK,
            },
            &[],
        )?;
        self.packet(
            time,
            cl,
            sv,
            L4::Tcp {
                seq: c.next_c.wrapping_add(1),
                ack: c.next_s.wrapping_add(1),
                flags: TCP_ACK,
            },
            &[],
        )
    }

    /// Writes one frame: Ethernet, IP, UDP or TCP, payload.
    fn packet(
        &mut self,
        time: (u32, u32),
        src: SocketAddr,
        dst: SocketAddr,
        l4: L4,
        payload: &[u8],
    ) -> io::Result<()> {
        let (sip, dip) = match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => (IpAddr::V4(s), IpAddr::V4(d)),
            (s, d) => (IpAddr::V6(to_v6(s)), IpAddr::V6(to_v6(d))),
        };
        // Transport header and checksum.
        let mut l4h = [0u8; 20];
        let (l4len, proto) = match l4 {
            L4::Udp => {
                l4h[0..2].copy_from_slice(&src.port().to_be_bytes());
                l4h[2..4].copy_from_slice(&dst.port().to_be_bytes());
                let len = 8 + payload.len();
                l4h[4..6].copy_from_slice(&(len.min(0xFFFF) as u16).to_be_bytes());
                (8, 17u8)
            }
            L4::Tcp { seq, ack, flags } => {
                l4h[0..2].copy_from_slice(&src.port().to_be_bytes());
                l4h[2..4].copy_from_slice(&dst.port().to_be_bytes());
                l4h[4..8].copy_from_slice(&seq.to_be_bytes());
                l4h[8..12].copy_from_slice(&ack.to_be_bytes());
                l4h[12] = 5 << 4;
                l4h[13] = flags;
                l4h[14..16].copy_from_slice(&65535u16.to_be_bytes());
                (20, 6u8)
            }
        };
        let seg_len = l4len + payload.len();
        let mut sum = pseudo_header_sum(sip, dip, proto, seg_len);
        sum = add_sum(sum, &l4h[..l4len]);
        sum = add_sum(sum, payload);
        let mut ck = fold(sum);
        if proto == 17 && ck == 0 {
            ck = 0xFFFF;
        }
        let ck_at = if proto == 17 { 6 } else { 16 };
        l4h[ck_at..ck_at + 2].copy_from_slice(&ck.to_be_bytes());

        let ip_header_len = if sip.is_ipv4() { 20 } else { 40 };
        if ip_header_len + seg_len > MTU {
            // Only UDP gets here (TCP segments are small): fragment the datagram.
            let mut datagram = Vec::with_capacity(seg_len);
            datagram.extend_from_slice(&l4h[..l4len]);
            datagram.extend_from_slice(payload);
            return self.fragments(time, src, dst, sip, dip, proto, &datagram);
        }
        self.pkt.clear();
        ethernet(&mut self.pkt, sip, dip);
        let id = self.next_id();
        ip_header(&mut self.pkt, sip, dip, proto, seg_len, id, None);
        self.pkt.extend_from_slice(&l4h[..l4len]);
        self.pkt.extend_from_slice(payload);
        self.write_frame(time)
    }

    fn next_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    #[allow(clippy::too_many_arguments)]
    fn fragments(
        &mut self,
        time: (u32, u32),
        _src: SocketAddr,
        _dst: SocketAddr,
        sip: IpAddr,
        dip: IpAddr,
        proto: u8,
        datagram: &[u8],
    ) -> io::Result<()> {
        let id = self.next_id();
        let mut offset = 0;
        // Fragment data is a multiple of 8 bytes, IPv6 fragments have an 8-byte header.
        let size = if sip.is_ipv4() { MTU - 20 } else { MTU - 48 } & !7;
        for chunk in datagram.chunks(size) {
            let more = offset + chunk.len() < datagram.len();
            self.pkt.clear();
            ethernet(&mut self.pkt, sip, dip);
            ip_header(
                &mut self.pkt,
                sip,
                dip,
                proto,
                chunk.len(),
                id,
                Some((offset, more)),
            );
            self.pkt.extend_from_slice(chunk);
            self.write_frame(time)?;
            offset += chunk.len();
        }
        Ok(())
    }

    fn write_frame(&mut self, (sec, nsec): (u32, u32)) -> io::Result<()> {
        let len = self.pkt.len() as u32;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&sec.to_le_bytes());
        h[4..8].copy_from_slice(&nsec.to_le_bytes());
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&self.pkt)
    }
}

impl<W: Write> Sink for PcapWriter<W> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        // What fits in a UDP datagram in one IP datagram (its length fields are 16 bits).
        let udp_max = if r.src.is_ipv4() && r.dst.is_ipv4() {
            65_535 - 20 - 8
        } else {
            65_535 - 8
        };
        let max = match r.proto {
            Proto::Udp | Proto::Quic => udp_max,
            _ => 65_535,
        };
        if r.wire.len() > max {
            return Err(SinkError::Other(format!(
                "a DNS message of {} bytes is larger than {} over {} can carry",
                r.wire.len(),
                max,
                r.proto
            )));
        }
        let time = split_time(r.time_ns).ok_or_else(|| {
            SinkError::Other(format!(
                "time {} ns is outside what a pcap file can hold (1970 to 2106)",
                r.time_ns
            ))
        })?;
        match r.proto {
            Proto::Udp | Proto::Quic => self.packet(time, r.src, r.dst, L4::Udp, r.wire)?,
            Proto::Tcp | Proto::Tls | Proto::Https => self.tcp_record(r, time)?,
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.out.flush()?;
        Ok(())
    }
}

fn split_time(ns: i64) -> Option<(u32, u32)> {
    if ns < 0 {
        return None;
    }
    let sec = u32::try_from(ns / 1_000_000_000).ok()?;
    Some((sec, (ns % 1_000_000_000) as u32))
}

fn to_v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// A locally administered MAC address derived from an IP address.
fn mac(ip: IpAddr) -> [u8; 6] {
    let o = match ip {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => {
            let o = a.octets();
            [o[12], o[13], o[14], o[15]]
        }
    };
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

fn ethernet(pkt: &mut Vec<u8>, src: IpAddr, dst: IpAddr) {
    pkt.extend_from_slice(&mac(dst));
    pkt.extend_from_slice(&mac(src));
    let ethertype: u16 = if src.is_ipv4() { 0x0800 } else { 0x86DD };
    pkt.extend_from_slice(&ethertype.to_be_bytes());
}

/// Appends an IP header for `payload_len` bytes of `proto`; `frag`: (offset, more fragments).
fn ip_header(
    pkt: &mut Vec<u8>,
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    payload_len: usize,
    id: u16,
    frag: Option<(usize, bool)>,
) {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = [0u8; 20];
            h[0] = 0x45;
            h[2..4].copy_from_slice(&((20 + payload_len) as u16).to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            let flags: u16 = match frag {
                Some((off, more)) => ((off / 8) as u16) | if more { 0x2000 } else { 0 },
                None => 0x4000, // don't fragment
            };
            h[6..8].copy_from_slice(&flags.to_be_bytes());
            h[8] = 64;
            h[9] = proto;
            h[12..16].copy_from_slice(&s.octets());
            h[16..20].copy_from_slice(&d.octets());
            let ck = fold(add_sum(0, &h));
            h[10..12].copy_from_slice(&ck.to_be_bytes());
            pkt.extend_from_slice(&h);
        }
        (s, d) => {
            let frag_len = if frag.is_some() { 8 } else { 0 };
            let mut h = [0u8; 40];
            h[0] = 0x60;
            h[4..6].copy_from_slice(&((payload_len + frag_len) as u16).to_be_bytes());
            h[6] = if frag.is_some() { 44 } else { proto };
            h[7] = 64;
            h[8..24].copy_from_slice(&to_v6(s).octets());
            h[24..40].copy_from_slice(&to_v6(d).octets());
            pkt.extend_from_slice(&h);
            if let Some((off, more)) = frag {
                let mut f = [0u8; 8];
                f[0] = proto;
                f[2..4].copy_from_slice(&((off as u16 & 0xFFF8) | more as u16).to_be_bytes());
                f[4..8].copy_from_slice(&(id as u32).to_be_bytes());
                pkt.extend_from_slice(&f);
            }
        }
    }
}

/// One's complement sum of the pseudo-header.
fn pseudo_header_sum(src: IpAddr, dst: IpAddr, proto: u8, len: usize) -> u64 {
    let mut sum = 0u64;
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            sum = add_sum(sum, &s.octets());
            sum = add_sum(sum, &d.octets());
            sum += proto as u64 + len as u64;
        }
        (s, d) => {
            sum = add_sum(sum, &to_v6(s).octets());
            sum = add_sum(sum, &to_v6(d).octets());
            sum += len as u64 + proto as u64;
        }
    }
    sum
}

/// Adds big-endian 16-bit words of `data` (odd length: padded with a zero byte).
fn add_sum(mut sum: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

fn fold(mut sum: u64) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}
