//! `ldplayer replay TRACE --server HOST[:PORT] [--proto keep|udp|tcp|tls|doh|doq]
//! [--speed K | --rate QPS | --fast | --ramp-to QPS --ramp-s SECONDS] [--results FILE] [--json]`

use super::replay_targets::target_sink;
use crate::args::{DohMethodArg, ReadArgs, ReplayArgs, SendTimes, StackArg};
use crate::io::open_input;
use crate::progress::{interrupted, Progress};
use anyhow::{bail, Context, Result};
use ldplayer_population::{AssignTransports, Population};
use ldplayer_replay::{Finished, LiveCounts, Replay, ReplayConfig, ReplayStats, Timing, TlsConfig};
use ldplayer_results::fidelity::Fidelity;
use ldplayer_results::{Capacity, RampSpec, ResultsWriter, RunInfo, Summary};
use ldplayer_trace::Proto;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
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

/// The engine configuration the flags ask for, for the target `target` (one `--server`).
fn config(args: &ReplayArgs, target: &str) -> Result<ReplayConfig> {
    let proto_override = args.proto.forced();
    let default_port = match proto_override {
        Some(Proto::Tls) => 853,
        Some(Proto::Https) => 443,
        Some(Proto::Quic) => 853,
        _ => 53,
    };
    if args.server.len() > 1 {
        for (flag, given) in [
            ("--tls-server", &args.tls_server),
            ("--https-server", &args.https_server),
            ("--quic-server", &args.quic_server),
        ] {
            if given.is_some() {
                bail!(
                    "{flag} names one server, and this replay has {} (--server): give each \
                     --server without a port to send its encrypted transports to its host's \
                     own ports",
                    args.server.len()
                );
            }
        }
    }
    let server = parse_server(target, default_port)?;
    let timing = if args.fast {
        Timing::Fast {
            max_in_flight: args.max_in_flight,
        }
    } else if let (Some(to_qps), Some(ramp_s)) = (args.ramp_to, args.ramp_s) {
        Timing::Ramp { to_qps, ramp_s }
    } else if let Some(qps) = args.rate {
        Timing::Rate { qps }
    } else {
        Timing::Original {
            speed: args.speed.unwrap_or(1.0),
        }
    };
    let mut c = ReplayConfig::new(server.addr);
    c.proto_override = proto_override;
    c.keep_answers = args.keep_answers;
    // Where each encrypted transport goes when a replay mixes transports.
    let mixed = proto_override.is_none();
    c.tls_server = transport_server(
        args.tls_server.as_deref(),
        "--tls-server",
        853,
        mixed,
        target,
    )?;
    c.https_server = transport_server(
        args.https_server.as_deref(),
        "--https-server",
        443,
        mixed,
        target,
    )?;
    c.quic_server = transport_server(
        args.quic_server.as_deref(),
        "--quic-server",
        853,
        mixed,
        target,
    )?;
    c.doh = ldplayer_replay::DohConfig {
        method: match args.doh_method {
            DohMethodArg::Post => ldplayer_replay::DohMethod::Post,
            DohMethodArg::Get => ldplayer_replay::DohMethod::Get,
        },
        path: args.doh_path.clone(),
        http3: args.doh_http3,
    };
    c.timing = timing;
    if let Some(n) = args.queriers {
        c.queriers = n;
    }
    if !args.pin.is_empty() {
        c.pin_cores = Some(args.pin.clone());
    }
    c.realtime = args.realtime;
    c.queries_per_connection = args.queries_per_connection;
    c.timeout = seconds(args.timeout, "--timeout")?;
    c.udp_retries = args.udp_retries;
    c.tcp_idle_timeout = seconds(args.idle_timeout, "--idle-timeout")?;
    c.retry_truncated_over_tcp = !args.no_tc_retry;
    c.honor_keepalive = !args.no_keepalive;
    c.kernel_send_times = args.send_times == SendTimes::Kernel;
    c.stack = match args.stack {
        StackArg::Lean => ldplayer_replay::Stack::Lean,
        StackArg::Reference => ldplayer_replay::Stack::Reference,
    };
    c.quic_key_update_packets = args.quic_key_update_packets;
    c.original_sources = args.original_sources;
    if let Some(p) = &args.source_prefix {
        let (addr, len) = p
            .split_once('/')
            .with_context(|| format!("--source-prefix {p}: expected ADDRESS/LENGTH"))?;
        let addr: IpAddr = addr
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad address"))?;
        let len: u8 = len
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad length"))?;
        c.source_prefix = Some((addr, len));
    }
    c.tls = TlsConfig {
        ca_file: args.tls_ca.clone(),
        insecure: args.tls_insecure,
        server_name: args.tls_name.clone().or(server.name),
        resume: !args.no_tls_resume,
        zero_rtt: !args.no_zero_rtt,
    };
    c.shard = match args.shard.as_deref() {
        None => None,
        Some("auto") => Some(
            ldplayer_replay::shard_from_env(|k| std::env::var(k).ok(), args.shards)
                .context("--shard")?,
        ),
        Some(s) => Some(ldplayer_replay::parse_shard(s).context("--shard")?),
    };
    if let Some(t) = &args.start_at {
        c.start_ns = Some(parse_instant_ns(t, "--start-at")?);
        c.late_start = seconds(args.late_start, "--late-start")?;
    }
    c.validate().context("replay options")?;
    Ok(c)
}

/// Reads a moment given as `flag`: RFC 3339 (with any offset) or Unix seconds; in ns.
pub(crate) fn parse_instant_ns(s: &str, flag: &str) -> Result<i64> {
    if let Ok(secs) = s.trim().parse::<f64>() {
        return ldplayer_trace::seconds_to_ns(secs)
            .with_context(|| format!("{flag} {s}: not a usable Unix time"));
    }
    let t: jiff::Timestamp = s.trim().parse().with_context(|| {
        format!("{flag} {s}: give RFC 3339 (2026-11-24T01:00:00Z) or Unix seconds")
    })?;
    i64::try_from(t.as_nanosecond()).with_context(|| format!("{flag} {s}: out of range"))
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

fn seconds(v: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{flag} must be a non-negative number of seconds"))
}

/// Where one encrypted transport goes: its own flag (`flag`, HOST:PORT, `port` when left out);
/// else, in a replay that mixes transports (`mixed`) whose `--server` (`target`) names no
/// port, the `--server` host on the transport's own `port`, beside UDP and TCP on 53; else
/// `--server`.
fn transport_server(
    given: Option<&str>,
    flag: &str,
    port: u16,
    mixed: bool,
    target: &str,
) -> Result<Option<SocketAddr>> {
    if let Some(t) = given {
        return Ok(Some(parse_server(t, port).context(flag.to_string())?.addr));
    }
    // The port is left out when parsing with either default gives that default.
    let own = parse_server(target, port)?.addr;
    let plain = parse_server(target, 53)?.addr;
    Ok(
        (mixed && own.port() == port && plain.port() == 53)
            .then(|| SocketAddr::new(own.ip(), port)),
    )
}

/// The server to query, from `--server`: an address and port, and the host name when one was
/// given (for TLS).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ServerArg {
    /// The address and port.
    pub addr: SocketAddr,
    /// The host name, when one was given.
    pub name: Option<String>,
}

/// Reads `--server`: `IPV4[:PORT]`, `[IPV6][:PORT]`, a bare `IPV6` or `NAME[:PORT]`, with
/// `default_port` when there is no port. Port 0 is refused, and so is an unbracketed IPv6
/// address whose last group could be a port (`::1:5531`: port 5531 of `::1`, or the address
/// `::1:5531`?), with both bracketed forms shown.
pub(crate) fn parse_server(s: &str, default_port: u16) -> Result<ServerArg> {
    let port_of = |p: &str| -> Result<u16> {
        match p.parse::<u16>() {
            Ok(0) => bail!("--server {s}: port 0 is not a server's port"),
            Ok(p) => Ok(p),
            Err(_) => bail!("--server {s}: `{p}` is not a port (1-65535)"),
        }
    };
    let plain = |addr: SocketAddr| ServerArg { addr, name: None };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .with_context(|| format!("--server {s}: `[` without `]`"))?;
        let ip: std::net::Ipv6Addr = host
            .parse()
            .with_context(|| format!("--server {s}: `{host}` is not an IPv6 address"))?;
        let port = match after {
            "" => default_port,
            _ => match after.strip_prefix(':') {
                Some(p) => port_of(p)?,
                None => bail!("--server {s}: expected `:PORT` after `]`"),
            },
        };
        return Ok(plain(SocketAddr::new(IpAddr::V6(ip), port)));
    }
    if let Ok(ip) = s.parse::<std::net::Ipv6Addr>() {
        if let Some((head, tail)) = s.rsplit_once(':') {
            let could_be_port = !tail.is_empty()
                && tail.len() <= 5
                && tail.bytes().all(|b| b.is_ascii_digit())
                && tail.parse::<u16>().is_ok_and(|p| p > 0);
            if could_be_port && head.parse::<std::net::Ipv6Addr>().is_ok() {
                // `::1:5531` as an address is IPv4-compatible, which the engine refuses.
                let whole = SocketAddr::new(IpAddr::V6(ip), default_port);
                if ldplayer_replay::check_destination(whole).is_err() {
                    bail!("--server {s}: write [{head}]:{tail} for port {tail} of {head}");
                }
                bail!(
                    "--server {s} is ambiguous: write [{head}]:{tail} for port {tail} of {head}, \
                     or [{s}] for the address {s} (port {default_port})"
                );
            }
        }
        return Ok(plain(SocketAddr::new(IpAddr::V6(ip), default_port)));
    }
    if let Ok(ip) = s.parse::<std::net::Ipv4Addr>() {
        return Ok(plain(SocketAddr::new(IpAddr::V4(ip), default_port)));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, port_of(p)?),
        None => (s, default_port),
    };
    if host.is_empty() {
        bail!("--server {s}: no host");
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(plain(SocketAddr::new(IpAddr::V4(ip), port)));
    }
    if host.contains(':') {
        bail!("--server {s}: write an IPv6 address with a port as [ADDRESS]:PORT");
    }
    let addr = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("--server {s}: cannot resolve {host}"))?
        .next()
        .with_context(|| format!("--server {s}: {host} has no address"))?;
    Ok(ServerArg {
        addr,
        name: Some(host.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(s: &str) -> Result<SocketAddr> {
        parse_server(s, 53).map(|a| a.addr)
    }

    /// The configuration `ldplayer replay t.bin ARGS...` makes.
    fn config_of(args: &[&str]) -> ReplayConfig {
        use clap::Parser;
        let cli =
            crate::args::Cli::try_parse_from(["ldplayer", "replay", "t.bin"].iter().chain(args))
                .expect("valid arguments");
        let crate::args::Command::Replay(a) = cli.command else {
            panic!("not a replay");
        };
        config(&a, &a.server[0]).expect("a configuration")
    }

    /// A mixed replay to a server named without a port sends DoT, DoH and DoQ to their own
    /// ports of that host; a port, a forced transport or a flag of their own says otherwise.
    #[test]
    fn encrypted_transports_go_to_their_own_ports() {
        let at = |s: &str| Some(s.parse::<SocketAddr>().expect("address"));
        let c = config_of(&["--server", "127.0.0.9"]);
        assert_eq!(c.server, at("127.0.0.9:53").unwrap());
        assert_eq!(
            (c.tls_server, c.https_server, c.quic_server),
            (
                at("127.0.0.9:853"),
                at("127.0.0.9:443"),
                at("127.0.0.9:853")
            )
        );
        let c = config_of(&["--server", "127.0.0.9:5300"]);
        assert_eq!(
            (c.tls_server, c.https_server, c.quic_server),
            (None, None, None)
        );
        let c = config_of(&["--server", "127.0.0.9", "--proto", "doh"]);
        assert_eq!(c.server, at("127.0.0.9:443").unwrap());
        assert_eq!(c.https_server, None);
        let c = config_of(&["--server", "127.0.0.9", "--quic-server", "127.0.0.8:8853"]);
        assert_eq!(c.quic_server, at("127.0.0.8:8853"));
        assert_eq!(c.https_server, at("127.0.0.9:443"));
    }

    /// `--quic-key-update-packets` reaches the replay's configuration; without it, the
    /// replay's default.
    #[test]
    fn the_quic_key_update_count_is_passed_on() {
        let c = config_of(&["--server", "127.0.0.9"]);
        assert_eq!(
            c.quic_key_update_packets,
            ldplayer_replay::DEFAULT_QUIC_KEY_UPDATE_PACKETS
        );
        let c = config_of(&["--server", "127.0.0.9", "--quic-key-update-packets", "0"]);
        assert_eq!(c.quic_key_update_packets, 0);
        let c = config_of(&["--server", "127.0.0.9", "--quic-key-update-packets", "7"]);
        assert_eq!(c.quic_key_update_packets, 7);
    }

    #[test]
    fn server_addresses_with_and_without_ports() {
        let ok = |s: &str, want: &str| {
            assert_eq!(
                server(s).unwrap(),
                want.parse::<SocketAddr>().unwrap(),
                "{s}"
            )
        };
        ok("127.0.0.1", "127.0.0.1:53");
        ok("127.0.0.1:5300", "127.0.0.1:5300");
        ok("::1", "[::1]:53");
        ok("[::1]", "[::1]:53");
        ok("[::1]:5531", "[::1]:5531");
        ok("fe80::1", "[fe80::1]:53");
        ok("2001:db8:0:0:0:0:0:53", "[2001:db8::53]:53");
        assert_eq!(parse_server("::1", 853).unwrap().addr.port(), 853);
        let localhost = parse_server("localhost:5300", 53).unwrap();
        assert_eq!(localhost.name.as_deref(), Some("localhost"));
        assert_eq!(parse_server("[::1]", 53).unwrap().name, None);
    }

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

    #[test]
    fn bad_and_ambiguous_servers_are_refused() {
        let err = |s: &str| format!("{:#}", server(s).unwrap_err());
        assert!(err("127.0.0.1:0").contains("port 0"));
        assert!(err("[::1]:0").contains("port 0"));
        // As an address, ::1:5531 is IPv4-compatible (::0.1.85.49), which nobody means.
        let e = err("::1:5531");
        assert!(e.contains("[::1]:5531") && !e.contains("[::1:5531]"), "{e}");
        let e = err("2001:db8::1:53");
        assert!(
            e.contains("ambiguous")
                && e.contains("[2001:db8::1]:53")
                && e.contains("[2001:db8::1:53]"),
            "{e}"
        );
        assert!(err("[::1").contains("without"));
        assert!(err("[::1]x").contains(":PORT"));
        assert!(err("127.0.0.1:http").contains("not a port"));
        assert!(err("[127.0.0.1]:53").contains("not an IPv6"));
    }
}
