use ldplayer_trace::Proto;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Why a query got no answer.
///
/// This is the one list of error kinds: the engine's counters, the results file, the summary
/// and the exports all count and name kinds through [`ErrorKind::ALL`] and [`ErrorCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server refused the connection (TCP RST on connect, ICMP port unreachable on UDP).
    Refused,
    /// The connection was reset or closed with the query still in flight.
    Reset,
    /// The TLS handshake failed.
    Tls,
    /// Sending failed locally (no buffer space, no route, too many open files...).
    Send,
    /// The trace's message could not be sent as is (too long for the transport, not DNS).
    BadQuery,
    /// The run was stopped (Ctrl-C) before an answer came and before the timeout.
    Stopped,
    /// A DNS-over-HTTPS exchange failed at the HTTP layer: a status other than 200, a body
    /// that is not a DNS message, an HTTP/2 stream or connection error, no HTTP/2 offered.
    Http,
    /// A DNS-over-QUIC connection or stream failed (timed out, reset, closed by the server, an
    /// answer that is not one DNS message).
    Quic,
    /// What came back for the query was not its answer: a message without QR set or of another
    /// opcode (the query echoed back), a response to another question, or bytes on its TCP or
    /// TLS connection that are not a DNS response (the connection is then closed).
    BadResponse,
    /// Never sent: the query was due before its replay began, a shard started after the shared
    /// start (`--start-at`) and keeps its place in the schedule rather than send its backlog
    /// at once.
    LateStart,
}

impl ErrorKind {
    /// Every kind, in declaration order (the order of summaries).
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Send,
        ErrorKind::BadQuery,
        ErrorKind::Stopped,
        ErrorKind::Http,
        ErrorKind::Quic,
        ErrorKind::BadResponse,
        ErrorKind::LateStart,
    ];

    /// The kind's position in [`ALL`](Self::ALL), for tables indexed by kind.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kind with this [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Stable kebab-case key for summaries and exports.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Tls => "tls",
            ErrorKind::Send => "send",
            ErrorKind::BadQuery => "bad-query",
            ErrorKind::Stopped => "stopped",
            ErrorKind::Http => "http",
            ErrorKind::Quic => "quic",
            ErrorKind::BadResponse => "bad-response",
            ErrorKind::LateStart => "late-start",
        }
    }
}

impl Serialize for ErrorKind {
    /// As its [`name`](Self::name), the key used in summaries and exports.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Failed queries counted by [`ErrorKind`]: serialized as a map from every kind's
/// [`name`](ErrorKind::name) to its count, in [`ErrorKind::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ErrorCounts([u64; ErrorKind::ALL.len()]);

impl ErrorCounts {
    /// Counts `n` more failures of `kind`.
    pub fn add(&mut self, kind: ErrorKind, n: u64) {
        self.0[kind.index()] += n;
    }

    /// Failures of `kind`.
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind.index()]
    }

    /// Failures of every kind together.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other`'s counts into `self`.
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// Every kind with its count (zeros too), in [`ErrorKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        ErrorKind::ALL.into_iter().zip(self.0.iter().copied())
    }
}

impl Serialize for ErrorCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(ErrorKind::ALL.len()))?;
        for (kind, n) in self.iter() {
            map.serialize_entry(kind.name(), &n)?;
        }
        map.end()
    }
}

/// What became of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A response with the query's ID (and question) came back.
    Answered,
    /// No response within the timeout.
    Timeout,
    /// The query failed.
    Error(ErrorKind),
}

impl Outcome {
    /// Stable key for exports: `answered`, `timeout`, or the error kind's [`name`](ErrorKind::name).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Timeout => "timeout",
            Outcome::Error(k) => k.name(),
        }
    }

    /// The outcome with this [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Outcome> {
        match name {
            "answered" => Some(Outcome::Answered),
            "timeout" => Some(Outcome::Timeout),
            _ => ErrorKind::from_name(name).map(Outcome::Error),
        }
    }
}

/// Everything recorded about one replayed query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryResult {
    /// Position of the query's record in the trace (from 0), counting every record the source
    /// yields, responses and other records not replayed included (items the reader skipped as
    /// unusable are not records and are not counted). It depends only on the trace, not on the
    /// run: it is the key on which results of several runs of one trace, or of several processes
    /// each replaying part of it, are merged and compared query by query.
    pub index: u64,
    /// The record's time in the trace, ns since the epoch.
    pub trace_ns: i64,
    /// When the schedule wanted it sent (`CLOCK_REALTIME` ns); equals `sent_ns` intent for
    /// `--fast`, where there is no schedule.
    pub intended_ns: i64,
    /// When it was handed to the kernel (`CLOCK_REALTIME` ns); 0 if never sent.
    pub sent_ns: i64,
    /// When the response was received (`CLOCK_REALTIME` ns); 0 if none.
    pub received_ns: i64,
    /// Transport the query was sent over.
    pub proto: Proto,
    /// True when the query opened a new connection (always false for UDP).
    pub new_connection: bool,
    /// For a query that opened its connection: how long the connection took to be ready for it
    /// (TCP handshake, and TLS handshake for TLS), in ns, which its latency leaves out; 0
    /// otherwise, and when the connection never became ready.
    pub handshake_ns: i64,
    /// Response code of the answer (extended), NOERROR if none.
    pub rcode: ldplayer_dns::Rcode,
    /// Size of the response message in bytes, 0 if none.
    pub response_len: u16,
    /// TC bit of the response.
    pub truncated: bool,
    /// The outcome.
    pub outcome: Outcome,
    /// Which server of a replay to several (`replay --server A --server B`) the query went to:
    /// its position among them, from 0, in the order given. Every query of such a replay goes
    /// to each server, so the results of one query share its `index` and differ by `target`.
    /// 0 for a replay to one server.
    pub target: u16,
}

impl QueryResult {
    /// Response time in ns, if answered.
    pub fn latency_ns(&self) -> Option<i64> {
        (self.outcome == Outcome::Answered).then(|| self.received_ns - self.sent_ns)
    }
    /// How late the query was sent, in ns (negative: early), if it was sent.
    pub fn timing_error_ns(&self) -> Option<i64> {
        (self.sent_ns != 0).then(|| self.sent_ns - self.intended_ns)
    }
}

/// A consumer of query results: the results file, the summary, tests.
pub trait ResultSink: Send {
    /// Takes one result. Results arrive in completion order, not trace order.
    fn result(&mut self, r: &QueryResult) -> std::io::Result<()>;
    /// Takes one result with the response message that answered it, byte for byte as it was
    /// received (`replay --keep-answers`). Sinks that have no use for answers take the result
    /// alone (the default); the results file keeps the answer when it was created to.
    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> std::io::Result<()> {
        let _ = answer;
        self.result(r)
    }
    /// Flushes what is buffered; called once at the end, also after Ctrl-C.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_sits_at_its_index_with_a_name_of_its_own() {
        for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i, "{k:?}");
            assert_eq!(ErrorKind::from_name(k.name()), Some(k));
            assert_eq!(Outcome::from_name(k.name()), Some(Outcome::Error(k)));
        }
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn counts_add_merge_and_serialize_by_name() {
        let mut a = ErrorCounts::default();
        a.add(ErrorKind::Reset, 2);
        a.add(ErrorKind::BadQuery, 1);
        let mut b = ErrorCounts::default();
        b.add(ErrorKind::Reset, 3);
        b.add(ErrorKind::Stopped, 4);
        a.merge(&b);
        assert_eq!(a.get(ErrorKind::Reset), 5);
        assert_eq!(a.get(ErrorKind::Refused), 0);
        assert_eq!(a.total(), 10);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"refused":0,"reset":5,"tls":0,"send":0,"bad-query":1,"stopped":4,"http":0,"quic":0,"bad-response":0,"late-start":0}"#
        );
        assert_eq!(
            serde_json::to_string(&ErrorKind::BadQuery).unwrap(),
            r#""bad-query""#
        );
    }
}
