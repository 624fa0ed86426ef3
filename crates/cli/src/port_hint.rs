//! Telling the user where a capture's traffic was when none of it was on the DNS ports, instead
//! of a silent "0 messages".

use ldplayer_trace::capture::CaptureReader;
use ldplayer_trace::{Sink, Source, TraceError};
use std::io::Read;

/// How many of the busiest ports the hint names.
const NAMED_PORTS: usize = 3;

/// A capture reader that, once done, says so on standard error when the capture held UDP or
/// TCP packets but none on the DNS ports, naming the busiest ports.
pub struct PortHint<R: Read> {
    reader: CaptureReader<R>,
    dns_ports: Vec<u16>,
}

impl<R: Read> PortHint<R> {
    /// Wraps `reader`, which reads DNS on `dns_ports`.
    pub fn new(reader: CaptureReader<R>, dns_ports: &[u16]) -> Self {
        PortHint {
            reader,
            dns_ports: dns_ports.to_vec(),
        }
    }
}

impl<R: Read> Source for PortHint<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let result = self.reader.run(sink);
        let census = self.reader.census();
        let busiest = census.busiest(NAMED_PORTS);
        if let Some(hint) = hint(census.dns_packets(), &busiest, &self.dns_ports) {
            eprintln!("ldplayer: {hint}");
        }
        result
    }
}

/// "no DNS on port 53; the busiest UDP/TCP ports were 5392 (41 packets), ...; try --dns-port
/// 5392" from the packets seen on the DNS ports and the busiest other ports with their packet
/// counts, or `None` when there was DNS or no other UDP/TCP packet either.
pub fn hint(dns_packets: u64, busiest: &[(u16, u64)], dns_ports: &[u16]) -> Option<String> {
    if dns_packets > 0 {
        return None;
    }
    let (top, _) = *busiest.first()?;
    let asked = dns_ports
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let plural = |n: usize, one: &str, many: &str| if n == 1 { one } else { many }.to_string();
    let ports = busiest
        .iter()
        .map(|(port, n)| format!("{port} ({n} {})", plural(*n as usize, "packet", "packets")))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "no DNS on {} {asked}; the busiest UDP/TCP {} {ports}; try --dns-port {top}",
        plural(dns_ports.len(), "port", "ports"),
        plural(busiest.len(), "port was", "ports were"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
