//! Real DNS servers for experiments: configuration, certificates, start and stop.
//!
//! An experiment asks "what if" of a server (every query over TLS, a 5 s TCP idle timeout,
//! 60,000 open connections) and must ask it of the server people run, not of a model. This
//! crate turns one [`ServerSetup`] into a running server of any supported [`ServerKind`]: it
//! writes the configuration (and a certificate for DNS over TLS) into a work directory, checks
//! it with the server's own checker where there is one, starts the program in the foreground
//! as a child (so that it can be measured and always stopped), and returns only once the
//! server answers over UDP, TCP and TLS. Every per-run file stays in the work directory, so
//! two instances never collide and nothing is written under `/etc` or `/var`; only the given
//! addresses are used, so a server runs in a fresh network namespace.
//!
//! | kind | idle timeout | connections | threads | TLS | DoH | DoQ |
//! |---|---|---|---|---|---|---|
//! | `nsd` | `tcp-timeout` (s) | `tcp-count` per process | `server-count` | yes | no | no |
//! | `knot` | `tcp-idle-timeout` (s) | `tcp-max-clients` | `udp-workers`, `tcp-workers` | no (3.2) | no | no (3.2) |
//! | `bind` | `tcp-idle-timeout`, `tcp-initial-timeout` (100 ms, ≤ 120 s) | `tcp-clients` | `named -n` | yes | yes | no |
//! | `unbound` | `tcp-idle-timeout` (ms) | `incoming-num-tcp` per thread | `num-threads` | yes | yes | no (1.17) |
//! | `kresd` | `net.tcp_in_idle` (ms) | file descriptor limit | one process | yes | yes (`doh2`) | no |
//! | `pdns-recursor` | `client-tcp-timeout` (s) | `max-tcp-clients` | `threads` | no | no | no |
//! | `ldplayer` | `tcp_idle_timeout` | `max_tcp_connections` | UDP workers | yes (in-process rustls) | yes | yes |
//!
//! ```no_run
//! use ldplayer_servers::{start, ServerKind, ServerSetup};
//!
//! let mut setup = ServerSetup::new(
//!     ServerKind::Nsd,
//!     vec!["10.53.0.1".parse().unwrap()],
//!     "/tmp/run-1/server".into(),
//! );
//! setup.zones = vec!["/data/root.zone".into()];
//! setup.tls_port = Some(853);
//! setup.tcp_idle_timeout = std::time::Duration::from_secs(5);
//! let server = start(&setup).unwrap();
//! println!("{} answering, pid {:?}", server.version(), server.pid());
//! server.stop().unwrap();
//! ```

#![forbid(unsafe_code)]

mod embedded;
mod error;
mod hints;
mod kind;
mod kinds;
mod options;
mod probe;
mod process;
mod running;
mod setup;
pub mod validation;

use std::process::Command;
use std::time::{Duration, Instant};

pub use error::ServerError;
pub use kind::{ServerKind, UnknownKind};
pub use ldplayer_serverconf::TlsFiles;
pub use options::ResolverOptions;
pub use running::RunningServer;
pub use setup::ServerSetup;

use running::Process;
use setup::Prepared;

/// Makes a CA and a server certificate (CA:FALSE, serverAuth) valid for `ips` and `names`, and
/// writes `ca.pem`, `server.pem` and `server.key` into `dir`: [`ldplayer_serverconf`]'s
/// certificate maker, with this crate's error.
pub fn make_certificate(
    dir: &std::path::Path,
    ips: &[std::net::IpAddr],
    names: &[String],
) -> Result<TlsFiles, ServerError> {
    Ok(ldplayer_serverconf::make_certificate(dir, ips, names)?)
}

/// How long [`start`] waits for a server to answer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How many lines of the log an error shows.
const LOG_TAIL_LINES: usize = 30;

/// Writes the configuration of `setup`, checks it, starts the server and waits (up to
/// [`READY_TIMEOUT`]) until it answers its first zone's SOA (authoritative) or `.` NS
/// (resolver) over UDP and TCP on its first listen address, and over TLS when asked.
pub fn start(setup: &ServerSetup) -> Result<RunningServer, ServerError> {
    start_with_timeout(setup, READY_TIMEOUT)
}

/// [`start`], waiting up to `ready` for the server to answer.
pub fn start_with_timeout(
    setup: &ServerSetup,
    ready: Duration,
) -> Result<RunningServer, ServerError> {
    let mut prepared = setup::prepare(setup)?;
    ldplayer_output::write(&prepared.log, "")
        .map_err(|e| ServerError::io("cannot write", &prepared.log)(e.into()))?;
    if prepared.tcp_clients < setup.max_tcp_clients {
        let note = format!(
            "# max_tcp_clients {} lowered to {}: the file descriptor limit here is {} \
             (beyond the hard limit needs CAP_SYS_RESOURCE)\n",
            setup.max_tcp_clients, prepared.tcp_clients, prepared.files
        );
        embedded::append_to(&prepared.log, &note);
    }
    let server = if setup.kind.is_embedded() {
        let server = embedded::start(&mut prepared)?;
        running(
            &prepared,
            Process::Embedded(server),
            None,
            "in process".into(),
            version(setup.kind),
        )
    } else {
        let program = setup.kind.find_program()?;
        let launch = kinds::launch(&prepared)?;
        if let Some(check) = &launch.check {
            run_checker(&prepared, check, &launch.config)?;
        }
        let (program, args) = match &launch.faketime {
            None => (program, launch.args),
            Some(spec) => faketime(spec, &program, launch.args)?,
        };
        let command = process::command_line(&program, &args);
        embedded::append_to(&prepared.log, &format!("# {command}\n"));
        let child = process::spawn(&program, &args, &prepared.log, prepared.files)?;
        running(
            &prepared,
            Process::External(child),
            Some(launch.config),
            command,
            program_version(setup.kind, &program),
        )
    };
    wait_ready(server, &prepared, ready)
}

/// `program` with `args` run by libfaketime from `spec` on: only the calendar clock moves (the
/// event loops keep a monotonic clock that runs as it does, or they stall), set through
/// `env` so that the server's own arguments stay as they are.
fn faketime(
    spec: &str,
    program: &std::path::Path,
    args: Vec<std::ffi::OsString>,
) -> Result<(std::path::PathBuf, Vec<std::ffi::OsString>), ServerError> {
    let env = kind::find_in_path("env").ok_or(ServerError::Missing {
        program: "env",
        package: "coreutils",
    })?;
    let faketime = kind::find_in_path("faketime").ok_or(ServerError::Missing {
        program: "faketime",
        package: "faketime",
    })?;
    let mut all: Vec<std::ffi::OsString> = vec![
        "FAKETIME_DONT_FAKE_MONOTONIC=1".into(),
        faketime.into(),
        "-f".into(),
        spec.into(),
        program.into(),
    ];
    all.extend(args);
    Ok((env, all))
}

fn running(
    p: &Prepared,
    process: Process,
    config: Option<std::path::PathBuf>,
    command: String,
    version: String,
) -> RunningServer {
    RunningServer {
        kind: p.setup.kind,
        version,
        log: p.log.clone(),
        config,
        command,
        tls: [&p.tls, &p.https, &p.quic]
            .into_iter()
            .find_map(|t| t.as_ref().map(|(_, files)| files.clone())),
        addr: p.probe.addr,
        tls_addr: p.probe.tls_addr,
        https_addr: p.probe.https_addr,
        quic_addr: p
            .quic
            .as_ref()
            .map(|(port, _)| std::net::SocketAddr::new(p.probe.addr.ip(), *port)),
        tcp_clients: p.tcp_clients,
        process,
    }
}

/// Runs the server's configuration checker; a refusal is a [`ServerError::Config`] with the
/// checker's output. A checker that is not installed is skipped (the server itself will
/// refuse a bad configuration, less clearly).
fn run_checker(
    p: &Prepared,
    check: &kinds::Check,
    config: &std::path::Path,
) -> Result<(), ServerError> {
    let dirs = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&dirs)
        .chain(["/usr/sbin", "/usr/bin"].map(Into::into))
        .map(|d| d.join(check.program))
        .find(|p| p.is_file());
    let Some(checker) = found else {
        return Ok(());
    };
    let out = Command::new(&checker)
        .args(&check.args)
        .output()
        .map_err(|source| ServerError::Spawn {
            command: process::command_line(&checker, &check.args),
            source,
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(p.config_error(format!(
        "{} refused the configuration {} ({}):\n{}{}",
        check.program,
        config.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

/// The embedded server's version.
fn version(kind: ServerKind) -> String {
    format!("{} {}", kind.name(), env!("CARGO_PKG_VERSION"))
}

/// What `program` says its version is (empty when it says nothing).
fn program_version(kind: ServerKind, program: &std::path::Path) -> String {
    Command::new(program)
        .args(kinds::version_args(kind))
        .stdin(std::process::Stdio::null())
        .output()
        .map(|out| {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            kinds::version_line(kind, &text)
        })
        .unwrap_or_default()
}

/// Probes `server` until it answers everything asked, it exits, or `ready` has passed; in the
/// two last cases it is stopped and the error carries the log's tail.
fn wait_ready(
    mut server: RunningServer,
    p: &Prepared,
    ready: Duration,
) -> Result<RunningServer, ServerError> {
    let started = Instant::now();
    let attempt = Duration::from_millis(500);
    let mut missing;
    loop {
        if let Process::External(child) = &mut server.process {
            if process::has_exited(child) {
                let status = child
                    .wait()
                    .map_or_else(|e| e.to_string(), |s| s.to_string());
                server.process = Process::Stopped;
                return Err(ServerError::Exited {
                    kind: server.kind,
                    status,
                    command: server.command.clone(),
                    log: p.log.clone(),
                    log_tail: process::log_tail(&p.log, LOG_TAIL_LINES),
                });
            }
        }
        match probe_once(p, attempt) {
            Ok(()) => return Ok(server),
            Err(e) => missing = e,
        }
        if started.elapsed() >= ready {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let command = server.command.clone();
    let kind = server.kind;
    drop(server);
    Err(ServerError::NotReady {
        kind,
        waited: ready,
        what: missing,
        command,
        log_tail: process::log_tail(&p.log, LOG_TAIL_LINES),
    })
}

/// One round of probes: UDP, then TCP, then TLS when asked.
fn probe_once(p: &Prepared, wait: Duration) -> Result<(), String> {
    let q = &p.probe;
    let question = format!("{} {}", q.qname, q.qtype);
    probe::udp(q, wait).map_err(|e| format!("no UDP answer to {question} from {}: {e}", q.addr))?;
    probe::tcp(q, wait).map_err(|e| format!("no TCP answer to {question} from {}: {e}", q.addr))?;
    if let (Some(addr), Some((_, files))) = (q.tls_addr, &p.tls) {
        probe::tls(q, addr, &files.ca, wait)
            .map_err(|e| format!("no TLS answer to {question} from {addr}: {e}"))?;
    }
    if let (Some(addr), Some((_, files))) = (q.https_addr, &p.https) {
        probe::https(addr, &files.ca, wait)
            .map_err(|e| format!("no DoH (HTTP/2 over TLS) at {addr}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The installed programs, asked for their version as a run asks, say their product and
    /// version and nothing more (no configure line, no copyright, no date).
    #[test]
    fn each_installed_program_reports_its_product_and_version_only() {
        let products = [
            (ServerKind::Nsd, "NSD "),
            (ServerKind::Knot, "Knot DNS "),
            (ServerKind::Bind, "BIND "),
            (ServerKind::Unbound, "Unbound "),
            (ServerKind::Kresd, "Knot Resolver "),
            (ServerKind::PdnsRecursor, "PowerDNS Recursor "),
        ];
        for (kind, product) in products {
            let Some(program) =
                ldplayer_testbed::prerequisite::tool(kind.program(), kind.debian_package())
            else {
                continue;
            };
            let version = program_version(kind, &program);
            let number = version
                .strip_prefix(product)
                .unwrap_or_else(|| panic!("{kind:?}: {version:?} does not start with {product:?}"));
            assert!(
                number.starts_with(|c: char| c.is_ascii_digit())
                    && !number.contains(char::is_whitespace),
                "{kind:?}: {version:?} is not a product and a version"
            );
        }
    }
}
