//! The prefix-preserving property of the anonymizer.

use ldplayer_mutate::Anonymizer;
use proptest::prelude::*;
use std::collections::HashSet;
use std::net::{Ipv4Addr, Ipv6Addr};

proptest! {
    #[test]
    fn ipv4_shared_prefix_is_preserved(a: u32, b: u32, key: [u8; 16]) {
        let anon = Anonymizer::new(key);
        let (x, y) = (anon.map_v4(Ipv4Addr::from(a)), anon.map_v4(Ipv4Addr::from(b)));
        prop_assert_eq!((u32::from(x) ^ u32::from(y)).leading_zeros(), (a ^ b).leading_zeros());
    }

    #[test]
    fn ipv4_close_pairs(a: u32, flip in 0u32..32, key: [u8; 16]) {
        // Random pairs rarely share long prefixes: also try pairs that differ in one chosen bit.
        let b = a ^ (1 << flip);
        let anon = Anonymizer::new(key);
        let (x, y) = (anon.map_v4(Ipv4Addr::from(a)), anon.map_v4(Ipv4Addr::from(b)));
        prop_assert_eq!((u32::from(x) ^ u32::from(y)).leading_zeros(), 31 - flip);
    }

    #[test]
    fn ipv6_shared_prefix_is_preserved(a: u128, flip in 0u32..128, low: u128, key: [u8; 16]) {
        // b shares exactly 127 - flip leading bits with a, its lower bits otherwise random.
        let keep = u128::MAX.checked_shl(flip + 1).unwrap_or(0);
        let b = (a & keep) | (!a & (1 << flip)) | (low & ((1u128 << flip) - 1));
        let anon = Anonymizer::new(key);
        let (x, y) = (anon.map_v6(Ipv6Addr::from(a)), anon.map_v6(Ipv6Addr::from(b)));
        prop_assert_eq!((u128::from(x) ^ u128::from(y)).leading_zeros(), (a ^ b).leading_zeros());
        prop_assert_eq!((a ^ b).leading_zeros(), 127 - flip);
    }
}

#[test]
fn injective_on_a_sample() {
    let anon = Anonymizer::new(*b"0123456789abcdef");
    let mut seen = HashSet::new();
    for i in 0..65_536u32 {
        // A dense /16 and a spread-out sample.
        assert!(seen.insert(anon.map_v4(Ipv4Addr::from(0x0a0b_0000 | i))));
        assert!(seen.insert(anon.map_v4(Ipv4Addr::from(i.wrapping_mul(0x9e37_79b1) | 1 << 31 | 1))));
    }
    let mut seen6 = HashSet::new();
    for i in 0..20_000u128 {
        assert!(seen6.insert(anon.map_v6(Ipv6Addr::from(0x2001_0db8u128 << 96 | i))));
    }
}
