use ldplayer_trace::Proto;

/// Why a query got no answer.
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
}

impl ErrorKind {
    /// Every kind, in declaration order (the order of summaries).
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Tls,
        ErrorKind::Send,
        ErrorKind::BadQuery,
        ErrorKind::Stopped,
    ];

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
        }
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
    /// Flushes what is buffered; called once at the end, also after Ctrl-C.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
