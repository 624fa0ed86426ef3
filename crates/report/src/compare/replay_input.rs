//! A replay's results file as metrics: shares of outcomes and response codes, latency and
//! connection set-up percentiles per transport.

use super::metric::{Measure, Measured, TraceMark, Worse};
use crate::ReportError;
use ldplayer_results::summary::MAIN_RCODES;
use ldplayer_results::{LatencyReport, ResultsReader, Summary, SummaryReport};
use ldplayer_trace::Proto;
use std::collections::BTreeMap;
use std::path::Path;

/// Reads one statistic of a latency distribution.
type Stat = fn(&LatencyReport) -> f64;

/// The statistics of a latency distribution a comparison shows, by the name they get.
const LATENCY_STATS: [(&str, Stat); 8] = [
    ("mean", |l| l.mean),
    ("p5", |l| l.p5),
    ("p25", |l| l.p25),
    ("p50", |l| l.p50),
    ("p75", |l| l.p75),
    ("p95", |l| l.p95),
    ("p99", |l| l.p99),
    ("p99.9", |l| l.p99_9),
];

/// What one results file holds, summarized.
pub struct ReadResults {
    /// The summary, as `ldplayer results summary` prints it.
    pub report: SummaryReport,
    /// Which trace it replayed.
    pub trace: TraceMark,
    /// Results by transport (`udp`, `tcp`, ...), answered or not.
    pub queries_by_proto: BTreeMap<String, u64>,
    /// Damage skipped while reading, in words, if any.
    pub damage: Option<String>,
    /// The warning that the run which wrote the file did not finish, if it did not.
    pub incomplete: Option<String>,
}

/// Reads a results file in one pass (bounded memory, as `ldplayer results summary`).
pub fn read_results(path: &Path) -> Result<ReadResults, ReportError> {
    let results_error = |source| ReportError::Results {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = ResultsReader::open(path).map_err(results_error)?;
    let mut summary = Summary::new();
    let mut first_trace_ns: Option<i64> = None;
    let mut by_proto = [0u64; Proto::ALL.len()];
    for result in reader.by_ref() {
        let result = result.map_err(results_error)?;
        first_trace_ns = Some(first_trace_ns.map_or(result.trace_ns, |t| t.min(result.trace_ns)));
        by_proto[result.proto as usize] += 1;
        summary.add(&result);
    }
    let queries_by_proto = Proto::ALL
        .iter()
        .zip(by_proto)
        .filter(|&(_, n)| n > 0)
        .map(|(p, n)| (p.as_str().to_string(), n))
        .collect();
    let damage = reader.damage();
    let damage = (!damage.is_clean()).then(|| format!("{}: {damage}", path.display()));
    let incomplete = reader.incomplete_warning(path.display());
    Ok(ReadResults {
        trace: TraceMark {
            queries: summary.results(),
            first_trace_ns,
        },
        queries_by_proto,
        report: summary.report(),
        damage,
        incomplete,
    })
}

/// Adds a replay's metrics (of the experiment run `run`, if any) to `into`:
/// `answered_share`, `timeout_share`, `error_share`, the response code shares, and
/// `latency_ms.PROTO.STAT` and `handshake_ms.PROTO.STAT` for each transport with answers.
pub fn push_replay_metrics(report: &SummaryReport, run: Option<&str>, into: &mut Measured) {
    if report.results > 0 {
        let share = |n: u64| n as f64 / report.results as f64;
        let errors: u64 = report.errors.values().sum();
        into.push(
            "answered_share".into(),
            run,
            Worse::Lower,
            share(report.answered),
        );
        into.push(
            "timeout_share".into(),
            run,
            Worse::Higher,
            share(report.timeouts),
        );
        into.push("error_share".into(), run, Worse::Higher, share(errors));
    }
    push_rcode_shares(report, run, into);
    for (family, by_proto) in [
        ("latency_ms", &report.latency_ms),
        ("handshake_ms", &report.handshake_ms),
    ] {
        // Transports in their code order: udp, tcp, tls.
        let protos = Proto::ALL
            .iter()
            .filter_map(|p| by_proto.get_key_value(p.as_str()));
        for (proto, latency) in protos {
            for (stat, value) in LATENCY_STATS {
                let metric = format!("{family}.{proto}.{stat}");
                into.push(metric, run, Worse::Higher, value(latency));
            }
        }
    }
}

/// Adds `rcode_share.RCODE` (answers with that code over all answers) for NOERROR, NXDOMAIN,
/// SERVFAIL and REFUSED (zero when none came) and for every other code that came, when there
/// were answers. Less NOERROR is worse; more of any other code is worse.
pub fn push_rcode_shares(report: &SummaryReport, run: Option<&str>, into: &mut Measured) {
    if report.answered == 0 {
        return;
    }
    let main = MAIN_RCODES.iter().filter_map(|rc| rc.mnemonic());
    let others = report
        .rcodes
        .keys()
        .map(String::as_str)
        .filter(|name| !MAIN_RCODES.iter().any(|rc| rc.mnemonic() == Some(name)));
    for name in main.chain(others) {
        let n = report.rcodes.get(name).copied().unwrap_or(0);
        into.push(
            rcode_metric(name),
            run,
            rcode_worse(name),
            n as f64 / report.answered as f64,
        );
    }
}

/// The prefix of the response code shares' names.
pub const RCODE_SHARE: &str = "rcode_share.";

/// `rcode_share.NAME`.
pub fn rcode_metric(name: &str) -> String {
    format!("{RCODE_SHARE}{name}")
}

/// Which way a response code's share is worse: less NOERROR, more of anything else.
pub fn rcode_worse(name: &str) -> Worse {
    if name == "NOERROR" {
        Worse::Lower
    } else {
        Worse::Higher
    }
}

/// A response code one input got and the other did not is a share of 0 in the other, when
/// that one had answers (of the same run): adds those zeros to both.
pub fn align_rcode_shares(a: &mut Measured, b: &mut Measured) {
    let missing_in = |to: &Measured, from: &Measured| {
        from.measures
            .iter()
            .filter(|m| m.metric.starts_with(RCODE_SHARE))
            .filter(|m| {
                let answered = to
                    .measures
                    .iter()
                    .any(|t| t.run == m.run && t.metric.starts_with(RCODE_SHARE));
                let has = to
                    .measures
                    .iter()
                    .any(|t| t.run == m.run && t.metric == m.metric);
                answered && !has
            })
            .map(|m| (m.metric.clone(), m.run.clone(), m.worse))
            .collect::<Vec<_>>()
    };
    let (to_a, to_b) = (missing_in(a, b), missing_in(b, a));
    for (into, add) in [(a, to_a), (b, to_b)] {
        for (metric, run, worse) in add {
            // Beside the run's other codes.
            let at = into
                .measures
                .iter()
                .rposition(|m| m.run == run && m.metric.starts_with(RCODE_SHARE))
                .map_or(into.measures.len(), |i| i + 1);
            into.measures.insert(
                at,
                Measure {
                    metric,
                    run,
                    worse,
                    value: 0.0,
                },
            );
        }
    }
}
