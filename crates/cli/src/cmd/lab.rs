//! `ldplayer lab --manifest FILE (--names FILE | --trace FILE) [--resolver KIND] [--capture PCAP]`
//!
//! Three stages of one command: on the host it re-runs itself in a new network namespace (the
//! resolver side, which `ldplayer_lab` marks as such), which starts the server side in a second
//! namespace (`ldplayer_lab` starts it and tells it what to run; `main` runs it with
//! `ldplayer_lab::run_side_if_asked`), the resolver, and sends the workload
//! (`ldplayer_lab::workload`): names one by one, or a trace with the replay engine.

use crate::args::{LabArgs, LabStage, Nameservers, ProtoChoice, ReadArgs};
use crate::io::Output;
use crate::progress::interrupted;
use anyhow::{bail, Context, Result};
use ldplayer_lab::{LabConfig, ResolverSide, ServerSideConfig};
use ldplayer_replay::Timing;
use ldplayer_trace::Proto;
use std::path::{Path, PathBuf};

pub fn run(args: LabArgs) -> Result<()> {
    match args.stage {
        None if !ldplayer_lab::is_resolver_side() => host(args),
        None | Some(LabStage::Resolver) => resolver_stage(args),
        Some(LabStage::Server) => Ok(ldplayer_lab::run_server_side(
            &ServerSideConfig {
                manifest: args.manifest.clone(),
                nameservers: args.nameservers.kind(),
                work_dir: args.work_dir.clone().unwrap_or_else(std::env::temp_dir),
            },
            report_meta_server,
        )?),
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}", p.display()))
}

/// On the host: check the arguments, then run the resolver stage in a new namespace.
fn host(args: LabArgs) -> Result<()> {
    if args.json && args.names.is_some() && args.answers.is_none() {
        bail!(
            "--json with --names prints on standard output: write the answers with --answers FILE"
        );
    }
    if args.time.is_some() {
        if let Some(why) = args.resolver.kind().cannot_validate_at_another_time() {
            bail!("{why}");
        }
    }
    if let Some(t) = &args.time {
        parse_validation_time(t)?;
    }
    let exe = std::env::current_exe().context("finding the ldplayer executable")?;
    // The same command line again; the lab tells the new process it is the resolver side.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // Ctrl-C and SIGTERM reach the lab (its own process group) through this flag.
    let status = ldplayer_lab::launch(&exe, &argv, &interrupted())?;
    if !status.success() {
        bail!("the lab failed ({status})");
    }
    Ok(())
}

/// In the resolver side's namespace: start everything, send the workload, stop everything.
fn resolver_stage(args: LabArgs) -> Result<()> {
    let resolver = args.resolver.kind();
    let temp;
    let work_dir = match &args.work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("{}", d.display()))?;
            absolute(d)?
        }
        None => {
            temp = tempfile::tempdir().context("a work directory")?;
            temp.path().to_path_buf()
        }
    };
    let population = super::replay::population(args.population.as_deref())?;
    let transports: Vec<Proto> = match (&population, args.proto.forced()) {
        (Some(p), _) => p.transports(),
        (None, Some(proto)) => vec![proto],
        // The trace's own transports: the resolver serves every one it can.
        (None, None) => vec![Proto::Tls, Proto::Https],
    };
    if transports.contains(&Proto::Quic) {
        bail!("no resolver the lab runs serves DNS over QUIC");
    }
    let encrypted = transports
        .iter()
        .any(|p| matches!(p, Proto::Tls | Proto::Https))
        && !(args.proto == ProtoChoice::Keep
            && population.is_none()
            && resolver == ldplayer_lab::ResolverKind::PdnsRecursor);
    let validation = match &args.trust_anchor {
        None => None,
        Some(a) => Some(ldplayer_lab::validation::Validation {
            anchor: if a == "auto" {
                ldplayer_lab::validation::TrustAnchor::Auto
            } else {
                ldplayer_lab::validation::TrustAnchor::File(absolute(Path::new(a))?)
            },
            time: args
                .time
                .as_deref()
                .map(parse_validation_time)
                .transpose()?,
            insecure: args
                .insecure
                .iter()
                .map(|d| ldplayer_lab::validation::domain(d))
                .collect::<Result<_, _>>()?,
        }),
    };
    let config = LabConfig {
        encrypted,
        validation,
        manifest: absolute(&args.manifest)?,
        nameservers: args.nameservers.kind(),
        hints: args.hints.as_deref().map(absolute).transpose()?,
        resolver,
        capture: args.capture.as_deref().map(absolute).transpose()?,
        dnstap: args.dnstap.as_deref().map(absolute).transpose()?,
        work_dir: work_dir.clone(),
    };
    let exe = std::env::current_exe().context("finding the ldplayer executable")?;
    let side = ResolverSide::start(&config, &exe).context("starting the lab")?;
    if !args.quiet {
        eprintln!(
            "ldplayer lab: {resolver} at {} resolving through {} nameserver addresses ({}); no route out",
            side.resolver_addr(),
            side.nameservers.len(),
            match args.nameservers {
                Nameservers::Ldplayer => "ldplayer",
                Nameservers::Nsd => "nsd",
            }
        );
    }
    let outcome = workload(&args, &side, population);
    let (_, upstream) = side.finish_with_upstream();
    match upstream {
        Some(Ok(log)) if !args.quiet => {
            // The responses by the level of the zone that answered, as the meta-server counts
            // its own (printed below from the server side): a second witness of them.
            let levels = match ldplayer_lab::upstream::levels(&config.manifest, &log.file) {
                Ok(l) => format!(
                    "; by zone level: root {} ({} NXDOMAIN), TLD {} ({} NXDOMAIN), below {} ({} NXDOMAIN)",
                    l.level_total(0),
                    l.counts[0][1],
                    l.level_total(1),
                    l.counts[1][1],
                    l.level_total(2),
                    l.counts[2][1]
                ),
                Err(e) => format!("; levels: {e}"),
            };
            eprintln!(
                "ldplayer lab: the resolver's dnstap: {} upstream queries and {} responses in {}{}{levels}",
                log.queries,
                log.responses,
                log.file.display(),
                if log.skipped.total() > 0 {
                    format!("; skipped: {}", super::skipped_list(&log.skipped))
                } else {
                    String::new()
                }
            )
        }
        Some(Err(e)) => eprintln!("ldplayer lab: the resolver's dnstap: {e}"),
        _ => {}
    }
    let server_log = std::fs::read_to_string(work_dir.join("server-side.log")).unwrap_or_default();
    for line in server_log
        .lines()
        .filter(|l| !l.trim().is_empty() && !args.quiet)
    {
        eprintln!("{line}");
    }
    outcome
}

fn workload(
    args: &LabArgs,
    side: &ResolverSide,
    population: Option<ldplayer_population::Population>,
) -> Result<()> {
    let resolver = side.resolver_addr();
    if let Some(names) = &args.names {
        let text = std::fs::read_to_string(names)
            .with_context(|| format!("cannot read {}", names.display()))?;
        let answers = args.answers.as_deref().unwrap_or(Path::new("-"));
        let mut out = Output::create(answers)?;
        let done = ldplayer_lab::workload::resolve_names(
            resolver,
            &text,
            names,
            &mut out,
            &interrupted(),
        )?;
        out.close()?;
        let (ok, failed) = (done.resolved, done.failed);
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "names": ok + failed,
                    "resolved": ok,
                    "failed": failed,
                    "interrupted": done.interrupted,
                })
            );
        } else if !args.quiet {
            let stopped = if done.interrupted {
                " (interrupted)"
            } else {
                ""
            };
            eprintln!("ldplayer lab: {ok} names resolved, {failed} without an answer{stopped}");
        }
        return Ok(());
    }
    let Some(trace) = &args.trace else {
        bail!("give --names or --trace");
    };
    let mut config = ldplayer_lab::workload::replay_config(side);
    config.proto_override = args.proto.forced();
    config.profiles = population
        .as_ref()
        .map(ldplayer_replay::Profiles::of_population);
    if let Some(qps) = args.rate {
        config.timing = Timing::Rate { qps };
    }
    let read = ReadArgs::every_message(vec![53]);
    super::replay::replay_trace(
        config,
        &super::replay::TraceReplay {
            trace,
            read,
            results: args.results.as_deref(),
            report: None,
            json: args.json,
            quiet: args.quiet,
            population,
            closed_loop: false,
            strict: false,
            ramp: None,
        },
    )
}

/// Prints the meta-server's counters when the lab's server side ends (into the side's log, which
/// the resolver side repeats).
pub fn report_meta_server(stats: &ldplayer_server::ServerStats) {
    eprintln!(
        "ldplayer lab: meta-server: {}",
        super::serve::describe(stats)
    );
}

/// Reads `--time`: RFC 3339 (any offset), Unix seconds, or `YYYYMMDDHHMMSS` (UTC, as RRSIG
/// validity times are written); in seconds.
fn parse_validation_time(s: &str) -> Result<i64> {
    let s = s.trim();
    if s.len() == 14 && s.bytes().all(|b| b.is_ascii_digit()) {
        let t = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &s[..4],
            &s[4..6],
            &s[6..8],
            &s[8..10],
            &s[10..12],
            &s[12..]
        );
        return Ok(super::replay_config::parse_instant_ns(&t, "--time")? / 1_000_000_000);
    }
    let ns = super::replay_config::parse_instant_ns(s, "--time")
        .context("--time also takes YYYYMMDDHHMMSS, as RRSIGs write their validity")?;
    Ok(ns.div_euclid(1_000_000_000))
}
