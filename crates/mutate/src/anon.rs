//! Keyed, prefix-preserving address anonymization in the manner of Crypto-PAn.
//!
//! Bit `i` of the output is bit `i` of the input flipped by a pseudo-random bit computed from the
//! input's first `i` bits and the key (SipHash-1-3). Two addresses that share exactly their first
//! `k` bits therefore get the same flips for those bits and the same flip for bit `k`, where they
//! differ: the outputs share exactly `k` leading bits. It follows that the map is a bijection of
//! each address family. One hash per bit makes an address cost 32 or 128 hashes, so results are
//! kept in a fixed-size direct-mapped cache: memory stays bounded whatever the number of clients.

use siphasher::sip::SipHasher13;
use std::hash::Hasher;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const CACHE_SLOTS: usize = 1 << 16;

/// A keyed prefix-preserving anonymizer for IPv4 and IPv6 addresses.
#[derive(Clone)]
pub struct Anonymizer {
    k0: u64,
    k1: u64,
    cache: Box<[Option<(IpAddr, IpAddr)>]>,
}

impl std::fmt::Debug for Anonymizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Anonymizer { .. }")
    }
}

impl Anonymizer {
    /// An anonymizer keyed with `key`; the same key always gives the same map.
    pub fn new(key: [u8; 16]) -> Anonymizer {
        let mut k0 = [0; 8];
        let mut k1 = [0; 8];
        k0.copy_from_slice(&key[..8]);
        k1.copy_from_slice(&key[8..]);
        Anonymizer {
            k0: u64::from_le_bytes(k0),
            k1: u64::from_le_bytes(k1),
            cache: vec![None; CACHE_SLOTS].into_boxed_slice(),
        }
    }

    /// The pseudonym of `ip`, from the cache when it is there.
    pub fn anonymize(&mut self, ip: IpAddr) -> IpAddr {
        let slot = match ip {
            IpAddr::V4(a) => (u32::from(a) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48,
            IpAddr::V6(a) => {
                let v = u128::from(a);
                ((v as u64) ^ ((v >> 64) as u64).rotate_left(29))
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                    >> 48
            }
        } as usize;
        if let Some((from, to)) = self.cache[slot] {
            if from == ip {
                return to;
            }
        }
        let to = match ip {
            IpAddr::V4(a) => IpAddr::V4(self.map_v4(a)),
            IpAddr::V6(a) => IpAddr::V6(self.map_v6(a)),
        };
        self.cache[slot] = Some((ip, to));
        to
    }

    /// The pseudonym of an IPv4 address (uncached).
    pub fn map_v4(&self, a: Ipv4Addr) -> Ipv4Addr {
        let x = u32::from(a);
        let mut flips = 0u32;
        for i in 0..32u32 {
            let prefix = x.checked_shr(32 - i).unwrap_or(0);
            let bit = self.prf(4, i, &prefix.to_be_bytes());
            flips |= (bit as u32) << (31 - i);
        }
        Ipv4Addr::from(x ^ flips)
    }

    /// The pseudonym of an IPv6 address (uncached).
    pub fn map_v6(&self, a: Ipv6Addr) -> Ipv6Addr {
        let x = u128::from(a);
        let mut flips = 0u128;
        for i in 0..128u32 {
            let prefix = x.checked_shr(128 - i).unwrap_or(0);
            let bit = self.prf(6, i, &prefix.to_be_bytes());
            flips |= (bit as u128) << (127 - i);
        }
        Ipv6Addr::from(x ^ flips)
    }

    /// The pseudo-random flip for bit `i` after the leading bits `prefix` (right-aligned).
    fn prf(&self, family: u8, i: u32, prefix: &[u8]) -> bool {
        let mut h = SipHasher13::new_with_keys(self.k0, self.k1);
        h.write_u8(family);
        h.write_u8(i as u8);
        h.write(prefix);
        h.finish() & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_agrees_with_the_map() {
        let mut a = Anonymizer::new([7; 16]);
        for i in 0..200_000u32 {
            let ip = Ipv4Addr::from(i.wrapping_mul(2_654_435_761));
            let got = a.anonymize(IpAddr::V4(ip));
            assert_eq!(got, IpAddr::V4(a.map_v4(ip)));
            assert_eq!(a.anonymize(IpAddr::V4(ip)), got);
        }
    }

    #[test]
    fn key_matters() {
        let ip: Ipv4Addr = "192.0.2.1".parse().unwrap();
        let a = Anonymizer::new([1; 16]);
        let b = Anonymizer::new([2; 16]);
        assert_eq!(a.map_v4(ip), Anonymizer::new([1; 16]).map_v4(ip));
        assert_ne!(a.map_v4(ip), b.map_v4(ip));
        assert_ne!(a.map_v4(ip), ip);
    }
}
