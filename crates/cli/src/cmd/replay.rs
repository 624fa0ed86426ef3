//! `ldplayer replay TRACE --server HOST[:PORT] [--proto keep|udp|tcp|tls|doh|doq]
//! [--speed K | --rate QPS | --fast | --ramp-to QPS --ramp-s SECONDS] [--results FILE] [--json]`

use super::replay_config::config;
use super::replay_targets::target_sink;
use crate::args::{ReadArgs, ReplayArgs};
use crate::io::open_input;
use crate::progress::{interrupted, Progress};
use anyhow::{bail, Context, Result};
use ldplayer_population::{AssignTransports, Population};
use ldplayer_replay::{Finished, LiveCounts, Replay, ReplayConfig, ReplayStats, Timing};
use ldplayer_results::fidelity::Fidelity;
use ldplayer_results::{Capacity, RampSpec, ResultsWriter, RunInfo, Summary};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How far ahead of now a replay to several targets sets their shared start: time for every
/// engine to start its threads.
const SHARED_START_AHEAD_NS: i64 = 300_000_000;

pub fn run(args: ReplayArgs) -> Result<()> {
    if args.server.len() > ldplayer_results::join::MAX_TARGETS {
        bail!(
            "{} servers: a replay queries at most {} (--server)",
            args.server.len(),
            ldplayer_results::join::MAX_TARGETS
        );
    }
    let population = population(args.population.as_deref())?;
    let mut configs = Vec::with_capacity(args.server.len());
    for server in &args.server {
        let mut config = config(&args, server)?;
        if let Some(p) = &population {
            config.profiles = Some(ldplayer_replay::Profiles::of_population(p));
        }
        configs.push(config);
    }
    match args.processes {
        Some(0) => bail!("--processes must be at least 1"),
        Some(n) if n > 1 => return super::replay_processes::run(&args, n),
        _ => {}
    }
    let read = ReadArgs {
        dns_ports: args.dns_ports.clone(),
        queries_only: false,
        responses_only: false,
        drop_malformed: args.drop_malformed,
        dnstap_types: args.dnstap_types,
    };
    replay_targets(
        configs,
        &args.server,
        &TraceReplay {
            trace: &args.trace,
            read,
            results: args.results.as_deref(),
            report: args.report.as_deref(),
            json: args.json,
            quiet: args.quiet,
            population,
            closed_loop: args.fast,
            strict: args.strict,
            ramp: ramp_spec(&args)?,
        },
    )
}

/// The ramp `--ramp-to` asks for, with the bounds its capacity is judged by.
pub(crate) fn ramp_spec(args: &ReplayArgs) -> Result<Option<RampSpec>> {
    let (Some(to_qps), Some(ramp_s)) = (args.ramp_to, args.ramp_s) else {
        return Ok(None);
    };
    let mut spec = RampSpec::new(to_qps, ramp_s);
    if let Some(pct) = args.max_loss {
        spec.max_loss_pct = pct;
    }
    spec.max_latency_ms = args.max_latency_ms;
    if let Some(p) = args.latency_percentile {
        spec.latency_percentile = p;
    }
    spec.validate().context("--ramp-to")?;
    Ok(Some(spec))
}

/// The population of `--population`.
pub(crate) fn population(path: Option<&Path>) -> Result<Option<Population>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let p = Population::from_toml(&text).with_context(|| path.display().to_string())?;
    // A replay sends at the trace's times: generated arrivals are for `synth --population`.
    let generated: Vec<&str> = p
        .groups
        .iter()
        .filter(|g| g.arrivals.rate().is_some())
        .map(|g| g.name.as_str())
        .collect();
    if !generated.is_empty() {
        eprintln!(
            "ldplayer: note: {}: the arrivals of group{} {} are generated (Poisson or renewal), \
             but a replay sends each query at its time in the trace: only their transports \
             and session profiles apply; `ldplayer synth --population {}` makes a trace of \
             those arrivals",
            path.display(),
            if generated.len() == 1 { "" } else { "s" },
            generated.join(", "),
            path.display()
        );
    }
    Ok(Some(p))
}

/// A trace file to replay as `ldplayer replay` does (also `lab --trace`): how to read it, where
/// the results file goes, and how to report.
pub struct TraceReplay<'a> {
    /// The trace (any input format).
    pub trace: &'a Path,
    /// How to read it.
    pub read: ReadArgs,
    /// Write every query's result here.
    pub results: Option<&'a Path>,
    /// Draw the report of those results here when the replay is done.
    pub report: Option<&'a Path>,
    /// Print the summary as one JSON object.
    pub json: bool,
    /// Print nothing but errors.
    pub quiet: bool,
    /// Replay the trace as this population: each client over its group's transport.
    pub population: Option<Population>,
    /// Queries go as fast as answers come (no schedule to keep: timing is not judged).
    pub closed_loop: bool,
    /// Fail when the replay did not keep the trace's timing.
    pub strict: bool,
    /// The ramp the replay follows (its timing must be [`Timing::Ramp`]): its capacity is
    /// judged and reported.
    pub ramp: Option<RampSpec>,
}

/// Replays `job.trace` with `config`, showing progress and stopping cleanly on Ctrl-C, and
/// prints the summary of the results with the engine's counters.
pub fn replay_trace(config: ReplayConfig, job: &TraceReplay<'_>) -> Result<()> {
    replay_targets(vec![config], &[], job)
}

/// Replays `job.trace` to every target of `configs` (one engine each, on one schedule: see
/// [`replay_targets`](super::replay_targets)), showing progress and stopping cleanly on Ctrl-C,
/// and prints each target's summary with its engine's counters. `names` are the targets as
/// given (`--server`), recorded in the results file when there are several.
pub fn replay_targets(
    mut configs: Vec<ReplayConfig>,
    names: &[String],
    job: &TraceReplay<'_>,
) -> Result<()> {
    let several = configs.len() > 1;
    // A ramp's seconds count from its start, which is fixed here (unless given) so that the
    // capacity's bins and the results file's run info know it before the replay starts.
    if job.ramp.is_some() && configs[0].start_ns.is_none() {
        let start = realtime_ns().saturating_add(RAMP_START_AHEAD_NS);
        for c in &mut configs {
            c.start_ns = Some(start);
            c.late_start = Duration::from_secs(1);
        }
    }
    if several && configs[0].start_ns.is_none() {
        // One schedule for every target: a start shared by the engines, far enough ahead for
        // all of them to be ready.
        let start = realtime_ns().saturating_add(SHARED_START_AHEAD_NS);
        for c in &mut configs {
            c.start_ns = Some(start);
            c.late_start = Duration::from_secs(10);
        }
    }
    let replays = configs
        .into_iter()
        .map(|c| Replay::new(c).context("replay"))
        .collect::<Result<Vec<_>>>()?;
    // The results file is written in place, not renamed at the end: a replay killed with
    // SIGKILL leaves its results readable up to the last block under the name asked for.
    let writer = match job.results {
        Some(p) => Some(Arc::new(Mutex::new(
            ResultsWriter::create_with_run_info(p, &run_info(replays[0].config(), names, job.ramp))
                .with_context(|| format!("cannot create {}", p.display()))?,
        ))),
        None => None,
    };

    let progress = Progress::new(job.quiet || job.json);
    // The reader runs ahead of the replay (by the preload window): the display follows the
    // queries sent and answered, not the bytes read.
    let mut input = open_input(job.trace, &job.read, &Progress::new(true))?;
    // A ramp's capacity, judged per target from its results.
    let capacity = |replay: &Replay| match (job.ramp, replay.config().start_ns) {
        (Some(spec), Some(start)) => Some(Capacity::new(spec, start)),
        _ => None,
    };
    let sinks = replays
        .iter()
        .enumerate()
        .map(|(i, replay)| {
            let target = u16::try_from(i).context("more than 65,536 targets")?;
            Ok(target_sink(target, capacity(replay), writer.clone()))
        })
        .collect::<Result<Vec<_>>>()?;
    // Ctrl-C: stop feeding, let the engines stop scheduling, wait for what is in flight, flush.
    let hooks = CliHooks {
        ctrl_c: interrupted(),
        progress: &progress,
    };
    let driven = ldplayer_replay::drive(&replays, sinks, &hooks, |sink| match &job.population {
        Some(p) => input.source.run(&mut AssignTransports::new(p, sink)),
        None => input.source.run(sink),
    })
    .context("replay")?;
    let mut targets = Vec::with_capacity(driven.targets.len());
    let mut capacities = Vec::with_capacity(driven.targets.len());
    for Finished { results, stats } in driven.targets {
        let (summary, rest) = results.into_parts();
        capacities.push(rest.into_parts().0.map(|c| c.report()));
        targets.push((summary, stats));
    }
    progress.finish();
    // A damaged trace: what was sent is recorded and summed up as usual, then the error says
    // where reading stopped.
    let read_error = driven.read_error;
    // Closed before the report reads it, and marked complete: every result is in.
    drop(writer);
    if let Some(p) = job.results {
        ldplayer_results::mark_complete(p)
            .with_context(|| format!("marking {} complete", p.display()))?;
    }
    let drawn = match (job.report, job.results) {
        (Some(html), Some(results)) => {
            super::report::write(&[results.to_path_buf()], html, None)
                .context("drawing the report")?;
            Some(html)
        }
        _ => None,
    };
    let interrupted = driven.interrupted;
    let reports: Vec<_> = targets
        .iter()
        .map(|(summary, _)| summary.report())
        .collect();
    let fidelities: Vec<_> = reports
        .iter()
        .map(|r| Fidelity::of(r, job.closed_loop))
        .collect();
    let mut all = Summary::new();
    for (summary, _) in &targets {
        all.merge(summary);
    }
    let report = all.report();
    if job.json {
        let per_target = |i: usize| -> Result<serde_json::Value> {
            let mut json = serde_json::to_value(&reports[i])?;
            if let Some(obj) = json.as_object_mut() {
                obj.insert("replay".into(), serde_json::to_value(&targets[i].1)?);
                obj.insert("fidelity".into(), serde_json::to_value(&fidelities[i])?);
                if let Some(c) = &capacities[i] {
                    obj.insert("ramp".into(), serde_json::to_value(c)?);
                }
            }
            Ok(json)
        };
        let mut json = if several {
            let mut json = serde_json::to_value(&report)?;
            let list = (0..targets.len())
                .map(|i| {
                    let mut t = per_target(i)?;
                    if let Some(obj) = t.as_object_mut() {
                        obj.insert("target".into(), i.into());
                        obj.insert("server".into(), names.get(i).cloned().into());
                    }
                    Ok(t)
                })
                .collect::<Result<Vec<_>>>()?;
            if let Some(obj) = json.as_object_mut() {
                obj.insert("targets".into(), list.into());
            }
            json
        } else {
            per_target(0)?
        };
        if let (Some(obj), Some(html)) = (json.as_object_mut(), drawn) {
            obj.insert("report".into(), serde_json::to_value(html)?);
        }
        println!("{json}");
    } else if !job.quiet {
        for (i, (r, (_, stats))) in reports.iter().zip(&targets).enumerate() {
            if several {
                println!("target {i}: {}", names.get(i).map_or("", String::as_str));
            }
            print!("{r}");
            if let Some(c) = &capacities[i] {
                print!("{c}");
                if stats.ramp_completed == Some(false) {
                    println!("{}", ramp_short_words(c));
                }
            }
            // A closed loop has no schedule: nothing to say of its timing.
            if !job.closed_loop {
                println!("{}", fidelities[i]);
            }
            print_engine(stats, interrupted);
        }
        if let Some(p) = job.results {
            println!("results: {}", p.display());
        }
        if let Some(html) = drawn {
            println!("report: {}", html.display());
        }
    }
    for (i, r) in reports.iter().enumerate() {
        if r.results > 0 && r.answered == 0 && read_error.is_none() {
            let which = if several {
                format!(" sent to {}", names.get(i).map_or("", String::as_str))
            } else {
                String::new()
            };
            bail!(
                "not one of the {} queries{which} was answered ({} timeouts, {} errors): is the \
                 server up, and at this address?",
                r.results,
                r.timeouts,
                r.errors.values().sum::<u64>()
            );
        }
    }
    if job.strict {
        if let Some(f) = fidelities.iter().find(|f| !f.ok) {
            bail!(
                "--strict: the replay did not keep the trace's timing: {}",
                f.problems.join("; ")
            );
        }
    }
    match read_error {
        None => Ok(()),
        Some(e) => Err(e).with_context(|| {
            format!(
                "reading {}: stopped at an error; the queries read before it were replayed",
                job.trace.display()
            )
        }),
    }
}

/// What the driver of `ldplayer replay` hears: Ctrl-C stops it, progress goes to the display,
/// the engines' warnings to standard error.
struct CliHooks<'p> {
    /// Set by Ctrl-C, SIGTERM or SIGHUP.
    ctrl_c: Arc<AtomicBool>,
    /// The progress display.
    progress: &'p Progress,
}

impl ldplayer_replay::Hooks for CliHooks<'_> {
    fn stop_requested(&self) -> bool {
        self.ctrl_c.load(Ordering::Relaxed)
    }

    fn progress(&self, live: LiveCounts) {
        self.progress
            .message(live_line(live, self.progress.elapsed()));
    }

    fn warning(&self, _target: usize, warning: &str) {
        eprintln!("ldplayer replay: {warning}");
    }
}

/// The engine's counters after the summary: failures by cause, connection work, what the
/// trace reader skipped.
fn print_engine(stats: &ReplayStats, interrupted: bool) {
    print_causes(stats);
    if stats.timeouts_unsent > 0 {
        println!(
            "timed out unsent: {} queries waited for a connect or TLS handshake that did not finish (a server at its connection limit?)",
            stats.timeouts_unsent
        );
    }
    println!(
        "engine: {} clients, {} UDP sockets, {} connections opened, {} reused, {} TLS resumed, {} TC retries over TCP, {} UDP retries, {} unmatched responses, {} ICMP unreachable{}",
        stats.clients,
        stats.udp_sockets_opened,
        stats.connections_opened,
        stats.connections_reused,
        stats.tls_resumed,
        stats.tc_retries,
        stats.udp_retries,
        stats.unmatched_responses,
        stats.udp_unreachable,
        if interrupted { "; interrupted" } else { "" }
    );
    if stats.stacks.contains(&"reference") {
        let clocks: Vec<String> = ["tls", "https", "quic"]
            .iter()
            .filter_map(|t| {
                stats
                    .timestamps
                    .get(t)
                    .map(|c| format!("{t} {}/{}", c.send, c.receive))
            })
            .collect();
        println!(
            "stacks: {} (reference: rustls, h2, quinn, h3); send/answer times: {}",
            stats.stacks.join(", "),
            clocks.join(", ")
        );
    }
    if stats.trace_skipped.total() > 0 {
        println!(
            "trace: skipped {}",
            super::skipped_list(&stats.trace_skipped)
        );
    }
    if stats.trace_malformed.total() > 0 {
        println!(
            "trace: {} malformed messages read (queries among them sent as they are): {}",
            stats.trace_malformed.total(),
            super::skipped_list(&stats.trace_malformed)
        );
    }
}

/// The progress line: what was sent and what became of it.
fn live_line(c: LiveCounts, secs: f64) -> String {
    let done = c.answered + c.timeouts + c.errors;
    let share = |n: u64| {
        if done == 0 {
            0.0
        } else {
            100.0 * n as f64 / done as f64
        }
    };
    format!(
        "{} queries sent ({}), {} answered ({:.1}%), {} timed out, {} failed, {} in flight",
        c.sent,
        super::per_second(c.sent, secs),
        c.answered,
        share(c.answered),
        c.timeouts,
        c.errors,
        c.sent.saturating_sub(done),
    )
}

/// Failed queries by cause, each with its first failure in words.
fn print_causes(stats: &ReplayStats) {
    for c in &stats.causes {
        println!(
            "failed ({}, {}): {} queries; first: {}",
            c.kind.name(),
            c.cause,
            c.count,
            c.first
        );
    }
}

/// What the results file says about this run: its shard, the shared start, this host's clock,
/// whether it keeps answers, its targets when there are several, its ramp.
fn run_info(config: &ReplayConfig, targets: &[String], ramp: Option<RampSpec>) -> RunInfo {
    RunInfo {
        shard: config.shard,
        start_ns: config.start_ns,
        clock: ldplayer_replay::clock_state(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty()),
        complete: Some(false),
        closed_loop: Some(matches!(config.timing, Timing::Fast { .. })),
        answers: config.keep_answers.then_some(true),
        targets: (!targets.is_empty()).then(|| targets.to_vec()),
        ramp,
    }
}

/// This host's clock (`CLOCK_REALTIME`), ns since the Unix epoch.
fn realtime_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// How far ahead of now a ramp's start is set when none is given: time for the queriers to
/// start (the engine's own delay is 100 ms).
const RAMP_START_AHEAD_NS: i64 = 300_000_000;

/// What a ramp that the trace cut short reached, and what a whole one needs.
fn ramp_short_words(c: &ldplayer_results::CapacityReport) -> String {
    let s = &c.spec;
    format!(
        "ramp: the trace ran out at {:.1} queries/s of {}: a whole ramp needs {} queries (give \
         a longer trace, or a lower --ramp-to or --ramp-s)",
        c.reached_qps,
        s.to_qps,
        ldplayer_replay::ramp_queries(s.to_qps, s.ramp_s)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_follows_queries_sent_and_answered() {
        let c = LiveCounts {
            queued: 5000,
            sent: 1000,
            answered: 900,
            timeouts: 50,
            errors: 10,
        };
        assert_eq!(
            live_line(c, 2.0),
            "1000 queries sent (500/s), 900 answered (93.8%), 50 timed out, 10 failed, 40 in flight"
        );
    }
}
