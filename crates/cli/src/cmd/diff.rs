//! `ldplayer diff RESULTS... [--target N] [--reference N]... [--criteria FILE] [--json] [--csv FILE]
//! [--max-differences FIELD=PCT]... [--reask N --trace TRACE] [-q]`
//!
//! Exit status: 0 when every bound holds, 1 when one was exceeded, 2 when no comparison can be
//! made (inputs without answers, of different traces, not one query compared) or the options
//! are wrong, as `compare` does.

use crate::io::Output;
use anyhow::{bail, Context, Result};
use clap::Args;
use ldplayer_diff::report::write_csv_row;
use ldplayer_diff::{Bound, Criteria, DiffReport, DiffRow, Options, CSV_COLUMNS};
use std::io::Write;
use std::path::PathBuf;

/// Exit status when a bound was exceeded.
pub const EXCEEDED: i32 = 1;
/// Exit status when no comparison could be made.
pub const TROUBLE: i32 = 2;

/// `ldplayer diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Results files with answers (`replay --keep-answers`) of one trace: one file of a replay
    /// to several servers, or one file per server. Their targets are numbered from 0 in order.
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// The target tested against the others (the references), by number; default: the last.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::values::target)]
    pub target: Option<usize>,
    /// A reference target, by number (repeat for several); default: every target but the
    /// tested one. Targets neither tested nor references are left out.
    #[arg(long = "reference", value_name = "N", allow_negative_numbers = true, value_parser = crate::values::target)]
    pub references: Vec<usize>,
    /// A TOML file choosing the fields compared and how (TTLs, case, RRSIGs): see docs/cli.md.
    #[arg(long, value_name = "FILE")]
    pub criteria: Option<PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Write one row per differing query and field to this file: index, qname, qtype, field,
    /// tested, reference (the two values).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Exit with status 1 when more than PCT percent of the compared queries differ in FIELD
    /// (`rcode=0`, `flags.ad=0.5`, `any=1` for any field); may be given more than once.
    #[arg(long = "max-differences", value_name = "FIELD=PCT")]
    pub max_differences: Vec<String>,
    /// Send each differing query N more times to every target; a difference that does not
    /// repeat, or whose answers vary within one target, is counted as not reproducible, apart.
    /// Needs --trace.
    #[arg(long, value_name = "N", requires = "trace", allow_negative_numbers = true, value_parser = crate::values::rounds)]
    pub reask: Option<u32>,
    /// With --reask: re-ask at most this many differing queries (the first ones).
    #[arg(long, value_name = "COUNT", default_value_t = 10_000, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub reask_max: usize,
    /// With --reask: the trace that was replayed, where the queries are.
    #[arg(long, value_name = "TRACE", requires = "reask")]
    pub trace: Option<PathBuf>,
    /// With --reask: UDP/TCP port carrying DNS in a capture given as --trace (repeat for
    /// several), as the replay read it.
    #[arg(long = "dns-port", value_name = "PORT", default_values_t = [53u16], allow_negative_numbers = true, value_parser = crate::values::port)]
    pub dns_ports: Vec<u16>,
    /// With --reask: seconds to wait for each answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0, allow_negative_numbers = true, value_parser = crate::values::positive_seconds)]
    pub timeout: f64,
    /// With --reask: PEM file of the CA that signed the servers' TLS certificates.
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// With --reask: accept any TLS certificate (test servers only).
    #[arg(long)]
    pub tls_insecure: bool,
    /// Print nothing but errors and exceeded bounds.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the diff and exits with its status: returns only when every bound held.
pub fn run(args: DiffArgs) -> Result<()> {
    let report = match diffed(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ldplayer: {e:#}");
            std::process::exit(TROUBLE);
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else if !args.quiet {
        write!(out, "{report}")?;
    }
    out.flush()?;
    if !args.json {
        for w in &report.warnings {
            eprintln!("ldplayer: warning: {w}");
        }
    }
    if report.exceeded() {
        for b in report.bounds.iter().filter(|b| b.exceeded) {
            eprintln!(
                "ldplayer: {} differs in {:.2}% of the compared queries, past its bound of {}%",
                b.bound.name(),
                b.share_pct,
                b.bound.max_pct
            );
        }
        std::process::exit(EXCEEDED);
    }
    Ok(())
}

/// The report, or why none can be made.
fn diffed(args: &DiffArgs) -> Result<DiffReport> {
    let criteria = match &args.criteria {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            Criteria::from_toml(&text).with_context(|| p.display().to_string())?
        }
        None => Criteria::default(),
    };
    let bounds = args
        .max_differences
        .iter()
        .map(|b| Bound::parse(b))
        .collect::<Result<Vec<_>, _>>()?;
    for b in &bounds {
        if let Some(f) = b.field {
            if !criteria.compares(f) {
                bail!(
                    "--max-differences {}: the criteria leave {} out",
                    b.name(),
                    f.name()
                );
            }
        }
    }
    let options = Options {
        criteria,
        tested: args.target,
        references: args.references.clone(),
        keep_differing: if args.reask.is_some() {
            args.reask_max
        } else {
            0
        },
    };
    let mut csv = match &args.csv {
        Some(p) => {
            let mut out = Output::create(p)?;
            writeln!(out, "{}", CSV_COLUMNS.join(","))?;
            Some(out)
        }
        None => None,
    };
    let mut write_error = None;
    let mut rows = |row: DiffRow| {
        if let Some(out) = csv.as_mut() {
            if let Err(e) = write_csv_row(out, &row) {
                write_error.get_or_insert(e);
            }
        }
    };
    let wants_rows = args.csv.is_some();
    let mut run = ldplayer_diff::diff(
        &args.results,
        &options,
        wants_rows.then_some(&mut rows as &mut dyn FnMut(DiffRow)),
    )?;
    if let Some(e) = write_error {
        return Err(e).context("writing --csv");
    }
    if let Some(out) = csv {
        out.close().context("writing --csv")?;
    }
    let counts = run.differ.counts();
    if counts.compared == 0 {
        bail!(
            "not one query could be compared: of {} queries, {} lack some target's result and \
             {} are unstable (the references disagree)",
            counts.queries,
            counts.not_compared,
            counts.unstable
        );
    }
    let reask = match args.reask {
        Some(rounds) => Some(super::diff_reask::reask(&mut run, rounds, args)?),
        None => None,
    };
    Ok(run.report(reask, &bounds))
}
