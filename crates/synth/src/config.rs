//! The synthesizer's configuration: plain data that a command line maps its flags onto.

use ldplayer_dns::Rtype;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// 2024-01-01T00:00:00Z in nanoseconds since the Unix epoch: the default start time, fixed so that
/// the same configuration always gives the same trace.
pub const DEFAULT_START_NS: i64 = 1_704_067_200_000_000_000;

/// The EDNS UDP payload size of generated queries by default (the DNS Flag Day 2020 value).
pub const DEFAULT_UDP_SIZE: u16 = 1232;

/// The paper's fixed-interval synthetic traces syn-0 to syn-4: one query every 1 s, 0.1 s,
/// 10 ms, 1 ms and 0.1 ms, in nanoseconds.
pub const SYN_INTERVALS_NS: [u64; 5] = [1_000_000_000, 100_000_000, 10_000_000, 1_000_000, 100_000];

/// How query times and clients are drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// One query every `interval_ns` exactly, the first at the start time; clients take turns
    /// (round robin), so each sends every `clients`-th query. Every query asks for a unique name
    /// `<n in hex>.<zone>`, `n` counting queries from 0, so no answer can come from a cache.
    Fixed {
        /// Time between consecutive queries in nanoseconds (at least 1).
        interval_ns: u64,
    },
    /// A Poisson process: exponentially distributed gaps with mean `1 / rate_qps`, the first query
    /// at the start time; each query comes from a client drawn uniformly. Names are unique as for
    /// [`Workload::Fixed`].
    Poisson {
        /// Mean query rate in queries per second.
        rate_qps: f64,
    },
    /// Root-server-like traffic: Poisson arrivals whose clients follow a heavy-tailed
    /// (Zipf–Mandelbrot) popularity, asking for a mix of existing top-level names and junk.
    RootLike(RootLike),
    /// A client population: client `i` sends Poisson arrivals at `rates_qps[i]` over
    /// `protos[i]` (the superposition: exponential gaps at the sum of the rates, each query's
    /// client drawn in proportion to its rate). Names are unique as for [`Workload::Fixed`].
    /// Both lists have one entry per client; `tcp_share` is ignored.
    Clients(Box<ClientMix>),
}

/// The clients of [`Workload::Clients`]: one entry per client in each list.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientMix {
    /// Each client's query rate, queries per second (zero: a silent client).
    pub rates_qps: Vec<f64>,
    /// Each client's transport; every transport but UDP gets one connection per client.
    pub protos: Vec<ldplayer_trace::Proto>,
    /// Each client's gap variation (the standard deviation of its gaps over their mean): 1 is
    /// Poisson; other values give log-normal gaps of that variation (a renewal process, see
    /// the `renewal` module). Empty: every client Poisson.
    pub gap_cvs: Vec<f64>,
}

/// Parameters of the [`Workload::RootLike`] workload.
///
/// Client `k` in popularity rank order (from 0) is chosen with a weight proportional to
/// `(k + zipf_offset)^-zipf_exponent`; which client address gets which rank is a seeded shuffle.
/// The defaults (exponent 1.25, offset 10) are calibrated for 100 000 clients, as in
/// [`crate::SynthConfig::root_like`]: the busiest 1% of the clients then send about 76% of the
/// queries, the busiest single client under 3%, and at 10 queries per client on average the
/// median client sends only a few. (With 10 000 clients the busiest 1% send about 55%, with
/// a million about 87%.)
///
/// These are shares of the whole population. A trace shows only the clients it drew, so the
/// share of the busiest 1% of the clients *seen* grows with the trace's length: with the
/// defaults about 25% at 5 000 queries, 40% at 20 000, 55% at 100 000 and 70% at 1 000 000.
#[derive(Debug, Clone, PartialEq)]
pub struct RootLike {
    /// Mean query rate in queries per second.
    pub rate_qps: f64,
    /// Zipf exponent of the client popularity (positive; larger is more skewed).
    pub zipf_exponent: f64,
    /// Zipf–Mandelbrot rank offset (at least 0; larger flattens the head).
    pub zipf_offset: f64,
    /// Fraction of queries for junk names that do not exist at the root (random single labels
    /// like Chromium's probes, and names under unassigned suffixes like `.local`, `.home`, `.lan`);
    /// the rest ask for a top-level domain from a weighted list, half the time the TLD itself and
    /// half the time a random second-level name under it.
    pub junk_share: f64,
}

impl RootLike {
    /// The default shape at `rate_qps` queries per second.
    pub fn new(rate_qps: f64) -> RootLike {
        RootLike {
            rate_qps,
            zipf_exponent: 1.25,
            zipf_offset: 10.0,
            junk_share: 0.5,
        }
    }
}

/// Everything that shapes a synthetic trace. Two runs with equal configurations write identical
/// traces, on any platform.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthConfig {
    /// How query times, clients and names are drawn.
    pub workload: Workload,
    /// Seed of every random choice.
    pub seed: u64,
    /// Stop after this many queries.
    pub count: Option<u64>,
    /// Stop before the first query at or after this many nanoseconds from the start. At least one
    /// of `count` and `duration_ns` must be set; with both, whichever comes first ends the trace.
    pub duration_ns: Option<u64>,
    /// Time of the first query in nanoseconds since the Unix epoch.
    pub start_ns: i64,
    /// Number of client addresses.
    pub clients: u32,
    /// The network clients are numbered in: client `i` (from 0) gets the network address plus
    /// `i + 1` (or the address itself for a /32 or /128 with one client). Host bits set in this
    /// address are ignored.
    pub client_net: IpAddr,
    /// Prefix length of `client_net`.
    pub client_prefix_len: u8,
    /// The server every query goes to; `None` picks `192.0.2.53:53` or `[2001:db8::53]:53`
    /// (documentation addresses) to match the clients' address family.
    pub server: Option<SocketAddr>,
    /// Fraction of queries that carry an EDNS0 OPT record.
    pub edns_share: f64,
    /// EDNS UDP payload size.
    pub udp_size: u16,
    /// Fraction of queries with the DO bit; DO needs EDNS, so this may not exceed `edns_share`
    /// (the DO queries are a subset of the EDNS ones).
    pub do_share: f64,
    /// Fraction of clients that use TCP, decided per client: all queries of a TCP client share one
    /// connection, numbered from 1 in order of the clients' first queries; UDP queries have
    /// connection 0 and a random source port each.
    pub tcp_share: f64,
    /// Whether queries set RD (recursion desired). Off by default: resolvers querying
    /// authoritative servers (and the root) clear it; set it to mimic stubs talking to a resolver.
    pub rd: bool,
    /// Query types and their relative weights (positive integers).
    pub qtypes: Vec<(Rtype, u32)>,
    /// Zone under which the unique names of the fixed and Poisson workloads are made.
    pub zone: String,
}

impl Default for SynthConfig {
    /// One million queries at syn-3's fixed 1 ms interval, from 1 000 UDP clients in 10.0.0.0/8 to
    /// 192.0.2.53:53, every query with EDNS0 (1232 bytes) and no DO, names under `example.`, seed 0.
    fn default() -> Self {
        SynthConfig {
            workload: Workload::Fixed {
                interval_ns: SYN_INTERVALS_NS[3],
            },
            seed: 0,
            count: Some(1_000_000),
            duration_ns: None,
            start_ns: DEFAULT_START_NS,
            clients: 1000,
            client_net: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)),
            client_prefix_len: 8,
            server: None,
            edns_share: 1.0,
            udp_size: DEFAULT_UDP_SIZE,
            do_share: 0.0,
            tcp_share: 0.0,
            rd: false,
            qtypes: default_qtypes(),
            zone: "example.".to_string(),
        }
    }
}

impl SynthConfig {
    /// The paper's syn-`n` trace (n from 0 to 4; larger values are taken as 4): fixed intervals of
    /// 1 s down to 0.1 ms with unique names, otherwise the defaults.
    pub fn syn(n: usize) -> SynthConfig {
        SynthConfig::fixed(SYN_INTERVALS_NS[n.min(4)])
    }

    /// A fixed-interval trace, otherwise the defaults.
    pub fn fixed(interval_ns: u64) -> SynthConfig {
        SynthConfig {
            workload: Workload::Fixed { interval_ns },
            ..SynthConfig::default()
        }
    }

    /// A Poisson trace at `rate_qps`, otherwise the defaults.
    pub fn poisson(rate_qps: f64) -> SynthConfig {
        SynthConfig {
            workload: Workload::Poisson { rate_qps },
            ..SynthConfig::default()
        }
    }

    /// A root-server-like trace at `rate_qps` from 100 000 clients (what the default client shape
    /// is calibrated for), 70% of queries with DO (most resolvers set it) and the default type
    /// mix; otherwise the defaults.
    pub fn root_like(rate_qps: f64) -> SynthConfig {
        SynthConfig {
            workload: Workload::RootLike(RootLike::new(rate_qps)),
            clients: 100_000,
            do_share: 0.7,
            ..SynthConfig::default()
        }
    }
}

/// The default query type mix, in percent: A 45, AAAA 20, NS 5, DS 5, PTR 5, MX 4, TXT 4, SOA 4,
/// SRV 3, HTTPS 2, DNSKEY 2, ANY 1.
pub fn default_qtypes() -> Vec<(Rtype, u32)> {
    vec![
        (Rtype::A, 45),
        (Rtype::AAAA, 20),
        (Rtype::NS, 5),
        (Rtype::DS, 5),
        (Rtype::PTR, 5),
        (Rtype::MX, 4),
        (Rtype::TXT, 4),
        (Rtype::SOA, 4),
        (Rtype::SRV, 3),
        (Rtype::HTTPS, 2),
        (Rtype::DNSKEY, 2),
        (Rtype::ANY, 1),
    ]
}
