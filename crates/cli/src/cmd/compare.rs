//! `ldplayer compare BASE NEW [--max-regression METRIC=PCT]... [--as BASE=NEW]... [--only PREFIX]...
//! [--json | -q]`
//!
//! Exit status: 0 when every bound holds, 1 when one was exceeded, 2 when the inputs or the
//! bounds are wrong (as `diff` and `cmp` do), so that a CI job can tell a regression from a
//! broken job.

use anyhow::{Context, Result};
use clap::Args;
use ldplayer_report::compare::{
    change_text, compare_with, value_text, Bound, Comparison, TransportPair,
};
use std::io::Write;
use std::path::PathBuf;

/// Exit status when a bound was exceeded.
pub const REGRESSED: i32 = 1;
/// Exit status when the comparison could not be made.
pub const TROUBLE: i32 = 2;

/// `ldplayer compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference: a replay's results file (`replay --results`) or an experiment's folder
    /// (`experiment -o DIR`).
    pub base: PathBuf,
    /// The one checked against it: of the same kind, of the same trace.
    pub new: PathBuf,
    /// Exit with status 1 when METRIC worsened by more than PCT percent of BASE's value
    /// (`latency_ms.udp.p99=10`, `answered_share=1`, `server_rss_mib.p50=20` for every run,
    /// `server_rss_mib.p50@2=20` for run 2); may be given more than once.
    #[arg(long = "max-regression", value_name = "METRIC=PCT")]
    pub max_regression: Vec<String>,
    /// Set BASE's metrics over one transport against NEW's over another: `--as udp=tls`
    /// compares a UDP replay with a TLS replay of the same trace (rows
    /// `latency_ms.udp=tls.p50`), or an experiment's `proto=udp` runs with `proto=tls` runs;
    /// may be given more than once.
    #[arg(long = "as", value_name = "BASE=NEW")]
    pub as_pairs: Vec<String>,
    /// Show only the metrics whose names start with PREFIX in the table (bounds still check
    /// every metric, and --json has them all); may be given more than once.
    #[arg(long, value_name = "PREFIX")]
    pub only: Vec<String>,
    /// Print nothing but errors and exceeded bounds.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the comparison as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
}

/// Runs the comparison and exits with its status: returns only when every bound held.
pub fn run(args: CompareArgs) -> Result<()> {
    let comparison = match compared(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ldplayer: {e:#}");
            std::process::exit(TROUBLE);
        }
    };
    print(&args, &comparison)?;
    if comparison.regressed {
        for row in comparison.exceeded() {
            let bound = row.bound_pct.unwrap_or_default();
            let change = match row.new {
                Some(_) => format!("-> {} ({})", value_text(row.new), change_text(row)),
                None => "and NEW does not have it".to_string(),
            };
            eprintln!(
                "ldplayer: {} regressed past its bound of {bound}%: {} {change}",
                row.name,
                value_text(row.base),
            );
        }
        std::process::exit(REGRESSED);
    }
    Ok(())
}

fn compared(args: &CompareArgs) -> Result<Comparison> {
    let bounds = args
        .max_regression
        .iter()
        .map(|b| Bound::parse(b))
        .collect::<Result<Vec<_>, _>>()?;
    let pairs = args
        .as_pairs
        .iter()
        .map(|p| TransportPair::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    compare_with(&args.base, &args.new, &bounds, &pairs).with_context(|| {
        format!(
            "comparing {} with {}",
            args.base.display(),
            args.new.display()
        )
    })
}

fn print(args: &CompareArgs, comparison: &Comparison) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, comparison)?;
        writeln!(out)?;
    } else if !args.quiet {
        let mut shown = comparison.clone();
        if !args.only.is_empty() {
            shown
                .metrics
                .retain(|r| args.only.iter().any(|p| r.name.starts_with(p.as_str())));
        }
        write!(out, "{shown}")?;
        for warning in &comparison.warnings {
            eprintln!("warning: {warning}");
        }
    }
    out.flush()?;
    Ok(())
}
