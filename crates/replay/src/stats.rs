//! Counters of a replay.

use crate::cause::{Cause, Context};
use ldplayer_results::{ErrorCounts, ErrorKind, Outcome};
use std::time::Duration;

/// The error kinds, in the order of [`ErrorKind::ALL`].
#[deprecated(note = "use ldplayer_results::ErrorKind::ALL, the one list of error kinds")]
pub const ERROR_KINDS: [ErrorKind; ErrorKind::ALL.len()] = ErrorKind::ALL;

/// Failed queries of one kind and one cause, with the first such failure in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorCause {
    /// The queries' error kind.
    pub kind: ErrorKind,
    /// A short, stable, kebab-case key of the cause (`unknown-issuer`, `ca-used-as-end-entity`,
    /// `port-unreachable`, `EADDRNOTAVAIL`...).
    pub cause: &'static str,
    /// Queries that failed so.
    pub count: u64,
    /// The first such failure, in words, with what to do about it where that is known.
    pub first: String,
}

/// What a replay did. Latency and timing summaries are built from the results, not here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Records read from the source.
    pub records: u64,
    /// Records skipped because they are responses (with `queries_only`).
    pub skipped_responses: u64,
    /// Queries handed to the queriers (each yields exactly one result).
    pub queries: u64,
    /// Distinct original source addresses.
    pub clients: u64,
    /// Queries sent (at least once).
    pub sent: u64,
    /// Queries answered.
    pub answered: u64,
    /// Queries timed out.
    pub timeouts: u64,
    /// Of those, queries that were never sent: their connection's connect or TLS handshake did
    /// not finish in time (a server at its connection limit, or not answering handshakes).
    pub timeouts_unsent: u64,
    /// Failed queries by kind.
    pub errors: ErrorCounts,
    /// Failed queries by kind and cause (for the failures whose cause is known), in the order
    /// the causes first appeared.
    pub causes: Vec<ErrorCause>,
    /// UDP resends after a timeout.
    pub udp_retries: u64,
    /// Queries resent over TCP after a truncated UDP answer.
    pub tc_retries: u64,
    /// UDP sockets opened.
    pub udp_sockets_opened: u64,
    /// TCP and TLS connections opened.
    pub connections_opened: u64,
    /// Queries sent over an already open connection.
    pub connections_reused: u64,
    /// TLS handshakes that resumed a session.
    pub tls_resumed: u64,
    /// Responses that matched no query in flight (late, duplicate, or wrong question).
    pub unmatched_responses: u64,
    /// ICMP unreachable reports on UDP sockets (nothing listening at the server's address); the
    /// queries in flight then time out, and the next query on that socket fails as `refused`.
    pub udp_unreachable: u64,
    /// Results written to the result sink.
    pub results: u64,
    /// Wall time of the replay.
    pub duration: Duration,
}

impl ReplayStats {
    /// Failed queries of `kind`.
    pub fn error_count(&self, kind: ErrorKind) -> u64 {
        self.errors.get(kind)
    }

    /// All failed queries.
    pub fn total_errors(&self) -> u64 {
        self.errors.total()
    }

    pub(crate) fn count_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Answered => self.answered += 1,
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Error(k) => self.errors.add(k, 1),
        }
    }

    /// Counts `n` queries failed with `kind` for `cause`; the first of each cause is described.
    pub(crate) fn note_cause(&mut self, kind: ErrorKind, cause: &Cause, ctx: &Context<'_>, n: u64) {
        let key = cause.key();
        match self
            .causes
            .iter_mut()
            .find(|c| c.kind == kind && c.cause == key)
        {
            Some(c) => c.count += n,
            None => self.causes.push(ErrorCause {
                kind,
                cause: key,
                count: n,
                first: cause.describe(ctx),
            }),
        }
    }

    /// Adds `other`'s counters into `self` (durations: the longer).
    pub fn merge(&mut self, other: &ReplayStats) {
        self.records += other.records;
        self.skipped_responses += other.skipped_responses;
        self.queries += other.queries;
        self.clients += other.clients;
        self.sent += other.sent;
        self.answered += other.answered;
        self.timeouts += other.timeouts;
        self.timeouts_unsent += other.timeouts_unsent;
        self.errors.merge(&other.errors);
        for c in &other.causes {
            match self
                .causes
                .iter_mut()
                .find(|x| x.kind == c.kind && x.cause == c.cause)
            {
                Some(x) => x.count += c.count,
                None => self.causes.push(c.clone()),
            }
        }
        self.udp_retries += other.udp_retries;
        self.tc_retries += other.tc_retries;
        self.udp_sockets_opened += other.udp_sockets_opened;
        self.connections_opened += other.connections_opened;
        self.connections_reused += other.connections_reused;
        self.tls_resumed += other.tls_resumed;
        self.unmatched_responses += other.unmatched_responses;
        self.udp_unreachable += other.udp_unreachable;
        self.results += other.results;
        self.duration = self.duration.max(other.duration);
    }
}
