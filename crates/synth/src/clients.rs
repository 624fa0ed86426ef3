//! Client addresses, their transport, and the heavy-tailed choice of who sends a query.
//!
//! Client state is O(clients): addresses and per-client choices are computed from the client's
//! index and the seed, so nothing grows with the number of queries.

use crate::error::SynthError;
use crate::rng::{below, mix64, Chance, Rng};
use chacha20::rand_core::Rng as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The client population: where client `i` lives and whether it talks TCP.
#[derive(Debug, Clone)]
pub struct Clients {
    net: IpAddr,
    first: u128,
    count: u32,
    tcp: Chance,
    salt: u64,
}

impl Clients {
    /// `count` clients numbered in `net/len`; a `tcp_share` of them (chosen by hashing their index
    /// with `seed`) use TCP.
    pub fn new(
        net: IpAddr,
        len: u8,
        count: u32,
        tcp_share: f64,
        seed: u64,
    ) -> Result<Clients, SynthError> {
        if count == 0 {
            return Err(SynthError::NoClients);
        }
        let width: u32 = if net.is_ipv4() { 32 } else { 128 };
        if len as u32 > width {
            return Err(SynthError::BadPrefixLen { len });
        }
        let host_bits = width - len as u32;
        let net = match net {
            IpAddr::V4(a) => {
                let mask = u32::MAX.checked_shl(host_bits).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
            }
            IpAddr::V6(a) => {
                let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
            }
        };
        // Addresses net+1 ..= net+count must stay inside the prefix; a single-address prefix holds
        // exactly one client, the address itself.
        let first = if host_bits == 0 { 0 } else { 1 };
        let room: u128 = if host_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - first
        };
        if count as u128 > room {
            return Err(SynthError::TooManyClients {
                clients: count,
                len,
            });
        }
        Ok(Clients {
            net,
            first,
            count,
            tcp: Chance::new(tcp_share),
            salt: mix64(seed ^ 0x7463_7063_6c69_656e),
        })
    }

    /// Number of clients.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The address of client `i`.
    pub fn addr(&self, i: u32) -> IpAddr {
        let off = self.first + i as u128;
        match self.net {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(off as u32))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(off))),
        }
    }

    /// Whether client `i` uses TCP (a fixed choice per client).
    pub fn is_tcp(&self, i: u32) -> bool {
        self.tcp.hit(mix64(self.salt ^ i as u64))
    }

    /// The source port of client `i`'s one TCP connection, in 1024..=65535.
    pub fn tcp_port(&self, i: u32) -> u16 {
        (1024 + mix64(self.salt.rotate_left(17) ^ i as u64) % 64512) as u16
    }
}

/// Walker's alias table: draws an index with probability proportional to its weight in O(1).
#[derive(Debug, Clone)]
pub struct Alias {
    keep: Vec<u64>,
    alias: Vec<u32>,
}

impl Alias {
    /// A table for `weights` (non-negative, finite, not all zero, at most 2^32 of them); built with
    /// basic floating-point operations only, so it is the same on every platform.
    pub fn new(weights: &[f64]) -> Alias {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        let mut p: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut keep = vec![u64::MAX; n];
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) =
            (0..n as u32).partition(|&i| p[i as usize] < 1.0);
        while let (Some(&l), Some(&g)) = (small.last(), large.last()) {
            small.pop();
            keep[l as usize] = Chance::threshold(p[l as usize]);
            alias[l as usize] = g;
            p[g as usize] = (p[g as usize] + p[l as usize]) - 1.0;
            if p[g as usize] < 1.0 {
                large.pop();
                small.push(g);
            }
        }
        // Leftovers are 1 up to rounding: they keep themselves.
        Alias { keep, alias }
    }

    /// Draws an index.
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        let i = below(rng, self.keep.len() as u64) as usize;
        if rng.next_u64() < self.keep[i] {
            i as u32
        } else {
            self.alias[i]
        }
    }
}

/// The weights of `count` clients under a Zipf–Mandelbrot popularity, `(rank + offset)^-exponent`,
/// with ranks dealt to clients by a seeded shuffle so that popular clients are spread over the
/// address range.
pub fn zipf_weights(count: u32, exponent: f64, offset: f64, rng: &mut Rng) -> Vec<f64> {
    let mut rank_of: Vec<u32> = (0..count).collect();
    for i in (1..rank_of.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        rank_of.swap(i, j);
    }
    rank_of
        .iter()
        .map(|&rank| libm::pow(rank as f64 + 1.0 + offset, -exponent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng;

    #[test]
    fn addresses_in_prefix() {
        let c = Clients::new("10.1.2.3".parse().unwrap(), 8, 3, 0.0, 0).unwrap();
        assert_eq!(c.addr(0), "10.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(c.addr(2), "10.0.0.3".parse::<IpAddr>().unwrap());
        let c = Clients::new("2001:db8::".parse().unwrap(), 32, 2, 0.0, 0).unwrap();
        assert_eq!(c.addr(1), "2001:db8::2".parse::<IpAddr>().unwrap());
        let c = Clients::new("192.0.2.7".parse().unwrap(), 32, 1, 0.0, 0).unwrap();
        assert_eq!(c.addr(0), "192.0.2.7".parse::<IpAddr>().unwrap());
        let c = Clients::new("::".parse().unwrap(), 0, 5, 0.0, 0).unwrap();
        assert_eq!(c.addr(4), "::5".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn prefix_capacity() {
        let net: IpAddr = "192.0.2.0".parse().unwrap();
        assert!(Clients::new(net, 24, 255, 0.0, 0).is_ok());
        assert_eq!(
            Clients::new(net, 24, 256, 0.0, 0).unwrap_err(),
            SynthError::TooManyClients {
                clients: 256,
                len: 24
            }
        );
        assert!(Clients::new(net, 32, 2, 0.0, 0).is_err());
        assert!(Clients::new(net, 33, 1, 0.0, 0).is_err());
        assert!(Clients::new(net, 24, 0, 0.0, 0).is_err());
    }

    #[test]
    fn alias_follows_weights() {
        let a = Alias::new(&[1.0, 2.0, 0.0, 7.0]);
        let mut r = rng(3);
        let mut n = [0u32; 4];
        for _ in 0..100_000 {
            n[a.sample(&mut r) as usize] += 1;
        }
        assert_eq!(n[2], 0);
        for (i, w) in [(0, 0.1), (1, 0.2), (3, 0.7)] {
            let got = n[i] as f64 / 100_000.0;
            assert!((got - w).abs() < 0.01, "{i}: {got}");
        }
    }
}
