//! Per-client round trips: an extra delay for each client address on top of the link's own,
//! so that one link can carry clients near and far at once.
//!
//! The clients sit on one side of the link ([`Side`]); a packet's client is its source
//! address on the way from that side and its destination address on the way back. Each
//! direction adds half the client's extra round-trip time ([`AddressDelay`]), so a client's
//! round trip is the link's plus its own extra. Packets of one client never overtake each
//! other; packets of different clients may, as their delays differ.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use crate::params::MAX_DELAY;

/// The extra round-trip time of each client address: called once per address seen (the link
/// caches the answer), so it should be a pure function of the address, such as a hash of it
/// mapped onto a distribution.
#[derive(Clone)]
pub struct AddressDelay(Arc<dyn Fn(IpAddr) -> Duration + Send + Sync>);

impl AddressDelay {
    /// Wraps `extra_rtt`, the extra round-trip time of a client address.
    pub fn new(extra_rtt: impl Fn(IpAddr) -> Duration + Send + Sync + 'static) -> AddressDelay {
        AddressDelay(Arc::new(extra_rtt))
    }

    /// The extra round-trip time of `client`.
    pub fn extra_rtt(&self, client: IpAddr) -> Duration {
        (self.0)(client)
    }
}

impl fmt::Debug for AddressDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AddressDelay(..)")
    }
}

/// One of the link's two devices, as named by [`Link::start`](crate::Link::start): `a` and
/// `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Side {
    /// The first device: packets read from it go a→b.
    #[default]
    A,
    /// The second device: packets read from it go b→a.
    B,
}

/// Which address of an IP packet names its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The source address: packets leaving the clients' side.
    Source,
    /// The destination address: packets going to the clients' side.
    Destination,
}

impl Endpoint {
    /// The address of `packet` (an IPv4 or IPv6 packet as a TUN device gives it) at this end;
    /// `None` for a packet too short for its header's addresses or not IP at all.
    pub fn address(self, packet: &[u8]) -> Option<IpAddr> {
        let version = packet.first()? >> 4;
        let source = self == Endpoint::Source;
        match version {
            4 => {
                let at = if source { 12 } else { 16 };
                let octets: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::V4(Ipv4Addr::from(octets)))
            }
            6 => {
                let at = if source { 8 } else { 24 };
                let octets: [u8; 16] = packet.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::V6(Ipv6Addr::from(octets)))
            }
            _ => None,
        }
    }
}

/// The cache is pruned when it grows past this many clients (and later past twice what
/// remained after the last pruning).
const CACHE_LIMIT: usize = 1 << 20;

/// What one direction knows of each client: its extra one-way delay and, to keep its packets
/// in order, its latest departure.
#[derive(Debug, Clone)]
pub(crate) struct ClientPaths {
    delay: AddressDelay,
    clients: HashMap<Option<IpAddr>, Client>,
    prune_above: usize,
}

/// One client's entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    /// Half the client's extra round-trip time, in nanoseconds.
    pub(crate) extra_ns: u64,
    /// The latest departure handed out to the client (0 before any).
    pub(crate) last_departure_ns: u64,
}

impl ClientPaths {
    /// Nothing known yet of the clients of `delay`.
    pub(crate) fn new(delay: AddressDelay) -> ClientPaths {
        ClientPaths {
            delay,
            clients: HashMap::new(),
            prune_above: CACHE_LIMIT,
        }
    }

    /// The entry of `client` (`None`: a packet without one, which gets no extra delay) for a
    /// packet arriving at `now_ns`. When the cache is full, clients with nothing in flight
    /// are forgotten: their delay is asked again when they come back, and with no departure
    /// after `now_ns` they have no order to keep.
    pub(crate) fn client(&mut self, client: Option<IpAddr>, now_ns: u64) -> &mut Client {
        if self.clients.len() >= self.prune_above && !self.clients.contains_key(&client) {
            self.clients.retain(|_, c| c.last_departure_ns > now_ns);
            self.prune_above = CACHE_LIMIT.max(2 * self.clients.len());
        }
        let delay = &self.delay;
        self.clients.entry(client).or_insert_with(|| Client {
            extra_ns: client.map_or(0, |ip| one_way_ns(delay.extra_rtt(ip))),
            last_departure_ns: 0,
        })
    }
}

/// Half a round-trip time in nanoseconds, at most [`MAX_DELAY`].
fn one_way_ns(rtt: Duration) -> u64 {
    u64::try_from(rtt.min(2 * MAX_DELAY).as_nanos() / 2).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p
    }

    fn ipv6(src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, 17, 64];
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p
    }

    #[test]
    fn addresses_come_from_ipv4_and_ipv6_headers() {
        let v4 = ipv4([10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!(
            Endpoint::Source.address(&v4),
            Some("10.0.0.1".parse().unwrap())
        );
        assert_eq!(
            Endpoint::Destination.address(&v4),
            Some("10.0.0.2".parse().unwrap())
        );
        let v6 = ipv6("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
        assert_eq!(
            Endpoint::Source.address(&v6),
            Some("fd00::1".parse().unwrap())
        );
        assert_eq!(
            Endpoint::Destination.address(&v6),
            Some("fd00::2".parse().unwrap())
        );
    }

    #[test]
    fn short_or_non_ip_packets_have_no_address() {
        let v4 = ipv4([10, 0, 0, 1], [10, 0, 0, 2]);
        assert_eq!(Endpoint::Destination.address(&v4[..19]), None);
        assert!(Endpoint::Source.address(&v4[..16]).is_some());
        assert_eq!(Endpoint::Source.address(&v4[..15]), None);
        let v6 = ipv6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        assert_eq!(Endpoint::Destination.address(&v6[..39]), None);
        assert_eq!(Endpoint::Source.address(&v6[..23]), None);
        assert_eq!(Endpoint::Source.address(&[]), None);
        let mut not_ip = v4.clone();
        not_ip[0] = 0x55;
        assert_eq!(Endpoint::Source.address(&not_ip), None);
    }

    #[test]
    fn each_client_is_asked_once_and_gets_half_its_extra_round_trip() {
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&asked);
        let mut paths = ClientPaths::new(AddressDelay::new(move |ip| {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match ip {
                IpAddr::V4(_) => Duration::from_millis(30),
                IpAddr::V6(_) => Duration::from_nanos(7),
            }
        }));
        let v4 = Some("10.0.0.1".parse().unwrap());
        let v6 = Some("fd00::1".parse().unwrap());
        assert_eq!(paths.client(v4, 0).extra_ns, 15_000_000);
        assert_eq!(paths.client(v4, 1).extra_ns, 15_000_000);
        assert_eq!(paths.client(v6, 2).extra_ns, 3);
        assert_eq!(paths.client(None, 3).extra_ns, 0);
        assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    #[test]
    fn a_full_cache_forgets_only_clients_with_nothing_in_flight() {
        let mut paths = ClientPaths::new(AddressDelay::new(|_| Duration::from_millis(2)));
        paths.prune_above = 3;
        let ip = |n: u8| Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)));
        paths.client(ip(1), 0).last_departure_ns = 100;
        paths.client(ip(2), 0).last_departure_ns = 500;
        paths.client(ip(3), 0).last_departure_ns = 50;
        // A fourth client at 200: clients 1 and 3 have left, client 2 is still in flight.
        paths.client(ip(4), 200);
        assert_eq!(paths.clients.len(), 2);
        assert_eq!(paths.client(ip(2), 200).last_departure_ns, 500);
        assert_eq!(paths.client(ip(1), 200).last_departure_ns, 0, "forgotten");
    }

    #[test]
    fn absurd_extra_delays_are_capped() {
        assert_eq!(
            one_way_ns(Duration::MAX),
            u64::try_from(MAX_DELAY.as_nanos()).unwrap()
        );
    }
}
