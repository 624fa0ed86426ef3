//! IP prefixes (CIDR blocks) for the client filter.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use thiserror::Error;

/// Why a string is not an IP prefix.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PrefixError {
    /// The address part does not parse.
    #[error("bad address in prefix `{0}`")]
    Address(String),
    /// The length part does not parse or exceeds the address width.
    #[error("bad prefix length in `{0}`")]
    Length(String),
}

/// An IPv4 or IPv6 prefix such as `10.0.0.0/8` or `2001:db8::/32`; host bits are cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix {
    addr: IpAddr,
    len: u8,
}

impl IpPrefix {
    /// The prefix of length `len` holding `addr` (host bits are cleared); `None` when `len`
    /// exceeds the address width (32 or 128).
    pub fn new(addr: IpAddr, len: u8) -> Option<IpPrefix> {
        let addr = match addr {
            IpAddr::V4(a) if len <= 32 => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(len))),
            IpAddr::V6(a) if len <= 128 => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(len))),
            _ => return None,
        };
        Some(IpPrefix { addr, len })
    }

    /// The network address.
    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    /// The prefix length in bits.
    pub fn len(&self) -> u8 {
        self.len
    }

    /// True for a zero-length prefix (`0.0.0.0/0` or `::/0`), which holds every address of its
    /// family.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `ip` lies in the prefix. IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) count as
    /// their IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(a)) => u32::from(a) & mask32(self.len) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                u128::from(a) & mask128(self.len) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - len as u32).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - len as u32).unwrap_or(0)
}

impl FromStr for IpPrefix {
    type Err = PrefixError;

    /// Parses `ADDRESS/LENGTH`; a bare address is a /32 or /128.
    fn from_str(s: &str) -> Result<IpPrefix, PrefixError> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| PrefixError::Address(s.to_string()))?;
        let len = match len {
            Some(l) => l.parse().map_err(|_| PrefixError::Length(s.to_string()))?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        IpPrefix::new(addr, len).ok_or_else(|| PrefixError::Length(s.to_string()))
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn parse_and_contain() {
        let p: IpPrefix = "10.1.2.3/8".parse().unwrap();
        assert_eq!(p.to_string(), "10.0.0.0/8");
        assert!(p.contains(ip("10.255.0.1")));
        assert!(p.contains(ip("::ffff:10.0.0.1")));
        assert!(!p.contains(ip("11.0.0.1")));
        assert!(!p.contains(ip("::a00:1")));
        let p: IpPrefix = "2001:db8::/32".parse().unwrap();
        assert!(p.contains(ip("2001:db8:ffff::1")));
        assert!(!p.contains(ip("2001:db9::1")));
        assert!(!p.contains(ip("10.0.0.1")));
        let p: IpPrefix = "192.0.2.1".parse().unwrap();
        assert_eq!(p.len(), 32);
        assert!(p.contains(ip("192.0.2.1")) && !p.contains(ip("192.0.2.2")));
        let all: IpPrefix = "0.0.0.0/0".parse().unwrap();
        assert!(all.is_empty() && all.contains(ip("1.2.3.4")));
        assert!("::/0"
            .parse::<IpPrefix>()
            .unwrap()
            .contains(ip("2001:db8::1")));
    }

    #[test]
    fn parse_errors() {
        for s in [
            "10.0.0.0/33",
            "::/129",
            "10.0.0/8",
            "x/1",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "",
        ] {
            assert!(s.parse::<IpPrefix>().is_err(), "{s}");
        }
    }
}
