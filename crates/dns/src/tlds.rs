//! The busiest top-level domains at the root: the names both the synthetic workloads and the
//! synthetic hierarchies use, defined once so that a synthetic trace's names resolve in a
//! synthetic hierarchy.

/// Top-level domains asked for at the root, busiest first, with rough relative query weights:
/// the root-like synthetic workload draws its existing-TLD names from them by weight, and the
/// synthetic hierarchy (`ldplayer zones synth`) delegates them first, in this order, so that
/// every existing-TLD name of a root-like trace resolves.
pub const BUSY_TLDS: &[(&str, u32)] = &[
    ("com", 300),
    ("net", 100),
    ("arpa", 60),
    ("org", 50),
    ("de", 30),
    ("uk", 20),
    ("cn", 20),
    ("ru", 20),
    ("jp", 20),
    ("br", 20),
    ("fr", 10),
    ("it", 10),
    ("nl", 10),
    ("au", 10),
    ("info", 10),
    ("io", 10),
    ("in", 10),
    ("pl", 10),
    ("eu", 10),
    ("ca", 10),
    ("es", 10),
    ("kr", 10),
    ("tw", 10),
    ("xyz", 10),
    ("edu", 10),
    ("gov", 10),
    ("co", 10),
    ("me", 10),
    ("us", 10),
    ("ch", 10),
];
