//! Counters of a replay, and their JSON form.

use crate::cause::{Cause, Context};
use ldplayer_results::{ErrorCounts, ErrorKind, Outcome};
use ldplayer_trace::{SkipCounts, SkipReason};
use serde::ser::Serializer;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The error kinds, in the order of [`ErrorKind::ALL`].
#[deprecated(note = "use ldplayer_results::ErrorKind::ALL, the one list of error kinds")]
pub const ERROR_KINDS: [ErrorKind; ErrorKind::ALL.len()] = ErrorKind::ALL;

/// Failed queries of one kind and one cause, with the first such failure in words.
///
/// Serialized as `{"kind": "tls", "cause": "unknown-issuer", "count": 3, "first": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// Where a transport's send and answer times come from: `kernel` (the kernel's stamp of the
/// query's last packet sent, `SO_TIMESTAMPING`, or for QUIC of the datagram that carried its
/// stream's first bytes; or of the packet that completed the answer, `SO_TIMESTAMPNS`) or
/// `user` (the replay's clock read beside the system call or the QUIC stack's event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TimestampSource {
    /// The send time's source.
    pub send: &'static str,
    /// The answer time's source.
    pub receive: &'static str,
}

/// What a replay did. Latency and timing summaries are built from the results, not here.
///
/// Serializes (serde) to the `replay` object of `ldplayer replay --json`, an interface of its
/// own: `records`, `queries`, `skipped_responses`, `other_shards`, `clients`, `udp_sockets_opened`,
/// `connections_opened`, `connections_reused`, `tls_resumed`, `quic_zero_rtt`,
/// `quic_zero_rtt_accepted`, `quic_packets_lost`, `stacks`, `timestamps`, `tc_retries`,
/// `udp_retries`,
/// `unmatched_responses`, `udp_unreachable`, `timeouts_unsent`, `error_causes` (a list of
/// [`ErrorCause`]), `trace_skipped` and `trace_malformed` (objects of counts by
/// [`SkipReason::name`]), and also `sent`, `answered`, `timeouts`, `errors` (counts by
/// [`ErrorKind::name`]), `results` and `seconds` (the wall time).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplayStats {
    /// Records read from the source.
    pub records: u64,
    /// Records skipped because they are responses (with `queries_only`).
    pub skipped_responses: u64,
    /// Queries left to the other shards of a split replay (their clients are not this shard's).
    pub other_shards: u64,
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
    #[serde(rename = "error_causes")]
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
    /// TLS handshakes that resumed a session (DoT, DoH and DoQ).
    pub tls_resumed: u64,
    /// DoQ connections whose first queries went in 0-RTT (a resumed session whose ticket
    /// allowed early data).
    pub quic_zero_rtt: u64,
    /// Of those, the ones whose 0-RTT data the server accepted (the rest sent it again).
    pub quic_zero_rtt_accepted: u64,
    /// QUIC packets the client stack declared lost and sent again (DoQ and DoH over HTTP/3):
    /// the lean stack's loss detection and probe timeouts, quinn's `lost_packets`.
    pub quic_packets_lost: u64,
    /// The client stacks of the replay's encrypted transports (`lean`, `reference`), as the
    /// configuration and its session profiles chose them.
    pub stacks: Vec<&'static str>,
    /// Where each transport's send and answer times come from (`udp`, `tcp`, `tls`, `https`,
    /// `quic`): the same on either stack.
    pub timestamps: BTreeMap<&'static str, TimestampSource>,
    /// Messages received that answered no query in flight: late or duplicate answers,
    /// responses to another question, messages that are not responses, garbage on a connection
    /// (the queries they failed are counted by cause in [`causes`](Self::causes)).
    pub unmatched_responses: u64,
    /// ICMP unreachable reports on UDP sockets (nothing listening at the server's address); the
    /// queries in flight then time out, and the next query on that socket fails as `refused`.
    pub udp_unreachable: u64,
    /// Items the trace reader skipped as unusable (packets, lines, records), by reason, as the
    /// source reported them to the engine.
    #[serde(serialize_with = "counts_by_reason")]
    pub trace_skipped: SkipCounts,
    /// Records holding a malformed DNS message (replayed as they are), by fault.
    #[serde(serialize_with = "counts_by_reason")]
    pub trace_malformed: SkipCounts,
    /// Results written to the result sink.
    pub results: u64,
    /// Wall time of the replay.
    #[serde(rename = "seconds", serialize_with = "seconds")]
    pub duration: Duration,
    /// With a ramp ([`crate::Timing::Ramp`]): whether it ran its whole length (the trace held
    /// all of its queries; those past its end were not sent), or the trace ran out first, or
    /// the replay was stopped (`false`: the ramp stopped short of its final rate). Left out of
    /// the JSON without a ramp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_completed: Option<bool>,
}

fn counts_by_reason<S: Serializer>(counts: &SkipCounts, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(counts.iter().map(|(r, c)| (r.name(), c)))
}

fn seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl ReplayStats {
    /// Notes the stacks and the timestamp sources that `config` gives.
    pub(crate) fn describe_clocks(&mut self, config: &crate::config::ReplayConfig) {
        let mut stacks = vec![config.stack];
        if let Some(p) = &config.profiles {
            stacks.extend(p.profiles.iter().filter_map(|c| c.stack));
        }
        self.stacks.clear();
        for s in crate::config::Stack::ALL {
            if stacks.contains(&s) {
                self.stacks.push(s.as_str());
            }
        }
        let send = if config.kernel_send_times {
            "kernel"
        } else {
            "user"
        };
        let socket = TimestampSource {
            send,
            receive: "kernel",
        };
        // The lean QUIC stack's sockets are the replay's: its datagrams take the kernel's
        // stamps as UDP's do. The reference stack's (quinn's) packets are its own: the query's
        // send and its answer are events of the stack, timed by the clock when they are; when
        // some clients use it, not every QUIC time is the kernel's.
        let quic = if stacks.contains(&crate::config::Stack::Reference) {
            TimestampSource {
                send: "user",
                receive: "user",
            }
        } else {
            socket
        };
        self.timestamps = BTreeMap::from([
            ("udp", socket),
            ("tcp", socket),
            ("tls", socket),
            ("https", if config.doh.http3 { quic } else { socket }),
            ("quic", quic),
        ]);
    }

    /// Failed queries of `kind`.
    pub fn error_count(&self, kind: ErrorKind) -> u64 {
        self.errors.get(kind)
    }

    /// All failed queries.
    pub fn total_errors(&self) -> u64 {
        self.errors.total()
    }

    /// Counts an item the trace reader skipped.
    pub(crate) fn count_skipped(&mut self, reason: SkipReason) {
        self.trace_skipped.add(reason);
    }

    /// Counts a record holding a malformed message.
    pub(crate) fn count_malformed(&mut self, error: ldplayer_dns::DnsError) {
        self.trace_malformed.add(SkipReason::Dns(error));
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
        self.other_shards += other.other_shards;
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
        self.quic_zero_rtt += other.quic_zero_rtt;
        self.quic_zero_rtt_accepted += other.quic_zero_rtt_accepted;
        self.quic_packets_lost += other.quic_packets_lost;
        for s in &other.stacks {
            if !self.stacks.contains(s) {
                self.stacks.push(s);
            }
        }
        for (k, v) in &other.timestamps {
            self.timestamps.entry(k).or_insert(*v);
        }
        self.unmatched_responses += other.unmatched_responses;
        self.udp_unreachable += other.udp_unreachable;
        self.trace_skipped.merge(&other.trace_skipped);
        self.trace_malformed.merge(&other.trace_malformed);
        self.results += other.results;
        self.duration = self.duration.max(other.duration);
        self.ramp_completed = match (self.ramp_completed, other.ramp_completed) {
            (Some(a), Some(b)) => Some(a || b),
            (a, b) => a.or(b),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_dns::DnsError;

    /// The keys and value shapes `ldplayer replay --json` has always printed in `replay`.
    #[test]
    fn serializes_to_the_cli_replay_object() {
        let mut stats = ReplayStats {
            records: 10,
            queries: 7,
            skipped_responses: 3,
            clients: 2,
            udp_sockets_opened: 2,
            connections_opened: 1,
            connections_reused: 4,
            tls_resumed: 1,
            tc_retries: 1,
            udp_retries: 2,
            unmatched_responses: 5,
            udp_unreachable: 6,
            timeouts_unsent: 1,
            causes: vec![ErrorCause {
                kind: ErrorKind::Tls,
                cause: "unknown-issuer",
                count: 2,
                first: "the server's certificate".into(),
            }],
            ..ReplayStats::default()
        };
        stats.errors.add(ErrorKind::Tls, 2);
        stats.count_skipped(SkipReason::TcpGap);
        stats.count_skipped(SkipReason::TcpGap);
        stats.count_malformed(DnsError::Truncated);
        let json = serde_json::to_value(&stats).unwrap();
        let want = serde_json::json!({
            "records": 10,
            "queries": 7,
            "skipped_responses": 3,
            "other_shards": 0,
            "clients": 2,
            "udp_sockets_opened": 2,
            "connections_opened": 1,
            "connections_reused": 4,
            "tls_resumed": 1,
            "tc_retries": 1,
            "udp_retries": 2,
            "unmatched_responses": 5,
            "udp_unreachable": 6,
            "timeouts_unsent": 1,
            "error_causes": [{
                "kind": "tls",
                "cause": "unknown-issuer",
                "count": 2,
                "first": "the server's certificate",
            }],
            "trace_skipped": {"tcp-gap": 2},
            "trace_malformed": {(DnsError::Truncated.name()): 1},
        });
        for (key, value) in want.as_object().unwrap() {
            assert_eq!(&json[key], value, "{key} in {json}");
        }
        assert_eq!(json["errors"]["tls"], 2, "{json}");
        assert_eq!(json["errors"]["refused"], 0, "{json}");
    }

    #[test]
    fn merging_adds_the_trace_counts() {
        let mut a = ReplayStats::default();
        a.count_skipped(SkipReason::TcpGap);
        let mut b = ReplayStats::default();
        b.count_skipped(SkipReason::TcpGap);
        b.count_skipped(SkipReason::TextLine);
        b.count_malformed(DnsError::Truncated);
        a.merge(&b);
        assert_eq!(a.trace_skipped.get(SkipReason::TcpGap), 2);
        assert_eq!(a.trace_skipped.get(SkipReason::TextLine), 1);
        assert_eq!(a.trace_malformed.total(), 1);
    }
}
