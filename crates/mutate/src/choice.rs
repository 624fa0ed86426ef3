//! Seeded choices: per client (hashed, stateless, the same for every record of a client) and per
//! record (a seeded stream).

use ldplayer_trace::Record;
use siphasher::sip::SipHasher13;
use std::hash::Hasher;
use std::net::IpAddr;

/// A probability as a threshold on a uniform 64-bit number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share(Option<u64>);

impl Share {
    /// The share `p` (clamped to `[0, 1]`).
    pub fn new(p: f64) -> Share {
        if p >= 1.0 {
            Share(None)
        } else if p > 0.0 {
            Share(Some((p * 18_446_744_073_709_551_616.0) as u64))
        } else {
            Share(Some(0))
        }
    }

    /// True for a share of 1: every draw hits.
    pub fn is_all(self) -> bool {
        self.0.is_none()
    }

    /// True for a share of 0: no draw hits.
    pub fn is_none(self) -> bool {
        self.0 == Some(0)
    }

    /// Whether the uniform 64-bit number `r` falls under the share.
    pub fn hit(self, r: u64) -> bool {
        self.0.is_none_or(|t| r < t)
    }
}

/// Hashes client addresses with the seed for one purpose, so that a client always gets the same
/// choice, and choices for different purposes are independent.
#[derive(Debug, Clone, Copy)]
pub struct ClientHash {
    k0: u64,
    k1: u64,
}

impl ClientHash {
    /// The hash for `purpose` (a distinct constant per kind of choice) under `seed`.
    pub fn new(seed: u64, purpose: u64) -> ClientHash {
        ClientHash {
            k0: seed,
            k1: purpose,
        }
    }

    /// A uniform 64-bit number for `ip`.
    pub fn of(&self, ip: IpAddr) -> u64 {
        let mut h = SipHasher13::new_with_keys(self.k0, self.k1);
        match ip {
            IpAddr::V4(a) => {
                h.write_u8(4);
                h.write(&a.octets());
            }
            IpAddr::V6(a) => {
                h.write_u8(6);
                h.write(&a.octets());
            }
        }
        h.finish()
    }
}

/// True when the record is a response (the QR bit); records too short for a header count as
/// queries.
pub fn is_response(record: &Record<'_>) -> bool {
    record.wire.get(2).is_some_and(|b| b & 0x80 != 0)
}

/// The client of a record: the source of a query, the destination of a response.
pub fn client_of(record: &Record<'_>) -> IpAddr {
    if is_response(record) {
        record.dst.ip()
    } else {
        record.src.ip()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_edges() {
        assert!(Share::new(1.0).hit(u64::MAX) && Share::new(1.0).is_all());
        assert!(!Share::new(0.0).hit(0));
        assert!(!Share::new(-3.0).hit(0));
    }

    #[test]
    fn hash_depends_on_seed_purpose_and_family() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "::a00:1".parse().unwrap();
        let h = ClientHash::new(1, 2);
        assert_eq!(h.of(a), h.of(a));
        assert_ne!(h.of(a), h.of(b));
        assert_ne!(h.of(a), ClientHash::new(1, 3).of(a));
        assert_ne!(h.of(a), ClientHash::new(2, 2).of(a));
    }
}
