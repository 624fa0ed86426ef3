//! Where the engine may send queries: anywhere but the deprecated IPv4-compatible IPv6 addresses.
//!
//! `::/96` (RFC 4291 §2.5.5.1) held IPv4-compatible addresses, deprecated since 2006; no host
//! has one, and no user means one. They come from a slip: `[::1:5300]` is a valid bracketed
//! address, `::0.1.83.0`, where `[::1]:5300` was meant, and a replay sent to it goes off this
//! host through the default route to port 53 of that address. [`check_destination`] refuses
//! them (but `::` and `::1`, which are not IPv4-compatible) with the address probably meant;
//! [`crate::ReplayConfig::validate`] applies it to every address the engine sends to.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use thiserror::Error;

/// Why a destination is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DestinationError {
    /// An IPv4-compatible IPv6 address (`::/96` but `::` and `::1`).
    #[error(
        "{addr} is an IPv4-compatible IPv6 address (::/96, deprecated by RFC 4291 §2.5.5.1), \
         which no one means: {hint}"
    )]
    Ipv4Compatible {
        /// The address refused.
        addr: SocketAddr,
        /// What was probably meant.
        hint: String,
    },
}

/// Checks that queries may go to `addr`: refuses IPv4-compatible IPv6 addresses (`::/96`),
/// except `::` and `::1`, saying what was probably meant (`[::1]:5300` for `[::1:5300]`).
pub fn check_destination(addr: SocketAddr) -> Result<(), DestinationError> {
    let IpAddr::V6(ip) = addr.ip() else {
        return Ok(());
    };
    let s = ip.segments();
    if s[..6] != [0; 6] || ip.is_unspecified() || ip.is_loopback() {
        return Ok(());
    }
    Err(DestinationError::Ipv4Compatible {
        addr,
        hint: hint(s[6], s[7]),
    })
}

/// What `[::HIGH:LOW]` was probably meant to be.
fn hint(high: u16, low: u16) -> String {
    // `[::1:5300]`: the port written inside the brackets, read back as hexadecimal.
    let written = format!("{low:x}");
    if high == 1 && written.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(port @ 1..) = written.parse::<u16>() {
            return format!(
                "did you mean [::1]:{port}? (the port goes after the brackets: [ADDRESS]:PORT)"
            );
        }
    }
    let v4 = Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
    format!(
        "for this host's IPv6 loopback write [::1]:PORT (the port after the brackets); for the \
         IPv4 address {v4}, write {v4}:PORT"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &str) -> Result<(), String> {
        check_destination(s.parse().expect("address")).map_err(|e| e.to_string())
    }

    #[test]
    fn ipv4_compatible_addresses_are_refused_with_what_was_meant() {
        let e = check("[::0.1.83.0]:53").unwrap_err();
        assert!(e.contains("did you mean [::1]:5300?"), "{e}");
        assert!(e.contains("RFC 4291"), "{e}");
        let e = check("[::1:abcd]:53").unwrap_err();
        assert!(
            e.contains("[::1]:PORT") && e.contains("0.1.171.205:PORT"),
            "{e}"
        );
        let e = check("[::127.0.0.1]:53").unwrap_err();
        assert!(e.contains("127.0.0.1:PORT"), "{e}");
        assert!(check("[::0.0.0.2]:53").is_err());
    }

    #[test]
    fn other_addresses_pass() {
        for ok in [
            "[::]:53",
            "[::1]:5300",
            "[::ffff:127.0.0.1]:53",
            "[fe80::1]:53",
            "[2001:db8::1:5300]:53",
            "[::1:0:0:1]:53",
            "127.0.0.1:53",
            "0.0.0.0:53",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }
}
