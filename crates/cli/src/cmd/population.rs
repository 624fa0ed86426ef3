//! `ldplayer population fit TRACE -o pop.toml [--seed N] [--json]`

use crate::args::{PopulationCommand, PopulationFitArgs};
use crate::io::{open_input, Output, QrFilter};
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};
use ldplayer_population::Fitter;
use std::io::Write;

pub fn run(command: PopulationCommand) -> Result<()> {
    match command {
        PopulationCommand::Fit(args) => fit(args),
    }
}

/// Measures the trace's clients and writes the population that resembles it, with what was
/// measured as comments on top.
fn fit(args: PopulationFitArgs) -> Result<()> {
    let progress = Progress::new(args.json);
    let mut input = open_input(&args.input, &args.read, &progress)?;
    let mut fitter = Fitter::new();
    let mut watch = Watch::new(QrFilter::new(&mut fitter, &args.read), &progress);
    let result = input.source.run(&mut watch);
    progress.finish();
    result.with_context(|| format!("reading {}", args.input.display()))?;
    let stats = fitter.stats();
    let population = fitter
        .population(args.seed)
        .with_context(|| format!("{} holds no queries to fit", args.input.display()))?;
    let mut out = Output::create(&args.output)?;
    writeln!(
        out,
        "# Fitted by `ldplayer population fit` to {}:",
        args.input.display()
    )?;
    writeln!(
        out,
        "# {} clients, {} queries over {:.3} s.",
        stats.clients, stats.queries, stats.duration_s
    )?;
    if let Some(r) = stats.rate_qps {
        writeln!(
            out,
            "# Per-client rate (queries/s): p50 {:.6}, p90 {:.6}, p99 {:.6}.",
            r.p50, r.p90, r.p99
        )?;
    }
    if let Some(g) = stats.gap_s {
        writeln!(
            out,
            "# Gap between a client's queries (s): p50 {:.6}, p90 {:.6}, p99 {:.6}.",
            g.p50, g.p90, g.p99
        )?;
    }
    writeln!(out)?;
    out.write_all(population.to_toml().as_bytes())?;
    out.close()?;
    if args.json {
        let mut json = serde_json::to_value(&stats)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("output".into(), args.output.display().to_string().into());
        }
        println!("{json}");
    } else {
        let mix: Vec<String> = stats
            .clients_by_proto
            .iter()
            .map(|(p, n)| format!("{p} {n}"))
            .collect();
        eprintln!(
            "ldplayer: {} clients ({}), {} queries over {:.1} s: {}",
            stats.clients,
            mix.join(", "),
            stats.queries,
            stats.duration_s,
            args.output.display()
        );
    }
    Ok(())
}
