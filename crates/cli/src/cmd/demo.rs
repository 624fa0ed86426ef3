//! `ldplayer demo`: the main job on the embedded default, with nothing external.
//!
//! By default a small what-if study: the quick example plan (ldplayer's own server, UDP against
//! TCP and TLS under an emulated 20 ms round trip) run as `ldplayer experiment` runs it, then
//! its report and three lines of findings.
//!
//! With `--pipeline`: synthesizes a root-like trace, writes it as a pcap, converts the pcap to text and the text to
//! binary, checks that every message came through byte-identical and summarizes the trace; then
//! serves a synthetic root zone (delegating the trace's TLDs) with the embedded authoritative
//! server on loopback, replays the trace against it with the trace's own timing, and prints the
//! timing accuracy and latency summary.

use crate::args::{DemoArgs, OutFormat, ReadArgs};
use crate::io::{create_output, open_input};
use crate::progress::{Progress, Watch};
use anyhow::{bail, Context, Result};
use ldplayer_inspect::Inspector;
use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_trace::{Collect, Source};
use std::path::Path;
use std::time::Instant;

/// The study the demo runs: the quick example plan, built in so the binary needs nothing else.
const STUDY_PLAN: &str = include_str!("../../../../examples/experiments/quick.toml");

pub fn run(args: DemoArgs) -> Result<()> {
    if args.pipeline {
        pipeline(args)
    } else {
        study(args)
    }
}

/// Where the demo's folder goes when none is given: the Cargo target folder the program was
/// built in (`cargo run ... demo` leaves nothing in the source tree), else the current folder.
fn default_parent() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| cargo_target_of(&exe))
        .unwrap_or_else(|| std::path::PathBuf::from("."))
}

/// The Cargo target folder `exe` was built in (`target/` of `target/release/ldplayer`), if it
/// was built by Cargo and not installed elsewhere.
fn cargo_target_of(exe: &Path) -> Option<std::path::PathBuf> {
    // Cargo keeps the build's fingerprints beside the program in every profile folder.
    // CACHEDIR.TAG in the target folder is not enough: Cargo writes it only when it creates the
    // folder itself, not in one a script made beforehand (as scripts/test.sh does).
    let profile = exe.parent()?;
    let target = profile.parent()?;
    (profile.join(".fingerprint").is_dir() || target.join("CACHEDIR.TAG").is_file())
        .then(|| target.to_path_buf())
}

/// The quick what-if study, its report, and what it found.
fn study(args: DemoArgs) -> Result<()> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            let now = ldplayer_trace::civil_time(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64),
            );
            default_parent().join(format!(
                "ldplayer-demo-{:04}{:02}{:02}-{:02}{:02}{:02}",
                now.year, now.month, now.day, now.hour, now.minute, now.second
            ))
        }
    };
    let quiet = args.quiet || args.json;
    if !quiet {
        eprintln!(
            "demo: a what-if study on ldplayer's own server: UDP against TCP and TLS over an \
             emulated 20 ms round trip (examples/experiments/quick.toml), into {}",
            dir.display()
        );
    }
    let plan = ldplayer_experiment::Plan::parse(STUDY_PLAN, Path::new("."))
        .map_err(|e| anyhow::anyhow!("the demo's plan: {e}"))?;
    let options = ldplayer_experiment::Options {
        dir: dir.clone(),
        exe: std::env::current_exe().context("cannot find this program's path")?,
        resume: false,
        capture: false,
    };
    let started = Instant::now();
    let mut bar = super::experiment::Bar::new(quiet);
    let ran = ldplayer_experiment::run_plan(
        &plan,
        STUDY_PLAN,
        &options,
        &crate::progress::interrupted(),
        &mut bar,
    )?;
    bar.finish();
    if let Some(failed) = ran
        .runs
        .iter()
        .find(|r| r.status == ldplayer_experiment::Status::Failed)
    {
        bail!(
            "demo: run {} failed: {}; its logs are in {}",
            failed.id,
            failed.error.as_deref().unwrap_or("?"),
            dir.join("runs").join(&failed.id).display()
        );
    }
    if ran.interrupted {
        bail!("demo: interrupted; what finished is in {}", dir.display());
    }
    let report = dir.join("report.html");
    super::report::write(
        std::slice::from_ref(&dir),
        &report,
        Some("ldplayer demo: UDP, TCP and TLS at 20 ms RTT"),
    )?;
    let rtt = plan
        .runs()
        .first()
        .map_or(20.0, |r| r.settings.network.rtt_ms);
    let findings = findings(&ran.runs, rtt);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "dir": dir,
                "report": report,
                "summary": ran.summary,
                "findings": findings,
                "seconds": started.elapsed().as_secs_f64(),
            })
        );
    } else if !args.quiet {
        println!("report: {}", report.display());
        for line in &findings {
            println!("{line}");
        }
    }
    Ok(())
}

/// Three sentences on what the study found, from each run's medians.
fn findings(runs: &[ldplayer_experiment::RunRecord], rtt_ms: f64) -> Vec<String> {
    let run = |proto: &str| {
        runs.iter()
            .find(|r| r.varied.iter().any(|(k, v)| k == "proto" && v == proto))
    };
    let median =
        |proto: &str, metric: &str| -> Option<f64> { run(proto)?.medians.get(metric).copied() };
    // A figure from a window that was not steady says so beside it.
    let caveat = |proto: &str| match run(proto) {
        Some(r) if !r.unsteady.is_empty() => {
            format!(" (not steady: {})", r.unsteady.join("; "))
        }
        _ => String::new(),
    };
    let rtts = |ms: f64| {
        if rtt_ms > 0.0 {
            format!(" ({:.1} RTT)", ms / rtt_ms)
        } else {
            String::new()
        }
    };
    let mut lines = Vec::new();
    if let Some(udp) = median("udp", "latency_ms") {
        lines.push(format!(
            "UDP: median answer {udp:.1} ms over a {rtt_ms} ms round trip{}{}.",
            rtts(udp),
            caveat("udp")
        ));
    }
    for proto in ["tcp", "tls"] {
        let (Some(all), Some(fresh)) =
            (median(proto, "latency_ms"), median(proto, "fresh_query_ms"))
        else {
            continue;
        };
        let memory = match (
            median(proto, "server_rss_mib"),
            median("udp", "server_rss_mib"),
        ) {
            (Some(m), Some(u)) => format!("; server memory {m:.1} MiB against {u:.1} MiB for UDP"),
            _ => String::new(),
        };
        lines.push(format!(
            "{}: median {all:.1} ms with connections reused; a new connection's first answer {fresh:.1} ms{}{memory}{}.",
            proto.to_uppercase(),
            rtts(fresh),
            caveat(proto)
        ));
    }
    lines
}

/// The trace pipeline and a replay on loopback (`--pipeline`).
fn pipeline(args: DemoArgs) -> Result<()> {
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.as_path()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("ldplayer-demo-")
                .tempdir()
                .context("cannot create a scratch directory")?;
            temp.path()
        }
    };
    let config = SynthConfig {
        count: Some(args.count),
        tcp_share: 0.05,
        clients: 20_000,
        seed: 2018,
        ..SynthConfig::root_like(20_000.0)
    };
    let read = ReadArgs::every_message(vec![53]);
    let progress = Progress::new(true);
    let mut report = Report::new(&args);

    let pcap = dir.join("root-like.pcap");
    let t = Instant::now();
    let mut writer = create_output(&pcap, OutFormat::Pcap)?;
    Synth::new(config.clone())?.run(&mut Watch::new(&mut writer, &progress))?;
    writer.close()?;
    report.step("synthesize a root-like trace -> pcap", t, args.count);

    let text = dir.join("root-like.txt");
    let n = convert(&pcap, &text, OutFormat::Text, &read, &progress, &mut report)?;
    let bin = dir.join("root-like.bin");
    let m = convert(
        &text,
        &bin,
        OutFormat::Binary,
        &read,
        &progress,
        &mut report,
    )?;
    if n != args.count || m != args.count {
        bail!(
            "demo: {} queries synthesized but {n} read from the pcap and {m} from the text",
            args.count
        );
    }

    let t = Instant::now();
    let mut original = Collect::default();
    Synth::new(config)?.run(&mut original)?;
    let mut replayed = Collect::default();
    open_input(&bin, &read, &progress)?
        .source
        .run(&mut replayed)?;
    let same = original
        .records
        .iter()
        .zip(&replayed.records)
        .filter(|(a, b)| {
            a.wire == b.wire
                && a.time_ns == b.time_ns
                && a.src == b.src
                && a.dst == b.dst
                && a.proto == b.proto
        })
        .count();
    if same != original.records.len() || replayed.records.len() != original.records.len() {
        bail!(
            "demo: only {same} of {} messages came through pcap -> text -> binary unchanged",
            original.records.len()
        );
    }
    report.step("check: every message byte-identical", t, same as u64);

    let t = Instant::now();
    let mut inspector = Inspector::new();
    open_input(&bin, &read, &progress)?
        .source
        .run(&mut inspector)?;
    let summary = inspector.summary();
    report.step("inspect", t, summary.messages);
    if report.text() {
        println!("{:<28} {}", "trace", bin.display());
        print!("{summary}");
    }
    report.json["trace"] = serde_json::to_value(&summary)?;

    replay_against_embedded_server(dir, &bin, &read, &progress, &mut report)?;
    if args.dir.is_none() && report.text() {
        eprintln!("demo: files removed (keep them with --dir DIR)");
    }
    if args.json {
        println!("{}", report.json);
    }
    Ok(())
}

/// What the demo prints: step lines and summaries as text, nothing (`-q`), or one JSON object
/// (`--json`) gathered as the steps go.
struct Report {
    quiet: bool,
    json_wanted: bool,
    json: serde_json::Value,
}

impl Report {
    fn new(args: &DemoArgs) -> Report {
        Report {
            quiet: args.quiet,
            json_wanted: args.json,
            json: serde_json::json!({"steps": []}),
        }
    }

    /// True when the text report is printed.
    fn text(&self) -> bool {
        !self.quiet && !self.json_wanted
    }

    /// Notes a step that handled `n` messages since `t`.
    fn step(&mut self, what: &str, t: Instant, n: u64) {
        let secs = t.elapsed().as_secs_f64();
        if self.text() {
            eprintln!(
                "demo: {what:<44} {n:>9} messages {secs:>7.3} s  {}",
                super::per_second(n, secs)
            );
        }
        if let Some(steps) = self.json["steps"].as_array_mut() {
            steps.push(serde_json::json!({"step": what, "messages": n, "seconds": secs}));
        }
    }
}

/// Converts `from` into `to`, returning the number of records written.
fn convert(
    from: &Path,
    to: &Path,
    format: OutFormat,
    read: &ReadArgs,
    progress: &Progress,
    report: &mut Report,
) -> Result<u64> {
    let t = Instant::now();
    let mut input = open_input(from, read, progress)?;
    let mut writer = create_output(to, format)?;
    let mut out = Watch::new(&mut writer, progress);
    input.source.run(&mut out)?;
    let n = out.records;
    writer.close()?;
    report.step(
        &format!("{:?} -> {:?}", input.format, format).to_lowercase(),
        t,
        n,
    );
    Ok(n)
}

/// Serves the synthetic root on loopback and replays the trace at it with original timing.
fn replay_against_embedded_server(
    dir: &Path,
    bin: &Path,
    read: &ReadArgs,
    progress: &Progress,
    report: &mut Report,
) -> Result<()> {
    let zone_file = dir.join("root.zone");
    ldplayer_output::write(&zone_file, ldplayer_synth::synthetic_root_zone())
        .context("writing the demo root zone")?;
    let zones = super::serve::load_zones(&[&zone_file])?;
    let config = ldplayer_server::ServerConfig::new(vec!["127.0.0.1:0".parse()?]);
    let server = ldplayer_server::Server::start(config, std::sync::Arc::new(zones))
        .context("embedded server")?;
    let addr = *server
        .local_addrs()
        .first()
        .context("the embedded server has no address")?;
    if report.text() {
        eprintln!("demo: embedded authoritative server for the synthetic root on {addr}; replaying with the trace's timing");
    }

    let mut replay_config = ldplayer_replay::ReplayConfig::new(addr);
    replay_config.queriers = 1;
    let replay = ldplayer_replay::Replay::new(replay_config)?;
    let t = Instant::now();
    let done = replay.run(
        open_input(bin, read, progress)?.source.as_mut(),
        ldplayer_results::Summary::new(),
    )?;
    let served = server.stop();
    let stats = done.stats;
    report.step("replay against the embedded server", t, stats.sent);
    let replayed = done.results.report();
    if report.text() {
        println!(
            "\nreplay of {} against ldplayer's embedded server at {addr}:",
            bin.display()
        );
        print!("{replayed}");
        println!("server: {}", super::serve::describe(&served));
    }
    report.json["replay"] = serde_json::to_value(&replayed)?;
    report.json["server"] = super::serve::describe(&served).into();
    if stats.answered == 0 {
        bail!(
            "demo: none of the {} queries sent to the embedded server was answered",
            stats.sent
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_folder_is_found_without_its_cachedir_tag() {
        let tmp = tempfile::tempdir().unwrap();
        let profile = tmp.path().join("target").join("debug");
        std::fs::create_dir_all(profile.join(".fingerprint")).unwrap();
        assert_eq!(
            cargo_target_of(&profile.join("ldplayer")),
            Some(tmp.path().join("target"))
        );
    }

    #[test]
    fn an_installed_program_has_no_target_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        assert_eq!(cargo_target_of(&bin.join("ldplayer")), None);
    }
}
