//! Which UDP and TCP ports a capture's traffic used, when it was not on the DNS ports.
//!
//! A capture of DNS on another port than the ones asked for (5353, 5300, a test server's)
//! decodes to nothing; the census lets the user be told where the traffic went instead of a
//! silent "0 messages".

use super::tunnel::{Tunnel, TunnelCounts};

/// Packets per UDP/TCP port among the packets that are not on the DNS ports, and how many packets
/// were on them.
///
/// Counting is one increment per port of a packet in a fixed table of 65,536 counters (256 KiB,
/// allocated at the first packet that needs it): bounded whatever the capture holds.
#[derive(Debug, Clone, Default)]
pub struct PortCensus {
    dns_packets: u64,
    other_packets: u64,
    counts: Option<Box<[u32]>>,
    tunnels: TunnelCounts,
}

impl PortCensus {
    /// Counts a UDP or TCP packet on a DNS port.
    #[inline]
    pub(crate) fn dns_packet(&mut self) {
        self.dns_packets += 1;
    }

    /// Counts a UDP or TCP packet on no DNS port, under each of its ports.
    #[inline]
    pub(crate) fn other_packet(&mut self, sport: u16, dport: u16) {
        self.other_packets += 1;
        let counts = self
            .counts
            .get_or_insert_with(|| vec![0u32; 1 << 16].into_boxed_slice());
        counts[sport as usize] = counts[sport as usize].saturating_add(1);
        if dport != sport {
            counts[dport as usize] = counts[dport as usize].saturating_add(1);
        }
    }

    /// Counts a packet found inside a tunnel.
    #[inline]
    pub(crate) fn tunnel(&mut self, kind: Tunnel) {
        self.tunnels.add(kind);
    }

    /// The packets found inside tunnels, by kind of tunnel.
    pub fn tunnels(&self) -> TunnelCounts {
        self.tunnels
    }

    /// UDP and TCP packets with a DNS port (as source or destination).
    pub fn dns_packets(&self) -> u64 {
        self.dns_packets
    }

    /// UDP and TCP packets on other ports.
    pub fn other_packets(&self) -> u64 {
        self.other_packets
    }

    /// The `n` ports with the most packets among those not on a DNS port, busiest first (ties
    /// by port number), with their packet counts.
    pub fn busiest(&self, n: usize) -> Vec<(u16, u64)> {
        let Some(counts) = &self.counts else {
            return Vec::new();
        };
        let mut ports: Vec<(u16, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(p, &c)| (p as u16, c as u64))
            .collect();
        ports.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        ports.truncate(n);
        ports
    }
}
