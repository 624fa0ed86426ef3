//! One run: the two sides started in their namespaces, the link between them, the replay, the
//! samples, and everything stopped again, also when the run fails or is interrupted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldplayer_link::{AddressDelay, Link, LinkCounters, LinkOptions, LinkParams, Side, Tun};
use serde::{Deserialize, Serialize};

use crate::client::ReplayReport;
use crate::error::ExperimentError;
use crate::sampler::{self, Sampled};
use crate::side::{ClientSideConfig, ServerSideConfig, SideConfig, HTTPS_PORT, TLS_PORT};
use crate::summary::Sample;
use crate::topology::{SideProcess, SERVER_V4, SERVER_V6};

/// How long each side gets to come up.
const START_WAIT: Duration = Duration::from_secs(40);
/// How long a side gets to stop by itself before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Between telling the client side to start and the trace's first query: time for the sampler
/// to take its place.
const LEAD_TIME: Duration = Duration::from_millis(1500);

/// Everything one run needs, resolved.
#[derive(Debug, Clone)]
pub struct RunInputs {
    /// The run's folder (created).
    pub dir: PathBuf,
    /// The executable that runs the sides (this program).
    pub exe: PathBuf,
    /// The server side.
    pub server: ServerSideConfig,
    /// The client side (the file names in it are set by [`run`]).
    pub client: ClientSideConfig,
    /// The link, from clients to server.
    pub client_to_server: LinkParams,
    /// The link, from server to clients.
    pub server_to_client: LinkParams,
    /// Each client address's extra round trip on top of the link's, if clients differ.
    pub client_delay: Option<AddressDelay>,
    /// Seed of the link's random choices.
    pub seed: u64,
    /// The trace's duration as replayed (after time scaling).
    pub duration: Duration,
    /// How the link's threads wait for departures.
    pub link_timing: ldplayer_link::Timing,
    /// Seconds sampled after the replay's end.
    pub cooldown: Duration,
}

/// What a finished run leaves, besides its files.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutputs {
    /// The results file.
    pub results: PathBuf,
    /// The samples (also in `samples.csv`).
    #[serde(skip)]
    pub samples: Vec<Sample>,
    /// The client side's report.
    pub replay: ReplayReport,
    /// The server's product and version (`NSD 4.6.1`). Older records carry ` (TCP clients N)`
    /// after it, which [`server_version`](Self::server_version) leaves out.
    pub server_version: String,
    /// The TCP connections the server was configured to hold (its `max_tcp_clients`, lowered
    /// to what the file descriptor limit allows); `None` in records that did not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tcp_clients: Option<u64>,
    /// The round trip of the client side's answered probe through the link, in µs.
    pub probe_rtt_us: u64,
    /// Probe queries the client side sent before one was answered (they cross the link too).
    #[serde(default)]
    pub probe_queries: u64,
    /// The link's counters at the end.
    pub link: LinkCounters,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// A recursive server's upstream queries, by level of the emulated hierarchy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<crate::upstream::UpstreamRecord>,
}

impl RunOutputs {
    /// The server's product and version alone, also from a record written when the version
    /// was followed by ` (TCP clients N)`.
    pub fn server_version(&self) -> &str {
        ldplayer_study::server_version_alone(&self.server_version)
    }
}

/// Runs one run in `inputs.dir`. `interrupted` ends it early (with
/// [`ExperimentError::Interrupted`], everything stopped); `progress` gets the share of the trace
/// replayed so far, a few times a second.
pub fn run(
    inputs: &RunInputs,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(f64),
) -> Result<RunOutputs, ExperimentError> {
    let began = Instant::now();
    let dir = &inputs.dir;
    std::fs::create_dir_all(dir).map_err(|e| ExperimentError::io(dir, e))?;
    // Device names: unique per orchestrator, at most 15 bytes.
    let pid = std::process::id();
    let (client_tun_name, server_tun_name) = (format!("ldpx{pid}c"), format!("ldpx{pid}s"));
    let client_tun = Tun::create(&client_tun_name)?;
    let server_tun = Tun::create(&server_tun_name)?;

    let mut server_config = inputs.server.clone();
    server_config.tun = server_tun_name;
    server_config.work_dir = dir.join("server");
    std::fs::create_dir_all(&server_config.work_dir)
        .map_err(|e| ExperimentError::io(&server_config.work_dir, e))?;
    let mut client_config = inputs.client.clone();
    client_config.tun = client_tun_name;
    client_config.results = dir.join("results.res");
    client_config.stats = dir.join("replay.json");

    let server_file = dir.join("server-side.json");
    SideConfig::Server(server_config.clone()).write(&server_file)?;
    let client_file = dir.join("client-side.json");
    SideConfig::Client(client_config.clone()).write(&client_file)?;

    let mut server = SideProcess::spawn(
        "server",
        &inputs.exe,
        &server_file,
        &dir.join("server-side.log"),
    )?;
    server.wait_for_netns(START_WAIT)?;
    server_tun.move_to_netns_of(server.pid())?;
    let mut client = SideProcess::spawn(
        "client",
        &inputs.exe,
        &client_file,
        &dir.join("client-side.log"),
    )?;
    client.wait_for_netns(START_WAIT)?;
    client_tun.move_to_netns_of(client.pid())?;
    let link = Arc::new(Link::start_with_options(
        client_tun,
        server_tun,
        inputs.client_to_server.clone(),
        inputs.server_to_client.clone(),
        inputs.seed,
        LinkOptions {
            client_delay: inputs.client_delay.clone(),
            clients_on: Side::A,
            timing: inputs.link_timing,
        },
    )?);

    let (server_version, server_tcp_clients) =
        crate::side::parse_ready(&server.expect("ready", START_WAIT)?);
    let probe = client.expect("ready", START_WAIT)?;
    let mut probe = probe
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let (probe_rtt_us, probe_queries) = (probe.next().unwrap_or(0), probe.next().unwrap_or(0));

    let start_ns = sampler::realtime_ns() + LEAD_TIME.as_nanos() as i64;
    let stop_sampling = Arc::new(AtomicBool::new(false));
    let sampled = Sampled {
        root_pid: server.pid(),
        exclude_pid: (server_config.kind != ldplayer_servers::ServerKind::Ldplayer)
            .then(|| server.side_pid())
            .flatten(),
        server_ips: vec![SERVER_V4.into(), SERVER_V6.into()],
        server_ports: vec![53, TLS_PORT, HTTPS_PORT],
    };
    let link_for_sampler = Arc::clone(&link);
    let sampler_thread = sampler::spawn(
        sampled,
        Box::new(move || link_for_sampler.counters()),
        start_ns,
        Arc::clone(&stop_sampling),
        dir.join("samples.csv"),
    );
    client.send(&format!("start {start_ns}"))?;

    let outcome = wait_for_replay(&mut client, inputs, start_ns, interrupted, progress);
    if outcome.is_ok() {
        sleep_unless(inputs.cooldown, interrupted);
    }
    stop_sampling.store(true, Ordering::SeqCst);
    let samples = sampler_thread
        .join()
        .map_err(|_| ExperimentError::Input("the sampler panicked".into()))?;
    client.stop(STOP_GRACE);
    server.stop(STOP_GRACE);
    let link_counters = match Arc::try_unwrap(link) {
        Ok(link) => link.stop(),
        Err(link) => link.counters(),
    };
    outcome?;
    if interrupted.load(Ordering::Relaxed) {
        return Err(ExperimentError::Interrupted);
    }
    let samples = samples?;
    let report_path = &client_config.stats;
    let report: ReplayReport = serde_json::from_slice(
        &std::fs::read(report_path).map_err(|e| ExperimentError::io(report_path, e))?,
    )
    .map_err(|e| ExperimentError::Input(format!("{}: {e}", report_path.display())))?;
    // Written by the server side as it stopped, when a hierarchy was behind the server.
    let upstream = std::fs::read(server_config.work_dir.join(crate::upstream::FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Ok(RunOutputs {
        results: client_config.results,
        samples,
        replay: report,
        server_version,
        server_tcp_clients,
        probe_rtt_us,
        probe_queries,
        link: link_counters,
        seconds: began.elapsed().as_secs_f64(),
        upstream,
    })
}

/// Waits for the client side to say `done`, reporting progress; stops it when interrupted or
/// when it runs far past the trace's end.
fn wait_for_replay(
    client: &mut SideProcess,
    inputs: &RunInputs,
    start_ns: i64,
    interrupted: &AtomicBool,
    progress: &mut dyn FnMut(f64),
) -> Result<(), ExperimentError> {
    let total = inputs.duration.as_secs_f64().max(1e-3);
    let limit = inputs.duration
        + LEAD_TIME
        + Duration::from_millis(
            inputs.client.timeout_ms * (u64::from(inputs.client.udp_retries) + 1),
        )
        + Duration::from_secs(120);
    let began = Instant::now();
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return Err(ExperimentError::Interrupted);
        }
        match client.expect("done", Duration::from_millis(200)) {
            Ok(_) => {
                progress(1.0);
                return Ok(());
            }
            Err(ExperimentError::Timeout(_)) => {}
            Err(e) => return Err(e),
        }
        let elapsed = (sampler::realtime_ns() - start_ns) as f64 / 1e9;
        progress((elapsed / total).clamp(0.0, 1.0));
        if began.elapsed() > limit {
            return Err(ExperimentError::Timeout(format!(
                "the replay to end ({} s after its start)",
                limit.as_secs()
            )));
        }
    }
}

fn sleep_unless(d: Duration, interrupted: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !interrupted.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The path of a run's results file inside its folder.
pub fn results_path(run_dir: &Path) -> PathBuf {
    run_dir.join("results.res")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_version_is_shown_without_the_tcp_clients_of_older_records() {
        let mut outputs: RunOutputs = serde_json::from_value(serde_json::json!({
            "results": "results.bin",
            "replay": {"start_ns": 1, "interrupted": false, "engine": {}, "summary": {}},
            "server_version": "NSD version 4.6.1 (TCP clients 15904)",
            "probe_rtt_us": 120,
            "link": serde_json::to_value(LinkCounters::default()).unwrap(),
            "seconds": 12.5,
        }))
        .expect("an older record reads");
        assert_eq!(outputs.server_version(), "NSD version 4.6.1");
        assert_eq!(outputs.server_tcp_clients, None);
        outputs.server_version = "Knot DNS 3.2.6".into();
        assert_eq!(outputs.server_version(), "Knot DNS 3.2.6");
    }
}
