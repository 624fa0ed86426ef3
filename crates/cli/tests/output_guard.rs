//! Every output option of every command goes through the one output guard: pointed at one of
//! the command's inputs (by its name, another spelling, a hard link or a symbolic link), or at
//! the file another output option names, the command refuses before writing anything, naming
//! both, and the input is left as it was.
//!
//! The last test reads every command's `--help` and fails when an option taking a file or a
//! folder is in neither of this file's lists: a new output option cannot skip these checks.

mod binary;

use binary::{ldplayer, ldplayer_unanswered, s};
use std::path::{Path, PathBuf};

/// The output options (command, option), each refused below when it names an input.
const OUTPUTS: &[(&str, &str)] = &[
    ("convert", "--output"),
    ("synth", "--output"),
    ("mutate", "--output"),
    ("replay", "--results"),
    ("replay", "--report"),
    ("serve", "--stats"),
    ("serve", "--tls-self-signed"),
    ("results export", "--output"),
    ("results merge", "--output"),
    ("zones build", "--output"),
    ("zones deckard-queries", "--output"),
    ("zones deckard-queries", "--lab-options"),
    ("lab", "--answers"),
    ("lab", "--results"),
    ("lab", "--capture"),
    ("lab", "--dnstap"),
    ("experiment", "--output"),
    ("report", "--output"),
    ("population fit", "--output"),
    ("diff", "--csv"),
    ("dnstap listen", "--output"),
];

/// Output folders whose files are not named by the user and hold no input: checked by the
/// guard at every write all the same (crates/output), but no command line can aim them at an
/// input.
const FOLDERS_WITHOUT_INPUTS: &[(&str, &str, &str)] = &[
    ("zones synth", "--output", "zones synth reads nothing"),
    ("demo", "--dir", "demo reads nothing"),
    (
        "lab",
        "--work-dir",
        "configurations and logs under the lab's own names; root.hints only when --hints is not given",
    ),
];

/// Options naming files or folders that are only read.
const INPUTS: &[(&str, &str)] = &[
    ("synth", "--population"),
    ("replay", "--population"),
    ("replay", "--tls-ca"),
    ("serve", "--manifest"),
    ("serve", "--tls-cert"),
    ("serve", "--tls-key"),
    ("results export", "--with-trace"),
    ("zones build", "--zone"),
    ("lab", "--manifest"),
    ("lab", "--hints"),
    ("lab", "--names"),
    ("lab", "--trace"),
    ("lab", "--population"),
    ("diff", "--criteria"),
    ("diff", "--trace"),
    ("diff", "--tls-ca"),
];

/// A scratch folder with a small binary trace, a text trace and a results file in it.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("scratch"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn trace(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        ldplayer(&[
            "synth",
            "--workload",
            "fixed",
            "-n",
            "20",
            "--seed",
            "5",
            "-o",
            &s(&p),
            "-q",
        ]);
        p
    }

    /// A results file of a replay against a socket that never answers.
    fn results(&self, name: &str) -> PathBuf {
        let trace = self.trace(&format!("{name}.bin"));
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
        let p = self.path(name);
        ldplayer_unanswered(&[
            "replay",
            &s(&trace),
            "--server",
            &silent.local_addr().expect("addr").to_string(),
            "--rate",
            "2000",
            "--timeout",
            "0.1",
            "--results",
            &s(&p),
            "-q",
        ]);
        p
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn link(&self, name: &str, to: &Path) -> PathBuf {
        let p = self.path(name);
        std::os::unix::fs::symlink(to, &p).expect("symlink");
        p
    }

    fn hard_link(&self, name: &str, to: &Path) -> PathBuf {
        let p = self.path(name);
        std::fs::hard_link(to, &p).expect("hard link");
        p
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            let meta = std::fs::symlink_metadata(&p).expect("meta");
            if meta.is_dir() {
                stack.push(p);
            } else if meta.file_type().is_symlink() {
                out.push((
                    p.clone(),
                    std::fs::read_link(&p)
                        .expect("link")
                        .into_os_string()
                        .into_encoded_bytes(),
                ));
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Runs `ldplayer ARGS`, stopped with SIGKILL after 60 s (a command that is not refused may
/// run for good: `serve`).
fn bounded(args: &[&str]) -> std::process::Output {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Runs `args`, which must be refused: non-zero exit, "refusing to write" and `names` in the
/// message, and not one file of the scratch folder added, removed or changed.
fn refused(scratch: &Scratch, args: &[&str], names: &[&str]) {
    let before = snapshot(scratch.dir.path());
    let out = bounded(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    assert!(err.contains("refusing to write"), "{args:?}: {err}");
    for n in names {
        assert!(
            err.contains(n),
            "{args:?}: the message should name {n}: {err}"
        );
    }
    assert!(
        !err.contains("panicked"),
        "{args:?}: a refusal is not a panic: {err}"
    );
    let after = snapshot(scratch.dir.path());
    let changed: Vec<&PathBuf> = after
        .iter()
        .filter(|f| !before.contains(f))
        .chain(before.iter().filter(|f| !after.contains(f)))
        .map(|(p, _)| p)
        .collect();
    assert!(
        changed.is_empty(),
        "{args:?} added, removed or changed {changed:?}: {err}"
    );
}

#[test]
fn trace_writers_refuse_their_inputs() {
    let t = Scratch::new();
    let trace = t.trace("t.bin");
    let hard = t.hard_link("hard.bin", &trace);
    let soft = t.link("soft.bin", &trace);
    for out in [&trace, &hard, &soft] {
        refused(&t, &["convert", &s(&trace), "-o", &s(out)], &["t.bin"]);
        refused(
            &t,
            &["mutate", &s(&trace), "--set-do", "-o", &s(out)],
            &["t.bin"],
        );
        refused(
            &t,
            &["population", "fit", &s(&trace), "-o", &s(out)],
            &["t.bin"],
        );
    }
    let population = t.file(
        "pop.toml",
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/populations/stubs.toml"
        ))
        .expect("the shipped population"),
    );
    refused(
        &t,
        &[
            "synth",
            "--population",
            &s(&population),
            "--clients",
            "10",
            "-n",
            "10",
            "-o",
            &s(&population),
        ],
        &["pop.toml"],
    );
}

#[test]
fn replay_refuses_its_trace_and_one_file_for_two_outputs() {
    let t = Scratch::new();
    let trace = t.trace("t.bin");
    let server = ["--server", "127.0.0.1:9"];
    let replay = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["replay".into(), s(&trace)];
        v.extend(server.iter().map(|x| x.to_string()));
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let run = |extra: &[&str], names: &[&str]| {
        let args = replay(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&t, &args, names);
    };
    let new = s(&t.path("new.res"));
    let dangling = t.link("dangling.html", &t.path("new.res"));
    // The report over the trace, over its own results (by name or through a link).
    run(&["--results", &new, "--report", &s(&trace)], &["t.bin"]);
    run(
        &["--results", &new, "--report", &new],
        &["--results", "--report"],
    );
    run(
        &["--results", &new, "--report", &s(&dangling)],
        &["--results", "--report"],
    );
    // The results over the trace, or over the population.
    run(&["--results", &s(&trace)], &["t.bin"]);
}

#[test]
fn results_and_report_refuse_their_inputs() {
    let t = Scratch::new();
    let results = t.results("r.res");
    let other = t.results("o.res");
    let soft = t.link("soft.res", &results);
    let trace = t.path("r.res.bin");
    for out in [&results, &soft] {
        refused(&t, &["report", &s(&results), "-o", &s(out)], &["r.res"]);
        refused(
            &t,
            &["results", "merge", &s(&results), "-o", &s(out)],
            &["r.res"],
        );
        refused(
            &t,
            &["results", "export", &s(&results), "--csv", "-o", &s(out)],
            &["r.res"],
        );
        refused(
            &t,
            &["diff", &s(&other), &s(&results), "--csv", &s(out)],
            &["r.res"],
        );
    }
    refused(
        &t,
        &[
            "diff",
            &s(&results),
            &s(&other),
            "--reask",
            "1",
            "--trace",
            &s(&trace),
            "--csv",
            &s(&trace),
        ],
        &["r.res.bin"],
    );
    refused(
        &t,
        &["report", &s(&other), &s(&results), "-o", &s(&other)],
        &["o.res"],
    );
    refused(
        &t,
        &[
            "results",
            "export",
            &s(&results),
            "--with-trace",
            &s(&trace),
            "--csv",
            "-o",
            &s(&trace),
        ],
        &["r.res.bin"],
    );
}

#[test]
fn report_refuses_the_files_of_an_experiment_folder_it_reads() {
    let t = Scratch::new();
    // An experiment folder as report reads it: its summary, plan and one run's record.
    let exp = t.path("exp");
    std::fs::create_dir_all(exp.join("runs")).expect("mkdir");
    let summary = exp.join("summary.csv");
    std::fs::write(&summary, "run,metric,p5,p25,p50,p75,p95,mean,n\n").expect("write");
    std::fs::write(exp.join("plan.toml"), "[trace]\n").expect("write");
    refused(
        &t,
        &["report", &s(&exp), "-o", &s(&summary)],
        &["summary.csv"],
    );
    refused(
        &t,
        &["report", &s(&exp), "-o", &s(&exp.join("plan.toml"))],
        &["plan.toml"],
    );
}

#[test]
fn serve_refuses_to_write_its_statistics_over_a_zone_a_manifest_or_a_key() {
    let t = Scratch::new();
    let zone = t.file(
        "z.zone",
        "$ORIGIN example.\n$TTL 60\n@ SOA ns hostmaster 1 60 60 60 60\n@ NS ns\nns A 192.0.2.1\n",
    );
    let manifest = t.file("manifest", "127.0.0.1 z.zone\n");
    let listen = ["--listen", "127.0.0.1:0"];
    refused(
        &t,
        &[
            "serve",
            &s(&zone),
            listen[0],
            listen[1],
            "--stats",
            &s(&zone),
        ],
        &["z.zone"],
    );
    let link = t.link("stats.json", &zone);
    refused(
        &t,
        &[
            "serve",
            &s(&zone),
            listen[0],
            listen[1],
            "--stats",
            &s(&link),
        ],
        &["z.zone"],
    );
    // A zone the manifest lists, and the manifest itself.
    for out in [&zone, &manifest] {
        refused(
            &t,
            &[
                "serve",
                "--manifest",
                &s(&manifest),
                "--port",
                "0",
                "--stats",
                &s(out),
            ],
            &[out.file_name().and_then(|n| n.to_str()).expect("name")],
        );
    }
    // The self-signed certificate's folder holding a zone under a certificate's name.
    let certs = t.path("certs");
    std::fs::create_dir(&certs).expect("mkdir");
    let pem_zone = certs.join("server.pem");
    std::fs::copy(&zone, &pem_zone).expect("copy");
    refused(
        &t,
        &[
            "serve",
            &s(&pem_zone),
            listen[0],
            listen[1],
            "--tls-listen",
            "127.0.0.1:0",
            "--tls-self-signed",
            &s(&certs),
        ],
        &["server.pem"],
    );
}

#[test]
fn zones_and_lab_outputs_refuse_their_inputs() {
    let t = Scratch::new();
    let scenario = t.file(
        "s.rpl",
        "stub-addr: 192.0.2.1\nCONFIG_END\nSCENARIO_BEGIN x\nSCENARIO_END\n",
    );
    // deckard-queries' outputs: the scenario, each other, and the trust-anchor file the
    // lab options imply (FILE.anchor).
    refused(
        &t,
        &[
            "zones",
            "deckard-queries",
            &s(&scenario),
            "-o",
            &s(&scenario),
        ],
        &["s.rpl"],
    );
    refused(
        &t,
        &[
            "zones",
            "deckard-queries",
            &s(&scenario),
            "--lab-options",
            &s(&scenario),
        ],
        &["s.rpl"],
    );
    let both = s(&t.path("both"));
    refused(
        &t,
        &[
            "zones",
            "deckard-queries",
            &s(&scenario),
            "-o",
            &both,
            "--lab-options",
            &both,
        ],
        &["--lab-options", "-o"],
    );
    // zones build into the folder holding its input under a name it writes.
    let hier = t.path("hier");
    std::fs::create_dir(&hier).expect("mkdir");
    let input = hier.join("manifest");
    std::fs::copy(&scenario, &input).expect("copy");
    refused(
        &t,
        &["zones", "build", &s(&input), "-o", &s(&hier)],
        &["manifest"],
    );
    // The lab: answers, results and capture over the manifest, a zone it lists, the names,
    // the trace. Refused on the host, before any namespace is made.
    let zone = t.file("root.zone", ". 60 SOA a. b. 1 60 60 60 60\n");
    let manifest = t.file("lab.manifest", "127.0.0.1 root.zone\n");
    let names = t.file("names", "example.com A\n");
    let trace = t.trace("t.bin");
    let m = s(&manifest);
    for (flag, inputs) in [
        ("--answers", vec![&names, &manifest, &zone]),
        ("--capture", vec![&names, &manifest, &zone]),
        ("--dnstap", vec![&names, &manifest, &zone]),
    ] {
        for input in inputs {
            refused(
                &t,
                &[
                    "lab",
                    "--manifest",
                    &m,
                    "--names",
                    &s(&names),
                    flag,
                    &s(input),
                ],
                &[input.file_name().and_then(|n| n.to_str()).expect("name")],
            );
        }
    }
    refused(
        &t,
        &[
            "lab",
            "--manifest",
            &m,
            "--trace",
            &s(&trace),
            "--results",
            &s(&trace),
        ],
        &["t.bin"],
    );
}

#[test]
fn experiment_refuses_to_replace_its_plan_with_another() {
    let t = Scratch::new();
    let dir = t.path("study");
    std::fs::create_dir(&dir).expect("mkdir");
    let plan = dir.join("plan.toml");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/experiments/quick.toml"
        ),
        &plan,
    )
    .expect("copy");
    // The copy the experiment keeps would differ from the plan read (--set), and is the plan.
    refused(
        &t,
        &[
            "experiment",
            &s(&plan),
            "--set",
            "run.repeat=2",
            "-o",
            &s(&dir),
        ],
        &["plan.toml"],
    );
}

#[test]
fn the_dnstap_collector_refuses_to_write_its_trace_over_its_socket() {
    let t = Scratch::new();
    let socket = s(&t.path("tap.sock"));
    refused(
        &t,
        &[
            "dnstap",
            "listen",
            "--unix",
            &socket,
            "-o",
            &socket,
            "--seconds",
            "1",
        ],
        &["--unix", "tap.sock"],
    );
}

/// Every option of every command that names a file or a folder is in one of the lists above.
#[test]
fn every_file_option_of_every_command_is_classified() {
    let commands = [
        "convert",
        "inspect",
        "synth",
        "mutate",
        "replay",
        "serve",
        "results export",
        "results summary",
        "results merge",
        "zones build",
        "zones deckard-queries",
        "zones synth",
        "lab",
        "experiment",
        "report",
        "demo",
        "compare",
        "population fit",
        "diff",
        "dnstap listen",
    ];
    // The top-level help lists every command: none may be missing here.
    let top = String::from_utf8(ldplayer(&["--help"]).stdout).expect("utf-8");
    for line in top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
    {
        let Some(name) = line.split_whitespace().next() else {
            break;
        };
        if name == "help" {
            continue;
        }
        assert!(
            commands.iter().any(|c| c.split(' ').next() == Some(name)),
            "a command this test does not know: {name}"
        );
    }
    let file_values = ["<FILE>", "<DIR>", "<OUTPUT>", "<PEM>", "<TRACE>"];
    let mut unclassified = Vec::new();
    for command in commands {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let help = String::from_utf8(ldplayer(&args).stdout).expect("utf-8");
        for line in help.lines() {
            let line = line.trim_start();
            if !line.starts_with('-') || !file_values.iter().any(|v| line.contains(v)) {
                continue;
            }
            let long = line
                .split([',', ' '])
                .find(|w| w.starts_with("--"))
                .expect("a long option");
            let known = OUTPUTS.contains(&(command, long))
                || INPUTS.contains(&(command, long))
                || FOLDERS_WITHOUT_INPUTS
                    .iter()
                    .any(|(c, o, _)| *c == command && *o == long);
            if !known {
                unclassified.push(format!("{command} {long}"));
            }
        }
    }
    assert!(
        unclassified.is_empty(),
        "options naming files that this test neither guards as outputs nor lists as inputs: \
         {unclassified:?}"
    );
}
