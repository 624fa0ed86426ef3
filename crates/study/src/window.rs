//! Which queries a study's figures count and the latency they count for each: the experiment's
//! summary and the report's latency curves read results the same way.

use ldplayer_results::QueryResult;

/// When `r` was due, in seconds after the replay's start (`start_ns`), if that lies in the
/// measured window: after `warmup_s` and up to the trace's end (`duration_s`). Queries are
/// placed by when they were due (`intended_ns`), which every result has, sent or not.
pub fn measured_at_s(
    r: &QueryResult,
    start_ns: i64,
    warmup_s: f64,
    duration_s: f64,
) -> Option<f64> {
    let at_s = (r.intended_ns - start_ns) as f64 / 1e9;
    (at_s >= warmup_s && at_s <= duration_s).then_some(at_s)
}

/// An answered query's latency as its client saw it, in ns: a query that opened a connection
/// waited for its set-up (TCP and TLS handshakes) too, as in the paper's Figure 15. `None`
/// when it was not answered. This is `latency_ms` of `summary.csv`, in ns.
pub fn client_latency_ns(r: &QueryResult) -> Option<i64> {
    let setup = if r.new_connection {
        r.handshake_ns.max(0)
    } else {
        0
    };
    r.latency_ns().map(|ns| ns + setup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_results::{Outcome, Proto};

    const START: i64 = 1_700_000_000_000_000_000;

    fn answered_after(at_s: f64, latency_ns: i64) -> QueryResult {
        let intended_ns = START + (at_s * 1e9) as i64;
        QueryResult {
            index: 0,
            trace_ns: intended_ns,
            intended_ns,
            sent_ns: intended_ns,
            received_ns: intended_ns + latency_ns,
            proto: Proto::Tcp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: 100,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        }
    }

    #[test]
    fn the_window_holds_from_the_warm_up_to_the_end() {
        let at = |s| measured_at_s(&answered_after(s, 1), START, 2.0, 5.0);
        assert_eq!(at(1.5), None);
        assert_eq!(at(2.0), Some(2.0));
        assert_eq!(at(5.0), Some(5.0));
        assert_eq!(at(5.5), None);
    }

    #[test]
    fn a_query_that_opened_its_connection_waited_for_the_set_up_too() {
        let mut r = answered_after(1.0, 3_000_000);
        assert_eq!(client_latency_ns(&r), Some(3_000_000));
        r.new_connection = true;
        r.handshake_ns = 2_000_000;
        assert_eq!(client_latency_ns(&r), Some(5_000_000));
        r.outcome = Outcome::Timeout;
        r.received_ns = 0;
        assert_eq!(client_latency_ns(&r), None);
    }
}
