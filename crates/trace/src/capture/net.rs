//! Link-layer and IP header decoding, by hand: only what DNS extraction needs, without allocation.

use super::deferred::FragmentHeader;
use crate::SkipReason;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Link types the reader decodes (values of the pcap `LINKTYPE_*` registry).
pub mod linktype {
    /// BSD loopback: 4-byte address family in the capturing host's byte order.
    pub const NULL: u32 = 0;
    /// Ethernet, with optional 802.1Q / 802.1ad tags.
    pub const ETHERNET: u32 = 1;
    /// Raw IP (DLT_RAW on some BSDs).
    pub const RAW_12: u32 = 12;
    /// Raw IP (DLT_RAW on OpenBSD).
    pub const RAW_14: u32 = 14;
    /// Raw IPv4 or IPv6.
    pub const RAW: u32 = 101;
    /// OpenBSD loopback: 4-byte address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux "cooked" capture, version 1.
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4.
    pub const IPV4: u32 = 228;
    /// Raw IPv6.
    pub const IPV6: u32 = 229;
    /// Linux "cooked" capture, version 2.
    pub const LINUX_SLL2: u32 = 276;
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;

#[inline]
pub(crate) fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}
#[inline]
pub(crate) fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

/// Finds the IP packet in a frame. `Ok(None)`: a frame that carries no IP (ARP, LLC, ...).
#[inline]
pub(crate) fn link_payload(link: u32, frame: &[u8]) -> Result<Option<&[u8]>, SkipReason> {
    match link {
        linktype::ETHERNET => {
            if frame.len() < 14 {
                return Err(SkipReason::TruncatedPacket);
            }
            ether_payload(be16(frame, 12), &frame[14..])
        }
        linktype::RAW | linktype::RAW_12 | linktype::RAW_14 | linktype::IPV4 | linktype::IPV6 => {
            Ok(Some(frame))
        }
        linktype::LINUX_SLL => {
            if frame.len() < 16 {
                return Err(SkipReason::TruncatedPacket);
            }
            ether_payload(be16(frame, 14), &frame[16..])
        }
        linktype::LINUX_SLL2 => {
            if frame.len() < 20 {
                return Err(SkipReason::TruncatedPacket);
            }
            ether_payload(be16(frame, 0), &frame[20..])
        }
        linktype::NULL | linktype::LOOP => {
            if frame.len() < 4 {
                return Err(SkipReason::TruncatedPacket);
            }
            let be = be32(frame, 0);
            // NULL uses the capturing host's byte order, which the file does not say: a family
            // is a small number, so whichever reading is small is the right one.
            let family = if link == linktype::LOOP || be <= 0xFFFF {
                be
            } else {
                u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]])
            };
            match family {
                // AF_INET everywhere; AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, Darwin.
                2 | 10 | 24 | 28 | 30 => Ok(Some(&frame[4..])),
                _ => Ok(None),
            }
        }
        _ => Err(SkipReason::UnsupportedLinkType),
    }
}

/// The IP packet of an Ethernet frame's payload, after its VLAN tags (`ethertype` is the
/// frame's type field).
#[inline]
pub(crate) fn ether_payload(
    mut ethertype: u16,
    mut rest: &[u8],
) -> Result<Option<&[u8]>, SkipReason> {
    for _ in 0..8 {
        match ethertype {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return Ok(Some(rest)),
            // 802.1Q, 802.1ad, and the old QinQ tags.
            0x8100 | 0x88A8 | 0x9100 | 0x9200 => {
                if rest.len() < 4 {
                    return Err(SkipReason::TruncatedPacket);
                }
                ethertype = be16(rest, 2);
                rest = &rest[4..];
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// What an IP header says about its packet.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ip<'a> {
    /// A whole datagram (not fragmented).
    Whole {
        src: IpAddr,
        dst: IpAddr,
        /// Upper-layer protocol number.
        proto: u8,
        /// The upper-layer bytes, cut to what the IP header says (Ethernet padding removed).
        payload: &'a [u8],
        /// The capture holds fewer bytes than the IP header says.
        truncated: bool,
    },
    /// A fragment of a datagram.
    Fragment {
        /// The datagram it belongs to (IPv4 identification or IPv6 fragment header
        /// identification; IPv6: the fragment header's next header) and where its data goes
        /// in the datagram's fragmentable part.
        header: FragmentHeader,
        payload: &'a [u8],
        truncated: bool,
    },
    /// Nothing to decode further (ESP, no next header).
    Opaque,
}

/// Decodes an IPv4 or IPv6 header.
#[inline]
pub(crate) fn parse_ip(data: &[u8]) -> Result<Ip<'_>, SkipReason> {
    match data.first().map(|b| b >> 4) {
        Some(4) => parse_ipv4(data),
        Some(6) => parse_ipv6(data),
        None => Err(SkipReason::TruncatedPacket),
        _ => Err(SkipReason::MalformedIp),
    }
}

#[inline]
fn parse_ipv4(data: &[u8]) -> Result<Ip<'_>, SkipReason> {
    if data.len() < 20 {
        return Err(SkipReason::TruncatedPacket);
    }
    let ihl = ((data[0] & 0x0F) as usize) * 4;
    if ihl < 20 {
        return Err(SkipReason::MalformedIp);
    }
    let mut total = be16(data, 2) as usize;
    if total == 0 {
        // Segmentation offload on the capturing host: the header does not say; trust the frame.
        total = data.len();
    }
    if total < ihl {
        return Err(SkipReason::MalformedIp);
    }
    if data.len() < ihl {
        return Err(SkipReason::TruncatedPacket);
    }
    let truncated = data.len() < total;
    let payload = &data[ihl..total.min(data.len())];
    let src = IpAddr::V4(Ipv4Addr::new(data[12], data[13], data[14], data[15]));
    let dst = IpAddr::V4(Ipv4Addr::new(data[16], data[17], data[18], data[19]));
    let proto = data[9];
    let frag = be16(data, 6);
    let more = frag & 0x2000 != 0;
    let offset = ((frag & 0x1FFF) as usize) * 8;
    if more || offset != 0 {
        return Ok(Ip::Fragment {
            header: FragmentHeader {
                src,
                dst,
                id: be16(data, 4) as u32,
                proto,
                offset,
                more,
            },
            payload,
            truncated,
        });
    }
    Ok(Ip::Whole {
        src,
        dst,
        proto,
        payload,
        truncated,
    })
}

fn parse_ipv6(data: &[u8]) -> Result<Ip<'_>, SkipReason> {
    if data.len() < 40 {
        return Err(SkipReason::TruncatedPacket);
    }
    let plen = be16(data, 4) as usize;
    // A zero payload length is a jumbogram (or offload): trust the frame.
    let total = if plen == 0 { data.len() } else { 40 + plen };
    let truncated = data.len() < total;
    let body = &data[40..total.min(data.len())];
    let src = IpAddr::V6(Ipv6Addr::from(
        <[u8; 16]>::try_from(&data[8..24]).map_err(|_| SkipReason::TruncatedPacket)?,
    ));
    let dst = IpAddr::V6(Ipv6Addr::from(
        <[u8; 16]>::try_from(&data[24..40]).map_err(|_| SkipReason::TruncatedPacket)?,
    ));
    let mut nh = data[6];
    let mut rest = body;
    for _ in 0..16 {
        match nh {
            // Hop-by-hop, routing, destination options, mobility, HIP, shim6.
            0 | 43 | 60 | 135 | 139 | 140 => {
                if rest.len() < 8 {
                    return Err(trunc_or_malformed(truncated));
                }
                let len = (rest[1] as usize + 1) * 8;
                if rest.len() < len {
                    return Err(trunc_or_malformed(truncated));
                }
                nh = rest[0];
                rest = &rest[len..];
            }
            // Authentication header.
            51 => {
                if rest.len() < 8 {
                    return Err(trunc_or_malformed(truncated));
                }
                let len = (rest[1] as usize + 2) * 4;
                if rest.len() < len {
                    return Err(trunc_or_malformed(truncated));
                }
                nh = rest[0];
                rest = &rest[len..];
            }
            44 => {
                if rest.len() < 8 {
                    return Err(trunc_or_malformed(truncated));
                }
                let off = be16(rest, 2);
                let more = off & 1 != 0;
                let offset = (off & 0xFFF8) as usize;
                let id = be32(rest, 4);
                let proto = rest[0];
                if !more && offset == 0 {
                    // Atomic fragment (RFC 6946): the whole datagram.
                    nh = proto;
                    rest = &rest[8..];
                    continue;
                }
                return Ok(Ip::Fragment {
                    header: FragmentHeader {
                        src,
                        dst,
                        id,
                        proto,
                        offset,
                        more,
                    },
                    payload: &rest[8..],
                    truncated,
                });
            }
            // ESP, no next header.
            50 | 59 => return Ok(Ip::Opaque),
            proto => {
                return Ok(Ip::Whole {
                    src,
                    dst,
                    proto,
                    payload: rest,
                    truncated,
                })
            }
        }
    }
    Err(SkipReason::MalformedIp)
}

fn trunc_or_malformed(truncated: bool) -> SkipReason {
    if truncated {
        SkipReason::TruncatedPacket
    } else {
        SkipReason::MalformedIp
    }
}

/// Walks IPv6 extension headers that follow a fragment header in a reassembled datagram.
pub(crate) fn skip_ipv6_extensions(mut nh: u8, mut rest: &[u8]) -> Option<(u8, &[u8])> {
    for _ in 0..16 {
        match nh {
            0 | 43 | 60 | 135 | 139 | 140 | 51 => {
                if rest.len() < 8 {
                    return None;
                }
                let len = if nh == 51 {
                    (rest[1] as usize + 2) * 4
                } else {
                    (rest[1] as usize + 1) * 8
                };
                if rest.len() < len {
                    return None;
                }
                nh = rest[0];
                rest = &rest[len..];
            }
            // A second fragment header, ESP, no next header: nothing we decode.
            44 | 50 | 59 => return None,
            _ => return Some((nh, rest)),
        }
    }
    None
}

/// The fields of a TCP header that stream reassembly uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpHeader {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub header_len: usize,
}

pub(crate) mod tcp_flag {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const ACK: u8 = 0x10;
}

/// Decodes a TCP header; `None` when it is shorter than it says.
#[inline]
pub(crate) fn parse_tcp(seg: &[u8]) -> Option<TcpHeader> {
    if seg.len() < 20 {
        return None;
    }
    let header_len = ((seg[12] >> 4) as usize) * 4;
    if header_len < 20 || seg.len() < header_len {
        return None;
    }
    Some(TcpHeader {
        seq: be32(seg, 4),
        ack: be32(seg, 8),
        flags: seg[13],
        header_len,
    })
}
