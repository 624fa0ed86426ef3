//! An experiment driven from a program of one's own: a plan's runs, each a replay through the
//! emulated link to a real server in network namespaces, with a line per run at the end.
//!
//! `cargo run -p ldplayer-experiment --example run_plan -- PLAN.toml OUTPUT_DIR` (as root).
//!
//! The sides of each run (the server's and the client's, each in its own namespaces) are this
//! program started again: [`ldplayer_experiment::run_side_if_asked`], first thing in `main`,
//! runs them. Ctrl-C stops the plan after the run under way, as `ldplayer experiment` does.

use ldplayer_experiment::{run_plan, Options, Plan, Silent};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn Error>> {
    if ldplayer_experiment::run_side_if_asked()? {
        return Ok(());
    }
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [plan_file, dir] = &args[..] else {
        return Err("usage: run_plan PLAN.toml OUTPUT_DIR".into());
    };
    let text = std::fs::read_to_string(plan_file)?;
    let plan = Plan::parse(&text, plan_file.parent().unwrap_or(Path::new(".")))?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))?;
    }
    let options = Options {
        dir: dir.clone(),
        exe: std::env::current_exe()?,
        resume: false,
        capture: false,
    };
    let report = run_plan(&plan, &text, &options, &stop, &mut Silent)?;
    for run in &report.runs {
        println!(
            "{} {:?}{}",
            run.id,
            run.status,
            run.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
    }
    println!("summary: {}", report.summary.display());
    Ok(())
}
