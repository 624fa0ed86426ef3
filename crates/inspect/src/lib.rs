//! Summary statistics of a DNS trace, in the spirit of Table 1 of the LDplayer paper: when the
//! trace starts and how long it lasts, how many queries and responses it holds, how many clients
//! send them and how unevenly, how fast they arrive, and which transports, EDNS options, types and
//! response codes it carries.
//!
//! [`Inspector`] is a [`Sink`]: feed it from any trace source, then call
//! [`Inspector::summary`].

#![forbid(unsafe_code)]

mod summary;

pub use summary::{Count, Rate, Summary};

use ldplayer_dns::{opcode_to_string, Header, Message, Partial, Rcode, Rtype};
use ldplayer_trace::{Proto, Record, Sink, SinkError, SkipCounts, SkipReason};
/// Per-record counters: hashbrown's map with `inline-more`, so that a count is an inlined probe.
type FxHashMap<K, V> = hashbrown::HashMap<K, V, rustc_hash::FxBuildHasher>;
type FxHashSet<K> = hashbrown::HashSet<K, rustc_hash::FxBuildHasher>;

use std::collections::BTreeMap;
use std::net::IpAddr;

/// How many entries the top-qtype and top-rcode lists keep.
pub const TOP: usize = 10;

/// The [`TOP`] most frequent keys with their counts, most frequent first (ties by key).
fn top<K: Copy + Ord + std::fmt::Display>(m: &FxHashMap<K, u64>) -> Vec<Count> {
    let mut v: Vec<(K, u64)> = m.iter().map(|(k, c)| (*k, *c)).collect();
    v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.into_iter()
        .take(TOP)
        .map(|(k, count)| Count {
            name: k.to_string(),
            count,
        })
        .collect()
}

/// Accumulates the statistics of a trace, one record at a time.
///
/// Memory grows with the number of distinct clients, connections and seconds, never with the
/// number of messages.
#[derive(Debug, Default)]
pub struct Inspector {
    messages: u64,
    queries: u64,
    responses: u64,
    not_dns: u64,
    /// The earliest and the latest record time (records need not come in time order).
    min_ns: Option<i64>,
    max_ns: Option<i64>,
    /// Queries per client (source of queries).
    clients: FxHashMap<IpAddr, u64>,
    /// Clients that only appear as destinations of responses.
    response_clients: FxHashSet<IpAddr>,
    connections: FxHashSet<u64>,
    /// Query inter-arrival times.
    gaps: Gaps,
    /// The time of the first query seen: the start of the one-second bins.
    first_query_ns: Option<i64>,
    /// The time of the latest query.
    latest_query_ns: i64,
    /// Queries per second of the trace, from its first query (bin 0 starts then).
    per_second: BTreeMap<i64, u64>,
    query_proto: [u64; 5],
    response_proto: [u64; 5],
    edns_queries: u64,
    do_queries: u64,
    qtypes: FxHashMap<Rtype, u64>,
    rcodes: FxHashMap<Rcode, u64>,
    /// Messages by opcode.
    opcodes: [u64; 16],
    /// Messages signed with TSIG.
    tsig: u64,
    /// Records whose message does not parse, by reason.
    malformed: SkipCounts,
    skipped: SkipCounts,
}

impl Inspector {
    /// An empty inspector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one record.
    pub fn add(&mut self, r: &Record<'_>) {
        self.messages += 1;
        self.min_ns = Some(self.min_ns.map_or(r.time_ns, |m| m.min(r.time_ns)));
        self.max_ns = Some(self.max_ns.map_or(r.time_ns, |m| m.max(r.time_ns)));
        if r.conn != 0 {
            self.connections.insert(r.conn);
        }
        // A malformed message counts by what its header and question say (servers see it as a
        // query or a response all the same), and by reason.
        let (header, rcode, qtype, edns) = match Message::parse(r.wire) {
            Ok(msg) => {
                self.tsig += msg.tsig().is_some() as u64;
                (*msg.header(), msg.rcode(), msg.qtype(), msg.edns().copied())
            }
            Err(e) => {
                self.malformed.add(SkipReason::Dns(e));
                let Some(p) = Partial::read(r.wire) else {
                    self.not_dns += 1;
                    return;
                };
                let qtype = p.question.map(|q| q.qtype);
                (
                    p.header,
                    Rcode::from_parts(p.header.rcode_low(), 0),
                    qtype,
                    None,
                )
            }
        };
        self.count_message(r, &header, rcode, qtype, edns);
    }

    fn count_message(
        &mut self,
        r: &Record<'_>,
        header: &Header,
        rcode: Rcode,
        qtype: Option<Rtype>,
        edns: Option<ldplayer_dns::Edns>,
    ) {
        self.opcodes[header.opcode() as usize] += 1;
        if header.qr() {
            self.responses += 1;
            self.response_proto[r.proto as usize] += 1;
            *self.rcodes.entry(rcode).or_insert(0) += 1;
            self.response_clients.insert(r.dst.ip());
            return;
        }
        self.queries += 1;
        self.query_proto[r.proto as usize] += 1;
        *self.clients.entry(r.src.ip()).or_insert(0) += 1;
        if let Some(t) = qtype {
            *self.qtypes.entry(t).or_insert(0) += 1;
        }
        if let Some(e) = edns {
            self.edns_queries += 1;
            self.do_queries += e.dnssec_ok() as u64;
        }
        let t0 = *self.first_query_ns.get_or_insert(r.time_ns);
        self.latest_query_ns = self.latest_query_ns.max(r.time_ns);
        *self
            .per_second
            .entry((r.time_ns - t0).div_euclid(1_000_000_000))
            .or_insert(0) += 1;
        self.gaps.add(r.time_ns);
    }

    /// The summary of everything added so far.
    pub fn summary(&self) -> Summary {
        let duration_s = match (self.min_ns, self.max_ns) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let mut per_client: Vec<u64> = self.clients.values().copied().collect();
        per_client.sort_unstable_by(|a, b| b.cmp(a));
        let busiest = per_client.len().div_ceil(100);
        let busiest_share = if self.queries > 0 {
            per_client[..busiest].iter().sum::<u64>() as f64 / self.queries as f64
        } else {
            0.0
        };
        let median_client = if per_client.is_empty() {
            0
        } else {
            per_client[per_client.len() / 2]
        };
        let unique_clients = if self.clients.is_empty() {
            self.response_clients.len()
        } else {
            self.clients.len()
        } as u64;
        let share = |n: u64| {
            if self.queries > 0 {
                n as f64 / self.queries as f64
            } else {
                0.0
            }
        };
        let protos = |counts: &[u64; 5]| {
            Proto::ALL
                .iter()
                .filter(|p| counts[**p as usize] > 0)
                .map(|p| Count {
                    name: p.as_str().to_string(),
                    count: counts[*p as usize],
                })
                .collect::<Vec<_>>()
        };
        Summary {
            start: self.min_ns.map(|t| t as f64 / 1e9),
            end: self.max_ns.map(|t| t as f64 / 1e9),
            duration_s,
            messages: self.messages,
            queries: self.queries,
            responses: self.responses,
            not_dns: self.not_dns,
            unique_clients,
            connections: self.connections.len() as u64,
            interarrival_mean_s: self.gaps.mean_s(),
            interarrival_std_s: self.gaps.std_s(),
            mean_qps: if duration_s > 0.0 {
                Some(self.queries as f64 / duration_s)
            } else {
                None
            },
            qps_1s: self.rate(),
            query_transports: protos(&self.query_proto),
            response_transports: protos(&self.response_proto),
            edns_share: share(self.edns_queries),
            do_share: share(self.do_queries),
            top_qtypes: top(&self.qtypes),
            top_rcodes: top(&self.rcodes),
            opcodes: {
                let mut v: Vec<(u8, u64)> = (0..16u8)
                    .map(|o| (o, self.opcodes[o as usize]))
                    .filter(|(_, c)| *c > 0)
                    .collect();
                v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                v.into_iter()
                    .map(|(o, count)| Count {
                        name: opcode_to_string(o),
                        count,
                    })
                    .collect()
            },
            tsig_signed: self.tsig,
            malformed: counts(&self.malformed),
            busiest_1pct_clients: busiest as u64,
            busiest_1pct_share: busiest_share,
            median_queries_per_client: median_client,
            skipped: counts(&self.skipped),
        }
    }

    /// Queries per second over the trace's whole seconds, counted from its first query, empty
    /// seconds included. The second that holds the last query is left out: the trace ends
    /// inside it. `None` for a trace shorter than a second. (Bins on the clock's seconds, with
    /// both ends left out, once said "0 / 0 / 0" of a capture whose queries were all in its
    /// first and last second.)
    fn rate(&self) -> Option<Rate> {
        let t0 = self.first_query_ns?;
        let (&lo, _) = self.per_second.first_key_value()?;
        let hi = (self.latest_query_ns - t0).div_euclid(1_000_000_000) - 1;
        if hi < lo {
            return None;
        }
        let span = (hi - lo + 1) as u64;
        let mut counts: Vec<u64> = self.per_second.range(lo..=hi).map(|(_, c)| *c).collect();
        let empty = span - counts.len() as u64;
        counts.sort_unstable();
        // The empty seconds sort first: the k-th smallest bin is 0 while k < empty.
        let kth = |k: u64| {
            if k < empty {
                0
            } else {
                counts[(k - empty) as usize]
            }
        };
        Some(Rate {
            bins: span,
            min: kth(0),
            median: kth(span / 2),
            max: kth(span - 1),
        })
    }
}

/// Counts by reason, as named counts.
fn counts(c: &SkipCounts) -> Vec<Count> {
    c.iter()
        .map(|(r, count)| Count {
            name: r.name().to_string(),
            count,
        })
        .collect()
}

impl Sink for Inspector {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.add(record);
        Ok(())
    }
    fn skipped(&mut self, reason: SkipReason, _location: u64) {
        self.skipped.add(reason);
    }
}

/// The gaps between consecutive queries in the order they come: Welford's running mean and
/// variance, in seconds, so that memory stays constant however long the trace.
#[derive(Debug, Default)]
struct Gaps {
    n: u64,
    mean: f64,
    m2: f64,
    last_ns: Option<i64>,
}

impl Gaps {
    /// A query at `time_ns`.
    fn add(&mut self, time_ns: i64) {
        if let Some(prev) = self.last_ns {
            let gap = (time_ns - prev) as f64 / 1e9;
            self.n += 1;
            let delta = gap - self.mean;
            self.mean += delta / self.n as f64;
            self.m2 += delta * (gap - self.mean);
        }
        self.last_ns = Some(time_ns);
    }

    /// The mean gap, once there is one.
    fn mean_s(&self) -> Option<f64> {
        (self.n > 0).then_some(self.mean)
    }

    /// The gaps' sample standard deviation, once there are two.
    fn std_s(&self) -> Option<f64> {
        (self.n > 1).then(|| (self.m2 / (self.n - 1) as f64).sqrt())
    }
}
