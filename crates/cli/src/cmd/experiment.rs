//! `ldplayer experiment`: a what-if study from a TOML plan, one command.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ldplayer_experiment::{Observer, Plan, RunRecord, RunSpec, Status};

use crate::args::ExperimentArgs;
use crate::progress::interrupted;

pub fn run(args: ExperimentArgs) -> Result<()> {
    let bytes = std::fs::read(&args.plan)
        .with_context(|| format!("cannot read {}", args.plan.display()))?;
    let text = ldplayer_experiment::plan::text_of(bytes).map_err(|e| plan_error(&args.plan, e))?;
    let text = ldplayer_experiment::overrides::apply(&text, &args.sets)?;
    let base = args.plan.parent().unwrap_or(Path::new("."));
    let plan = Plan::parse(&text, base).map_err(|e| plan_error(&args.plan, e))?;
    let warmup_notes: Vec<String> = plan
        .runs()
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.id, r.settings.warmup_note()?)))
        .collect();
    if args.check {
        print!("{}", plan.describe_runs());
        for note in &warmup_notes {
            println!("note: {note}");
        }
        // A missing server program is named with its package, but the plan itself is fine.
        if let Err(e) = ldplayer_experiment::experiment::check_programs(&plan.runs()) {
            println!("to run it: {e}");
        }
        return Ok(());
    }
    let Some(dir) = args.output.clone() else {
        bail!("-o DIR is needed to run the plan");
    };
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let options = ldplayer_experiment::Options {
        dir: dir.clone(),
        exe,
        resume: args.resume,
        capture: args.capture,
    };
    if !(args.quiet || args.json) {
        for note in &warmup_notes {
            eprintln!("experiment: note: {note}");
        }
    }
    let ctrl_c = interrupted();
    let started = Instant::now();
    let mut bar = Bar::new(args.quiet || args.json);
    let report = ldplayer_experiment::run_plan(&plan, &text, &options, &ctrl_c, &mut bar)?;
    bar.finish();
    let report_file = (!args.no_report && report.runs.iter().any(|r| r.status != Status::Failed))
        .then(|| draw_report(&dir, args.quiet || args.json))
        .flatten();
    let failed: Vec<&RunRecord> = report
        .runs
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    if args.json {
        let runs: Vec<_> = report
            .runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "run": r.id,
                    "varied": r.varied.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect::<serde_json::Map<_, _>>(),
                    "status": r.status,
                    "error": r.error,
                    "p50": r.medians,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "dir": dir,
                "summary": report.summary,
                "interrupted": report.interrupted,
                "runs": runs,
                "report": report_file,
                "differences": differences_json(&report),
                "seconds": started.elapsed().as_secs_f64(),
            })
        );
    } else if !args.quiet {
        print_summary(&report, started.elapsed().as_secs_f64());
        print_differences(&report, &dir);
        if let Some(file) = &report_file {
            println!("report: {}", file.display());
        }
    }
    if report.interrupted {
        bail!(
            "interrupted: {} of {} runs finished, kept in {}; `--resume` goes on",
            report
                .runs
                .iter()
                .filter(|r| r.status != Status::Failed)
                .count(),
            plan.runs().len(),
            dir.display()
        );
    }
    if !failed.is_empty() {
        bail!(
            "{} runs failed ({}); their logs are in their folders, `--resume` runs them again",
            failed.len(),
            failed
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// Draws DIR/report.html; a report that cannot be drawn is said, not fatal: the runs' files
/// are what matters, and `ldplayer report DIR` can try again.
fn draw_report(dir: &Path, quiet: bool) -> Option<std::path::PathBuf> {
    let file = dir.join("report.html");
    match super::report::write(&[dir.to_path_buf()], &file, None) {
        Ok(_) => Some(file),
        Err(e) => {
            if !quiet {
                eprintln!("experiment: no report drawn: {e:#}");
            }
            None
        }
    }
}

/// A plan error with the file's name in front (the error has the key and the line).
fn plan_error(path: &Path, e: ldplayer_experiment::PlanError) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", path.display())
}

/// The figures people look at first, one line per run.
const HEADLINE: [(&str, &str); 5] = [
    ("latency_ms", "latency p50 {} ms"),
    ("answered_share", "answered {}"),
    ("server_rss_mib", "server {} MiB"),
    ("tcp_established", "{} established"),
    ("response_bytes_per_s", "{} B/s out"),
];

fn print_summary(report: &ldplayer_experiment::PlanReport, seconds: f64) {
    for r in &report.runs {
        let varied: Vec<String> = r.varied.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let status = match r.status {
            Status::Finished => String::new(),
            Status::Skipped => " (finished before)".into(),
            Status::Failed => format!(" FAILED: {}", r.error.as_deref().unwrap_or("?")),
        };
        let figures: Vec<String> = HEADLINE
            .iter()
            .filter_map(|(metric, label)| {
                let v = r.medians.get(*metric)?;
                Some(label.replace("{}", &short(*v)))
            })
            .collect();
        println!(
            "{}  {}{status}  {}",
            r.id,
            varied.join(" "),
            figures.join(", ")
        );
    }
    println!(
        "{} runs in {:.0} s; summary: {}",
        report.runs.len(),
        seconds,
        report.summary.display()
    );
}

/// `[diff]`: each run's differences against its base, as JSON (`differences`).
fn differences_json(report: &ldplayer_experiment::PlanReport) -> serde_json::Value {
    report
        .differences
        .iter()
        .map(|d| match &d.report {
            Ok(r) => serde_json::json!({
                "run": d.run,
                "base": d.base,
                "compared": r.counts.compared,
                "different": r.counts.different,
                "unstable": r.counts.unstable,
                "not_compared": r.counts.not_compared,
                "fields": r.fields.iter().filter(|f| f.queries > 0)
                    .map(|f| (f.field.name().to_string(), serde_json::Value::from(f.queries)))
                    .collect::<serde_json::Map<_, _>>(),
            }),
            Err(e) => serde_json::json!({ "run": d.run, "base": d.base, "error": e }),
        })
        .collect()
}

/// `[diff]`: one line per run, its differences against its base by field.
fn print_differences(report: &ldplayer_experiment::PlanReport, dir: &Path) {
    if report.differences.is_empty() {
        return;
    }
    for d in &report.differences {
        match &d.report {
            Ok(r) => {
                let fields: Vec<String> = r
                    .fields
                    .iter()
                    .filter(|f| f.queries > 0)
                    .map(|f| format!("{} {}", f.field.name(), f.queries))
                    .collect();
                println!(
                    "{} against {}: {} of {} compared answers differ ({:.1}%){}{}",
                    d.run,
                    d.base,
                    r.counts.different,
                    r.counts.compared,
                    r.different_pct,
                    if fields.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", fields.join(", "))
                    },
                    if r.counts.unstable > 0 {
                        format!("; {} unstable", r.counts.unstable)
                    } else {
                        String::new()
                    }
                );
            }
            Err(e) => println!("{} against {}: not diffed: {e}", d.run, d.base),
        }
    }
    println!(
        "differences: {} (and each run's diff.json)",
        dir.join("differences.csv").display()
    );
}

/// A number in a few significant digits.
fn short(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Progress across runs: one bar, the current run's share inside it.
pub struct Bar {
    bar: ProgressBar,
    position: usize,
    total: usize,
}

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let bar = ProgressBar::with_draw_target(
            Some(1000),
            if quiet {
                ProgressDrawTarget::hidden()
            } else {
                ProgressDrawTarget::stderr()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        Bar {
            bar,
            position: 0,
            total: 1,
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for Bar {
    fn run_started(&mut self, spec: &RunSpec, position: usize, total: usize) {
        self.position = position;
        self.total = total.max(1);
        let varied: Vec<String> = spec
            .varied
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        self.bar.set_message(format!(
            "run {}/{}: {}",
            position + 1,
            total,
            varied.join(" ")
        ));
        self.run_progress(0.0);
    }

    fn run_progress(&mut self, share: f64) {
        let done = (self.position as f64 + share) / self.total as f64;
        self.bar.set_position((done * 1000.0) as u64);
    }

    fn run_ended(&mut self, spec: &RunSpec, record: &RunRecord) {
        if record.status == Status::Failed {
            self.bar.println(format!(
                "run {} failed: {}",
                spec.id,
                record.error.as_deref().unwrap_or("?")
            ));
        }
    }
}
