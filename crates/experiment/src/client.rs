//! The client side's replay: the run's trace, from each client's original address, to the
//! server through the link, every result written to the run's results file.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ldplayer_replay::{Finished, Replay, ReplayConfig, Timing, TlsConfig};
use ldplayer_results::{Capacity, ResultsWriter, Summary, Tee};
use ldplayer_trace::open::{open, ReadOptions};
use ldplayer_trace::Proto;
use serde::{Deserialize, Serialize};

use crate::error::ExperimentError;
use crate::side::{ClientSideConfig, HTTPS_PORT, QUIC_PORT, TLS_PORT};

pub use crate::client_processes::{run_shard, ClientShard};
use crate::topology::SERVER_V4;

/// What the client side reports when its replay is done (`replay.json` in the run's folder).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayReport {
    /// When the schedule started (CLOCK_REALTIME ns): the trace's first query was due then.
    pub start_ns: i64,
    /// Whether the replay was stopped before the trace's end.
    pub interrupted: bool,
    /// The engine's counters (as the `replay` object of `ldplayer replay --json`).
    pub engine: serde_json::Value,
    /// The summary of the results (as `ldplayer replay --json` prints it).
    pub summary: serde_json::Value,
    /// The client namespace's UDP counters at the end (`/proc/net/snmp`): answers the kernel
    /// dropped before the replay could read them show here (`RcvbufErrors`, `NoPorts`).
    #[serde(default)]
    pub kernel_udp: std::collections::BTreeMap<String, u64>,
    /// The client namespace's TCP counters at the end (`/proc/net/snmp`): `RetransSegs` are
    /// the clients' TCP retransmissions (DoT, DoH), beside the QUIC stacks' own count
    /// (`engine.quic_packets_lost`).
    #[serde(default)]
    pub kernel_tcp: std::collections::BTreeMap<String, u64>,
}

/// The `Udp:` counters of this network namespace.
pub fn kernel_udp_counters() -> std::collections::BTreeMap<String, u64> {
    snmp_counters("Udp:")
}

/// The `Tcp:` counters of this network namespace.
pub fn kernel_tcp_counters() -> std::collections::BTreeMap<String, u64> {
    snmp_counters("Tcp:")
}

/// The counters of one protocol's pair of lines (`Udp:`, `Tcp:`) in `/proc/self/net/snmp`.
fn snmp_counters(prefix: &str) -> std::collections::BTreeMap<String, u64> {
    let text = std::fs::read_to_string("/proc/self/net/snmp").unwrap_or_default();
    let mut udp = text.lines().filter(|l| l.starts_with(prefix));
    match (udp.next(), udp.next()) {
        (Some(names), Some(values)) => names
            .split_whitespace()
            .skip(1)
            .zip(values.split_whitespace().skip(1))
            .filter_map(|(n, v)| Some((n.to_string(), v.parse().ok()?)))
            .collect(),
        _ => Default::default(),
    }
}

/// The open files the client side may hold: a UDP socket and a connection for each of tens of
/// thousands of clients (25,000 in the capacity example) in one process, far past the usual
/// limit of 1,024 or 20,000; the kernel's ceiling (`fs.nr_open`) bounds it.
const OPEN_FILES: u64 = 1 << 20;

/// Raises this process's limit on open files towards [`OPEN_FILES`] (the hard limit too, where
/// the process may: `CAP_SYS_RESOURCE`); past the hard limit a client side needs
/// `[client] processes`, each with a limit of its own. Never lowers it; a refusal leaves it as
/// it was.
fn raise_open_files() {
    let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(OPEN_FILES)
        .min(OPEN_FILES);
    ldplayer_system::limits::raise_file_limit(ceiling);
}

/// Replays `c.trace` with its schedule starting at `start_ns`, until its end or until `stop`:
/// in this process, or in `c.processes` processes, each a shard of the clients, whose results
/// are merged into `c.results`.
pub fn replay(
    c: &ClientSideConfig,
    start_ns: i64,
    stop: &Arc<AtomicBool>,
) -> Result<(), ExperimentError> {
    match c.processes.filter(|&n| n > 1) {
        Some(n) => crate::client_processes::replay(c, n, start_ns, stop),
        None => replay_shard(c, None, start_ns, stop),
    }
}

/// Replays the clients of `shard` (all of them with `None`) of `c.trace`, from `start_ns`:
/// every result to `c.results`, the counters and the summary to `c.stats`.
pub(crate) fn replay_shard(
    c: &ClientSideConfig,
    shard: Option<ldplayer_results::ShardId>,
    start_ns: i64,
    stop: &Arc<AtomicBool>,
) -> Result<(), ExperimentError> {
    let proto = c
        .proto
        .as_deref()
        .map(|p| p.parse::<Proto>().map_err(ExperimentError::Input))
        .transpose()?;
    let population = c
        .population
        .as_deref()
        .map(crate::plan::read_population)
        .transpose()
        .map_err(ExperimentError::Input)?;
    raise_open_files();
    let at = |port| SocketAddr::new(IpAddr::V4(SERVER_V4), port);
    // Each transport to its own port, whichever mix the trace or population has.
    let mut config = ReplayConfig::new(at(53));
    config.tls_server = Some(at(TLS_PORT));
    config.https_server = Some(at(HTTPS_PORT));
    config.quic_server = Some(at(QUIC_PORT));
    config.proto_override = proto;
    config.profiles = population
        .as_ref()
        .map(ldplayer_replay::Profiles::of_population);
    if let Some(method) = c.doh_method {
        config.doh.method = method;
    }
    config.stack = c.stack;
    config.original_sources = true;
    config.keep_answers = c.keep_answers;
    config.start_ns = Some(start_ns);
    config.timeout = Duration::from_millis(c.timeout_ms);
    config.udp_retries = c.udp_retries;
    config.tcp_idle_timeout = Duration::from_millis(c.idle_timeout_ms);
    // The server's own idle timeout is the variable under study: the clients do not adopt a
    // shorter one from its EDNS keepalive answers.
    config.honor_keepalive = false;
    config.retry_truncated_over_tcp = c.tc_retry;
    if let Some(n) = c.max_udp_sockets {
        config.max_udp_sockets = n.max(1);
    }
    if let Some(q) = c.queriers {
        config.queriers = q.max(1);
    }
    if let Some(max_in_flight) = c.fast {
        config.timing = Timing::Fast { max_in_flight };
    }
    if let Some(ramp) = c.ramp {
        config.timing = Timing::Ramp {
            to_qps: ramp.to_qps,
            ramp_s: ramp.ramp_s,
        };
    }
    config.queries_per_connection = c.queries_per_connection;
    config.shard = shard;
    config.tls = TlsConfig {
        ca_file: c.tls_ca.clone(),
        insecure: false,
        server_name: None,
        resume: c.tls_resume,
        ..TlsConfig::default()
    };
    let replay = Replay::new(config).map_err(|e| ExperimentError::Replay(e.to_string()))?;
    let mut input = open(
        &c.trace,
        &ReadOptions {
            dns_ports: vec![53],
            ..Default::default()
        },
    )
    .map_err(|e| ExperimentError::Trace(format!("{}: {e}", c.trace.display())))?;
    // Marked complete at the end, so that a run killed half way reads as unfinished.
    let unfinished = ldplayer_results::RunInfo {
        complete: Some(false),
        answers: c.keep_answers.then_some(true),
        closed_loop: Some(c.fast.is_some()),
        shard,
        ramp: c.ramp,
        start_ns: c.ramp.map(|_| start_ns),
        ..Default::default()
    };
    let capacity = c.ramp.map(|spec| Capacity::new(spec, start_ns));
    let writer = ResultsWriter::create_with_run_info(&c.results, &unfinished)
        .map_err(|e| ExperimentError::io(&c.results, e))?;
    let sink = Tee::new(Summary::new(), Tee::new(capacity, writer));
    let driven = ldplayer_replay::drive(
        std::slice::from_ref(&replay),
        vec![sink],
        stop.as_ref(),
        |sink| match &population {
            Some(p) => input
                .source
                .run(&mut ldplayer_population::AssignTransports::new(p, sink)),
            None => input.source.run(sink),
        },
    )
    .map_err(|e| ExperimentError::Replay(e.to_string()))?;
    if let Some(e) = driven.read_error {
        return Err(ExperimentError::Trace(e.to_string()));
    }
    let Some(Finished { results, stats }) = driven.targets.into_iter().next() else {
        return Err(ExperimentError::Replay("the replay gave no results".into()));
    };
    let (summary, rest) = results.into_parts();
    let (capacity, writer) = rest.into_parts();
    writer
        .into_inner()
        .and_then(|mut file| std::io::Write::flush(&mut file))
        .map_err(|e| ExperimentError::io(&c.results, e))?;
    if !stop.load(Ordering::Relaxed) {
        ldplayer_results::mark_complete(&c.results)
            .map_err(|e| ExperimentError::io(&c.results, e))?;
    }
    let report = ReplayReport {
        start_ns,
        interrupted: stop.load(Ordering::Relaxed),
        engine: serde_json::to_value(&stats).unwrap_or_default(),
        summary: {
            let mut json = serde_json::to_value(summary.report()).unwrap_or_default();
            if let (Some(obj), Some(c)) = (json.as_object_mut(), capacity) {
                obj.insert(
                    "ramp".into(),
                    serde_json::to_value(c.report()).unwrap_or_default(),
                );
            }
            json
        },
        kernel_udp: kernel_udp_counters(),
        kernel_tcp: kernel_tcp_counters(),
    };
    let text = serde_json::to_vec_pretty(&report)
        .map_err(|e| ExperimentError::Input(format!("replay report: {e}")))?;
    ldplayer_output::write(&c.stats, text).map_err(|e| ExperimentError::io(&c.stats, e.into()))
}
