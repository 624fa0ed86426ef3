use serde::Serialize;
use std::fmt;

/// A named count (a transport, a type, a response code, a skip reason).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Count {
    /// What is counted.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// Queries per second over one-second bins.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Number of one-second bins measured.
    pub bins: u64,
    /// Fewest queries in a bin.
    pub min: u64,
    /// Median queries per bin.
    pub median: u64,
    /// Most queries in a bin.
    pub max: u64,
}

/// The summary of a trace. Field names are the keys of `ldplayer inspect --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Time of the earliest message, seconds since the epoch.
    pub start: Option<f64>,
    /// Time of the latest message.
    pub end: Option<f64>,
    /// Seconds from the earliest to the latest message.
    pub duration_s: f64,
    /// Messages read.
    pub messages: u64,
    /// Queries (QR = 0).
    pub queries: u64,
    /// Responses (QR = 1).
    pub responses: u64,
    /// Records too short to hold a DNS header (possible in edited or binary traces); they are
    /// neither queries nor responses.
    pub not_dns: u64,
    /// Records whose message does not parse, by reason (`dns-truncated`, ...). Those with a
    /// header count as queries or responses by their QR bit (and by their question's type,
    /// when it reads); those without are `not_dns` (`dns-short-header`).
    pub malformed: Vec<Count>,
    /// Distinct addresses sending queries (or receiving responses when there are no queries).
    pub unique_clients: u64,
    /// Distinct connections (TCP, TLS, ...).
    pub connections: u64,
    /// Mean time between consecutive queries, seconds.
    pub interarrival_mean_s: Option<f64>,
    /// Standard deviation of the time between consecutive queries, seconds.
    pub interarrival_std_s: Option<f64>,
    /// Queries divided by the duration.
    pub mean_qps: Option<f64>,
    /// Queries per second over one-second bins.
    pub qps_1s: Option<Rate>,
    /// Queries per transport.
    pub query_transports: Vec<Count>,
    /// Responses per transport.
    pub response_transports: Vec<Count>,
    /// Share of queries with an OPT record.
    pub edns_share: f64,
    /// Share of queries with the DO bit set.
    pub do_share: f64,
    /// Most frequent query types.
    pub top_qtypes: Vec<Count>,
    /// Most frequent response codes of responses.
    pub top_rcodes: Vec<Count>,
    /// Messages (queries and responses) by opcode, most frequent first.
    pub opcodes: Vec<Count>,
    /// Messages signed with TSIG (RFC 8945; GSS-TSIG for Windows' dynamic updates).
    pub tsig_signed: u64,
    /// How many clients make up the busiest 1% (rounded up).
    pub busiest_1pct_clients: u64,
    /// Share of queries sent by the busiest 1% of clients.
    pub busiest_1pct_share: f64,
    /// Queries sent by the median client.
    pub median_queries_per_client: u64,
    /// Items the reader skipped, by reason.
    pub skipped: Vec<Count>,
}

fn opt<T: fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn list(counts: &[Count], total: u64) -> String {
    if counts.is_empty() {
        return "-".into();
    }
    counts
        .iter()
        .map(|c| {
            if total > 0 {
                format!(
                    "{} {} ({:.1}%)",
                    c.name,
                    c.count,
                    100.0 * c.count as f64 / total as f64
                )
            } else {
                format!("{} {}", c.name, c.count)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = |f: &mut fmt::Formatter<'_>, k: &str, v: String| writeln!(f, "{k:<28} {v}");
        row(f, "start", opt(self.start.map(|t| format!("{t:.6}"))))?;
        row(f, "duration", format!("{:.6} s", self.duration_s))?;
        row(f, "messages", self.messages.to_string())?;
        row(f, "queries", self.queries.to_string())?;
        row(f, "responses", self.responses.to_string())?;
        if self.not_dns > 0 {
            row(f, "not DNS", self.not_dns.to_string())?;
        }
        row(
            f,
            "malformed",
            match self.malformed.iter().map(|c| c.count).sum::<u64>() {
                0 => "0".to_string(),
                n => format!("{n}: {}", list(&self.malformed, 0)),
            },
        )?;
        row(f, "unique clients", self.unique_clients.to_string())?;
        row(f, "connections", self.connections.to_string())?;
        row(
            f,
            "inter-arrival mean, std",
            match (self.interarrival_mean_s, self.interarrival_std_s) {
                (Some(m), Some(s)) => format!("{:.6} s, {:.6} s", m, s),
                (Some(m), None) => format!("{m:.6} s, -"),
                _ => "-".into(),
            },
        )?;
        row(f, "mean qps", opt(self.mean_qps.map(|q| format!("{q:.1}"))))?;
        row(
            f,
            "qps min/median/max (1 s)",
            match self.qps_1s {
                Some(r) => format!("{} / {} / {} over {} s", r.min, r.median, r.max, r.bins),
                None if self.queries > 0 => "- (no whole second after the first query)".into(),
                None => "-".into(),
            },
        )?;
        row(
            f,
            "query transports",
            list(&self.query_transports, self.queries),
        )?;
        row(
            f,
            "response transports",
            list(&self.response_transports, self.responses),
        )?;
        row(
            f,
            "EDNS share (queries)",
            format!("{:.1}%", 100.0 * self.edns_share),
        )?;
        row(
            f,
            "DO share (queries)",
            format!("{:.1}%", 100.0 * self.do_share),
        )?;
        row(f, "top qtypes", list(&self.top_qtypes, self.queries))?;
        row(f, "top rcodes", list(&self.top_rcodes, self.responses))?;
        row(f, "opcodes", list(&self.opcodes, self.messages))?;
        row(f, "TSIG-signed", self.tsig_signed.to_string())?;
        row(
            f,
            "busiest 1% of clients",
            format!(
                "{} clients send {:.1}% of queries",
                self.busiest_1pct_clients,
                100.0 * self.busiest_1pct_share
            ),
        )?;
        row(
            f,
            "median queries per client",
            self.median_queries_per_client.to_string(),
        )?;
        row(f, "skipped", list(&self.skipped, 0))
    }
}
