//! `ldplayer lab --manifest FILE (--names FILE | --trace FILE) [--resolver KIND] [--capture PCAP]`
//!
//! Three stages of one command: on the host it re-runs itself in a new network namespace (the
//! resolver side), which starts the server side in a second namespace, the resolver, and sends
//! the workload (see `ldplayer_lab`).

use crate::args::{LabArgs, ReplayArgs};
use crate::io::{refuse_same_file, Output};
use crate::progress::interrupted;
use anyhow::{bail, Context, Result};
use clap::Parser;
use ldplayer_dns::Rtype;
use ldplayer_lab::{client, LabConfig, NameserverKind, ResolverKind, ResolverSide};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

pub fn run(args: LabArgs) -> Result<()> {
    match args.stage.as_deref() {
        None => host(args),
        Some("resolver") => resolver_stage(args),
        Some(_) => server_stage(args),
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}", p.display()))
}

/// On the host: check the arguments, then run the resolver stage in a new namespace.
fn host(args: LabArgs) -> Result<()> {
    ResolverKind::from_str(&args.resolver).map_err(anyhow::Error::msg)?;
    if args.json && args.names.is_some() && args.answers.is_none() {
        bail!(
            "--json with --names prints on standard output: write the answers with --answers FILE"
        );
    }
    let inputs: Vec<&Path> = [&args.names, &args.trace, &args.hints]
        .into_iter()
        .flatten()
        .map(|p| p.as_path())
        .chain([args.manifest.as_path()])
        .collect();
    for output in [&args.answers, &args.capture, &args.results]
        .into_iter()
        .flatten()
    {
        refuse_same_file(output, inputs.iter().copied())?;
    }
    let exe = std::env::current_exe().context("finding the ldplayer executable")?;
    let mut argv: Vec<String> = std::env::args().skip(1).collect();
    argv.extend(["--stage".into(), "resolver".into()]);
    // Ctrl-C and SIGTERM reach the lab (its own process group) through this flag.
    let status = ldplayer_lab::launch(&exe, &argv, &interrupted())?;
    if !status.success() {
        bail!("the lab failed ({status})");
    }
    Ok(())
}

/// In the resolver side's namespace: start everything, send the workload, stop everything.
fn resolver_stage(args: LabArgs) -> Result<()> {
    let resolver = ResolverKind::from_str(&args.resolver).map_err(anyhow::Error::msg)?;
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
    let manifest = absolute(&args.manifest)?;
    let config = LabConfig {
        manifest: manifest.clone(),
        hints: args.hints.as_deref().map(absolute).transpose()?,
        resolver,
        capture: args.capture.as_deref().map(absolute).transpose()?,
        work_dir: work_dir.clone(),
    };
    let exe = std::env::current_exe().context("finding the ldplayer executable")?;
    let server_args: Vec<String> = vec![
        "lab".into(),
        "--manifest".into(),
        manifest.display().to_string(),
        "--nameservers".into(),
        args.nameservers.clone(),
        "--work-dir".into(),
        work_dir.display().to_string(),
        "--stage".into(),
        "server".into(),
    ];
    let side = ResolverSide::start(&config, &exe, &server_args).context("starting the lab")?;
    if !args.quiet {
        eprintln!(
            "ldplayer lab: {resolver} at {} resolving through {} nameserver addresses ({}); no route out",
            side.resolver_addr(),
            side.nameservers.len(),
            args.nameservers
        );
    }
    let outcome = workload(&args, side.resolver_addr());
    side.finish();
    let server_log = std::fs::read_to_string(work_dir.join("server-side.log")).unwrap_or_default();
    for line in server_log
        .lines()
        .filter(|l| !l.trim().is_empty() && !args.quiet)
    {
        eprintln!("{line}");
    }
    outcome
}

fn workload(args: &LabArgs, resolver: std::net::SocketAddr) -> Result<()> {
    if let Some(names) = &args.names {
        let text = std::fs::read_to_string(names)
            .with_context(|| format!("cannot read {}", names.display()))?;
        let answers = args.answers.as_deref().unwrap_or(Path::new("-"));
        let mut out = Output::create(answers)?;
        let (mut ok, mut failed) = (0, 0);
        let stop = interrupted();
        for (n, line) in text.lines().enumerate() {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let line = line.split('#').next().unwrap_or("").trim();
            let mut f = line.split_whitespace();
            let Some(name) = f.next() else { continue };
            let qtype = match f.next() {
                Some(t) => t.parse().map_err(|_| {
                    anyhow::anyhow!("{}:{}: unknown type {t:?}", names.display(), n + 1)
                })?,
                None => Rtype::A,
            };
            let name = if name.ends_with('.') {
                name.to_string()
            } else {
                format!("{name}.")
            };
            match client::resolve(resolver, &name, qtype, Duration::from_secs(10)) {
                Ok(r) => {
                    ok += 1;
                    writeln!(out, "{}", r.line())?;
                }
                Err(e) => {
                    failed += 1;
                    writeln!(out, "{name} {qtype} ERROR {e}")?;
                }
            }
        }
        out.close()?;
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "names": ok + failed,
                    "resolved": ok,
                    "failed": failed,
                    "interrupted": stop.load(std::sync::atomic::Ordering::Relaxed),
                })
            );
        } else if !args.quiet {
            let stopped = if stop.load(std::sync::atomic::Ordering::Relaxed) {
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
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        replay: ReplayArgs,
    }
    let mut argv: Vec<String> = vec![
        "replay".into(),
        trace.display().to_string(),
        "--server".into(),
        resolver.to_string(),
        "--proto".into(),
        "udp".into(),
    ];
    if let Some(r) = args.rate {
        argv.extend(["--rate".into(), r.to_string()]);
    }
    if let Some(p) = &args.results {
        argv.extend(["--results".into(), p.display().to_string()]);
    }
    if args.json {
        argv.push("--json".into());
    }
    if args.quiet {
        argv.push("--quiet".into());
    }
    let wrap = Wrap::try_parse_from(argv)?;
    super::replay::run(wrap.replay)
}

/// In the server side's namespace: the nameservers, until the resolver side interrupts.
fn server_stage(args: LabArgs) -> Result<()> {
    let kind = if args.nameservers == "nsd" {
        NameserverKind::Nsd
    } else {
        NameserverKind::Meta
    };
    let work_dir = args.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let stop = interrupted();
    let stats = ldplayer_lab::server_side(&args.manifest, kind, &work_dir, &stop)?;
    if let Some(s) = stats {
        eprintln!("ldplayer lab: meta-server: {}", super::serve::describe(&s));
    }
    Ok(())
}
