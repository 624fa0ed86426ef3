//! Telling the user where a capture's traffic was when none of it was on the DNS ports, instead
//! of a silent "0 messages".

use ldplayer_pcap::{CaptureReader, PortCensus};
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
        if let Some(hint) = hint(self.reader.census(), &self.dns_ports) {
            eprintln!("ldplayer: {hint}");
        }
        result
    }
}

/// "no DNS on port 53; the busiest UDP/TCP ports were 5392 (41 packets), ...; try --dns-port
/// 5392", or `None` when there was DNS or no UDP/TCP packet at all.
pub fn hint(census: &PortCensus, dns_ports: &[u16]) -> Option<String> {
    if census.dns_packets() > 0 {
        return None;
    }
    let busiest = census.busiest(NAMED_PORTS);
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
