//! `run.json`: one run's settings, outcome and headline figures, written last in the run's
//! folder (a run without it did not finish), and `failed.json` for a run that failed.
//!
//! [`RunRecord`] is generic over the run's settings and outputs: the experiment writes and
//! reads it with its full types (the whole resolved plan, the replay's report, the link's
//! counters), which need the replay engine, the link emulator and the servers to be built;
//! a reader that only shows a study reads it with [`RecordedSettings`] and
//! [`RecordedOutputs`], the parts of those objects it needs, which build with nothing of
//! them. The experiment's tests hold the two readings of one record equal.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It ran to its end; its figures are in the summary.
    Finished,
    /// It failed; the error says why.
    Failed,
    /// It had finished in an earlier invocation (`--resume`).
    Skipped,
}

/// `run.json`: one run's settings (`S`), outcome, outputs (`O`) and headline figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord<S = RecordedSettings, O = RecordedOutputs> {
    /// The run's identifier (its folder's name).
    pub id: String,
    /// The varied keys and their values in this run, in `[vary]` order.
    pub varied: Vec<(String, String)>,
    /// How it ended.
    pub status: Status,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's full settings.
    pub settings: S,
    /// The trace the run replayed (in the plan's `traces/` folder).
    pub trace_file: PathBuf,
    /// What the trace held.
    pub trace: TraceFacts,
    /// The run's outputs (replay report, link counters, server version).
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub outputs: Option<O>,
    /// Headline figures (metric → median), for the human summary. A metric without values
    /// has a NaN median, which JSON writes as `null` and reads back as NaN.
    #[serde(default, deserialize_with = "medians_with_nulls")]
    pub medians: BTreeMap<String, f64>,
    /// Why the measured window is not a steady state (a warm-up shorter than the idle
    /// timeout, connections or memory still drifting): said next to the run's figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsteady: Vec<String>,
}

/// A missing `outputs` (without asking `O` for a default).
fn none<O>() -> Option<O> {
    None
}

/// Reads `medians`, a `null` (a NaN when written) as NaN.
fn medians_with_nulls<'de, D>(deserializer: D) -> Result<BTreeMap<String, f64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let medians: BTreeMap<String, Option<f64>> = Deserialize::deserialize(deserializer)?;
    Ok(medians
        .into_iter()
        .map(|(metric, median)| (metric, median.unwrap_or(f64::NAN)))
        .collect())
}

/// What a prepared trace holds (also kept beside the trace, in `TRACE.json`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceFacts {
    /// Records written.
    pub records: u64,
    /// Time of the first record (ns since the epoch).
    pub first_ns: i64,
    /// Time of the last record.
    pub last_ns: i64,
    /// Records per transport, in [`Proto`](ldplayer_trace::Proto) code order (UDP, TCP, TLS,
    /// HTTPS, QUIC): which transports the server must serve when the replay keeps the trace's.
    pub per_proto: [u64; 5],
}

impl TraceFacts {
    /// From the first record to the last, in seconds.
    pub fn duration_s(&self) -> f64 {
        (self.last_ns - self.first_ns).max(0) as f64 / 1e9
    }

    /// The transports the trace's records go over.
    pub fn transports(&self) -> Vec<ldplayer_trace::Proto> {
        ldplayer_trace::Proto::ALL
            .into_iter()
            .filter(|p| self.per_proto[*p as usize] > 0)
            .collect()
    }

    /// How long the replay of this trace lasts, in seconds: a ramp's length (`ramp`), else
    /// the trace's (a closed loop's depends on the server: the trace's is an estimate).
    pub fn replay_s(&self, ramp: Option<&ldplayer_results::RampSpec>) -> f64 {
        match ramp {
            Some(r) => r.ramp_s,
            None => self.duration_s(),
        }
    }
}

/// The server's product and version alone (`NSD 4.6.1`), also from a record written when the
/// version was followed by ` (TCP clients N)`.
pub fn server_version_alone(recorded: &str) -> &str {
    let version = recorded.trim();
    match version.rsplit_once(" (TCP clients ") {
        Some((alone, rest)) if rest.ends_with(')') => alone.trim_end(),
        _ => version,
    }
}

/// What a reader of a study needs of a run's settings (the `settings` object of `run.json`,
/// whose other keys it leaves alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedSettings {
    /// The queries: how they were changed, which clients count as non-busy.
    pub trace: RecordedTrace,
    /// The server answering them.
    pub server: RecordedServer,
    /// The replaying clients.
    pub client: RecordedClient,
    /// Seconds from the replay's start left out of the statistics (the server's warm-up).
    pub warmup_s: f64,
}

impl RecordedSettings {
    /// How long the replay of a trace with `facts` lasts, in seconds (see
    /// [`TraceFacts::replay_s`]).
    pub fn replay_s(&self, facts: &TraceFacts) -> f64 {
        facts.replay_s(self.client.ramp.as_ref())
    }
}

/// `settings.trace` of `run.json`, as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedTrace {
    /// The changes made to the queries.
    pub mutate: RecordedMutate,
    /// Clients with fewer queries than this in the replayed trace count as non-busy.
    pub nonbusy_max_queries: u64,
}

/// `settings.trace.mutate` of `run.json`, as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedMutate {
    /// The transport clients were moved to (`udp`, `tcp`, `tls`, `doh`, `doq`), or `keep`.
    pub proto: String,
}

/// `settings.server` of `run.json`, as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedServer {
    /// The server's kind as plans name it (`nsd`, `knot`, `unbound`, ...).
    pub kind: String,
}

/// `settings.client` of `run.json`, as far as a reader needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedClient {
    /// With `mode = "ramp"`: the ramp and the bounds its capacity is judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<ldplayer_results::RampSpec>,
}

/// What a reader of a study needs of a run's outputs (the `outputs` object of `run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedOutputs {
    /// The client side's report.
    pub replay: RecordedReplay,
    /// The server's product and version (`NSD 4.6.1`); see
    /// [`server_version`](Self::server_version).
    pub server_version: String,
    /// The TCP connections the server was configured to hold; `None` in records that did not
    /// keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tcp_clients: Option<u64>,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
}

impl RecordedOutputs {
    /// The server's product and version alone ([`server_version_alone`]).
    pub fn server_version(&self) -> &str {
        server_version_alone(&self.server_version)
    }
}

/// `outputs.replay` of `run.json` (the client side's `replay.json`), as far as a reader needs
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedReplay {
    /// When the schedule started (`CLOCK_REALTIME` ns): the trace's first query was due then,
    /// the zero of the samples' `t_s`.
    pub start_ns: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{
        "id": "001-proto=tcp-r1",
        "varied": [["proto", "tcp"]],
        "status": "finished",
        "settings": {
            "trace": {"source": "x", "mutate": {"proto": "tcp", "proto_share": 1.0},
                      "rate_scale": 1.0, "nonbusy_max_queries": 250},
            "server": {"kind": "pdns-recursor", "zones": []},
            "network": {"rtt_ms": 20},
            "client": {"timeout_s": 5.0, "ramp": {"to_qps": 100.0, "ramp_s": 30.0,
                       "max_loss_pct": 100.0, "latency_percentile": 50.0}},
            "warmup_s": 2.5, "cooldown_s": 1.0, "seed": 7
        },
        "trace_file": "traces/t.bin",
        "trace": {"records": 10, "first_ns": 1000000000, "last_ns": 11000000000,
                  "per_proto": [0, 10, 0, 0, 0]},
        "outputs": {"replay": {"start_ns": 5, "interrupted": false},
                    "server_version": "NSD 4.6.1 (TCP clients 30)", "probe_rtt_us": 40,
                    "seconds": 12.5},
        "medians": {"latency_ms": 20.5, "handshake_ms": null}
    }"#;

    #[test]
    fn a_reader_takes_what_it_needs_and_leaves_the_rest() {
        let r: RunRecord = serde_json::from_str(RECORD).unwrap();
        assert_eq!(r.status, Status::Finished);
        assert_eq!(r.varied, [("proto".to_string(), "tcp".to_string())]);
        assert_eq!(r.settings.trace.mutate.proto, "tcp");
        assert_eq!(r.settings.trace.nonbusy_max_queries, 250);
        assert_eq!(r.settings.server.kind, "pdns-recursor");
        assert_eq!(r.settings.warmup_s, 2.5);
        assert_eq!(r.settings.replay_s(&r.trace), 30.0, "the ramp's length");
        assert_eq!(r.trace.duration_s(), 10.0);
        assert_eq!(r.trace.transports(), [ldplayer_trace::Proto::Tcp]);
        let outputs = r.outputs.as_ref().unwrap();
        assert_eq!(outputs.replay.start_ns, 5);
        assert_eq!(outputs.server_version(), "NSD 4.6.1");
        assert_eq!(outputs.server_tcp_clients, None);
        assert_eq!(r.medians["latency_ms"], 20.5);
        assert!(r.medians["handshake_ms"].is_nan(), "null reads as NaN");
        assert!(r.unsteady.is_empty() && r.error.is_none());
    }

    #[test]
    fn a_failed_run_without_outputs_reads_and_writes_back() {
        let mut json: serde_json::Value = serde_json::from_str(RECORD).unwrap();
        let object = json.as_object_mut().unwrap();
        object.remove("outputs");
        object.remove("medians");
        object.insert("status".into(), "failed".into());
        object.insert("error".into(), "the server did not start".into());
        let r: RunRecord = serde_json::from_value(json).unwrap();
        assert_eq!(r.status, Status::Failed);
        assert!(r.outputs.is_none() && r.medians.is_empty());
        let back: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert!(back.get("outputs").is_none(), "{back}");
        assert_eq!(back["error"], "the server did not start");
        assert_eq!(
            back["settings"]["client"],
            serde_json::json!({
                "ramp": {"to_qps": 100.0, "ramp_s": 30.0, "max_loss_pct": 100.0,
                         "latency_percentile": 50.0}
            })
        );
    }

    #[test]
    fn the_version_alone_drops_an_old_records_tcp_clients() {
        assert_eq!(server_version_alone("NSD 4.6.1"), "NSD 4.6.1");
        assert_eq!(
            server_version_alone(" Knot DNS 3.2 (TCP clients 9) "),
            "Knot DNS 3.2"
        );
        assert_eq!(server_version_alone("odd (TCP clients"), "odd (TCP clients");
    }
}
