//! Where a capture's traffic was when none of it was on the DNS ports.

use crate::capture::PortCensus;
use std::fmt;

/// How many of the busiest ports a hint names.
const NAMED_PORTS: usize = 3;

/// The busiest UDP/TCP ports of a capture without DNS on the ports asked for; it reads "no DNS
/// on port 53; the busiest UDP/TCP ports were 5392 (41 packets), ...; try --dns-port 5392".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHint {
    /// The DNS ports asked for.
    pub dns_ports: Vec<u16>,
    /// The busiest other ports with their packet counts, busiest first (never empty).
    pub busiest: Vec<(u16, u64)>,
}

impl PortHint {
    /// The hint a finished capture read with `dns_ports` calls for: `None` when there was DNS,
    /// or no other UDP/TCP packet either.
    pub fn from_census(census: &PortCensus, dns_ports: &[u16]) -> Option<PortHint> {
        PortHint::new(census.dns_packets(), census.busiest(NAMED_PORTS), dns_ports)
    }

    /// The hint for `dns_packets` packets on the DNS ports and the `busiest` other ports.
    fn new(dns_packets: u64, busiest: Vec<(u16, u64)>, dns_ports: &[u16]) -> Option<PortHint> {
        (dns_packets == 0 && !busiest.is_empty()).then(|| PortHint {
            dns_ports: dns_ports.to_vec(),
            busiest,
        })
    }
}

impl fmt::Display for PortHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural =
            |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
        let asked = self
            .dns_ports
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let ports = self
            .busiest
            .iter()
            .map(|(port, n)| format!("{port} ({n} {})", plural(*n as usize, "packet", "packets")))
            .collect::<Vec<_>>()
            .join(", ");
        write!(
            f,
            "no DNS on {} {asked}; the busiest UDP/TCP {} {ports}",
            plural(self.dns_ports.len(), "port", "ports"),
            plural(self.busiest.len(), "port was", "ports were"),
        )?;
        if let Some((top, _)) = self.busiest.first() {
            write!(f, "; try --dns-port {top}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(dns_packets: u64, busiest: &[(u16, u64)], dns_ports: &[u16]) -> Option<String> {
        PortHint::new(dns_packets, busiest.to_vec(), dns_ports).map(|h| h.to_string())
    }

    #[test]
    fn names_the_ports_in_plain_words() {
        assert_eq!(
            hint(0, &[(5392, 41), (40001, 1)], &[53]).as_deref(),
            Some(
                "no DNS on port 53; the busiest UDP/TCP ports were 5392 (41 packets), \
                 40001 (1 packet); try --dns-port 5392"
            )
        );
        assert_eq!(
            hint(0, &[(853, 2)], &[53, 5353]).as_deref(),
            Some("no DNS on ports 53, 5353; the busiest UDP/TCP port was 853 (2 packets); try --dns-port 853")
        );
    }

    #[test]
    fn nothing_to_say_with_dns_or_without_traffic() {
        assert_eq!(hint(1, &[(5392, 41)], &[53]), None);
        assert_eq!(hint(0, &[], &[53]), None);
    }
}
