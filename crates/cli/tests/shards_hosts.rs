//! Shards on emulated hosts: three shard processes, each in a network namespace of its own with
//! its own address, joined by a bridge to a server namespace running knotd (no route out of
//! any of them). A tcpdump on the bridge is the witness: every shard's queries come from its
//! own host, every client from one host only, and the merged results hold every query.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::{prerequisite, witness::Tcpdump};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};

/// Network namespaces made for one test, deleted (with their links) on drop.
struct Hosts {
    names: Vec<String>,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const SERVER: &str = "10.88.0.1";

/// The server namespace with a bridge, and `shards` host namespaces on it at 10.88.0.11 and on.
fn emulated_hosts(shards: usize) -> Hosts {
    let tag = std::process::id();
    let server = format!("ldps-srv-{tag}");
    let mut hosts = Hosts {
        names: vec![server.clone()],
    };
    ip(&["netns", "add", &server]);
    ip(&["-n", &server, "link", "set", "lo", "up"]);
    ip(&["-n", &server, "link", "add", "br0", "type", "bridge"]);
    ip(&[
        "-n",
        &server,
        "addr",
        "add",
        &format!("{SERVER}/24"),
        "dev",
        "br0",
    ]);
    ip(&["-n", &server, "link", "set", "br0", "up"]);
    for i in 0..shards {
        let host = format!("ldps-h{i}-{tag}");
        ip(&["netns", "add", &host]);
        hosts.names.push(host.clone());
        ip(&[
            "link",
            "add",
            "name",
            "eth0",
            "netns",
            &host,
            "type",
            "veth",
            "peer",
            "name",
            &format!("port{i}"),
            "netns",
            &server,
        ]);
        ip(&[
            "-n",
            &server,
            "link",
            "set",
            &format!("port{i}"),
            "master",
            "br0",
            "up",
        ]);
        ip(&["-n", &host, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            &host,
            "addr",
            "add",
            &format!("10.88.0.{}/24", 11 + i),
            "dev",
            "eth0",
        ]);
        ip(&["-n", &host, "link", "set", "eth0", "up"]);
    }
    hosts
}

/// knotd in namespace `netns` on the server address, serving the testbed's zone.
fn knot_in(netns: &str, dir: &Path) -> std::process::Child {
    let d = dir.display();
    std::fs::write(dir.join("example.zone"), ldplayer_testbed::ZONE).expect("zone");
    let conf = format!(
        "server:\n    rundir: \"{d}\"\n    listen: {SERVER}@53\n    tcp-idle-timeout: 20s\n\
         database:\n    storage: \"{d}\"\n\
         log:\n  - target: stderr\n    any: warning\n\
         template:\n  - id: default\n    storage: \"{d}\"\n    file: \"%s.zone\"\n    semantic-checks: off\n\
         zone:\n  - domain: example.\n"
    );
    std::fs::write(dir.join("knot.conf"), conf).expect("conf");
    let knotd = prerequisite::installed("knotd").expect("knotd (scripts/test.sh installs knot)");
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns])
        .arg(knotd)
        .arg("-c")
        .arg(dir.join("knot.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("knotd starts");
    // Up when it answers over TCP from inside its namespace.
    for _ in 0..100 {
        let up = Command::new("ip")
            .args([
                "netns",
                "exec",
                netns,
                "kdig",
                "+tcp",
                "+short",
                "+timeout=1",
            ])
            .args([&format!("@{SERVER}"), "ns.example."])
            .output()
            .is_ok_and(|o| o.status.success() && !o.stdout.is_empty());
        if up {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("knotd did not start in {netns}");
}

#[test]
fn shards_on_three_hosts_send_from_their_own_addresses_and_merge() {
    if !prerequisite::require(
        prerequisite::effective_uid_is_root() && prerequisite::namespaces_work(),
        "root, for named network namespaces (ip netns add)",
        "run the tests as root (scripts/test.sh in CI runs as root)",
    ) || !prerequisite::tools(&[
        ("tcpdump", "tcpdump"),
        ("tshark", "tshark"),
        ("kdig", "knot-dnsutils"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "600",
        "-n",
        "1800",
        "--clients",
        "90",
        "--tcp-share",
        "0.4",
        "--zone",
        "example.",
        "--seed",
        "21",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let hosts = emulated_hosts(3);
    let server_ns = hosts.names[0].clone();
    let knot_dir = dir.path().join("knot");
    std::fs::create_dir(&knot_dir).expect("knot folder");
    let mut knot = knot_in(&server_ns, &knot_dir);
    let capture = dir.path().join("bridge.pcap");
    let witness = Tcpdump::start_in_netns(&server_ns, "br0", &capture, &["port", "53"]);

    let start = binary::start_in(2.0);
    let files: Vec<_> = (0..3)
        .map(|i| dir.path().join(format!("h{i}.res")))
        .collect();
    let children: Vec<_> = (0..3)
        .map(|i| {
            // Each host has a name of its own (a UTS namespace), as real hosts do: merge then
            // judges their clocks against each other.
            Command::new("ip")
                .args(["netns", "exec", &hosts.names[i + 1]])
                .args(["unshare", "--uts", "sh", "-c"])
                .arg(format!("hostname shard-host-{i} && exec \"$0\" \"$@\""))
                .arg(env!("CARGO_BIN_EXE_ldplayer"))
                .args(["replay", &s(&trace), "--server", &format!("{SERVER}:53")])
                .args(["--shard", &format!("{i}/3"), "--start-at", &start])
                .args(["--results", &s(&files[i]), "--json", "-q"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("ldplayer starts")
        })
        .collect();
    let mut sent_by_host = HashMap::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("shard ends");
        assert!(
            out.status.success(),
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(summary["answered"], summary["sent"], "shard {i}: {summary}");
        sent_by_host.insert(
            format!("10.88.0.{}", 11 + i),
            summary["sent"].as_u64().unwrap_or(0),
        );
    }
    let stats = witness.stop();
    let _ = knot.kill();
    let _ = knot.wait();

    let merged = dir.path().join("all.res");
    let out = ldplayer(&[
        "results",
        "merge",
        &s(&files[0]),
        &s(&files[1]),
        &s(&files[2]),
        "-o",
        &s(&merged),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["merged"], 1800, "{report}");
    assert_eq!(report["missing_shards"], serde_json::json!([]), "{report}");
    // Three hosts, each shard's clock as its kernel reported it; merge warns about exactly the
    // shards whose clock is unsynchronised or less certain than their own timing.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (i, input) in report["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .enumerate()
    {
        assert_eq!(input["host"], format!("shard-host-{i}"), "{report}");
        let clock = &input["clock"];
        let synced = clock["synchronized"].as_bool().expect("a clock state");
        let error = clock["est_error_us"].as_f64().expect("an error estimate");
        let timing = input["timing_error_p50_us"]
            .as_f64()
            .expect("a timing error");
        let doubtful = !synced || error > timing;
        let file = files[i].display().to_string();
        let warned = stderr
            .lines()
            .any(|l| l.contains(&file) && l.contains("clock"));
        assert_eq!(
            warned, doubtful,
            "{file}: {clock} against {timing} µs: {stderr}"
        );
    }

    // The witness: queries on the bridge, by source host and by original client (the qname's
    // first label is the query's number, so the trace tells which client asked it).
    let out = Command::new("tshark")
        .args(["-r", &s(&capture), "-Y", "dns.flags.response == 0"])
        .args(["-T", "fields", "-e", "ip.src", "-e", "dns.qry.name"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut seen_by_host: HashMap<String, u64> = HashMap::new();
    let mut names_by_host: HashMap<String, HashSet<String>> = HashMap::new();
    for line in text.lines() {
        let mut f = line.split('\t');
        let (Some(src), Some(names)) = (f.next(), f.next()) else {
            continue;
        };
        // A TCP segment may carry several queries: one name each.
        for name in names.split(',') {
            *seen_by_host.entry(src.to_string()).or_default() += 1;
            names_by_host
                .entry(src.to_string())
                .or_default()
                .insert(name.to_string());
        }
    }
    assert_eq!(
        seen_by_host, sent_by_host,
        "queries on the bridge by source host against each shard's count (tcpdump: {stats})"
    );
    // Every client's queries came from one host: map each query name to its client through the
    // trace, then check no client shows up under two hosts.
    let clients = query_clients(&trace);
    let mut host_of_client: HashMap<&str, &str> = HashMap::new();
    for (host, names) in &names_by_host {
        for name in names {
            let client = clients
                .get(name.trim_end_matches('.'))
                .unwrap_or_else(|| panic!("{name} is not a query of the trace"));
            let first = host_of_client.entry(client).or_insert(host);
            assert_eq!(*first, host, "client {client} sent from {first} and {host}");
        }
    }
    assert_eq!(host_of_client.len(), 90);
}

/// `qname → client` of the trace (synth's names are unique per query), from its text form.
fn query_clients(trace: &Path) -> HashMap<String, String> {
    let out = ldplayer(&["convert", &s(trace), "-o", "-", "--to", "text", "-q"]);
    let text = String::from_utf8(out.stdout).expect("text");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect("a column");
    let (src, qname) = (col("src"), col("qname"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[qname].trim_end_matches('.').to_string(),
                f[src].to_string(),
            )
        })
        .collect()
}
