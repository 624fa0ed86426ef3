//! The lab's network: two namespaces joined by a veth pair and nothing else.
//!
//! * **Resolver side** (`vres`, 10.53.0.2/30, fd53::2/64): the recursive resolver and the
//!   clients; every route points at the server side.
//! * **Server side** (`vsrv`, 10.53.0.1/30, fd53::1/64): every IPv4 and IPv6 address is local
//!   (`ip route add local 0.0.0.0/0 dev lo`, `local ::/0`), so one wildcard socket receives the
//!   queries sent to any nameserver address and can answer from it.
//!
//! Loopback addresses other than 127.0.0.1 (recorded hierarchies put nameservers at 127.0.0.10
//! and the like) are routed from the resolver side to the server side too: the resolver side
//! keeps only 127.0.0.1 local, and both ends of the link accept 127/8 (`route_localnet`).
//!
//! Two namespaces rather than one: in one, the resolver's own port-53 socket would clash with
//! the meta-server's wildcard socket. Neither namespace has an interface to the host, so no
//! packet can leave. The namespaces are made with `unshare` (util-linux): `unshare -n` as root,
//! `unshare -rn` (a user namespace) otherwise; they disappear with their last process.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::LabError;
use ldplayer_system::CommandError;

/// The resolver side's end of the veth pair.
pub const RESOLVER_IF: &str = "vres";
/// The server side's end of the veth pair.
pub const SERVER_IF: &str = "vsrv";
/// Addresses of the two ends.
pub const RESOLVER_V4: &str = "10.53.0.2";
/// The server side's IPv4 address on the link (also the resolver side's gateway).
pub const SERVER_V4: &str = "10.53.0.1";
/// The resolver side's IPv6 address on the link.
pub const RESOLVER_V6: &str = "fd53::2";
/// The server side's IPv6 address on the link.
pub const SERVER_V6: &str = "fd53::1";

/// True when running as root (real or in a user namespace).
pub fn is_root() -> bool {
    ldplayer_system::process::is_root()
}

/// Whether this process runs in a user namespace other than the first (where "root" is
/// only root over the namespaces it owns).
pub fn in_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
        let f: Vec<&str> = map.split_whitespace().collect();
        f != ["0", "0", "4294967295"]
    })
}

/// A command that runs `program args` in a new network namespace: `unshare -n` when `root`,
/// else `unshare -rn` (inside a new user namespace, where the caller is root).
pub fn in_new_netns(root: bool, program: &Path) -> Command {
    let mut c = Command::new("unshare");
    c.arg(if root { "-n" } else { "-rn" })
        .arg("--")
        .arg(program);
    c
}

/// Runs `ip args`, failing with its standard error.
pub fn ip(args: &[&str]) -> Result<(), LabError> {
    Ok(ldplayer_system::ip(args)?)
}

/// Runs a command to completion, failing with its standard error.
pub fn run(program: &str, args: &[&str]) -> Result<(), LabError> {
    Ok(ldplayer_system::run(program, args)?)
}

/// Sets up the resolver side, run inside it: loopback up, the veth pair created with its other
/// end moved into the namespace of process `server_pid`, addresses, and default routes (and
/// 127/8 but 127.0.0.1) through the server side.
pub fn setup_resolver_side(server_pid: u32) -> Result<(), LabError> {
    wait_for_other_netns(server_pid, Duration::from_secs(10))?;
    ip(&["link", "set", "lo", "up"])?;
    let pid = server_pid.to_string();
    ip(&[
        "link",
        "add",
        RESOLVER_IF,
        "type",
        "veth",
        "peer",
        "name",
        SERVER_IF,
        "netns",
        &pid,
    ])?;
    ip(&[
        "addr",
        "add",
        &format!("{RESOLVER_V4}/30"),
        "dev",
        RESOLVER_IF,
    ])?;
    ip(&[
        "-6",
        "addr",
        "add",
        &format!("{RESOLVER_V6}/64"),
        "dev",
        RESOLVER_IF,
        "nodad",
    ])?;
    ip(&["link", "set", RESOLVER_IF, "up"])?;
    ip(&["route", "add", "default", "via", SERVER_V4])?;
    ip(&["-6", "route", "add", "default", "via", SERVER_V6])?;
    // Only 127.0.0.1 stays local; the rest of 127/8 is nameservers on the server side.
    ip(&[
        "route",
        "del",
        "local",
        "127.0.0.0/8",
        "dev",
        "lo",
        "table",
        "local",
    ])?;
    ip(&["route", "add", "127.0.0.0/8", "via", SERVER_V4])?;
    route_localnet(RESOLVER_IF)
}

/// Waits until process `pid` is in another network namespace than this process: `unshare`
/// must have made its namespace before the link's peer end is moved there, or the peer would
/// stay here and the server side would never see it.
fn wait_for_other_netns(pid: u32, wait: Duration) -> Result<(), LabError> {
    let mine = std::fs::read_link("/proc/self/ns/net").map_err(LabError::Io)?;
    let start = Instant::now();
    loop {
        match std::fs::read_link(format!("/proc/{pid}/ns/net")) {
            Ok(theirs) if theirs != mine => return Ok(()),
            Ok(_) => {}
            Err(e) => {
                return Err(CommandError::failed(
                    format!("the server side (process {pid})"),
                    e.to_string(),
                )
                .into())
            }
        }
        if start.elapsed() > wait {
            return Err(LabError::Timeout(format!(
                "process {pid} to enter its own network namespace"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Lets `dev` send and receive packets from and to 127/8 (otherwise dropped as martians).
fn route_localnet(dev: &str) -> Result<(), LabError> {
    let path = format!("/proc/sys/net/ipv4/conf/{dev}/route_localnet");
    Ok(ldplayer_system::command::sysctl(&path, "1")?)
}

/// Sets up the server side, run inside it once the resolver side has moved `vsrv` in (waits up
/// to `wait` for it): loopback up, link addresses, every address local, the link's IPv6
/// prefix kept off the local route so that replies to the resolver side leave by the link, and
/// 127/8 accepted on the link.
pub fn setup_server_side(wait: Duration) -> Result<(), LabError> {
    let start = Instant::now();
    while run("ip", &["link", "show", SERVER_IF]).is_err() {
        if start.elapsed() > wait {
            return Err(LabError::Timeout(format!(
                "the resolver side to create {SERVER_IF}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    ip(&["link", "set", "lo", "up"])?;
    ip(&["addr", "add", &format!("{SERVER_V4}/30"), "dev", SERVER_IF])?;
    ip(&[
        "-6",
        "addr",
        "add",
        &format!("{SERVER_V6}/64"),
        "dev",
        SERVER_IF,
        "nodad",
    ])?;
    ip(&["link", "set", SERVER_IF, "up"])?;
    ip(&["route", "add", "local", "0.0.0.0/0", "dev", "lo"])?;
    ip(&["-6", "route", "add", "local", "::/0", "dev", "lo"])?;
    ip(&[
        "-6",
        "route",
        "add",
        "fd53::/64",
        "dev",
        SERVER_IF,
        "table",
        "local",
    ])?;
    route_localnet(SERVER_IF)
}
