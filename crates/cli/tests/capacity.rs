//! Capacity studies (`replay --ramp-to`): a ramp of offered load against a real server whose
//! capacity the test sets, Unbound answering at most N queries a second from one client
//! address (`ip-ratelimit`, everything past it dropped), finds that capacity, in one process
//! and in several; and connections carry at most `--queries-per-connection` queries.
//!
//! Nothing here holds a timing: the bound is a rate the server itself applies, and the
//! tolerances are the ramp's own resolution (its slope over a second, as the server counts its
//! seconds on the wall clock and the ramp from its start).

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::{free_port, prerequisite::tools};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Unbound on loopback answering every name under `example.` itself, at most `limit` queries
/// a second per client address; killed on drop.
struct Unbound {
    child: Child,
    port: u16,
}

impl Unbound {
    fn start(dir: &Path, limit: u32) -> Unbound {
        let port = free_port();
        let d = dir.display();
        let conf = dir.join("unbound.conf");
        std::fs::write(
            &conf,
            format!(
                "server:\n    interface: 127.0.0.1@{port}\n    port: {port}\n    do-ip6: no\n\
                 \x20   username: \"\"\n    chroot: \"\"\n    directory: \"{d}\"\n\
                 \x20   pidfile: \"{d}/unbound.pid\"\n    use-syslog: no\n    logfile: \"\"\n\
                 \x20   num-threads: 1\n    incoming-num-tcp: 200\n\
                 \x20   access-control: 127.0.0.0/8 allow\n\
                 \x20   ip-ratelimit: {limit}\n    ip-ratelimit-factor: 0\n\
                 \x20   local-zone: \"example.\" redirect\n\
                 \x20   local-data: \"example. 3600 IN A 192.0.2.1\"\n\
                 remote-control:\n    control-enable: no\n"
            ),
        )
        .expect("unbound.conf");
        let child = Command::new("unbound")
            .args(["-d", "-c"])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("unbound starts");
        let server = Unbound { child, port };
        server.wait_until_answering();
        server
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Asks `ready.example. A` until an answer comes (10 s at most).
    fn wait_until_answering(&self) {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        let mut query = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in ["ready", "example"] {
            query.push(label.len() as u8);
            query.extend_from_slice(label.as_bytes());
        }
        query.extend_from_slice(&[0, 0, 1, 0, 1]);
        let began = Instant::now();
        let mut buf = [0u8; 512];
        while began.elapsed() < Duration::from_secs(10) {
            let _ = sock.send_to(&query, ("127.0.0.1", self.port));
            if matches!(sock.recv(&mut buf), Ok(n) if n > 12 && buf[..2] == [0x12, 0x34]) {
                return;
            }
        }
        panic!("unbound did not answer on port {}", self.port);
    }
}

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A trace of `n` queries for unique names under `example.` from 50 clients.
fn trace(dir: &Path, n: u32) -> String {
    let path = dir.join("queries.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "5000",
        "-n",
        &n.to_string(),
        "--clients",
        "50",
        "--zone",
        "example.",
        "-o",
        &s(&path),
        "-q",
    ]);
    s(&path)
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The limit the server applies, the ramp over it: 0 to twice the limit over 20 s, so that the
/// ramp's rate rises by a tenth of the limit each second.
const LIMIT: f64 = 1000.0;
const RAMP: [&str; 8] = [
    "--ramp-to",
    "2000",
    "--ramp-s",
    "20",
    "--max-loss",
    "10",
    "--timeout",
    "1",
];

/// What a ramp against the limit must find: the capacity within the ramp's resolution of the
/// limit (the server's seconds and the ramp's are not aligned, and the rate rises by 100 q/s
/// within a second), the knee just past it, every one of the 20 seconds.
fn check_capacity(ramp: &serde_json::Value) {
    let capacity = ramp["capacity_qps"].as_f64().expect("capacity_qps");
    assert!(
        (0.9 * LIMIT..=1.15 * LIMIT).contains(&capacity),
        "capacity {capacity} q/s, the server's limit {LIMIT}: {ramp:#}"
    );
    assert_eq!(ramp["limited_by"], "loss", "{ramp:#}");
    let knee = ramp["knee_offered_qps"].as_f64().expect("a knee");
    assert!(
        knee > capacity && knee <= 1.4 * LIMIT,
        "knee at {knee} q/s offered: {ramp:#}"
    );
    let seconds = ramp["seconds"].as_array().expect("seconds");
    assert_eq!(seconds.len(), 20, "{ramp:#}");
    // The ramp offered 50, 150, ... 1950 queries in its seconds: the rate rose linearly.
    for (i, s) in seconds.iter().enumerate() {
        let offered = s["offered_qps"].as_f64().expect("offered");
        assert_eq!(offered, 100.0 * i as f64 + 50.0, "second {i}: {s}");
    }
    // Well below the limit every query is answered; well above it a third or more is lost.
    assert_eq!(seconds[5]["loss_pct"], 0.0, "{ramp:#}");
    assert!(seconds[5]["latency_p50_ms"].as_f64().is_some());
    assert!(
        seconds[19]["loss_pct"].as_f64().expect("loss") > 30.0,
        "{ramp:#}"
    );
}

#[test]
fn a_ramp_finds_the_capacity_a_real_server_applies() {
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = Unbound::start(dir.path(), LIMIT as u32);
    // More queries than the ramp's 20,000: it runs its whole length.
    let trace = trace(dir.path(), 21_000);
    let results = dir.path().join("ramp.res");
    let mut args = vec!["replay", &trace, "--server"];
    let server = unbound.addr();
    args.push(&server);
    args.extend(RAMP);
    let results_arg = s(&results);
    args.extend(["--results", &results_arg, "--json"]);
    let out = json(&ldplayer(&args));
    check_capacity(&out["ramp"]);
    assert_eq!(out["results"], 20_000, "the ramp's queries, no more");
    assert_eq!(out["replay"]["ramp_completed"], true);
    // The results file keeps the ramp: its summary finds the same capacity, second by second.
    let summary = json(&ldplayer(&["results", "summary", &results_arg, "--json"]));
    assert_eq!(summary["ramp"], out["ramp"]);
    let text =
        String::from_utf8(ldplayer(&["results", "summary", &results_arg, "--seconds"]).stdout)
            .expect("utf-8");
    assert!(
        text.contains("capacity: ") && text.contains("knee at"),
        "{text}"
    );
    let table = text.split_once("offered/s").expect("the seconds' table").1;
    assert_eq!(table.lines().skip(1).count(), 20, "{text}");
}

#[test]
fn a_ramp_split_over_processes_finds_the_same_capacity() {
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = Unbound::start(dir.path(), LIMIT as u32);
    let trace = trace(dir.path(), 21_000);
    let results = s(&dir.path().join("merged.res"));
    let server = unbound.addr();
    let mut args = vec!["replay", &trace, "--server", &server, "--processes", "2"];
    args.extend(RAMP);
    args.extend(["--results", &results, "--json"]);
    let out = json(&ldplayer(&args));
    // Both shards keep the one ramp: the merged results are the whole ramp's.
    check_capacity(&out["ramp"]);
    assert_eq!(out["results"], 20_000);
    let summary = json(&ldplayer(&["results", "summary", &results, "--json"]));
    assert_eq!(summary["ramp"], out["ramp"]);
}

#[test]
fn a_trace_shorter_than_the_ramp_says_how_far_it_got() {
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = Unbound::start(dir.path(), 100_000);
    // 2,000 queries of a ramp that needs 20,000: they last 6.3 s of its 20.
    let trace = trace(dir.path(), 2_000);
    let server = unbound.addr();
    let mut args = vec!["replay", &trace, "--server", &server];
    args.extend(RAMP);
    let out = ldplayer(&args);
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        text.contains("the trace ran out at") && text.contains("needs 20000 queries"),
        "{text}"
    );
    assert!(text.contains("kept up with the whole ramp"), "{text}");
    let json = json(&ldplayer(&[&args[..], &["--json"]].concat()));
    assert_eq!(json["replay"]["ramp_completed"], false);
    assert_eq!(json["ramp"]["seconds"].as_array().map(Vec::len), Some(6));
}

#[test]
fn connections_carry_at_most_the_queries_asked() {
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = Unbound::start(dir.path(), 100_000);
    let trace = trace(dir.path(), 500);
    let server = unbound.addr();
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "replay", &trace, "--server", &server, "--proto", "tcp", "--rate", "1000", "--json",
        ];
        args.extend(extra);
        json(&ldplayer(&args))
    };
    let reused = replay(&[]);
    assert_eq!(reused["answered"], 500);
    let opened = reused["replay"]["connections_opened"]
        .as_u64()
        .expect("opened");
    assert!(opened <= 50, "one connection per client: {opened}");
    // 500 queries from 50 clients, 10 per connection: 50 connections at least, and at most
    // one partly used one more per client.
    let capped = replay(&["--queries-per-connection", "10"]);
    assert_eq!(capped["answered"], 500);
    let opened = capped["replay"]["connections_opened"]
        .as_u64()
        .expect("opened");
    assert!((50..=100).contains(&opened), "{opened} connections");
    assert_eq!(capped["connections"]["opened"], opened, "{capped:#}");
}

/// Runs `ldplayer` with `args` to its end (it must succeed) and returns its standard output and
/// how many times its threads gave up the CPU of their own accord (`ru_nvcsw`, from `wait4`).
#[allow(clippy::zombie_processes)] // reaped by `wait4`, which also gives the child's rusage
fn ldplayer_with_switches(args: &[&str]) -> (Vec<u8>, i64) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut stdout)
        .expect("read");
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 reaps the child spawned above and fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "ldplayer {args:?} failed ({status})"
    );
    (stdout, usage.ru_nvcsw)
}

/// A ramp's querier wakes a little past each due send and sends all that is due by then, in
/// one go, rather than waking for every query (which cost more CPU a query than resperf's
/// spinning): the send stamps of a ramp to 20,000 q/s come in groups, not one by one. And with
/// answers to come it sleeps outside `epoll_wait`, so that answers do not wake it one by one
/// (on loopback the server's send pays for each such wake-up): its threads give up the CPU far
/// fewer times than answers come.
#[test]
fn a_ramp_sends_what_is_due_together_and_is_not_woken_by_each_answer() {
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let unbound = Unbound::start(dir.path(), 100_000);
    let trace = trace(dir.path(), 21_000);
    let server = unbound.addr();
    let results = s(&dir.path().join("ramp.res"));
    let (stdout, switches) = ldplayer_with_switches(&[
        "replay",
        &trace,
        "--server",
        &server,
        "--ramp-to",
        "20000",
        "--ramp-s",
        "2",
        "--results",
        &results,
        "--json",
    ]);
    let out: serde_json::Value = serde_json::from_slice(&stdout).expect("JSON");
    assert_eq!(out["results"], 20_000, "{out:#}");
    let answered = out["answered"].as_i64().expect("answered");
    assert!(answered > 19_000, "{out:#}");
    // Woken by each answer, the querier alone gave up the CPU about once an answer.
    assert!(
        switches * 3 < answered,
        "{switches} voluntary context switches for {answered} answers"
    );
    let csv = String::from_utf8(ldplayer(&["results", "export", "--csv", &results]).stdout)
        .expect("utf-8");
    let mut header = csv.lines().next().expect("a header").split(',');
    let sent_col = header.position(|c| c == "sent_ns").expect("sent_ns");
    let mut sent: Vec<i64> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(sent_col)?.parse().ok())
        .filter(|&t| t > 0)
        .collect();
    assert!(sent.len() > 19_000, "{} sends stamped", sent.len());
    sent.sort_unstable();
    // Sends of one wake-up go out microseconds apart; sends woken for one by one are at least
    // 50 µs apart at this ramp's top rate and further below it.
    let groups = 1 + sent.windows(2).filter(|w| w[1] - w[0] > 25_000).count();
    assert!(
        groups * 4 < sent.len(),
        "{} sends in {groups} groups: sent one by one",
        sent.len()
    );
}
