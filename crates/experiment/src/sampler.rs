//! The server's resources and the link's traffic, sampled once a second during a run.
//!
//! Everything is read from the host's `/proc`, outside the namespaces: the server's processes
//! (the tree under the server side's `unshare`), its TCP connections and socket memory from
//! `/proc/PID/net/...` of a process in the server's network namespace (which shows that
//! namespace's view), and the link emulator's counters. Nothing is added to the server side,
//! so sampling cannot disturb what it measures beyond a few reads of `/proc` a second.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ldplayer_link::LinkCounters;

use crate::error::ExperimentError;
use crate::summary::{Sample, SamplesWriter};

/// What to sample: the server's processes and its namespace.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// `unshare` of the server side: its descendants are the server's processes.
    pub root_pid: u32,
    /// Leave out this process (the server side's own process, when the server is another
    /// program it started); `None` counts every descendant.
    pub exclude_pid: Option<u32>,
    /// The server's addresses and ports: only TCP sockets bound to them count as the server's
    /// connections (a recursive server's upstream connections do not).
    pub server_ips: Vec<IpAddr>,
    /// The server's ports (53, and 853 with TLS).
    pub server_ports: Vec<u16>,
}

/// Counters read for the link: the caller hands in a function, so the sampler does not own the
/// link.
pub type LinkReader = Box<dyn Fn() -> LinkCounters + Send>;

/// Samples every second from `start_ns` (CLOCK_REALTIME) until `stop` is set, appending rows to
/// `out` (flushed each second, so that an interrupted run keeps its samples). Returns the rows.
pub fn sample_until(
    what: &Sampled,
    link: LinkReader,
    start_ns: i64,
    stop: &AtomicBool,
    out: &Path,
) -> Result<Vec<Sample>, ExperimentError> {
    let mut file = SamplesWriter::create(out).map_err(|e| ExperimentError::io(out, e))?;
    let mut cpu = CpuTracker::default();
    let mut last_link = link();
    let mut last_ns = start_ns;
    let mut rows = Vec::new();
    for k in 1u64.. {
        let tick = start_ns + (k as i64) * 1_000_000_000;
        if !sleep_until_realtime(tick, stop) {
            break;
        }
        let now = realtime_ns();
        let procs = process_tree(what.root_pid, what.exclude_pid);
        let rss_kib = procs.iter().map(|p| p.rss_kib).sum();
        let cpu_ticks = cpu.delta(&procs);
        let elapsed_s = ((now - last_ns).max(1)) as f64 / 1e9;
        last_ns = now;
        let tcp = tcp_states(what.root_pid, &what.server_ips, &what.server_ports);
        let link_now = link();
        let d = |now: u64, before: u64| now.saturating_sub(before);
        let sample = Sample {
            t_s: (now - start_ns) as f64 / 1e9,
            rss_kib,
            cpu_pct: cpu_ticks as f64 / clock_ticks_per_s() / elapsed_s * 100.0,
            tcp_established: tcp.established,
            tcp_time_wait: tcp.time_wait,
            tcp_other: tcp.other,
            socket_mem_kib: socket_mem_kib(what.root_pid),
            c2s_packets: d(link_now.a_to_b.packets_out, last_link.a_to_b.packets_out),
            c2s_bytes: d(link_now.a_to_b.bytes_out, last_link.a_to_b.bytes_out),
            s2c_packets: d(link_now.b_to_a.packets_out, last_link.b_to_a.packets_out),
            s2c_bytes: d(link_now.b_to_a.bytes_out, last_link.b_to_a.bytes_out),
            c2s_dropped: d(
                link_now.a_to_b.dropped_loss + link_now.a_to_b.dropped_queue,
                last_link.a_to_b.dropped_loss + last_link.a_to_b.dropped_queue,
            ),
            s2c_dropped: d(
                link_now.b_to_a.dropped_loss + link_now.b_to_a.dropped_queue,
                last_link.b_to_a.dropped_loss + last_link.b_to_a.dropped_queue,
            ),
            processes: procs.len() as u32,
        };
        last_link = link_now;
        file.write(&sample)
            .map_err(|e| ExperimentError::io(out, e))?;
        rows.push(sample);
    }
    Ok(rows)
}

/// Runs [`sample_until`] on a thread of its own; the handle gives the rows back.
pub fn spawn(
    what: Sampled,
    link: LinkReader,
    start_ns: i64,
    stop: Arc<AtomicBool>,
    out: std::path::PathBuf,
) -> std::thread::JoinHandle<Result<Vec<Sample>, ExperimentError>> {
    std::thread::spawn(move || sample_until(&what, link, start_ns, &stop, &out))
}

pub use ldplayer_system::clock::realtime_ns;

/// Sleeps until `tick` (realtime ns) in short steps; false when `stop` was set first.
fn sleep_until_realtime(tick: i64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let left = tick - realtime_ns();
        if left <= 0 {
            return true;
        }
        std::thread::sleep(Duration::from_nanos(left.min(50_000_000) as u64));
    }
}

fn clock_ticks_per_s() -> f64 {
    ldplayer_system::clock::clock_ticks_per_second() as f64
}

/// One process of the server, as read from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy)]
struct Proc {
    pid: u32,
    ppid: u32,
    /// utime + stime, in clock ticks.
    cpu_ticks: u64,
    rss_kib: u64,
}

fn read_proc(pid: u32) -> Option<Proc> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    let page_kib = page_size() / 1024;
    Some(Proc {
        pid,
        ppid: num(1)? as u32,
        cpu_ticks: num(11)? + num(12)?,
        rss_kib: num(21)? * page_kib,
    })
}

use ldplayer_system::clock::page_size;

/// The processes under `root` (not `root` itself, `unshare`), without `exclude`.
fn process_tree(root: u32, exclude: Option<u32>) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let all: Vec<Proc> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(read_proc)
        .collect();
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, p) in all.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for &i in children.get(&pid).into_iter().flatten() {
            let p = all[i];
            stack.push(p.pid);
            if Some(p.pid) != exclude {
                out.push(p);
            }
        }
    }
    out
}

/// CPU time between samples, per process, so that processes that come and go count for the
/// time they ran.
#[derive(Debug, Default)]
struct CpuTracker {
    last: HashMap<u32, u64>,
}

impl CpuTracker {
    fn delta(&mut self, procs: &[Proc]) -> u64 {
        let mut total = 0;
        let mut now = HashMap::with_capacity(procs.len());
        for p in procs {
            let before = self.last.get(&p.pid).copied().unwrap_or(0);
            total += p.cpu_ticks.saturating_sub(before);
            now.insert(p.pid, p.cpu_ticks);
        }
        self.last = now;
        total
    }
}

/// The server's TCP sockets by state.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct TcpStates {
    established: u64,
    time_wait: u64,
    other: u64,
}

/// The server's TCP sockets (bound to one of its addresses and ports), by state, as seen in
/// the namespace of process `pid`. Listening sockets are not counted.
fn tcp_states(pid: u32, ips: &[IpAddr], ports: &[u16]) -> TcpStates {
    let mut states = TcpStates::default();
    for (file, v6) in [("tcp", false), ("tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) else {
            continue;
        };
        let locals: Vec<String> = ips
            .iter()
            .filter(|ip| ip.is_ipv6() == v6)
            .flat_map(|ip| ports.iter().map(move |port| proc_net_addr(*ip, *port)))
            .collect();
        count_states(&text, &locals, &mut states);
    }
    states
}

fn count_states(text: &str, locals: &[String], states: &mut TcpStates) {
    for line in text.lines().skip(1) {
        let mut f = line.split_whitespace();
        let (Some(_slot), Some(local), Some(_remote), Some(state)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        if !locals.iter().any(|l| l.eq_ignore_ascii_case(local)) {
            continue;
        }
        match state {
            "01" => states.established += 1,
            "06" => states.time_wait += 1,
            "0A" => {}
            _ => states.other += 1,
        }
    }
}

/// An address and port as `/proc/net/tcp{,6}` prints them: the address's 32-bit words in host
/// (little-endian) order, in hex; the port in hex.
fn proc_net_addr(ip: IpAddr, port: u16) -> String {
    let words: Vec<u32> = match ip {
        IpAddr::V4(a) => vec![u32::from_ne_bytes(a.octets())],
        IpAddr::V6(a) => a
            .octets()
            .chunks(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    let mut s: String = words.iter().map(|w| format!("{w:08X}")).collect();
    s.push_str(&format!(":{port:04X}"));
    s
}

/// Kernel memory of TCP and UDP sockets in the namespace of `pid` (`/proc/PID/net/sockstat`,
/// in pages), in KiB.
fn socket_mem_kib(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/sockstat")) else {
        return 0;
    };
    sockstat_mem_pages(&text) * (page_size() / 1024)
}

fn sockstat_mem_pages(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("TCP:") || l.starts_with("UDP:"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let i = f.iter().position(|w| *w == "mem")?;
            f.get(i + 1)?.parse::<u64>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_addresses_are_written_as_the_kernel_writes_them() {
        // 10.53.0.1:53 as in /proc/net/tcp on a little-endian machine.
        if cfg!(target_endian = "little") {
            assert_eq!(
                proc_net_addr("10.53.0.1".parse().unwrap(), 53),
                "0100350A:0035"
            );
            assert_eq!(
                proc_net_addr("fd53::1".parse().unwrap(), 853),
                "000053FD000000000000000001000000:0355"
            );
        }
    }

    #[test]
    fn states_count_only_the_servers_sockets() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100350A:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1
   1: 0100350A:0035 0700000A:A001 01 00000000:00000000 00:00000000 00000000     0        0 2
   2: 0100350A:0035 0800000A:A002 06 00000000:00000000 00:00000000 00000000     0        0 3
   3: 0100350A:0035 0900000A:A003 08 00000000:00000000 00:00000000 00000000     0        0 4
   4: 0200350A:0035 0900000A:A003 01 00000000:00000000 00:00000000 00000000     0        0 5
";
        let mut s = TcpStates::default();
        count_states(text, &["0100350A:0035".to_string()], &mut s);
        assert_eq!(
            s,
            TcpStates {
                established: 1,
                time_wait: 1,
                other: 1
            }
        );
    }

    #[test]
    fn sockstat_memory_adds_tcp_and_udp() {
        let text = "sockets: used 10\nTCP: inuse 3 orphan 0 tw 2 alloc 4 mem 7\nUDP: inuse 2 mem 5\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n";
        assert_eq!(sockstat_mem_pages(text), 12);
    }

    #[test]
    fn this_process_reads_as_a_process() {
        let me = std::process::id();
        let p = read_proc(me).expect("own stat");
        assert!(p.rss_kib > 0);
        assert_eq!(p.pid, me);
    }
}
