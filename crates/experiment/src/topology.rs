//! A run's network: the client side and the server side, each a process tree in its own network
//! and PID namespace, joined only by the userspace link (one TUN device in each namespace, their
//! file descriptors held by the orchestrator, which stays in the host's namespaces).
//!
//! * **Server side**: the server listens on [`SERVER_V4`] (and [`SERVER_V6`]), both addresses
//!   on its TUN device; every other destination is routed into the TUN, so answers go back to
//!   the clients whatever their addresses.
//! * **Client side**: every address is local (`ip route add local 0.0.0.0/0 dev lo`, the same for
//!   IPv6), so each original client sends from its own address; only the server's addresses
//!   are routed into the TUN (more specific routes in the local table).
//!
//! Neither namespace has an interface to the host: no query can leave. Each side runs as
//! `unshare --net --pid --fork --kill-child`: when the orchestrator dies, `unshare` dies (parent
//! death signal), its child (PID 1 of the new PID namespace) is killed, and the kernel kills
//! every process left in that namespace, servers included. The network namespace vanishes with
//! its last process and the TUN devices with their file descriptors, so nothing outlives a run.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::ExperimentError;
use ldplayer_system::command::sysctl;
use ldplayer_system::CommandError;

/// The server's IPv4 address, on the server side's TUN device.
pub const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 1);
/// The server's IPv6 address, on the server side's TUN device.
pub const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0xfd53, 0, 0, 0, 0, 0, 0, 1);
/// The address the client side probes the server from before the replay (RFC 2544's
/// benchmarking range: no trace client is expected there).
pub const PROBE_SOURCE: Ipv4Addr = Ipv4Addr::new(198, 19, 255, 254);

/// The environment variable that tells a process it is one side of an experiment's run, and
/// where its configuration (JSON) is.
pub const SIDE_ENV: &str = "LDPLAYER_EXPERIMENT_SIDE";

/// One side of a run: `unshare` and the process tree under it, talking with the orchestrator
/// over its standard input (commands) and output (status lines).
#[derive(Debug)]
pub struct SideProcess {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl SideProcess {
    /// Starts `exe` as a side in new network and PID namespaces, with its configuration file in
    /// [`SIDE_ENV`]; its standard error goes to `log`.
    pub fn spawn(
        name: &'static str,
        exe: &Path,
        config: &Path,
        log: &Path,
    ) -> Result<SideProcess, ExperimentError> {
        let log_file =
            ldplayer_output::create_direct(log).map_err(|e| ExperimentError::io(log, e.into()))?;
        let mut command = Command::new("unshare");
        command
            .args(["--net", "--pid", "--fork", "--kill-child", "--"])
            .arg(exe)
            .env(SIDE_ENV, config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file);
        // Its own process group: Ctrl-C in the terminal reaches the orchestrator only, which
        // then stops the sides in order; and it dies with the orchestrator (the thread that
        // spawned it: the caller's).
        ldplayer_system::process::own_group_dying_with_parent(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| CommandError::spawn("unshare", e))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (tx, lines) = mpsc::channel();
        if let Some(out) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(SideProcess {
            name,
            child,
            stdin,
            lines,
        })
    }

    /// The process ID of `unshare`, which is in the side's network namespace: the handle for
    /// moving a TUN device there and for reading the namespace's `/proc/PID/net` files.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `unshare` has made the new network namespace.
    pub fn wait_for_netns(&mut self, wait: Duration) -> Result<(), ExperimentError> {
        let mine = std::fs::read_link("/proc/self/ns/net")
            .map_err(|e| ExperimentError::io(Path::new("/proc/self/ns/net"), e))?;
        let theirs_path = format!("/proc/{}/ns/net", self.pid());
        let start = Instant::now();
        loop {
            match std::fs::read_link(&theirs_path) {
                Ok(theirs) if theirs != mine => return Ok(()),
                Ok(_) => {}
                Err(_) => return Err(self.died("before making its namespace")),
            }
            if start.elapsed() > wait {
                return Err(ExperimentError::Timeout(format!(
                    "the {} side to enter its own network namespace",
                    self.name
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The process of the side itself (PID 1 of its PID namespace, `unshare`'s child), once it
    /// runs.
    pub fn side_pid(&self) -> Option<u32> {
        let path = format!("/proc/{0}/task/{0}/children", self.pid());
        std::fs::read_to_string(path)
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Waits for a status line starting with `word`; returns the rest of it. A line starting
    /// with `error` fails with its text.
    pub fn expect(&mut self, word: &str, wait: Duration) -> Result<String, ExperimentError> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(word) {
                        return Ok(rest.trim().to_string());
                    }
                    if let Some(rest) = line.strip_prefix("error") {
                        return Err(ExperimentError::Side {
                            side: self.name,
                            message: rest.trim().to_string(),
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(ExperimentError::Timeout(format!(
                        "the {} side to say `{word}`",
                        self.name
                    )))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(self.died(&format!("before saying `{word}`")))
                }
            }
        }
    }

    /// Sends one command line.
    pub fn send(&mut self, line: &str) -> Result<(), ExperimentError> {
        let name = self.name;
        let stdin = self.stdin.as_mut().ok_or_else(|| ExperimentError::Side {
            side: name,
            message: "its input is closed".into(),
        })?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|_| ExperimentError::Side {
                side: name,
                message: format!("exited before it was told `{line}`"),
            })
    }

    /// Whether the side has exited; its exit status if so.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to `wait` for the side to exit by itself.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(status) = self.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the side: its input is closed (the side's cue to stop in order), then after
    /// `grace` `unshare` is killed, which takes down everything in the side's namespaces.
    pub fn stop(mut self, grace: Duration) {
        self.stdin = None;
        if self.wait_exit(grace).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn died(&mut self, when: &str) -> ExperimentError {
        let status = self
            .wait_exit(Duration::from_millis(500))
            .map_or("still running".to_string(), |s| s.to_string());
        ExperimentError::Side {
            side: self.name,
            message: format!("exited {when} ({status}); see its log"),
        }
    }
}

impl Drop for SideProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `ip args` in this process's namespace.
pub fn ip(args: &[&str]) -> Result<(), ExperimentError> {
    Ok(ldplayer_system::ip(args)?)
}

/// Runs `ip -batch -` with `commands` (one per line) in this process's namespace.
fn ip_batch(commands: &str) -> Result<(), ExperimentError> {
    run_with_input(
        "ip",
        &["-batch", "-"],
        commands,
        &format!("ip -batch ({} commands)", commands.lines().count()),
    )
}

/// Runs `program args` with `input` on its standard input, failing with its standard error;
/// `what` names it in errors.
fn run_with_input(
    program: &str,
    args: &[&str],
    input: &str,
    what: &str,
) -> Result<(), ExperimentError> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CommandError::spawn(what, e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| ExperimentError::io(Path::new(program), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| ExperimentError::io(Path::new(program), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(CommandError::failed(what, String::from_utf8_lossy(&out.stderr).trim()).into())
    }
}

/// Waits until the TUN device `tun` has been moved into this namespace. (`/proc/self/net`
/// shows this namespace's devices; `/sys/class/net` would show the host's, where the device
/// is made before it is moved.)
pub fn wait_for_device(tun: &str, wait: Duration) -> Result<(), ExperimentError> {
    let start = Instant::now();
    let listed = |text: &str| {
        text.lines()
            .any(|l| l.trim_start().split(':').next() == Some(tun))
    };
    while !std::fs::read_to_string("/proc/self/net/dev").is_ok_and(|t| listed(&t)) {
        if start.elapsed() > wait {
            return Err(ExperimentError::Timeout(format!(
                "the link's device {tun} to arrive"
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Loopback up, the TUN device up, reverse-path filtering off (answers come back on the device
/// they left by, but from addresses the kernel might not expect).
fn common_setup(tun: &str) -> Result<(), ExperimentError> {
    ip(&["link", "set", "lo", "up"])?;
    // No IPv6 chatter of the kernel's own (link-local address, its duplicate detection and
    // multicast reports, router solicitations) on the link: it carries the run's DNS only.
    for (key, value) in [
        ("addr_gen_mode", "1"),
        ("accept_ra", "0"),
        ("router_solicitations", "0"),
    ] {
        sysctl(&format!("/proc/sys/net/ipv6/conf/{tun}/{key}"), value)?;
    }
    ip(&["link", "set", tun, "up"])?;
    for dev in ["all", "default", tun] {
        sysctl(&format!("/proc/sys/net/ipv4/conf/{dev}/rp_filter"), "0")?;
    }
    Ok(())
}

/// Sets up the server side, run inside it: the server's addresses on the TUN device and every
/// other destination routed into it. `extra_local` are more addresses made local (the
/// nameservers of an emulated hierarchy behind a recursive server).
pub fn configure_server_side(
    tun: &str,
    extra_local: &[std::net::IpAddr],
) -> Result<(), ExperimentError> {
    wait_for_device(tun, Duration::from_secs(10))?;
    common_setup(tun)?;
    ip(&["addr", "add", &format!("{SERVER_V4}/32"), "dev", tun])?;
    ip(&[
        "-6",
        "addr",
        "add",
        &format!("{SERVER_V6}/128"),
        "dev",
        tun,
        "nodad",
    ])?;
    ip(&["route", "add", "default", "dev", tun])?;
    ip(&["-6", "route", "add", "default", "dev", tun])?;
    // One `ip` for all of them: a hierarchy may have thousands of nameserver addresses.
    let batch: String = extra_local
        .iter()
        .map(|addr| match addr {
            std::net::IpAddr::V4(a) => format!("addr add {a}/32 dev lo\n"),
            std::net::IpAddr::V6(a) => format!("-6 addr add {a}/128 dev lo nodad\n"),
        })
        .collect();
    if !batch.is_empty() {
        ip_batch(&batch)?;
    }
    Ok(())
}

/// Sets up the client side, run inside it: every address local, the server's addresses routed
/// into the TUN device.
pub fn configure_client_side(tun: &str) -> Result<(), ExperimentError> {
    wait_for_device(tun, Duration::from_secs(10))?;
    common_setup(tun)?;
    ip(&["route", "add", "local", "0.0.0.0/0", "dev", "lo"])?;
    ip(&["-6", "route", "add", "local", "::/0", "dev", "lo"])?;
    ip(&[
        "route",
        "add",
        &format!("{SERVER_V4}/32"),
        "dev",
        tun,
        "table",
        "local",
    ])?;
    ip(&[
        "-6",
        "route",
        "add",
        &format!("{SERVER_V6}/128"),
        "dev",
        tun,
        "table",
        "local",
    ])?;
    Ok(())
}

/// Keeps the link for the server's answers only, run in the server side of a recursive
/// server: packets leaving by the TUN device from other ports than DNS's (53, 853, 443) are
/// refused on the spot. A resolver's upstream queries to a nameserver the emulated hierarchy
/// does not have would otherwise be routed into the link towards the clients' namespace; this
/// way the resolver learns at once that the server cannot be reached, as with a dead server.
pub fn answers_only_on_link(tun: &str) -> Result<(), ExperimentError> {
    let rules = format!(
        "table inet ldplayer {{\n\
           chain out {{\n\
             type filter hook output priority 0; policy accept;\n\
             oifname \"{tun}\" udp sport != {{ 53, 853 }} reject\n\
             oifname \"{tun}\" tcp sport != {{ 53, 853, 443 }} reject with tcp reset\n\
           }}\n\
         }}\n"
    );
    run_with_input(
        "nft",
        &["-f", "-"],
        &rules,
        "nft -f - (answers only on the link; apt-get install nftables)",
    )
}
