//! Client populations: `population fit` measures a trace's clients as an independent count of
//! the trace's own records does, and `replay --population` sends each client's queries over its
//! group's transport, against ldplayer serve (UDP, TCP, and TLS on its own port).

mod binary;

use binary::{ldplayer, ldplayer_fails, s, Serve};
use ldplayer_population::Population;
use ldplayer_testbed::prerequisite;
use std::collections::HashMap;
use std::path::Path;

/// A synthetic trace: 200 clients, 30% of them over TCP.
fn synth(trace: &Path, tcp_share: &str) {
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "400",
        "-n",
        "2000",
        "--clients",
        "200",
        "--tcp-share",
        tcp_share,
        "--zone",
        "example.",
        "--seed",
        "4",
        "-o",
        &s(trace),
        "-q",
    ]);
}

/// Each client's queries and transports, read from the trace's text form.
fn clients_of(trace: &Path) -> HashMap<String, (u64, HashMap<String, u64>)> {
    let out = ldplayer(&["convert", &s(trace), "-o", "-", "--to", "text", "-q"]);
    let text = String::from_utf8(out.stdout).expect("text");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).expect("column");
    let (src, proto, qr) = (col("src"), col("proto"), col("qr"));
    let mut clients: HashMap<String, (u64, HashMap<String, u64>)> = HashMap::new();
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        if f[qr] != "0" {
            continue;
        }
        let c = clients.entry(f[src].to_string()).or_default();
        c.0 += 1;
        *c.1.entry(f[proto].to_string()).or_default() += 1;
    }
    clients
}

#[test]
fn fit_measures_the_clients_the_trace_holds() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    synth(&trace, "0.3");
    let pop = dir.path().join("pop.toml");
    let out = ldplayer(&["population", "fit", &s(&trace), "-o", &s(&pop), "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");

    let clients = clients_of(&trace);
    assert_eq!(stats["clients"], clients.len(), "{stats}");
    assert_eq!(stats["queries"], 2000, "{stats}");
    let mut mix: HashMap<String, u64> = HashMap::new();
    for (_, by_proto) in clients.values() {
        let main = by_proto.iter().max_by_key(|(_, n)| **n).expect("a query");
        *mix.entry(main.0.clone()).or_default() += 1;
    }
    let fitted: HashMap<String, u64> = stats["clients_by_proto"]
        .as_array()
        .expect("mix")
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap_or("").to_string(),
                p[1].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(fitted, mix);
    // The median per-client rate, by nearest rank, from the counts and the duration.
    let duration = stats["duration_s"].as_f64().expect("duration");
    let mut rates: Vec<f64> = clients
        .values()
        .map(|(n, _)| *n as f64 / duration)
        .collect();
    rates.sort_by(f64::total_cmp);
    let p50 = rates[(rates.len() as f64 * 0.5).ceil() as usize - 1];
    let fitted_p50 = stats["rate_qps"]["p50"].as_f64().expect("p50");
    assert!(
        (fitted_p50 - p50).abs() < 1e-9,
        "{fitted_p50} against {p50}"
    );
    // inspect shows the same statistics.
    let inspect: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["inspect", &s(&trace), "--json"]).stdout).expect("JSON");
    assert_eq!(inspect["client_rate_qps"], stats["rate_qps"], "{inspect}");
    assert_eq!(inspect["client_gap_s"], stats["gap_s"], "{inspect}");

    // The file it wrote is a population whose groups mirror that mix.
    let p = Population::from_toml(&std::fs::read_to_string(&pop).expect("written"))
        .expect("a valid population");
    assert_eq!(p.clients, Some(clients.len() as u64));
    for g in &p.groups {
        let want = mix[&g.name] as f64 / clients.len() as f64;
        assert!(
            (g.share - want).abs() < 1e-9,
            "{}: {} against {want}",
            g.name,
            g.share
        );
    }
}

#[test]
fn fit_reads_a_real_capture() {
    let Some(pcap) = prerequisite::shared_file("pcap/dnscap_dnso1tcp.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let pop = dir.path().join("pop.toml");
    let out = ldplayer(&["population", "fit", &s(&pcap), "-o", &s(&pop), "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let inspect: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["inspect", &s(&pcap), "--json"]).stdout).expect("JSON");
    assert_eq!(stats["clients"], inspect["unique_clients"], "{stats}");
    let transports = inspect["query_transports"].as_array().expect("transports");
    let queries: u64 = transports.iter().filter_map(|t| t["count"].as_u64()).sum();
    assert_eq!(stats["queries"], queries, "{stats}");
    assert_eq!(
        stats["clients_by_proto"][0][0], transports[0]["name"],
        "{stats}"
    );
    assert!(
        stats["gap_s"]["p50"].as_f64().is_some_and(|g| g > 0.0),
        "{stats}"
    );
}

#[test]
fn replay_sends_each_client_over_its_groups_transport() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    synth(&trace, "0");
    let zone = dir.path().join("example.zone");
    std::fs::write(
        &zone,
        "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n\
         * A 192.0.2.1\n",
    )
    .expect("zone");
    let (port, tls) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let (https, quic) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let tls_dir = dir.path().join("tls");
    let server = Serve::start(&[
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--tls-listen",
        &format!("127.0.0.1:{tls}"),
        "--https-listen",
        &format!("127.0.0.1:{https}"),
        "--quic-listen",
        &format!("127.0.0.1:{quic}"),
        "--tls-self-signed",
        &s(&tls_dir),
        &s(&zone),
    ]);
    let pop_file = dir.path().join("pop.toml");
    let text = "seed = 9\n\
        [[group]]\nname = \"stub\"\nshare = 0.4\nproto = \"udp\"\n\
        [[group]]\nname = \"tcp\"\nshare = 0.15\nproto = \"tcp\"\n\
        [[group]]\nname = \"dot\"\nshare = 0.15\nproto = \"tls\"\n\
        [[group]]\nname = \"doh\"\nshare = 0.15\nproto = \"doh\"\n\
        [[group]]\nname = \"doq\"\nshare = 0.15\nproto = \"doq\"\n";
    std::fs::write(&pop_file, text).expect("population");
    let population = Population::from_toml(text).expect("valid");
    let results = dir.path().join("r.res");
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &format!("127.0.0.1:{port}"),
        "--tls-server",
        &format!("127.0.0.1:{tls}"),
        "--https-server",
        &format!("127.0.0.1:{https}"),
        "--quic-server",
        &format!("127.0.0.1:{quic}"),
        "--tls-ca",
        &s(&tls_dir.join("ca.pem")),
        "--population",
        &s(&pop_file),
        "--speed",
        "4",
        "--results",
        &s(&results),
        "--json",
        "-q",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(summary["answered"], 2000, "{summary}");

    // Every result's transport is its client's group's, as the population file assigns it.
    let csv = ldplayer(&[
        "results",
        "export",
        &s(&results),
        "--csv",
        "--with-trace",
        &s(&trace),
        "-q",
    ]);
    let text = String::from_utf8(csv.stdout).expect("CSV");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).expect("column");
    let (proto, client) = (col("proto"), col("client"));
    let mut per_group = [0u64; 5];
    let mut seen = HashMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let group = population.group_of(f[client].parse().expect("an address"));
        let want = ["udp", "tcp", "tls", "https", "quic"][group];
        assert_eq!(f[proto], want, "client {}", f[client]);
        if seen.insert(f[client].to_string(), group).is_none() {
            per_group[group] += 1;
        }
    }
    // 200 clients: each group's count within four standard deviations of its share.
    for (n, share) in per_group.iter().zip([0.4f64, 0.15, 0.15, 0.15, 0.15]) {
        let sd = (200.0 * share * (1.0 - share)).sqrt();
        assert!(
            (*n as f64 - 200.0 * share).abs() < 4.0 * sd,
            "{per_group:?}"
        );
    }
    let v: serde_json::Value = serde_json::from_str(&server.stop("INT")).expect("json");
    assert!(v["tls_queries"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(v["tcp_queries"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(v["doh_queries"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(v["doq_queries"].as_u64().unwrap_or(0) > 0, "{v}");
}

#[test]
fn populations_whose_shares_do_not_add_up_are_refused() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    synth(&trace, "0");
    let pop = dir.path().join("pop.toml");
    std::fs::write(
        &pop,
        "[[group]]\nname = \"a\"\nshare = 0.4\nproto = \"udp\"\n",
    )
    .expect("population");
    let out = ldplayer_fails(&[
        "replay",
        &s(&trace),
        "--server",
        "127.0.0.1:9",
        "--population",
        &s(&pop),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("add up to 0.4"), "{err}");
}

/// `population fit` writes generated arrivals; `replay --population` keeps the trace's times
/// and says that those arrivals do not apply.
#[test]
fn a_replay_says_that_generated_arrivals_do_not_apply() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    synth(&trace, "0");
    let pop = dir.path().join("pop.toml");
    std::fs::write(
        &pop,
        "[[group]]\nname = \"stubs\"\nshare = 1.0\nproto = \"udp\"\n\
         arrivals = { kind = \"renewal\", rate = { dist = \"fixed\", rate = 2.0 }, gap_cv = 3.0 }\n",
    )
    .expect("population");
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "replay",
            &s(&trace),
            "--server",
            &silent.local_addr().expect("addr").to_string(),
            "--timeout",
            "0.1",
            "--population",
            &s(&pop),
            "-q",
        ])
        .output()
        .expect("ldplayer runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the arrivals of group stubs are generated")
            && err.contains("synth --population"),
        "{err}"
    );
}

#[test]
fn the_shipped_populations_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/populations");
    let files = ldplayer_testbed::files_with_extension(&dir, "toml");
    assert!(files.len() >= 2, "{files:?}");
    for f in files {
        let p = Population::from_toml(&std::fs::read_to_string(&f).expect("readable"))
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(!p.groups.is_empty());
    }
}

#[test]
fn synth_generates_the_clients_of_a_population() {
    let dir = tempfile::tempdir().expect("scratch");
    let pop = dir.path().join("gen.toml");
    let text = "seed = 5\nclients = 1000\n\
        [[group]]\nname = \"udp\"\nshare = 0.7\nproto = \"udp\"\n\
        arrivals = { kind = \"poisson\", rate = { dist = \"lognormal\", median = 0.5, sigma = 1.0 } }\n\
        [[group]]\nname = \"dot\"\nshare = 0.3\nproto = \"tls\"\n\
        arrivals = { kind = \"poisson\", rate = { dist = \"fixed\", rate = 2.0 } }\n";
    std::fs::write(&pop, text).expect("population");
    let population = Population::from_toml(text).expect("valid");
    let trace = dir.path().join("gen.bin");
    ldplayer(&[
        "synth",
        "--population",
        &s(&pop),
        "--duration",
        "30",
        "-n",
        "1000000",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let clients = clients_of(&trace);
    assert!(
        clients.len() > 950 && clients.len() <= 1000,
        "{}",
        clients.len()
    );
    // Every client over its group's transport only; the expected rate from the groups' means.
    let mut expected_qps = 0.0;
    let mut tls = 0;
    for (addr, (_, by_proto)) in &clients {
        let group = population.group_of(addr.parse().expect("an address"));
        let want = ["udp", "tls"][group];
        assert_eq!(by_proto.keys().collect::<Vec<_>>(), [want], "client {addr}");
        expected_qps += [0.5 * (0.5f64).exp(), 2.0][group];
        tls += group;
    }
    let share = tls as f64 / clients.len() as f64;
    assert!((share - 0.3).abs() < 0.06, "TLS share {share}");
    let queries: u64 = clients.values().map(|(n, _)| n).sum();
    let qps = queries as f64 / 30.0;
    assert!(
        (qps / expected_qps - 1.0).abs() < 0.1,
        "{qps} queries/s against {expected_qps} expected"
    );
    // A group with the trace's arrivals cannot be generated: the error names it.
    std::fs::write(
        &pop,
        "clients = 10\n[[group]]\nname = \"replayed\"\nshare = 1.0\nproto = \"udp\"\n",
    )
    .expect("population");
    let out = ldplayer_fails(&["synth", "--population", &s(&pop), "-o", &s(&trace)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("replayed") && err.contains("poisson"), "{err}");
}
