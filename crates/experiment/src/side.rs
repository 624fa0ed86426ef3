//! What runs inside a run's namespaces: the server side (sets up its network, starts the
//! server, stops it when told) and the client side (sets up its network, checks the path to the
//! server, replays the trace from the clients' own addresses).
//!
//! A program that runs experiments starts its `main` with [`run_side_if_asked`] (as with the
//! lab's server side): the orchestrator runs the same executable again, in new namespaces, with
//! the side's configuration file named in [`crate::topology::SIDE_ENV`]. A side
//! talks to the orchestrator with lines: it prints `ready ...`, `done` or `error ...` on its
//! standard output, and reads `start NS` or the end of its input (stop) on its standard input.

use std::io::BufRead;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::ExperimentError;
use crate::topology::{self, PROBE_SOURCE, SERVER_V4, SERVER_V6, SIDE_ENV};
use ldplayer_system::CommandError;

/// What the server side says after `ready` once its server answers: the TCP connections the
/// server was configured to hold, then its version (which may have spaces, never a newline).
fn ready_words(version: &str, tcp_clients: usize) -> String {
    format!("{tcp_clients} {}", version.replace(['\n', '\r'], " "))
}

/// The server's version and TCP connection limit out of what the server side said after
/// `ready` ([`ready_words`]).
pub(crate) fn parse_ready(words: &str) -> (String, Option<u64>) {
    match words.trim().split_once(' ') {
        Some((clients, version)) if clients.parse::<u64>().is_ok() => {
            (version.trim().to_string(), clients.parse().ok())
        }
        _ => (words.trim().to_string(), None),
    }
}

/// The port of DNS over TLS on the server side.
pub const TLS_PORT: u16 = 853;
/// The port of DNS over HTTPS on the server side.
pub const HTTPS_PORT: u16 = 443;
/// The UDP port of DNS over QUIC on the server side.
pub const QUIC_PORT: u16 = 853;

/// A side's configuration, written by the orchestrator as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SideConfig {
    /// The server side.
    Server(ServerSideConfig),
    /// The client side.
    Client(ClientSideConfig),
    /// One of the processes a client side splits its replay into (`[client] processes`):
    /// started by the client side in its namespace, it replays its shard of the clients from
    /// the shared start and exits.
    ClientShard(crate::client::ClientShard),
}

/// What the server side runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerSideConfig {
    /// The TUN device the orchestrator moves in.
    pub tun: String,
    /// The server program.
    pub kind: ldplayer_servers::ServerKind,
    /// Zone files to serve.
    pub zones: Vec<PathBuf>,
    /// A `zones build` manifest (the meta-server's, or the hierarchy behind a resolver).
    pub manifest: Option<PathBuf>,
    /// Server threads or processes.
    pub threads: Option<usize>,
    /// The server's TCP idle timeout, in ms.
    pub idle_timeout_ms: u64,
    /// Certificate and key for DNS over TLS, HTTPS and QUIC, when the run uses one.
    pub tls: Option<ldplayer_servers::TlsFiles>,
    /// Serve DNS over TLS (on [`TLS_PORT`]).
    #[serde(default)]
    pub dot: bool,
    /// Serve DNS over HTTPS (on [`HTTPS_PORT`]).
    #[serde(default)]
    pub doh: bool,
    /// Serve DNS over QUIC (on [`QUIC_PORT`]).
    #[serde(default)]
    pub doq: bool,
    /// Raw configuration lines appended to the server's configuration.
    pub extra: Vec<String>,
    /// DNSSEC validation by a recursive server.
    #[serde(default)]
    pub validation: Option<ldplayer_servers::validation::Validation>,
    /// Resolver behaviours of a recursive server.
    #[serde(default)]
    pub resolver: ldplayer_servers::ResolverOptions,
    /// Configuration, logs and the server's files go here.
    pub work_dir: PathBuf,
    /// Write what crosses the server side's end of the link to this pcap (tcpdump).
    pub capture: Option<PathBuf>,
}

/// What the client side replays, and how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientSideConfig {
    /// The TUN device the orchestrator moves in.
    pub tun: String,
    /// The trace (binary records), already mutated for this run.
    pub trace: PathBuf,
    /// Where every query's result goes.
    pub results: PathBuf,
    /// Where the engine's counters and the summary go (JSON).
    pub stats: PathBuf,
    /// Send every query over this transport (`udp`, `tcp`, `tls`, `https`, `quic`); `None`
    /// keeps each record's.
    pub proto: Option<String>,
    /// Replay as this population: each client over its group's transport, with its group's
    /// session profile.
    #[serde(default)]
    pub population: Option<PathBuf>,
    /// The HTTP method of DoH queries; `None` for the replay's (POST).
    #[serde(default)]
    pub doh_method: Option<crate::plan::DohMethod>,
    /// The client stack of DoT, DoH and DoQ.
    #[serde(default)]
    pub stack: crate::plan::Stack,
    /// How long to wait for an answer, in ms.
    pub timeout_ms: u64,
    /// UDP retries after a timeout.
    pub udp_retries: u32,
    /// The clients' TCP idle timeout, in ms.
    pub idle_timeout_ms: u64,
    /// The CA certificate the server's certificate is checked against.
    pub tls_ca: Option<PathBuf>,
    /// Resume TLS sessions.
    pub tls_resume: bool,
    /// Ask again over TCP when a UDP answer has TC set.
    pub tc_retry: bool,
    /// Open UDP sockets per querier; `None` for the engine's default.
    pub max_udp_sockets: Option<usize>,
    /// Querier threads; `None` for the engine's default.
    pub queriers: Option<usize>,
    /// Write what crosses the client side's end of the link to this pcap (tcpdump).
    pub capture: Option<PathBuf>,
    /// Keep every answer in the results file (`[diff]`).
    #[serde(default)]
    pub keep_answers: bool,
    /// Send on a ramp of offered load instead of at the trace's times (`[client] mode =
    /// "ramp"`); the results file keeps it, for the capacity.
    #[serde(default)]
    pub ramp: Option<ldplayer_results::RampSpec>,
    /// Send as fast as answers come, with at most this many queries in flight (`mode =
    /// "fast"`).
    #[serde(default)]
    pub fast: Option<usize>,
    /// Queries over one connection before a new one is opened; `None`: reused until idle.
    #[serde(default)]
    pub queries_per_connection: Option<u64>,
    /// Replay in this many processes, each a shard of the clients with open files of its own
    /// (as `replay --processes`); `None` or 1: in this one.
    #[serde(default)]
    pub processes: Option<u32>,
}

/// Runs this process as a side of an experiment's run when it was started as one (its
/// configuration named by [`SIDE_ENV`]), to the side's end, and says whether it did: call it
/// first thing in `main` of a program that runs experiments and return when it says `true`
/// (the sides are that program started again in the run's namespaces).
///
/// A `false` means this process is not a side: nothing was done.
pub fn run_side_if_asked() -> Result<bool, ExperimentError> {
    let Some(config) = SideConfig::from_env() else {
        return Ok(false);
    };
    config?.run()?;
    Ok(true)
}

impl SideConfig {
    /// The configuration of this process when it is a side of a run (the file named in
    /// [`SIDE_ENV`]); `None` when it is not.
    pub fn from_env() -> Option<Result<SideConfig, ExperimentError>> {
        let path = PathBuf::from(std::env::var_os(SIDE_ENV)?);
        Some(SideConfig::read(&path))
    }

    /// Reads a side's configuration file.
    pub fn read(path: &Path) -> Result<SideConfig, ExperimentError> {
        let text = std::fs::read(path).map_err(|e| ExperimentError::io(path, e))?;
        serde_json::from_slice(&text)
            .map_err(|e| ExperimentError::Input(format!("{}: {e}", path.display())))
    }

    /// Writes it for a side to read.
    pub fn write(&self, path: &Path) -> Result<(), ExperimentError> {
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| ExperimentError::Input(format!("side configuration: {e}")))?;
        ldplayer_output::write(path, text).map_err(|e| ExperimentError::io(path, e.into()))
    }

    /// Runs the side to its end. Failures are also reported to the orchestrator as an `error`
    /// line, so that it can say what went wrong without reading the side's log.
    pub fn run(self) -> Result<(), ExperimentError> {
        // The orchestrator stops a side with SIGTERM when it does not stop by itself; PID 1 of a
        // namespace ignores signals it has no handler for.
        let stop = Arc::new(AtomicBool::new(false));
        {
            let stop = Arc::clone(&stop);
            let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
        }
        let result = match self {
            SideConfig::Server(c) => run_server_side(&c, &stop),
            SideConfig::Client(c) => run_client_side(&c, &stop),
            SideConfig::ClientShard(c) => crate::client::run_shard(&c, &stop),
        };
        if let Err(e) = &result {
            println!("error {}", e.to_string().replace('\n', " "));
        }
        result
    }
}

fn run_server_side(c: &ServerSideConfig, stop: &Arc<AtomicBool>) -> Result<(), ExperimentError> {
    use ldplayer_servers::{ServerKind, ServerSetup};
    // A recursive server resolves through the emulated hierarchy: ldplayer's meta-server
    // answers on every nameserver address of the manifest, made local here, in this same
    // namespace (the resolver's queries to them never reach the link).
    let hierarchy = match (&c.manifest, c.kind.is_recursive()) {
        (Some(manifest), true) => Some((manifest.clone(), nameserver_addresses(manifest)?)),
        _ => None,
    };
    let extra_local: Vec<IpAddr> = hierarchy.iter().flat_map(|(_, a)| a.clone()).collect();
    topology::configure_server_side(&c.tun, &extra_local)?;
    if c.kind.is_recursive() {
        topology::answers_only_on_link(&c.tun)?;
    }
    let capture = c
        .capture
        .as_deref()
        .map(|p| Capture::start(&c.tun, p))
        .transpose()?;
    let meta = match &hierarchy {
        Some((manifest, addresses)) => {
            let mut setup = ServerSetup::new(
                ServerKind::Ldplayer,
                addresses.clone(),
                c.work_dir.join("hierarchy"),
            );
            setup.manifest = Some(manifest.clone());
            Some(ldplayer_servers::start(&setup)?)
        }
        None => None,
    };
    // Unbound in front of the hierarchy sends its own log of its upstream traffic (dnstap) to a
    // collector here, kept as `upstream.bin` beside the meta-server's counts: a second witness.
    let dnstap = match (&meta, c.kind) {
        (Some(_), ServerKind::Unbound) => {
            let socket = c.work_dir.join("dnstap.sock");
            let file = c.work_dir.join(crate::upstream::TRACE);
            let collector = ldplayer_trace::dnstap::collect::UpstreamCollector::start(
                &socket,
                &file,
                ldplayer_trace::dnstap::DnstapTypes::RESOLVER,
            )
            .map_err(|e| ExperimentError::io(&socket, e))?;
            Some((collector, socket))
        }
        _ => None,
    };
    let mut extra = c.extra.clone();
    if let Some((_, socket)) = &dnstap {
        extra.extend([
            "dnstap:".to_string(),
            "    dnstap-enable: yes".to_string(),
            format!("    dnstap-socket-path: \"{}\"", socket.display()),
            "    dnstap-bidirectional: yes".to_string(),
            "    dnstap-log-resolver-query-messages: yes".to_string(),
            "    dnstap-log-resolver-response-messages: yes".to_string(),
        ]);
    }
    let setup = ServerSetup {
        kind: c.kind,
        listen: vec![IpAddr::V4(SERVER_V4), IpAddr::V6(SERVER_V6)],
        port: 53,
        tls_port: c.dot.then_some(TLS_PORT),
        https_port: c.doh.then_some(HTTPS_PORT),
        quic_port: c.doq.then_some(QUIC_PORT),
        tls: c.tls.clone(),
        zones: c.zones.clone(),
        manifest: c.manifest.clone(),
        root_hints: None,
        threads: c.threads,
        tcp_idle_timeout: Duration::from_millis(c.idle_timeout_ms),
        max_tcp_clients: 60_000,
        work_dir: c.work_dir.clone(),
        extra,
        validation: c.validation.clone(),
        resolver: c.resolver,
    };
    let server = ldplayer_servers::start(&setup)?;
    println!(
        "ready {}",
        ready_words(&server.version(), server.max_tcp_clients())
    );
    // The resolver's upstream queries, as the emulated hierarchy counted them by level, and
    // how they grew (for the counts after the warm-up).
    let mut upstream = crate::upstream::UpstreamRecord::default();
    let mut last_look = Instant::now();
    wait_for_stop(stop, &mut || {
        if last_look.elapsed() < Duration::from_millis(crate::upstream::TIMELINE_STEP_MS) {
            return;
        }
        last_look = Instant::now();
        let Some(stats) = meta.as_ref().and_then(|m| m.embedded_stats()) else {
            return;
        };
        let counts = crate::upstream::UpstreamCounts::from_levels(&stats.levels);
        let sample = counts.sample(crate::sampler::realtime_ns());
        if upstream
            .timeline
            .last()
            .is_none_or(|s| s[1..] != sample[1..])
        {
            upstream.timeline.push(sample);
        }
    });
    if dnstap.is_some() {
        // Unbound sends its dnstap once a second and drops what is queued when it stops.
        std::thread::sleep(Duration::from_millis(1500));
    }
    server.stop()?;
    if let Some((collector, socket)) = dnstap {
        collector
            .finish()
            .map_err(|e| ExperimentError::io(&socket, e))?;
    }
    if let Some(meta) = meta {
        if let Some(stats) = meta.embedded_stats() {
            upstream.total = crate::upstream::UpstreamCounts::from_levels(&stats.levels);
            let path = c.work_dir.join(crate::upstream::FILE);
            let json = serde_json::to_vec(&upstream)
                .map_err(|e| ExperimentError::Input(format!("upstream counts: {e}")))?;
            ldplayer_output::write(&path, json)
                .map_err(|e| ExperimentError::io(&path, e.into()))?;
        }
        meta.stop()?;
    }
    if let Some(capture) = capture {
        capture.stop();
    }
    println!("stopped");
    Ok(())
}

/// The nameserver addresses of a `zones build` manifest.
fn nameserver_addresses(manifest: &Path) -> Result<Vec<IpAddr>, ExperimentError> {
    let m = ldplayer_zone::Manifest::from_file(manifest)
        .map_err(|e| ExperimentError::Input(format!("{}: {e}", manifest.display())))?;
    let mut addresses: Vec<IpAddr> = m.entries.iter().map(|e| e.address).collect();
    addresses.sort();
    addresses.dedup();
    // The server's own addresses stay the resolver's; loopback is local already.
    addresses
        .retain(|a| *a != IpAddr::V4(SERVER_V4) && *a != IpAddr::V6(SERVER_V6) && !a.is_loopback());
    Ok(addresses)
}

/// Returns when the orchestrator says stop (SIGTERM or the end of standard input), calling
/// `tick` every 20 ms meanwhile.
fn wait_for_stop(stop: &Arc<AtomicBool>, tick: &mut dyn FnMut()) {
    let closed = Arc::new(AtomicBool::new(false));
    {
        let closed = Arc::clone(&closed);
        std::thread::spawn(move || {
            let mut sink = String::new();
            while std::io::stdin()
                .lock()
                .read_line(&mut sink)
                .is_ok_and(|n| n > 0)
            {
                sink.clear();
            }
            closed.store(true, Ordering::SeqCst);
        });
    }
    while !stop.load(Ordering::Relaxed) && !closed.load(Ordering::Relaxed) {
        tick();
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_client_side(c: &ClientSideConfig, stop: &Arc<AtomicBool>) -> Result<(), ExperimentError> {
    topology::configure_client_side(&c.tun)?;
    let capture = c
        .capture
        .as_deref()
        .map(|p| Capture::start(&c.tun, p))
        .transpose()?;
    // The probe's socket stays open until the end: answers to earlier probes that come late
    // (a resolver slow to start) land in it instead of drawing ICMP port unreachables back
    // across the link, which would count as client traffic.
    let (rtt, probes, _probe_socket) = probe(
        SocketAddr::new(IpAddr::V4(SERVER_V4), 53),
        Duration::from_secs(15),
    )?;
    println!("ready {} {probes}", rtt.as_micros());
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| ExperimentError::io(Path::new("<stdin>"), e))?;
    let start_ns: i64 = line
        .strip_prefix("start")
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| ExperimentError::Input(format!("expected `start NS`, got {line:?}")))?;
    crate::client::replay(c, start_ns, stop)?;
    if let Some(capture) = capture {
        capture.stop();
    }
    println!("done");
    Ok(())
}

/// Sends `. NS` queries over UDP to `server` until one is answered; the round trip of the
/// answer, the number of queries sent and the socket they were sent from. This checks the whole
/// path (routes, link, server) before the replay starts.
fn probe(
    server: SocketAddr,
    wait: Duration,
) -> Result<(Duration, u32, UdpSocket), ExperimentError> {
    let sock = UdpSocket::bind(SocketAddr::new(IpAddr::V4(PROBE_SOURCE), 0))
        .map_err(|e| ExperimentError::io(Path::new("probe socket"), e))?;
    let _ = sock.set_read_timeout(Some(Duration::from_millis(250)));
    // ID 0x1d9e, no flags, one question: `.` NS IN.
    let query = [0x1d, 0x9e, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1];
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    let mut probes = 0;
    while start.elapsed() < wait {
        let sent = Instant::now();
        probes += 1;
        if sock.send_to(&query, server).is_err() {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            if from == server && n >= 12 && buf[..2] == query[..2] {
                return Ok((sent.elapsed(), probes, sock));
            }
        }
    }
    Err(ExperimentError::Timeout(format!(
        "an answer from {server} through the link"
    )))
}

/// tcpdump on one end of the link, a witness of what crossed it.
struct Capture(std::process::Child);

impl Capture {
    /// Starts tcpdump on `dev`, writing every packet to `out` as it comes (`-U`), and waits
    /// until it listens.
    fn start(dev: &str, out: &Path) -> Result<Capture, ExperimentError> {
        let child = std::process::Command::new("tcpdump")
            .args(["-i", dev, "-n", "-U", "-s", "0", "-w"])
            .arg(out)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| CommandError::spawn("tcpdump (apt-get install tcpdump)", e))?;
        let mut capture = Capture(child);
        // tcpdump says "listening on DEV" on its standard error once it captures.
        let err = capture.0.stderr.take();
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(err) = err {
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(err);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line.contains("listening on") {
                        let _ = tx.send(());
                    }
                    line.clear();
                }
            });
        }
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|_| ExperimentError::Timeout(format!("tcpdump to listen on {dev}")))?;
        Ok(capture)
    }

    /// Stops tcpdump (SIGINT, so that it writes its last packets) and waits for it.
    fn stop(mut self) {
        let _ =
            ldplayer_system::process::signal(self.0.id(), ldplayer_system::process::Signal::INT);
        let _ = self.0.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_gives_back_the_version_alone_and_the_tcp_clients() {
        let words = ready_words("NSD 4.6.1", 15_904);
        assert_eq!(parse_ready(&words), ("NSD 4.6.1".into(), Some(15_904)));
        let words = ready_words("BIND 9.18.49-1~deb12u3-Debian\nsecond line", 60_000);
        assert_eq!(
            parse_ready(&words),
            (
                "BIND 9.18.49-1~deb12u3-Debian second line".into(),
                Some(60_000)
            )
        );
        assert_eq!(
            parse_ready(" ldplayer 0.1.0 "),
            ("ldplayer 0.1.0".into(), None)
        );
    }
}
