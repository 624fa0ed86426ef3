//! A hash of a client's address that never changes: the one key on which a trace's clients are
//! spread over queriers, shards and population groups, so that every tool and every run agrees
//! where a client goes.

use std::net::IpAddr;

/// A hash of an address that does not change between runs, versions or platforms (FNV-1a of
/// the address bytes, finalised with splitmix64 so that neighbouring addresses spread evenly).
pub fn stable_hash(addr: IpAddr) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h ^= x as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    match addr {
        IpAddr::V4(a) => eat(&a.octets()),
        IpAddr::V6(a) => eat(&a.octets()),
    }
    splitmix64_finalize(h)
}

/// SplitMix64's golden-ratio increment: the step between its states, and a spreader of seeds.
pub const SPLITMIX64_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finalizer (Stafford's mix 13): a fast bijection of 64 bits in which every
/// input bit moves every output bit. Every seeded choice that needs no state (a client's
/// group, its RTT, its port) is derived with it; the values must never change.
pub fn splitmix64_finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One step of SplitMix64 from state `z`: the next state's output.
pub fn splitmix64(z: u64) -> u64 {
    splitmix64_finalize(z.wrapping_add(SPLITMIX64_GAMMA))
}

/// A uniform number in [0, 1) from the top 53 bits of `x`.
pub fn unit_interval(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed() {
        // Shards and groups depend on these values: they must never change.
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(stable_hash(a), stable_hash(a));
        assert_ne!(stable_hash(a), stable_hash(b));
        assert_eq!(stable_hash(a), FIXED_V4);
    }

    const FIXED_V4: u64 = 16_692_434_313_525_488_564;
}
