//! `ldplayer experiment`, the shipped examples with resolvers and capacity ramps: recursive
//! servers behind an emulated hierarchy, aggressive NSEC, per-client round trips, answer diffs
//! between resolvers, and capacity ramps (the rest of the examples: experiment.rs).

mod binary;
mod plans;

use binary::{ldplayer, s};
use plans::*;

/// A recursive server resolves through the emulated hierarchy behind it (ldplayer's
/// meta-server on the hierarchy's nameserver addresses, in the server's namespace), and its
/// upstream queries never enter the link: only the clients' queries and the answers cross it.
#[test]
fn recursive_servers_resolve_through_the_hierarchy_behind_them() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[
        ("unbound", "unbound"),
        ("kresd", "knot-resolver"),
        ("nft", "nftables"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A root that delegates `example.`, whose every name has an address.
    let root = dir.path().join("root.zone");
    std::fs::write(
        &root,
        "$ORIGIN .\n$TTL 86400\n\
         . SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400\n\
         . NS a.root-servers.net.\na.root-servers.net. A 198.41.0.4\n\
         example. NS ns.example.\nns.example. A 192.0.2.53\n",
    )
    .unwrap();
    let example = dir.path().join("example.zone");
    std::fs::write(
        &example,
        "$ORIGIN example.\n$TTL 3600\n@ SOA ns.example. hostmaster.example. 1 1800 900 604800 60\n\
         @ NS ns.example.\nns A 192.0.2.53\n* A 192.0.2.80\n",
    )
    .unwrap();
    let zones = dir.path().join("zones");
    ldplayer(&[
        "zones",
        "build",
        "--zone",
        &s(&root),
        "--zone",
        &s(&example),
        "-o",
        &s(&zones),
        "-q",
    ]);
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[trace]\nsynth = { workload = \"poisson\", rate = 100, duration_s = 3, seed = 1, \
         zone = \"example.\", rd = true }\n\
         [server]\nkind = \"unbound\"\nmanifest = \"zones/manifest\"\n\
         [vary]\nkind = [\"unbound\", \"kresd\"]\n[run]\nwarmup_s = 0\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    ldplayer(&["experiment", &s(&plan), "-o", &s(&out_dir), "-q"]);
    let rows = summary(&out_dir);
    for (id, run) in run_dirs(&out_dir) {
        assert!(value(&rows, &id, "answered_share", "mean") > 0.999, "{id}");
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
        let replay = &record["outputs"]["replay"]["engine"];
        let (sent, answered) = (
            replay["sent"].as_u64().unwrap(),
            replay["answered"].as_u64().unwrap(),
        );
        let link = &record["outputs"]["link"];
        // The clients' queries and the probes go in, the answers (and what the probes got)
        // come out; the resolver's hundreds of upstream queries do not (a few packets of the
        // kernel's own are allowed).
        let probes = record["outputs"]["probe_queries"].as_u64().unwrap();
        let c2s = link["a_to_b"]["packets_out"].as_u64().unwrap();
        let s2c = link["b_to_a"]["packets_out"].as_u64().unwrap();
        let counts = format!("sent {sent}, answered {answered}, probes {probes}: {link}");
        assert!(
            (sent + probes..=sent + probes + 3).contains(&c2s),
            "{id}: {counts}"
        );
        // The probe that was answered came back; an earlier one may not have: a probe goes
        // again after 250 ms unanswered, with the same ID from the same socket, and a resolver
        // still resolving the first answers the two once (unbound, under load).
        assert!(
            (answered + 1..=answered + probes + 3).contains(&s2c),
            "{id}: {counts}"
        );
        let rcodes = &record["outputs"]["replay"]["summary"]["rcodes"];
        // Every name has an answer (kresd may fail one while it primes its cache).
        let noerror = rcodes["NOERROR"].as_u64().unwrap_or(0);
        assert!(noerror * 100 >= answered * 99, "{id}: {rcodes}");
        // The hierarchy counted the resolver's upstream queries by level: the root (priming,
        // the referral), example. for every new name (a TLD here, every name is new to the
        // cache), nothing below; the same figures in the summary.
        let upstream = &record["outputs"]["upstream"];
        let tld = upstream["tld"]["queries"].as_u64().unwrap();
        assert!(
            upstream["root"]["queries"].as_u64().unwrap() >= 1,
            "{id}: {upstream}"
        );
        assert!(tld * 10 >= sent * 9, "{id}: {upstream}, sent {sent}");
        assert_eq!(upstream["below"]["queries"], 0, "{id}: {upstream}");
        assert_eq!(
            value(&rows, &id, "upstream_tld", "mean"),
            tld as f64,
            "{id}"
        );
        // Unbound's own log of its upstream traffic (its dnstap), kept beside the counts: a
        // second witness. Responses from example.'s nameserver are the TLD's count; the root's
        // are at most the root's (Unbound may prime its cache before its dnstap connects).
        let trace = run.join("server/upstream.bin");
        if id.contains("unbound") {
            let out = ldplayer(&["convert", &s(&trace), "--to", "text", "-o", "-", "-q"]);
            let text = String::from_utf8(out.stdout).unwrap();
            let from = |ns: &str| {
                text.lines()
                    .filter(|l| {
                        let f: Vec<&str> = l.split('\t').collect();
                        f.len() > 8 && f[1] == ns && f[8] == "1"
                    })
                    .count() as u64
            };
            assert_eq!(from("192.0.2.53"), tld, "{id}: {upstream}");
            let root = upstream["root"]["queries"].as_u64().unwrap();
            assert!((1..=root).contains(&from("198.41.0.4")), "{id}: {upstream}");
        } else {
            assert!(!trace.exists(), "{id}: only unbound's dnstap is collected");
        }
    }
}

/// Example 8 (aggressive NSEC) at a tiny scale: a validating resolver behind which a signed
/// synthetic hierarchy is emulated asks the root about junk names once per name without
/// aggressive NSEC, and hardly at all with it; every stub query is answered, and the junk ones
/// are NXDOMAIN.
#[test]
fn aggressive_nsec_example_saves_root_queries() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[
        ("unbound", "unbound"),
        ("pdns_recursor", "pdns-recursor"),
        ("ldns-signzone", "ldnsutils"),
        ("ldns-keygen", "ldnsutils"),
        ("nft", "nftables"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "aggressive-nsec.toml",
        dir.path(),
        &[
            "trace.synth.rate=200",
            "trace.synth.duration_s=8",
            "run.warmup_s=3",
        ],
    );
    let rows = summary(&out_dir);
    for kind in ["unbound", "pdns-recursor"] {
        let id = |on: bool| {
            run_dirs(&out_dir)
                .into_keys()
                .find(|id| id.contains(kind) && id.contains(&format!("aggressive_nsec={on}")))
                .unwrap_or_else(|| panic!("no run of {kind} with aggressive_nsec={on}"))
        };
        let (off, on) = (id(false), id(true));
        for run in [&off, &on] {
            assert!(value(&rows, run, "answered_share", "mean") > 0.999, "{run}");
        }
        let nx = |run: &str, metric: &str| value(&rows, run, metric, "mean");
        let (nx_off, nx_on) = (
            nx(&off, "upstream_root_nxdomain"),
            nx(&on, "upstream_root_nxdomain"),
        );
        // About half of 1,600 queries are junk at the root, most of them random single
        // labels: each a new name without aggressive NSEC; with it, about one NXDOMAIN per
        // NSEC range of the root (31).
        assert!(nx_off > 300.0, "{kind}: {nx_off} root NXDOMAIN without");
        assert!(nx_on <= 45.0, "{kind}: {nx_on} root NXDOMAIN with");
        assert!(
            nx(&on, "upstream_root_nxdomain_warm") < nx(&off, "upstream_root_nxdomain_warm") / 10.0,
            "{kind}, after the warm-up"
        );
        // The stubs get the same answers either way: NXDOMAIN for the junk, no failure.
        let rcodes = |run: &str| {
            let record: serde_json::Value = serde_json::from_slice(
                &std::fs::read(out_dir.join("runs").join(run).join("run.json")).unwrap(),
            )
            .unwrap();
            record["outputs"]["replay"]["summary"]["rcodes"].clone()
        };
        let (rcodes_off, rcodes_on) = (rcodes(&off), rcodes(&on));
        assert_eq!(rcodes_off, rcodes_on, "{kind}");
        let nxdomain = rcodes_on["NXDOMAIN"].as_u64().unwrap_or(0);
        let noerror = rcodes_on["NOERROR"].as_u64().unwrap_or(0);
        assert!(nxdomain > noerror, "{kind}: {rcodes_on}");
        assert!(rcodes_on.get("SERVFAIL").is_none(), "{kind}: {rcodes_on}");
    }
    // The report has the counts by level, a row per run.
    let report = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    let table = report
        .find("upstream queries, as the emulated hierarchy counted them")
        .map(|i| &report[i..])
        .and_then(|t| t.split("</table>").next())
        .expect("the upstream table");
    assert_eq!(
        table.matches("aggressive_nsec=").count(),
        4,
        "{table:.2000}"
    );
    // The hierarchy was made once, signed, for all four runs.
    let made: Vec<_> = std::fs::read_dir(out_dir.join("hierarchies"))
        .unwrap()
        .collect();
    assert_eq!(made.len(), 1);
}

/// Per-client round trips (`client_rtt`): every client's extra comes on top of the link's RTT;
/// uniform extras spread the latency between the bounds.
#[test]
fn per_client_round_trips_add_to_the_links() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[trace]\nsynth = { workload = \"root\", rate = 200, duration_s = 4, seed = 2 }\n\
         [server]\nkind = \"ldplayer\"\n\
         [network]\nrtt_ms = 10\nclient_rtt = { dist = \"uniform\", min_ms = 0, max_ms = 100 }\n\
         [run]\nwarmup_s = 1\n",
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    // --json: one object with every run's status and medians, for scripts.
    let out = ldplayer(&["experiment", &s(&plan), "-o", &s(&out_dir), "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(report["interrupted"], false);
    assert_eq!(report["runs"][0]["status"], "finished", "{report}");
    assert!(report["runs"][0]["p50"]["latency_ms"]
        .as_f64()
        .is_some_and(|ms| ms > 10.0));
    let rows = summary(&out_dir);
    let p5 = value(&rows, "001-", "latency_ms", "p5");
    let p50 = value(&rows, "001-", "latency_ms", "p50");
    let p95 = value(&rows, "001-", "latency_ms", "p95");
    assert!((10.0..30.0).contains(&p5), "p5 {p5} ms");
    assert!(
        (35.0..85.0).contains(&p50),
        "p50 {p50} ms, between 10 and 110"
    );
    assert!((90.0..115.0).contains(&p95), "p95 {p95} ms");
}

/// Example 9 (answer differences) at a quarter of its length: four validating resolvers behind
/// one signed synthetic hierarchy, every run's answers diffed against Unbound's. Each run is
/// diffed, `differences.csv` has a row per run and field, and the differences that are there
/// by design show: PowerDNS Recursor advertises another EDNS payload size in every answer, and
/// Knot Resolver answers the special-use `.local` names itself (RFC 6762), authoritatively,
/// with an extended DNS error.
#[test]
fn resolvers_diff_example_diffs_every_run_against_unbound() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[
        ("unbound", "unbound"),
        ("kresd", "knot-resolver"),
        ("named", "bind9"),
        ("pdns_recursor", "pdns-recursor"),
        ("ldns-signzone", "ldnsutils"),
        ("ldns-keygen", "ldnsutils"),
        ("nft", "nftables"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "resolvers-diff.toml",
        dir.path(),
        &["trace.mutate.time_scale=0.25"],
    );
    let trace = std::fs::read_to_string(example("resolvers-diff.txt")).expect("the trace");
    let queries = trace.lines().filter(|l| l.starts_with("17")).count() as u64;
    let local = trace.lines().filter(|l| l.contains(".local.\t")).count() as u64;
    assert_eq!((queries, local), (400, 10));
    let runs = run_dirs(&out_dir);
    let base = runs
        .keys()
        .find(|id| id.contains("kind=unbound"))
        .expect("the unbound run")
        .clone();
    assert!(!out_dir.join("runs").join(&base).join("diff.json").exists());
    let diff = |kind: &str| -> serde_json::Value {
        let id = runs.keys().find(|id| id.contains(kind)).expect("a run");
        serde_json::from_slice(
            &std::fs::read(out_dir.join("runs").join(id).join("diff.json")).expect("diff.json"),
        )
        .expect("JSON")
    };
    let field = |d: &serde_json::Value, name: &str| {
        d["fields"]
            .as_array()
            .expect("fields")
            .iter()
            .find(|f| f["field"] == name)
            .map_or(0, |f| f["queries"].as_u64().unwrap_or(0))
    };
    for kind in ["kresd", "bind-resolver", "pdns-recursor"] {
        let d = diff(kind);
        assert_eq!(d["compared"], queries, "{kind}: {d}");
        assert_eq!(field(&d, "rcode"), 0, "{kind}: the same response codes");
        assert_eq!(field(&d, "answer"), 0, "{kind}: the same answers");
    }
    let pdns = diff("pdns-recursor");
    assert_eq!(field(&pdns, "edns.bufsize"), queries, "{pdns}");
    let kresd = diff("kresd");
    assert_eq!(field(&kresd, "edns.ede"), local, "{kresd}");
    assert_eq!(field(&kresd, "flags.aa"), local, "{kresd}");
    let csv = std::fs::read_to_string(out_dir.join("differences.csv")).expect("differences.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("run,kind,base,field,queries,share_pct,compared,unstable,not_compared")
    );
    let pdns_any = lines
        .clone()
        .find(|l| l.contains("kind=pdns-recursor") && l.contains(",any,"))
        .expect("pdns's any row");
    assert!(
        pdns_any.contains(&format!(",{base},any,{queries},")),
        "{pdns_any}"
    );
    assert_eq!(lines.count(), 3 * 24, "a row per run and field, and `any`");
}

/// The capacity example at a tiny scale: a ramp against Unbound (2 threads), Knot Resolver and
/// BIND answering from the plan's own zone, over UDP and DoT, from clients split over two
/// processes. Each run has its `capacity_qps` row; every server keeps up with so small a ramp,
/// so each capacity is the ramp's top second (all answered); the shards' results are merged
/// into one file holding the whole ramp; the report has the capacity section with its shares
/// table and the answers-against-offered figures.
#[test]
fn capacity_example_ramps_each_server_and_reports_its_capacity() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[
        ("unbound", "unbound"),
        ("kresd", "knot-resolver"),
        ("named", "bind9"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "capacity.toml",
        dir.path(),
        &[
            "trace.synth.count=3000",
            "trace.synth.clients=300",
            "client.ramp_to_qps=1000",
            "client.ramp_s=6",
            "client.processes=2",
            "vary.server=[\"unbound@2\", \"kresd\", \"bind@1\"]",
            "vary.proto=[\"udp\", \"tls\"]",
        ],
    );
    let rows = summary(&out_dir);
    let runs = run_dirs(&out_dir);
    assert_eq!(runs.len(), 6, "{runs:?}");
    // The ramp's last second offered 1000 × 5.5 / 6 queries.
    let top = 1000.0 * 5.5 / 6.0;
    for (id, run) in &runs {
        let capacity = value(&rows, id, "capacity_qps", "p50");
        assert!(
            (top - 1.0..=top + 1.0).contains(&capacity),
            "{id}: capacity {capacity}, the ramp's top {top}"
        );
        assert_eq!(value(&rows, id, "answered_share", "mean"), 1.0, "{id}");
        let text = std::fs::read_to_string(run.join("replay.json")).expect("replay.json");
        let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let ramp = &report["summary"]["ramp"];
        assert_eq!(ramp["limited_by"], "none", "{id}: {ramp:#}");
        assert_eq!(ramp["seconds"].as_array().map(Vec::len), Some(6), "{id}");
        assert_eq!(
            report["summary"]["results"], 3000,
            "{id}: the shards merged"
        );
        assert_eq!(
            report["engine"]["clients"], 300,
            "{id}: each client in one shard"
        );
        assert_eq!(report["engine"]["ramp_completed"], true, "{id}");
        let merged = ldplayer(&["results", "summary", &s(&run.join("results.res"))]);
        let text = String::from_utf8_lossy(&merged.stdout);
        assert!(text.contains("capacity: "), "{id}: {text}");
    }
    // DoT answers over connections: one per client, reused.
    let tls = run_dir_with(&out_dir, "server=kresd+proto=tls");
    let engine = engine(&tls);
    assert_eq!(engine["connections_opened"], 300, "{engine:#}");
    let html = dir.path().join("capacity.html");
    ldplayer(&["report", &s(&out_dir), "-o", &s(&html)]);
    let page = std::fs::read_to_string(&html).expect("report");
    for needle in [
        "Capacity of each ramp run",
        "as a share of UDP",
        "id=\"fig-exp-capacity-answered-1\"",
        "id=\"fig-exp-capacity-latency-3\"",
    ] {
        assert!(page.contains(needle), "the report lacks {needle}");
    }
}
