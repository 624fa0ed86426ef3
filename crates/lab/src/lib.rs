//! An isolated DNS hierarchy lab: a real recursive resolver walks root → TLD → SLD as on the
//! Internet while one authoritative meta-server (or, as ground truth, one nsd per nameserver
//! address) answers for every level, and no packet leaves the lab.
//!
//! The lab runs as three processes in two network namespaces ([`netns`]):
//! 1. the command on the host re-runs itself with `unshare` in a new namespace, the **resolver
//!    side** ([`launch`]);
//! 2. there, [`ResolverSide::start`] starts the **server side** (the same executable again, in
//!    a second namespace), joins the two with a veth pair, waits for the nameservers,
//!    optionally starts tcpdump on the link (the resolver's upstream traffic), and starts the
//!    resolver ([`resolver`]) with the emulated root's hints;
//! 3. the caller sends its workload to [`ResolverSide::resolver_addr`] (a list of names with
//!    [`workload::resolve_names`], or a trace with the replay engine configured by
//!    [`workload::replay_config`]) and
//!    calls [`ResolverSide::finish`], which stops everything; the namespaces vanish with their
//!    processes.
//!
//! # How the parts know their stage
//!
//! The lab owns how its processes are started, and marks them in the environment, not on the
//! command line: [`launch`] runs the executable with the caller's arguments and
//! [`RESOLVER_SIDE_ENV`] set ([`is_resolver_side`]); [`ResolverSide::start`] writes a
//! [`ServerSideConfig`] (JSON) to the work directory and runs the executable with the file's
//! path in [`SERVER_SIDE_ENV`], and no arguments. A program that hosts the lab therefore starts
//! its `main` with [`run_side_if_asked`], which runs the server side when this process is one
//! (until the resolver side interrupts it) and says so:
//!
//! ```no_run
//! # fn main() -> Result<(), ldplayer_lab::LabError> {
//! if ldplayer_lab::run_side_if_asked(|stats| eprintln!("meta-server: {stats:?}"))? {
//!     return Ok(());
//! }
//! // Not the server side: the program's own work (the host's, or the resolver side's).
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod authoritative;
pub mod client;
pub mod netns;
pub mod resolver;
mod side;
pub mod upstream;
pub mod validation;
pub mod workload;

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ldplayer_dns::Rtype;
use ldplayer_system::CommandError;
use ldplayer_zone::Manifest;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use authoritative::{root_hints, Nameservers};
pub use resolver::{ResolverKind, RunningResolver};
pub use side::{run_server_side, run_side_if_asked};

/// How long each part gets to come up.
const START_WAIT: Duration = Duration::from_secs(20);

/// Why the lab could not run.
#[derive(Debug, Error)]
pub enum LabError {
    /// A program could not be started, or a set-up command or a part of the lab failed.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// Something did not come up in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// Bad input (manifest, zone, name list).
    #[error("{0}")]
    Input(String),
    /// The meta-server could not start.
    #[error("meta-server: {0}")]
    Server(String),
    /// An I/O error.
    #[error("{0}")]
    Io(std::io::Error),
    /// The certificate for the resolver's DNS over TLS and HTTPS could not be made.
    #[error("certificate: {0}")]
    Certificate(#[from] ldplayer_servers::ServerError),
}

/// Which nameservers the server side runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NameserverKind {
    /// ldplayer's meta-server, one process for every address.
    Meta,
    /// One nsd per nameserver address (ground truth).
    Nsd,
}

/// What the resolver side needs.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// The manifest: nameserver addresses and their zone files (an absolute path: the server
    /// side reads it too).
    pub manifest: PathBuf,
    /// The nameservers the server side runs.
    pub nameservers: NameserverKind,
    /// Root hints; by default made from the root zone in the manifest.
    pub hints: Option<PathBuf>,
    /// The resolver.
    pub resolver: ResolverKind,
    /// Write the resolver's upstream traffic (tcpdump on the link) to this pcap.
    pub capture: Option<PathBuf>,
    /// Write the resolver's own log of its upstream traffic (its dnstap `RESOLVER_QUERY` and
    /// `RESOLVER_RESPONSE` messages, collected on a Unix socket) to this binary trace
    /// (Unbound only).
    pub dnstap: Option<PathBuf>,
    /// Configurations and logs go here (an absolute path: the server side writes here too).
    pub work_dir: PathBuf,
    /// The resolver also answers stubs over DNS over TLS (127.0.0.1:853) and DNS over HTTPS
    /// (127.0.0.1:443, `/dns-query`), with a certificate made in the work directory.
    pub encrypted: bool,
    /// The resolver validates DNSSEC with this trust anchor, at this moment.
    pub validation: Option<validation::Validation>,
}

/// The environment variable that tells a process it is the lab's server side, and where its
/// [`ServerSideConfig`] is.
pub const SERVER_SIDE_ENV: &str = "LDPLAYER_LAB_SERVER_SIDE";

/// The file in the work directory that hands the server side its configuration.
const SERVER_SIDE_FILE: &str = "server-side.json";

/// What the server side runs, handed over by [`ResolverSide::start`] through a JSON file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSideConfig {
    /// The manifest: nameserver addresses and their zone files.
    pub manifest: PathBuf,
    /// The nameservers to run.
    pub nameservers: NameserverKind,
    /// Configurations and logs go here.
    pub work_dir: PathBuf,
}

impl ServerSideConfig {
    /// The configuration of this process's server side when it was started as one (see
    /// [`SERVER_SIDE_ENV`]); `None` otherwise.
    pub fn from_env() -> Option<Result<ServerSideConfig, LabError>> {
        let path = PathBuf::from(std::env::var_os(SERVER_SIDE_ENV)?);
        Some(ServerSideConfig::read(&path))
    }

    /// Reads a configuration written by [`ServerSideConfig::write`].
    pub fn read(path: &Path) -> Result<ServerSideConfig, LabError> {
        let text = std::fs::read(path).map_err(LabError::Io)?;
        serde_json::from_slice(&text)
            .map_err(|e| LabError::Input(format!("{}: {e}", path.display())))
    }

    /// Writes the configuration as JSON to `path`.
    pub fn write(&self, path: &Path) -> Result<(), LabError> {
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| LabError::Input(format!("the server side's configuration: {e}")))?;
        ldplayer_output::write(path, text).map_err(|e| LabError::Io(e.into()))
    }

    /// The server side's whole life, run inside its namespace (see [`server_side`]); returns
    /// the meta-server's counters (none for nsd).
    pub fn run(&self, stop: &AtomicBool) -> Result<Option<ldplayer_server::ServerStats>, LabError> {
        server_side(&self.manifest, self.nameservers, &self.work_dir, stop)
    }
}

/// The environment variable that tells a process it is the lab's resolver side (set by
/// [`launch`]).
pub const RESOLVER_SIDE_ENV: &str = "LDPLAYER_LAB_RESOLVER_SIDE";

/// True in a process [`launch`] started as the resolver side.
pub fn is_resolver_side() -> bool {
    std::env::var_os(RESOLVER_SIDE_ENV).is_some()
}

/// Re-runs `exe args` in a new network namespace (the resolver side) and waits for it. The
/// process knows it is the resolver side by [`is_resolver_side`], so `args` can be the
/// caller's own arguments, unchanged.
///
/// The lab runs in a process group of its own; once `stop` is set (the caller's Ctrl-C or
/// SIGTERM handler sets it), the whole group gets SIGINT, as it would from a terminal's Ctrl-C,
/// so that a `kill` of the lab's command stops every part of it in order, and none is left
/// running in its namespace.
pub fn launch(exe: &Path, args: &[String], stop: &AtomicBool) -> Result<ExitStatus, LabError> {
    use std::os::unix::process::CommandExt;
    let spawn_error = |e| CommandError::spawn("unshare (apt-get install util-linux)", e);
    let mut child = netns::in_new_netns(netns::is_root(), exe)
        .args(args)
        .env(RESOLVER_SIDE_ENV, "1")
        .process_group(0)
        .spawn()
        .map_err(spawn_error)?;
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait().map_err(spawn_error)? {
            return Ok(status);
        }
        if !forwarded && stop.load(Ordering::Relaxed) {
            // The process group we made (its leader is our child, not reaped yet).
            let _ = ldplayer_system::process::signal_group(
                child.id(),
                ldplayer_system::process::Signal::INT,
            );
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The server side's whole life, run inside its namespace: waits for the link, makes every
/// address local, starts the nameservers and keeps them until `stop` is set.
pub fn server_side(
    manifest: &Path,
    kind: NameserverKind,
    work_dir: &Path,
    stop: &AtomicBool,
) -> Result<Option<ldplayer_server::ServerStats>, LabError> {
    netns::setup_server_side(START_WAIT)?;
    let m = Manifest::from_file(manifest).map_err(|e| LabError::Input(e.to_string()))?;
    let servers = match kind {
        NameserverKind::Meta => {
            Nameservers::meta(m.load().map_err(|e| LabError::Input(e.to_string()))?)?
        }
        NameserverKind::Nsd => Nameservers::nsd(&m, work_dir, START_WAIT)?,
    };
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(servers.stats())
}

/// The running lab, seen from the resolver side.
#[derive(Debug)]
pub struct ResolverSide {
    server: Option<Child>,
    /// The capture of the resolver's upstream traffic, and its file.
    tcpdump: Option<(Child, PathBuf)>,
    /// The collector of the resolver's dnstap.
    upstream: Option<upstream::UpstreamCollector>,
    /// What it collected, once stopped.
    upstream_log: Option<Result<upstream::UpstreamLog, LabError>>,
    resolver: Option<RunningResolver>,
    /// Nameserver addresses of the manifest.
    pub nameservers: Vec<std::net::IpAddr>,
}

impl ResolverSide {
    /// Starts the server side (`exe`, in its own namespace, told what to run through
    /// [`SERVER_SIDE_ENV`]), links it, waits for the nameservers, starts tcpdump if asked and
    /// the resolver. Runs inside the resolver side's namespace. The server side's standard
    /// error goes to `server-side.log` in the work directory.
    pub fn start(config: &LabConfig, exe: &Path) -> Result<ResolverSide, LabError> {
        let manifest =
            Manifest::from_file(&config.manifest).map_err(|e| LabError::Input(e.to_string()))?;
        let nameservers: Vec<_> = manifest.entries.iter().map(|e| e.address).collect();
        let server_config = config.work_dir.join(SERVER_SIDE_FILE);
        ServerSideConfig {
            manifest: config.manifest.clone(),
            nameservers: config.nameservers,
            work_dir: config.work_dir.clone(),
        }
        .write(&server_config)?;
        let server_log = config.work_dir.join("server-side.log");
        let log =
            ldplayer_output::create_direct(&server_log).map_err(|e| LabError::Io(e.into()))?;
        // Inside the resolver side we are root (really, or in our user namespace).
        let server = netns::in_new_netns(true, exe)
            .env(SERVER_SIDE_ENV, &server_config)
            .env_remove(RESOLVER_SIDE_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| CommandError::spawn("unshare (apt-get install util-linux)", e))?;
        let mut side = ResolverSide {
            server: Some(server),
            tcpdump: None,
            upstream: None,
            upstream_log: None,
            resolver: None,
            nameservers,
        };
        let pid = side.server.as_ref().map(Child::id).unwrap_or(0);
        netns::setup_resolver_side(pid)?;
        side.wait_for_nameservers(&server_log)?;

        let views = || manifest.load().map_err(|e| LabError::Input(e.to_string()));
        let hints = match &config.hints {
            Some(h) => h.clone(),
            None => {
                let text = root_hints(&views()?).ok_or_else(|| {
                    LabError::Input("no zone in the manifest is the root: give --hints".to_string())
                })?;
                let p = config.work_dir.join("root.hints");
                ldplayer_output::write(&p, text).map_err(|e| LabError::Io(e.into()))?;
                p
            }
        };
        let anchor = match &config.validation {
            Some(v) => Some(validation::anchor_file(
                &v.anchor,
                &views()?,
                &config.work_dir,
            )?),
            None => None,
        };
        if let Some(pcap) = &config.capture {
            side.tcpdump = Some((start_tcpdump(pcap, &config.work_dir)?, pcap.clone()));
        }
        if let Some(file) = &config.dnstap {
            if config.resolver != ResolverKind::Unbound {
                return Err(LabError::Input(format!(
                    "the lab collects the resolver's dnstap from unbound only, not {}",
                    config.resolver
                )));
            }
            side.upstream = Some(
                upstream::UpstreamCollector::start(
                    &upstream::socket_path(&config.work_dir),
                    file,
                    ldplayer_trace::dnstap::DnstapTypes::RESOLVER,
                )
                .map_err(LabError::Io)?,
            );
        }
        let tls = if config.encrypted {
            Some(ldplayer_servers::make_certificate(
                &config.work_dir.join("tls"),
                &[std::net::Ipv4Addr::LOCALHOST.into()],
                &["localhost".to_string()],
            )?)
        } else {
            None
        };
        let dnstap_socket = config
            .dnstap
            .as_ref()
            .map(|_| upstream::socket_path(&config.work_dir));
        side.resolver = Some(resolver::start(
            config.resolver,
            &config.work_dir,
            &hints,
            START_WAIT,
            tls.as_ref(),
            anchor.as_deref().map(|anchor| resolver::Validating {
                anchor,
                time: config.validation.as_ref().and_then(|v| v.time),
                insecure: config
                    .validation
                    .as_ref()
                    .map_or(&[][..], |v| &v.insecure[..]),
            }),
            dnstap_socket.as_deref(),
        )?);
        Ok(side)
    }

    /// Where the resolver answers DNS over TLS and DNS over HTTPS, and the CA its certificate
    /// is signed by, when [`LabConfig::encrypted`] asked for them.
    pub fn resolver_encrypted(&self) -> Option<resolver::Encrypted> {
        self.resolver.as_ref().and_then(|r| r.encrypted.clone())
    }

    /// Where the resolver answers (127.0.0.1:53 on the resolver side).
    pub fn resolver_addr(&self) -> SocketAddr {
        self.resolver
            .as_ref()
            .map(|r| r.addr)
            .unwrap_or(([127, 0, 0, 1], 53).into())
    }

    /// Waits until the first nameserver answers (any response) from across the link.
    fn wait_for_nameservers(&mut self, log: &Path) -> Result<(), LabError> {
        let Some(&first) = self.nameservers.first() else {
            return Err(LabError::Input("the manifest lists no nameserver".into()));
        };
        let start = Instant::now();
        loop {
            if let Some(Ok(Some(status))) = self.server.as_mut().map(Child::try_wait) {
                return Err(CommandError::failed(
                    format!("the server side ({status})"),
                    std::fs::read_to_string(log).unwrap_or_default(),
                )
                .into());
            }
            let addr = SocketAddr::new(first, 53);
            if client::resolve(addr, ".", Rtype::SOA, false, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > START_WAIT {
                return Err(LabError::Timeout(format!(
                    "the nameserver {first} to answer: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the resolver, tcpdump and the server side; returns what the server side printed.
    pub fn finish(mut self) -> String {
        self.stop()
    }

    /// [`ResolverSide::finish`], and what the resolver's dnstap held when
    /// [`LabConfig::dnstap`] asked for it.
    pub fn finish_with_upstream(
        mut self,
    ) -> (String, Option<Result<upstream::UpstreamLog, LabError>>) {
        let printed = self.stop();
        let log = self.upstream_log.take();
        (printed, log)
    }

    fn stop(&mut self) -> String {
        if let Some(collector) = self.upstream.take() {
            // Unbound sends its dnstap once a second and drops what is queued when it stops.
            std::thread::sleep(Duration::from_millis(1500));
            drop(self.resolver.take());
            self.upstream_log = Some(collector.finish().map_err(LabError::Io));
        }
        drop(self.resolver.take());
        if let Some((mut t, pcap)) = self.tcpdump.take() {
            wait_until_written(&pcap);
            interrupt(&mut t);
        }
        let mut out = String::new();
        if let Some(mut s) = self.server.take() {
            interrupt(&mut s);
            if let Some(mut e) = s.stderr.take() {
                let _ = e.read_to_string(&mut out);
            }
        }
        out
    }
}

impl Drop for ResolverSide {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SIGINT, then wait (SIGKILL after 5 s).
fn interrupt(child: &mut Child) {
    let _ = ldplayer_system::process::signal(child.id(), ldplayer_system::process::Signal::INT);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Returns once the capture file has not grown for a second (at most 10 s): what the capture
/// has not read when it is interrupted is lost, and on a busy machine it lags behind the
/// packets (a fixed 200 ms pause once lost a fifth of a resolver's upstream queries).
fn wait_until_written(pcap: &Path) {
    let size = || std::fs::metadata(pcap).map_or(0, |m| m.len());
    let give_up = Instant::now() + Duration::from_secs(10);
    let mut last = size();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let now = size();
        if now == last || Instant::now() > give_up {
            return;
        }
        last = now;
    }
}

/// A capture of the resolver side's end of the link, DNS only, written as it arrives; returns
/// once the capture is open (with a 32 MiB kernel buffer: on a loaded machine the capture is
/// not scheduled for a while). tcpdump as real root; in a user namespace dumpcap (from tshark),
/// because tcpdump insists on changing its user, which a user namespace forbids.
fn start_tcpdump(pcap: &Path, work_dir: &Path) -> Result<Child, LabError> {
    let err_path = work_dir.join("tcpdump.log");
    let err = ldplayer_output::create_direct(&err_path).map_err(|e| LabError::Io(e.into()))?;
    let (program, ready, mut cmd) = if netns::in_user_namespace() {
        let mut cmd = Command::new("dumpcap");
        cmd.args([
            "-i",
            netns::RESOLVER_IF,
            "-P",
            "-q",
            "-B",
            "32",
            "-f",
            "port 53",
            "-w",
        ])
        .arg(pcap);
        ("dumpcap (apt-get install tshark)", "Capturing on", cmd)
    } else {
        let mut cmd = Command::new("tcpdump");
        cmd.args(ldplayer_system::command::tcpdump_args(netns::RESOLVER_IF))
            .arg(pcap);
        // As root, tcpdump would switch to its own user, who may not write `pcap`.
        if netns::is_root() {
            cmd.args(["-Z", "root"]);
        }
        cmd.arg("port 53");
        ("tcpdump (apt-get install tcpdump)", "listening on", cmd)
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| CommandError::spawn(program, e))?;
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&err_path).unwrap_or_default();
        if text.contains(ready) {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CommandError::failed(format!("{program} ({status})"), text).into());
        }
        if start.elapsed() > START_WAIT {
            return Err(LabError::Timeout(format!("{program} to start")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_side_configuration_survives_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = ServerSideConfig {
            manifest: dir.path().join("manifest.txt"),
            nameservers: NameserverKind::Nsd,
            work_dir: dir.path().to_path_buf(),
        };
        let path = dir.path().join(SERVER_SIDE_FILE);
        config.write(&path).unwrap();
        assert_eq!(ServerSideConfig::read(&path).unwrap(), config);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"nsd\""), "{text}");
        std::fs::write(&path, "{").unwrap();
        let e = ServerSideConfig::read(&path).unwrap_err();
        assert!(e.to_string().contains("server-side.json"), "{e}");
    }
}
