//! From captured frames to DNS messages: link layer, IP (with fragment reassembly), UDP, TCP.

use super::deferred::Deferred;
use super::frag::{Defrag, Fragment};
use super::net::{ether_payload, link_payload, parse_ip, parse_tcp, skip_ipv6_extensions, Ip};
use super::options::{CaptureOptions, Keep, PortSet};
use super::ports::PortCensus;
use super::tcp::{Out, TcpLimits, TcpTable};
use super::tunnel::{self, Inner, Tunnel};
use crate::{Proto, Sink, SinkError, SkipReason};
use ldplayer_dns::Message;
use std::net::{IpAddr, SocketAddr};

const UDP: u8 = 17;
const TCP: u8 = 6;
/// Housekeeping (timeouts) runs at most this often, in capture time.
const SWEEP_INTERVAL_NS: i64 = 1_000_000_000;

/// Decodes captured frames into DNS messages, one frame at a time.
///
/// This is the capture-format-independent part of [`CaptureReader`](super::CaptureReader): feed
/// it frames with [`PacketDecoder::packet`] in capture order, then call
/// [`PacketDecoder::finish`] once to release what TCP reassembly still holds and to count what
/// could not be completed.
pub struct PacketDecoder {
    ports: PortSet,
    keep: Keep,
    keep_malformed: bool,
    census: PortCensus,
    defrag: Defrag,
    tcp: TcpTable,
    next_sweep: Option<i64>,
    last_time: i64,
    /// Split mode: TCP segments and IP fragments are handed to the sink undecoded, with a
    /// mark where each packet begins (see [`Deferred`]).
    defer: bool,
    /// The number of the packet being decoded, for the skips of [`PacketDecoder::resume`].
    packet: u64,
}

impl PacketDecoder {
    /// A decoder with these options.
    pub fn new(options: &CaptureOptions) -> Self {
        PacketDecoder {
            ports: PortSet::new(&options.dns_ports),
            keep: options.keep,
            keep_malformed: options.keep_malformed,
            census: PortCensus::default(),
            defrag: Defrag::new(options.max_frag_bytes, options.frag_timeout_ns),
            tcp: TcpTable::new(TcpLimits {
                max_flows: options.max_tcp_flows,
                max_buffer: options.max_tcp_buffer_per_flow,
                gap_timeout_ns: options.tcp_gap_timeout_ns,
                idle_timeout_ns: options.tcp_idle_timeout_ns,
            }),
            next_sweep: None,
            last_time: 0,
            defer: false,
            packet: 0,
        }
    }

    /// The decoder in split mode: it decodes what each packet holds by itself (DNS over UDP,
    /// the tunnels around it) and hands TCP segments and IP fragments on DNS ports to the sink
    /// undecoded ([`Sink::deferred`]), with a [`Deferred::Packet`] where each packet begins, for
    /// a decoder that holds the state of the whole capture to [`resume`](Self::resume). Ports
    /// are counted here for UDP and TCP; fragments are counted by no census.
    pub fn split(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Decodes what a decoder in split mode handed over, in the order it was handed over
    /// (across files, as if they were one capture): a packet's start runs the reassembly
    /// timeouts as [`packet`](Self::packet) would, segments and fragments are reassembled, and
    /// the messages they complete go to `sink`. Only the sink's errors are returned.
    pub fn resume(&mut self, part: Deferred<'_>, sink: &mut dyn Sink) -> Result<(), SinkError> {
        let mut out = Out {
            sink,
            packet: self.packet,
            keep: self.keep,
            keep_malformed: self.keep_malformed,
        };
        match part {
            Deferred::Packet { time_ns, number } => {
                self.packet = number;
                out.packet = number;
                self.last_time = time_ns;
                self.housekeeping(time_ns, &mut out)
            }
            Deferred::Segment { src, dst, segment } => match parse_tcp(segment) {
                Some(h) => {
                    let time = self.last_time;
                    self.tcp
                        .segment(src, dst, &h, &segment[h.header_len..], time, &mut out)
                }
                None => Ok(()),
            },
            Deferred::Fragment {
                header,
                depth,
                payload,
            } => self.reassemble(header.fragment(payload), self.last_time, &mut out, depth),
        }
    }

    /// Runs the reassembly timeouts at most once per [`SWEEP_INTERVAL_NS`] of capture time.
    fn housekeeping(&mut self, time_ns: i64, out: &mut Out<'_>) -> Result<(), SinkError> {
        match self.next_sweep {
            Some(t) if time_ns < t => Ok(()),
            _ => {
                self.next_sweep = Some(time_ns.saturating_add(SWEEP_INTERVAL_NS));
                self.defrag.expire(time_ns, &mut |r| out.skip(r));
                self.tcp.sweep(time_ns, out)
            }
        }
    }

    /// Decodes one frame of link type `link` (a `LINKTYPE_*` value) captured at `time_ns`;
    /// `packet` is its number in the capture (from 1), used as the location of skips. Messages
    /// go to `sink`; only the sink's errors are returned.
    pub fn packet(
        &mut self,
        link: u32,
        time_ns: i64,
        frame: &[u8],
        packet: u64,
        sink: &mut dyn Sink,
    ) -> Result<(), SinkError> {
        let mut out = Out {
            sink,
            packet,
            keep: self.keep,
            keep_malformed: self.keep_malformed,
        };
        self.last_time = time_ns;
        if self.defer {
            out.sink.deferred(Deferred::Packet {
                time_ns,
                number: packet,
            })?;
        } else {
            self.housekeeping(time_ns, &mut out)?;
        }
        let ip = match link_payload(link, frame) {
            Ok(Some(ip)) => ip,
            Ok(None) => return Ok(()),
            Err(r) => {
                out.skip(r);
                return Ok(());
            }
        };
        self.ip_packet(ip, time_ns, &mut out, 0)
    }

    /// Decodes an IP packet (`depth` tunnels deep).
    fn ip_packet(
        &mut self,
        ip: &[u8],
        time_ns: i64,
        out: &mut Out<'_>,
        depth: u8,
    ) -> Result<(), SinkError> {
        let ip = match parse_ip(ip) {
            Ok(ip) => ip,
            Err(r) => {
                out.skip(r);
                return Ok(());
            }
        };
        match ip {
            Ip::Whole {
                src,
                dst,
                proto,
                payload,
                truncated,
            } => self.transport(src, dst, proto, payload, truncated, time_ns, out, depth),
            Ip::Fragment {
                header,
                payload,
                truncated,
            } => {
                let (src, proto) = (header.src, header.proto);
                // IPv6 may have more extension headers after the fragment header.
                let v6_ext = src.is_ipv6() && matches!(proto, 0 | 43 | 51 | 60 | 135 | 139 | 140);
                let tunnel = matches!(
                    proto,
                    tunnel::PROTO_GRE | tunnel::PROTO_IPV4 | tunnel::PROTO_IPV6
                );
                if proto != UDP && proto != TCP && !v6_ext && !tunnel {
                    return Ok(());
                }
                if truncated {
                    out.skip(SkipReason::TruncatedPacket);
                    return Ok(());
                }
                if self.defer {
                    return out.sink.deferred(Deferred::Fragment {
                        header,
                        depth,
                        payload,
                    });
                }
                self.reassemble(header.fragment(payload), time_ns, out, depth)
            }
            Ip::Opaque => Ok(()),
        }
    }

    /// Adds a fragment; decodes the datagram it completes, if any.
    fn reassemble(
        &mut self,
        frag: Fragment<'_>,
        time_ns: i64,
        out: &mut Out<'_>,
        depth: u8,
    ) -> Result<(), SinkError> {
        let (src, dst) = (frag.key.src, frag.key.dst);
        let proto = frag.key.proto;
        let Some(data) = self.defrag.add(frag, time_ns, &mut |r| out.skip(r)) else {
            return Ok(());
        };
        let (proto, body) = if src.is_ipv6() {
            match skip_ipv6_extensions(proto, &data) {
                Some(x) => x,
                None => {
                    self.defrag.recycle(data);
                    return Ok(());
                }
            }
        } else {
            (proto, &data[..])
        };
        let r = self.transport(src, dst, proto, body, false, time_ns, out, depth);
        self.defrag.recycle(data);
        r
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn transport(
        &mut self,
        src: IpAddr,
        dst: IpAddr,
        proto: u8,
        payload: &[u8],
        truncated: bool,
        time: i64,
        out: &mut Out<'_>,
        depth: u8,
    ) -> Result<(), SinkError> {
        match proto {
            tunnel::PROTO_GRE | tunnel::PROTO_IPV4 | tunnel::PROTO_IPV6 if !truncated => {
                let inner = match proto {
                    tunnel::PROTO_GRE => tunnel::gre(payload).map(|i| (Tunnel::Gre, i)),
                    _ => Some((Tunnel::IpInIp, Inner::Ip(payload))),
                };
                match inner {
                    Some((kind, inner)) => self.tunneled(kind, inner, time, out, depth),
                    None => Ok(()),
                }
            }
            UDP => {
                if payload.len() < 8 {
                    if payload.len() < 4
                        || self.is_dns(
                            u16::from_be_bytes([payload[0], payload[1]]),
                            u16::from_be_bytes([payload[2], payload[3]]),
                        )
                    {
                        out.skip(cut_short(truncated));
                    }
                    return Ok(());
                }
                let (sport, dport) = ports(payload);
                if !self.is_dns(sport, dport) && !truncated {
                    let body = &payload[8..];
                    let inner = if dport == tunnel::VXLAN_PORT {
                        tunnel::vxlan(body).map(|i| (Tunnel::Vxlan, i))
                    } else if dport == tunnel::GENEVE_PORT {
                        tunnel::geneve(body).map(|i| (Tunnel::Geneve, i))
                    } else {
                        None
                    };
                    if let Some((kind, inner)) = inner {
                        return self.tunneled(kind, inner, time, out, depth);
                    }
                }
                if !self.count_ports(sport, dport) {
                    return Ok(());
                }
                if truncated {
                    out.skip(SkipReason::TruncatedPacket);
                    return Ok(());
                }
                let ulen = u16::from_be_bytes([payload[4], payload[5]]) as usize;
                let end = if ulen == 0 {
                    // Jumbogram or offload: trust the IP length.
                    payload.len()
                } else if ulen < 8 {
                    out.skip(SkipReason::MalformedIp);
                    return Ok(());
                } else if ulen > payload.len() {
                    out.skip(SkipReason::TruncatedPacket);
                    return Ok(());
                } else {
                    ulen
                };
                let wire = &payload[8..end];
                let (src, dst) = (SocketAddr::new(src, sport), SocketAddr::new(dst, dport));
                match Message::parse(wire) {
                    Ok(_) => out.record(src, dst, Proto::Udp, 0, wire, time),
                    Err(e) => out.malformed(e, wire, |out, w| {
                        out.record(src, dst, Proto::Udp, 0, w, time)
                    }),
                }
            }
            TCP => {
                if payload.len() < 4 {
                    out.skip(cut_short(truncated));
                    return Ok(());
                }
                let (sport, dport) = ports(payload);
                if !self.count_ports(sport, dport) {
                    return Ok(());
                }
                let Some(h) = parse_tcp(payload) else {
                    out.skip(cut_short(truncated));
                    return Ok(());
                };
                if truncated {
                    out.skip(SkipReason::TruncatedPacket);
                    return Ok(());
                }
                if self.defer {
                    return out.sink.deferred(Deferred::Segment {
                        src: SocketAddr::new(src, sport),
                        dst: SocketAddr::new(dst, dport),
                        segment: payload,
                    });
                }
                self.tcp.segment(
                    SocketAddr::new(src, sport),
                    SocketAddr::new(dst, dport),
                    &h,
                    &payload[h.header_len..],
                    time,
                    out,
                )
            }
            _ => Ok(()),
        }
    }

    /// Decodes what a tunnel of `kind` carries, counted; tunnels nested deeper than
    /// [`tunnel::MAX_DEPTH`] are left alone.
    fn tunneled(
        &mut self,
        kind: Tunnel,
        inner: Inner<'_>,
        time: i64,
        out: &mut Out<'_>,
        depth: u8,
    ) -> Result<(), SinkError> {
        if depth >= tunnel::MAX_DEPTH {
            return Ok(());
        }
        self.census.tunnel(kind);
        let ip = match inner {
            Inner::Ip(ip) => ip,
            Inner::Ethernet(frame) => {
                if frame.len() < 14 {
                    out.skip(SkipReason::TruncatedPacket);
                    return Ok(());
                }
                match ether_payload(u16::from_be_bytes([frame[12], frame[13]]), &frame[14..]) {
                    Ok(Some(ip)) => ip,
                    Ok(None) => return Ok(()),
                    Err(r) => {
                        out.skip(r);
                        return Ok(());
                    }
                }
            }
        };
        self.ip_packet(ip, time, out, depth + 1)
    }

    #[inline]
    fn is_dns(&self, a: u16, b: u16) -> bool {
        self.ports.contains(a) || self.ports.contains(b)
    }

    /// Whether a UDP or TCP packet with these ports is on a DNS port; counted in the census
    /// either way.
    #[inline]
    fn count_ports(&mut self, sport: u16, dport: u16) -> bool {
        let dns = self.is_dns(sport, dport);
        if dns {
            self.census.dns_packet();
        } else {
            self.census.other_packet(sport, dport);
        }
        dns
    }

    /// The UDP and TCP ports seen so far: how many packets were on the DNS ports, and the
    /// busiest others.
    pub fn census(&self) -> &PortCensus {
        &self.census
    }

    /// Ends the capture: frames what TCP reassembly still holds (skipping holes) and counts the
    /// fragments that never completed. `packet` is the location reported for those skips (the
    /// number of the last packet).
    pub fn finish(&mut self, packet: u64, sink: &mut dyn Sink) -> Result<(), SinkError> {
        let mut out = Out {
            sink,
            packet,
            keep: self.keep,
            keep_malformed: self.keep_malformed,
        };
        self.defrag.flush(&mut |r| out.skip(r));
        self.tcp.finish(&mut out)
    }

    /// Capture time of the last frame decoded.
    pub fn last_time(&self) -> i64 {
        self.last_time
    }
}

/// Why a transport header that does not fit in what was captured is skipped: the capture cut
/// the packet (`truncated`, its snap length) or the IP header claimed too little.
#[inline]
fn cut_short(truncated: bool) -> SkipReason {
    if truncated {
        SkipReason::TruncatedPacket
    } else {
        SkipReason::MalformedIp
    }
}

/// The source and destination ports at the start of a UDP or TCP header of at least 4 bytes.
#[inline]
fn ports(header: &[u8]) -> (u16, u16) {
    (
        u16::from_be_bytes([header[0], header[1]]),
        u16::from_be_bytes([header[2], header[3]]),
    )
}
