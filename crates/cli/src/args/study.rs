//! `ldplayer experiment`, `report` and `demo`: studies and their reports.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The plan (TOML; see docs/experiments.md).
    pub plan: PathBuf,
    /// The output folder.
    #[arg(short, long, required_unless_present = "check")]
    pub output: Option<PathBuf>,
    /// Check the plan and print the runs it would make, without running them.
    #[arg(long)]
    pub check: bool,
    /// Skip the runs that finished in an earlier invocation with the same output folder.
    #[arg(long)]
    pub resume: bool,
    /// Change a key of the plan, as TOML (`--set trace.synth.rate=200`,
    /// `--set 'vary.rtt_ms=[0, 20]'`); may be given more than once.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Capture both ends of the link with tcpdump in every run (client.pcap, server.pcap in
    /// each run's folder).
    #[arg(long)]
    pub capture: bool,
    /// Do not draw DIR/report.html (and DIR/report-figures/) when the runs are done.
    #[arg(long)]
    pub no_report: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the outcome (each run's status and median figures) as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
}

/// `ldplayer report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Replay results files (`replay --results`) and experiment folders (`experiment -o`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write; its figures go to a folder named after it beside it
    /// (`report.html`: `report-figures/`).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The report's title (default: the inputs' names).
    #[arg(long)]
    pub title: Option<String>,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print what was written (files, figures, what could not be read) as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
}

/// `ldplayer demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for the demo's files (default: a new `ldplayer-demo-TIME` folder for the study,
    /// kept for its report, in the Cargo target folder the program was built in, else here; a
    /// temporary directory, removed afterwards, for --pipeline).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Run the trace pipeline (pcap, text and binary byte for byte, inspect) and a replay with
    /// the trace's timing against the embedded server on loopback, instead of the study.
    #[arg(long)]
    pub pipeline: bool,
    /// Number of queries to synthesize (--pipeline).
    #[arg(long, short = 'n', default_value_t = 100_000, allow_negative_numbers = true, value_parser = crate::values::queries)]
    pub count: u64,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the summary (each step, the trace's summary, the replay's report) as one JSON
    /// object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
}
