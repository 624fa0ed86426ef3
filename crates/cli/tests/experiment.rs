//! `ldplayer experiment` (issue 12): plans checked with their keys and lines, the shipped
//! examples run at a tiny scale against real servers through the emulated link, and an
//! interrupted plan that leaves nothing behind but its finished runs.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use ldplayer_testbed::{prerequisite, witness};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Runs share two cores: one experiment at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/experiments")
        .join(name)
}

/// The rows of a summary.csv, keyed by (run, metric), each a map of column to value.
fn summary(dir: &Path) -> BTreeMap<(String, String), BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("summary.csv")).expect("summary.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            ((row["run"].clone(), row["metric"].clone()), row)
        })
        .collect()
}

fn value(
    rows: &BTreeMap<(String, String), BTreeMap<String, String>>,
    run_prefix: &str,
    metric: &str,
    column: &str,
) -> f64 {
    let (_, row) = rows
        .iter()
        .find(|((run, m), _)| run.starts_with(run_prefix) && m == metric)
        .unwrap_or_else(|| panic!("no {metric} row for run {run_prefix}: {rows:#?}"));
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{metric} {column} = {:?}", row[column]))
}

/// Runs the shipped example `name` into `dir/out` with `--set` changes (a tiny scale), quietly;
/// returns the output folder.
fn run_example(name: &str, dir: &Path, sets: &[&str]) -> PathBuf {
    run_example_with(name, dir, sets, &[])
}

/// [`run_example`] with more flags (`--capture`). The plan runs from a copy in a tree of its
/// own with nothing beside it, as in a fresh clone without `../shared`: a shipped plan must
/// not need anything outside the repository.
fn run_example_with(name: &str, dir: &Path, sets: &[&str], flags: &[&str]) -> PathBuf {
    let clone = dir.join("clone/examples");
    let examples = example(name);
    let examples = examples.parent().and_then(Path::parent).expect("examples/");
    copy_tree(examples, &clone);
    let plan = clone.join("experiments").join(name);
    let out_dir = dir.join("out");
    let mut args = vec![
        "experiment".to_string(),
        s(&plan),
        "-o".into(),
        s(&out_dir),
        "-q".into(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    for set in sets {
        args.push("--set".into());
        args.push(set.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ldplayer(&args);
    out_dir
}

/// Copies the folder `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}

/// Whether runs can be made here (root and network namespaces); false only when skipping is
/// allowed.
fn can_run(tools: &[(&str, &str)]) -> bool {
    prerequisite::netns() && prerequisite::tools(tools)
}

/// Every shipped plan names only files of `examples/` (no absolute path, nothing above it):
/// a fresh clone runs each of them (the tests below run each at a tiny scale, from a copy of
/// `examples/` with nothing beside it).
#[test]
fn shipped_plans_need_nothing_outside_the_repository() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .canonicalize()
        .expect("examples");
    let dir = examples.join("experiments");
    let mut plans = 0;
    for entry in std::fs::read_dir(&dir).expect("examples") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        plans += 1;
        let text = std::fs::read_to_string(&path).expect("plan");
        for (n, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or("");
            // Every quoted string that looks like a path.
            for quoted in code.split('"').skip(1).step_by(2) {
                if !quoted.contains('/') && !quoted.ends_with(".zone") && !quoted.ends_with(".toml")
                {
                    continue;
                }
                let inside = dir
                    .join(quoted)
                    .canonicalize()
                    .is_ok_and(|p| p.starts_with(&examples));
                assert!(
                    inside,
                    "{}:{}: {quoted:?} is not a file of examples/: {line}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
    assert_eq!(
        plans, 11,
        "the eleven shipped plans, each run by a test of this file"
    );
}

#[test]
fn check_prints_every_combination_without_running() {
    let out = ldplayer(&["experiment", &s(&example("all-tcp.toml")), "--check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // 3 protocols x 4 idle timeouts.
    let runs: Vec<&str> = text.lines().filter(|l| l.contains("proto=")).collect();
    assert_eq!(runs.len(), 12, "{text}");
    for proto in ["udp", "tcp", "tls"] {
        for t in ["5", "10", "20", "40"] {
            assert!(
                runs.iter().any(|l| l.contains(&format!("proto={proto}"))
                    && l.contains(&format!("idle_timeout_s={t}"))),
                "missing {proto} {t}: {text}"
            );
        }
    }
    for name in [
        "quick.toml",
        "dnssec.toml",
        "latency-rtt.toml",
        "loss.toml",
        "encrypted.toml",
        "population.toml",
        "aggressive-nsec.toml",
        "stacks.toml",
        "resolvers-diff.toml",
    ] {
        ldplayer(&["experiment", &s(&example(name)), "--check"]);
    }
}

/// What `ldplayer experiment --check` says about a plan whose text is `trace` followed by
/// `rest`; it must refuse it.
fn refusal(rest: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    let trace = "[trace]\nsynth = { workload = \"root\", rate = 100, duration_s = 2 }\n";
    std::fs::write(&plan, format!("{trace}{rest}")).unwrap();
    let out = ldplayer_fails(&["experiment", &s(&plan), "--check"]);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_plan_names_the_key_and_its_line() {
    let err = refusal("\n[server]\nkind = \"ldplayer\"\nidle_timeuot_s = 5\n");
    assert!(
        err.contains("idle_timeuot_s") && err.contains("line 6"),
        "{err}"
    );
    let err = refusal("[server]\nkind = \"ldplayer\"\n[network]\nloss = 1.5\n");
    assert!(err.contains("loss") && err.contains("line 6"), "{err}");
    let err =
        refusal("[server]\nkind = \"nsd\"\nzones = [\"/\"]\n[trace.mutate]\nproto = \"doq\"\n");
    assert!(
        err.contains("nsd does not serve DNS over QUIC") && err.contains("ldplayer"),
        "names who does: {err}"
    );
    let population =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/populations/mixed.toml");
    let err = refusal(&format!(
        "[server]\nkind = \"ldplayer\"\n[client]\npopulation = {:?}\n[vary]\nproto = [\"udp\"]\n",
        s(&population)
    ));
    assert!(
        err.contains("cannot go with `proto`") && err.contains("vary.proto[0]"),
        "{err}"
    );
    let err =
        refusal("[server]\nkind = \"ldplayer\"\n[client]\npopulation = \"/nonexistent.toml\"\n");
    assert!(
        err.contains("client.population") && err.contains("line 6"),
        "{err}"
    );
    let err = refusal("[server]\nkind = \"powerdns-auth\"\n");
    assert!(
        err.contains("kind") && err.contains("nsd"),
        "lists the kinds: {err}"
    );
}

/// A tiny run of the quick example (the embedded server, nothing external): every output is
/// there and the figures make sense for a 20 ms link.
#[test]
fn quick_example_runs_on_the_embedded_server() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("quick");
    let out = ldplayer(&[
        "experiment",
        &s(&example("quick.toml")),
        "-o",
        &s(&out_dir),
        "--set",
        "trace.synth.rate=200",
        "--set",
        "trace.synth.duration_s=4",
        "--set",
        "run.warmup_s=1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("summary"), "{text}");
    for file in ["plan.toml", "environment.json", "summary.csv"] {
        assert!(out_dir.join(file).is_file(), "{file}");
    }
    let header = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    assert!(
        header.starts_with("run,proto,metric,p5,p25,p50,p75,p95,mean"),
        "{header}"
    );
    let rows = summary(&out_dir);
    for metric in [
        "latency_ms",
        "latency_ms_nonbusy",
        "answered_share",
        "server_rss_mib",
        "server_cpu_pct",
        "tcp_established",
        "tcp_time_wait",
        "response_bytes_per_s",
    ] {
        assert!(
            rows.keys().any(|(_, m)| m == metric),
            "no {metric} in summary.csv"
        );
    }
    let runs: Vec<PathBuf> = std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 3);
    for run in &runs {
        for file in ["run.json", "results.res", "samples.csv", "replay.json"] {
            assert!(run.join(file).is_file(), "{}/{file}", run.display());
        }
    }
    let udp = runs
        .iter()
        .find(|r| r.to_string_lossy().contains("udp"))
        .unwrap();
    let udp_id = udp.file_name().unwrap().to_string_lossy().to_string();
    let tcp_id = runs
        .iter()
        .find(|r| r.to_string_lossy().contains("tcp"))
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    // Every query answered, at about the emulated round trip.
    assert!(value(&rows, &udp_id, "answered_share", "mean") > 0.999);
    // At least the emulated round trip, and one round trip, not two (TCP's set-up takes two).
    // The margin above it is wide: a busy CI host once added 6 ms at the median (26.1 ms).
    let p50 = value(&rows, &udp_id, "latency_ms", "p50");
    assert!((19.0..30.0).contains(&p50), "UDP p50 {p50} ms at 20 ms RTT");
    // Over TCP and TLS, connections are held: the server sees them established.
    assert!(value(&rows, &tcp_id, "tcp_established", "p50") > 0.0);
    assert!(value(&rows, "003-proto=tls", "tcp_established", "p50") > 0.0);
    assert!(value(&rows, "003-proto=tls", "answered_share", "mean") > 0.999);
    assert_eq!(value(&rows, &udp_id, "tcp_established", "p95"), 0.0);
    assert!(value(&rows, &udp_id, "server_rss_mib", "p50") > 1.0);
    assert!(value(&rows, &udp_id, "response_bytes_per_s", "p50") > 0.0);
}

/// The run folder of the run whose name contains `part`.
fn run_dir_with(out_dir: &Path, part: &str) -> PathBuf {
    std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|r| r.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("no run with {part} in {}", out_dir.display()))
}

/// The engine's counters of a run (`replay.json`).
fn engine(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("replay.json")).expect("replay.json");
    let report: serde_json::Value = serde_json::from_str(&text).expect("replay.json is JSON");
    report["engine"].clone()
}

/// The encrypted example at a tiny scale on the embedded server: DoT, DoH and DoQ each answer
/// every query, and the capture of the client's end of the link (tshark, the witness) shows
/// each run on its own transport: TLS on TCP 853, HTTP/2 over TLS on TCP 443 (ALPN h2 in the
/// handshake), QUIC on UDP 853 with no TCP at all.
#[test]
fn encrypted_example_runs_dot_doh_and_doq() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("tshark", "tshark"), ("tcpdump", "tcpdump")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example_with(
        "encrypted.toml",
        dir.path(),
        &[
            "trace.synth.rate=200",
            "trace.synth.duration_s=4",
            "run.warmup_s=1",
        ],
        &["--capture"],
    );
    let rows = summary(&out_dir);
    let expectations = [
        (
            "proto=tls",
            "tcp.port == 853",
            "tcp.port == 443 || udp.port == 853",
        ),
        (
            "proto=doh",
            "tcp.port == 443 && tls.handshake.extensions_alpn_str == \"h2\"",
            "tcp.port == 853 || udp.port == 853",
        ),
        ("proto=doq", "udp.port == 853", "tcp"),
    ];
    for (part, present, absent) in expectations {
        let run = run_dir_with(&out_dir, part);
        let id = run.file_name().unwrap().to_string_lossy().to_string();
        let answered = value(&rows, &id, "answered_share", "mean");
        assert!(answered > 0.999, "{part}: answered share {answered}");
        let engine = engine(&run);
        assert!(
            engine["connections_opened"].as_u64().unwrap_or(0) > 0,
            "{part}: {engine}"
        );
        let pcap = run.join("client.pcap");
        assert!(
            witness::packets_in(&pcap, present) > 0,
            "{part}: none of {present}"
        );
        assert_eq!(witness::packets_in(&pcap, absent), 0, "{part}: {absent}");
    }
}

/// The stacks study (issue 27) at a tiny scale, `stack` varied: DoT, DoH and DoQ each on the
/// lean and on the reference stack answer every query through a lossy link, each run's engine
/// names the stack it ran, and the timestamps: the kernel's for DoT and DoH, and for DoQ on the
/// lean stack (its sockets are the replay's); quinn's events for DoQ on the reference stack.
#[test]
fn stacks_example_runs_each_transport_on_both_stacks() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "stacks.toml",
        dir.path(),
        &[
            "trace.synth.rate=40",
            "trace.synth.clients=10",
            "trace.synth.duration_s=3",
            // No idle timeout in the run: no query meets a connection the server is closing.
            "server.idle_timeout_s=10",
            "vary.rtt_ms=[20]",
            "vary.loss=[0.02]",
            "run.repeat=1",
            "run.warmup_s=1",
        ],
    );
    let rows = summary(&out_dir);
    for proto in ["tls", "doh", "doq"] {
        for stack in ["lean", "reference"] {
            let part = format!("proto={proto}+rtt_ms=20+loss=0.02+stack={stack}");
            let run = run_dir_with(&out_dir, &part);
            let id = run.file_name().unwrap().to_string_lossy().to_string();
            let answered = value(&rows, &id, "answered_share", "mean");
            assert!(answered > 0.99, "{part}: answered share {answered}");
            let engine = engine(&run);
            assert_eq!(
                engine["stacks"],
                serde_json::json!([stack]),
                "{part}: {engine}"
            );
            let clock = if proto == "doq" && stack == "reference" {
                "user"
            } else {
                "kernel"
            };
            let key = if proto == "doq" { "quic" } else { "tls" };
            assert_eq!(
                engine["timestamps"][key]["receive"], clock,
                "{part}: {engine}"
            );
            assert!(
                engine["connections_opened"].as_u64().unwrap_or(0) >= 10,
                "{part}: {engine}"
            );
        }
    }
}

/// The population example at a tiny scale: each group's clients go over their own transport
/// (all five seen on the wire), the server serves every one of them, and every query is
/// answered.
#[test]
fn population_example_replays_every_group_over_its_transport() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("tshark", "tshark"), ("tcpdump", "tcpdump")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example_with(
        "population.toml",
        dir.path(),
        &[
            "trace.synth.rate=300",
            "trace.synth.duration_s=4",
            "run.warmup_s=1",
            "vary.idle_timeout_s=[20]",
        ],
        &["--capture"],
    );
    let rows = summary(&out_dir);
    let run = run_dir_with(&out_dir, "idle_timeout_s=20");
    let id = run.file_name().unwrap().to_string_lossy().to_string();
    let answered = value(&rows, &id, "answered_share", "mean");
    assert!(answered > 0.99, "answered share {answered}");
    // Every transport's own latency row: at least the 20 ms round trip.
    for proto in ["udp", "tcp", "tls", "doh", "doq"] {
        let p50 = value(&rows, &id, &format!("latency_ms_{proto}"), "p50");
        assert!(p50 >= 19.0, "{proto}: p50 {p50} ms at 20 ms RTT");
    }
    let pcap = run.join("client.pcap");
    for filter in [
        "udp.port == 53 && dns",
        "tcp.port == 53 && dns",
        "tcp.port == 853",
        "tcp.port == 443 && tls.handshake.extensions_alpn_str == \"h2\"",
        "udp.port == 853",
    ] {
        assert!(
            witness::packets_in(&pcap, filter) > 0,
            "no {filter} in the capture"
        );
    }
}

/// Example 2 at a scale this test can afford: established connections follow the model, and
/// memory and connections grow with the idle timeout.
#[test]
fn all_tcp_example_follows_the_connection_model() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "all-tcp.toml",
        dir.path(),
        &[
            "trace.synth.rate=300",
            "trace.synth.duration_s=12",
            "run.warmup_s=6",
            "vary.proto=[\"tcp\"]",
            "vary.idle_timeout_s=[2, 5]",
        ],
    );
    let rows = summary(&out_dir);
    let mut established = Vec::new();
    for t in ["2", "5"] {
        let run = rows
            .keys()
            .map(|(r, _)| r.clone())
            .find(|r| r.contains(&format!("idle_timeout_s={t}")))
            .expect("run");
        let measured = value(&rows, &run, "tcp_established", "mean");
        let model = value(&rows, &run, "model_connections", "mean");
        assert!(
            (measured - model).abs() <= 0.10 * model,
            "timeout {t}: established {measured} vs model {model}"
        );
        established.push(measured);
    }
    assert!(established[1] > established[0], "{established:?}");
}

/// Ctrl-C in the middle of the second run: the first run's folder is intact, nothing of the
/// second is left running (no namespace, TUN device or server process), and `--resume` skips
/// the finished run.
#[test]
fn an_interrupted_plan_leaves_nothing_running_and_resumes() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("nsd", "nsd")]) {
        return;
    }
    let Some(zone) = prerequisite::shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "[trace]\nsynth = {{ workload = \"root\", rate = 100, duration_s = 3, seed = 1 }}\n\
             [server]\nkind = \"nsd\"\nzones = [\"{}\"]\n\
             [vary]\nrtt_ms = [0, 10]\nproto = [\"udp\", \"tcp\"]\n[run]\nwarmup_s = 0\n",
            zone.display()
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["experiment", &s(&plan), "-o", &s(&out_dir), "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first run to finish and the second to be under way.
    let runs = out_dir.join("runs");
    let started = Instant::now();
    loop {
        let finished = finished_runs(&runs);
        let folders = std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
        if finished == 1 && folders == 2 && second_run_replaying(&runs) {
            break;
        }
        assert!(
            finished < 2,
            "the plan ran past its second run before the test could stop it"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no second run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = ldplayer_system::process::signal(child.id(), ldplayer_system::Signal::INT);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(!status.success(), "an interrupted plan exits with an error");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(finished_runs(&runs), 1, "the finished run is kept");
    // Nothing left. A namespace lives only as long as a process in it (the plan makes no
    // bind mounts), and every process of the plan names the plan's folder in its command
    // line (the servers' configurations) or its environment (the sides' configurations): none
    // may be left. The TUN devices, named after the plan's process, must be gone too.
    std::thread::sleep(Duration::from_millis(500));
    let dir_text = s(dir.path());
    for pid in processes() {
        for file in ["cmdline", "environ"] {
            let bytes = std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            assert!(
                !text.contains(&dir_text),
                "process {pid} of the plan is left ({file}: {text})"
            );
        }
    }
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    let ours = format!("ldpx{}", child.id());
    assert!(!links.contains(&ours), "TUN devices left: {links}");
    // --resume skips the finished run and runs the rest.
    let out = ldplayer(&["experiment", &s(&plan), "-o", &s(&out_dir), "--resume"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("finished before"), "{text}");
    assert_eq!(finished_runs(&runs), 4);
    let rows = summary(&out_dir);
    let run_ids: std::collections::BTreeSet<_> = rows.keys().map(|(r, _)| r.clone()).collect();
    assert_eq!(run_ids.len(), 4, "{run_ids:?}");
}

fn finished_runs(runs: &Path) -> usize {
    std::fs::read_dir(runs)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().join("run.json").is_file())
            })
            .count()
        })
        .unwrap_or(0)
}

/// Whether a run without run.json has its client side replaying (its samples have begun).
fn second_run_replaying(runs: &Path) -> bool {
    std::fs::read_dir(runs).is_ok_and(|d| {
        d.filter_map(|e| e.ok()).any(|e| {
            !e.path().join("run.json").is_file()
                && std::fs::read_to_string(e.path().join("samples.csv"))
                    .is_ok_and(|t| t.lines().count() >= 2)
        })
    })
}

fn processes() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The run folders of an experiment, by run id.
fn run_dirs(out_dir: &Path) -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().to_string(), p)
        })
        .collect()
}

/// Example 1 (DNSSEC what-if): response bandwidth through the link grows with the DO share,
/// and by what the same queries' answers weigh (each answer's size plus its IPv4 and UDP
/// headers, from the results files) within 1%.
#[test]
fn dnssec_example_bandwidth_matches_the_answers_sizes() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "dnssec.toml",
        dir.path(),
        &[
            "trace.synth.rate=300",
            "trace.synth.duration_s=5",
            "run.warmup_s=1",
        ],
    );
    let mut bytes = Vec::new();
    for (id, run) in run_dirs(&out_dir) {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
        let link = record["outputs"]["link"]["b_to_a"]["bytes_out"]
            .as_u64()
            .expect("link bytes");
        let results = ldplayer(&["results", "export", &s(&run.join("results.res")), "--csv"]);
        let text = String::from_utf8_lossy(&results.stdout);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let len_col = header
            .iter()
            .position(|h| *h == "response_len")
            .expect("response_len");
        let offline: u64 = lines
            .filter_map(|l| l.split(',').nth(len_col)?.parse::<u64>().ok())
            .filter(|&n| n > 0)
            .map(|n| n + 28)
            .sum();
        bytes.push((id, link as f64, offline as f64));
    }
    assert_eq!(bytes.len(), 2);
    let measured = bytes[1].1 / bytes[0].1 - 1.0;
    let offline = bytes[1].2 / bytes[0].2 - 1.0;
    assert!(
        measured > 0.05,
        "all DO should cost more bandwidth: {bytes:?}"
    );
    assert!(
        (measured - offline).abs() <= 0.01,
        "bandwidth increase {measured:.4} measured vs {offline:.4} offline: {bytes:?}"
    );
}

/// Example 3 (latency against RTT) at a tiny scale: UDP answers in one round trip; TCP with
/// connection reuse stays near UDP for busy clients, while non-busy clients pay set-ups more
/// often.
#[test]
fn latency_example_follows_the_round_trip() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "latency-rtt.toml",
        dir.path(),
        &[
            "trace.synth.rate=200",
            "trace.synth.duration_s=6",
            "run.warmup_s=1",
            "vary.rtt_ms=[40]",
        ],
    );
    let rows = summary(&out_dir);
    let udp = value(&rows, "001-", "latency_ms", "p50");
    // One round trip, not two; a wide margin above it for a busy host (see the quick example).
    assert!((39.0..60.0).contains(&udp), "UDP p50 {udp} ms at 40 ms");
    let tcp = value(&rows, "002-", "latency_ms", "mean");
    let tcp_nonbusy = value(&rows, "002-", "latency_ms_nonbusy", "mean");
    let tls = value(&rows, "003-", "latency_ms", "mean");
    assert!(tcp >= udp, "TCP {tcp} vs UDP {udp}");
    assert!(tcp_nonbusy >= tcp, "non-busy {tcp_nonbusy} vs all {tcp}");
    assert!(tls >= tcp, "TLS {tls} vs TCP {tcp}");
}

/// Example 4 (loss) at a tiny scale, at 5% loss each way: UDP without retries loses queries,
/// TCP recovers them by itself at the cost of its tail.
#[test]
fn loss_example_runs() {
    let _one = ONE_AT_A_TIME.lock();
    if !can_run(&[("nsd", "nsd")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = run_example(
        "loss.toml",
        dir.path(),
        &[
            "trace.synth.rate=400",
            "trace.synth.duration_s=6",
            "run.warmup_s=1",
            "client.udp_retries=0",
            "client.timeout_s=3",
            "network.loss=0.05",
            "vary.proto=[\"udp\", \"tcp\"]",
        ],
    );
    let rows = summary(&out_dir);
    let udp = value(&rows, "001-", "answered_share", "mean");
    let tcp = value(&rows, "002-", "answered_share", "mean");
    // 5% each way: about 9.75% of UDP queries lost; TCP retransmits within the 3 s timeout.
    assert!((0.85..0.95).contains(&udp), "UDP answered {udp}");
    assert!(tcp > 0.99, "TCP answered {tcp}");
    let tail = value(&rows, "002-", "latency_ms", "p95");
    assert!(
        tail > 160.0,
        "TCP's retransmissions show in its tail: p95 {tail} ms"
    );
}

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
        assert!(
            (answered + probes..=answered + probes + 3).contains(&s2c),
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
