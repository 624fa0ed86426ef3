//! Tunnels the decoder looks inside, as tshark does: VXLAN (RFC 7348, UDP port 4789), Geneve
//! (RFC 8926, UDP port 6081), GRE (RFC 2784 and 2890, IP protocol 47; IP or Ethernet inside)
//! and IP in IP (IPv4 or IPv6 inside IPv4 or IPv6, protocols 4 and 41).
//!
//! Captures taken on a cloud or data-centre underlay hold DNS only inside such tunnels; read as
//! plain UDP they decoded to nothing, and the port hint even suggested the tunnel's port.

use std::fmt;

/// The UDP port of VXLAN (IANA).
pub(crate) const VXLAN_PORT: u16 = 4789;
/// The UDP port of Geneve (IANA).
pub(crate) const GENEVE_PORT: u16 = 6081;
/// IP protocol numbers of the tunnels that ride on IP itself.
pub(crate) const PROTO_GRE: u8 = 47;
pub(crate) const PROTO_IPV4: u8 = 4;
pub(crate) const PROTO_IPV6: u8 = 41;

/// How deep tunnels may nest (a tunnel in a tunnel...): beyond it, packets are left alone.
pub(crate) const MAX_DEPTH: u8 = 4;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_BRIDGING: u16 = 0x6558;

/// A kind of tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tunnel {
    /// VXLAN: Ethernet in UDP.
    Vxlan,
    /// Geneve: Ethernet or IP in UDP, with options.
    Geneve,
    /// GRE: IP or Ethernet in IP.
    Gre,
    /// IPv4 or IPv6 directly in IP.
    IpInIp,
}

impl Tunnel {
    /// Every kind, in the order they are reported.
    pub const ALL: [Tunnel; 4] = [Tunnel::Vxlan, Tunnel::Geneve, Tunnel::Gre, Tunnel::IpInIp];

    /// Its name in summaries and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            Tunnel::Vxlan => "vxlan",
            Tunnel::Geneve => "geneve",
            Tunnel::Gre => "gre",
            Tunnel::IpInIp => "ipip",
        }
    }
}

impl fmt::Display for Tunnel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a tunnel carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inner<'a> {
    /// An Ethernet frame.
    Ethernet(&'a [u8]),
    /// An IPv4 or IPv6 packet.
    Ip(&'a [u8]),
}

/// The payload of a VXLAN packet (after the UDP header): its Ethernet frame, if the header is
/// whole and says a VNI is present (the I flag).
pub(crate) fn vxlan(udp_payload: &[u8]) -> Option<Inner<'_>> {
    if udp_payload.len() < 8 || udp_payload[0] & 0x08 == 0 {
        return None;
    }
    Some(Inner::Ethernet(&udp_payload[8..]))
}

/// The payload of a Geneve packet (after the UDP header), version 0, options skipped.
pub(crate) fn geneve(udp_payload: &[u8]) -> Option<Inner<'_>> {
    if udp_payload.len() < 8 || udp_payload[0] >> 6 != 0 {
        return None;
    }
    let options = (udp_payload[0] & 0x3F) as usize * 4;
    let protocol = u16::from_be_bytes([udp_payload[2], udp_payload[3]]);
    let inner = udp_payload.get(8 + options..)?;
    by_ethertype(protocol, inner)
}

/// The payload of a GRE packet (version 0; checksum, key and sequence number skipped as its
/// flags say). Version 1 (PPTP's enhanced GRE) carries PPP, not decoded.
pub(crate) fn gre(ip_payload: &[u8]) -> Option<Inner<'_>> {
    if ip_payload.len() < 4 {
        return None;
    }
    let flags = ip_payload[0];
    let version = ip_payload[1] & 0x07;
    // Routing present (the old RFC 1701 form) is not decoded either.
    if version != 0 || flags & 0x40 != 0 {
        return None;
    }
    let mut at = 4;
    for bit in [0x80, 0x20, 0x10] {
        // Checksum (with the reserved half), key, sequence number: 4 bytes each.
        if flags & bit != 0 {
            at += 4;
        }
    }
    let protocol = u16::from_be_bytes([ip_payload[2], ip_payload[3]]);
    by_ethertype(protocol, ip_payload.get(at..)?)
}

fn by_ethertype(protocol: u16, inner: &[u8]) -> Option<Inner<'_>> {
    match protocol {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some(Inner::Ip(inner)),
        ETHERTYPE_BRIDGING => Some(Inner::Ethernet(inner)),
        _ => None,
    }
}

/// Packets found inside each kind of tunnel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TunnelCounts([u64; 4]);

impl TunnelCounts {
    pub(crate) fn add(&mut self, tunnel: Tunnel) {
        self.0[tunnel as usize] += 1;
    }

    /// Adds `other`'s counts (those of another file).
    pub fn merge(&mut self, other: &TunnelCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// Packets taken out of `tunnel`.
    pub fn get(&self, tunnel: Tunnel) -> u64 {
        self.0[tunnel as usize]
    }

    /// The kinds with packets, with their counts.
    pub fn iter(&self) -> impl Iterator<Item = (Tunnel, u64)> + '_ {
        Tunnel::ALL
            .into_iter()
            .map(|t| (t, self.get(t)))
            .filter(|(_, n)| *n > 0)
    }

    /// No packet came out of a tunnel.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|n| *n == 0)
    }
}

impl fmt::Display for TunnelCounts {
    /// `vxlan 120 packets, gre 4 packets`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (t, n) in self.iter() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{t} {n} packets")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_as_their_rfcs_say() {
        // VXLAN: I flag, VNI 42.
        let mut v = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
        v.extend_from_slice(b"frame");
        assert_eq!(vxlan(&v), Some(Inner::Ethernet(b"frame")));
        v[0] = 0;
        assert_eq!(vxlan(&v), None, "no VNI flag");
        // Geneve: 1 option word, IPv4 inside.
        let g = [0x01, 0, 0x08, 0x00, 0, 0, 7, 0, 1, 2, 3, 4, 0x45];
        assert_eq!(geneve(&g), Some(Inner::Ip(&[0x45])));
        assert_eq!(geneve(&[0x40, 0, 0x08, 0, 0, 0, 0, 0]), None, "version 1");
        // GRE with key and sequence number, IPv6 inside.
        let r = [0x30, 0, 0x86, 0xDD, 0, 0, 0, 1, 0, 0, 0, 2, 0x60];
        assert_eq!(gre(&r), Some(Inner::Ip(&[0x60])));
        // GRE with checksum, Ethernet inside.
        let c = [0x80, 0, 0x65, 0x58, 0xab, 0xcd, 0, 0, 0xee];
        assert_eq!(gre(&c), Some(Inner::Ethernet(&[0xee])));
        assert_eq!(gre(&[0, 1, 0x88, 0x0b]), None, "PPTP's version 1");
        assert_eq!(gre(&[0x30, 0, 0x08, 0, 0]), None, "cut short");
    }
}
