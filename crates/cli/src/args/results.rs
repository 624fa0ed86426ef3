//! `ldplayer results`: merging, summarizing and exporting results files.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Export a results file as CSV or JSON Lines.
    Export(ExportArgs),
    /// Print a finished run's summary again (as `replay` prints it at the end).
    Summary(ResultsSummaryArgs),
    /// Merge results files of one trace (shards of one replay, from several processes or
    /// hosts) into one, in trace order; summaries, reports and `compare` then read it as one run.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results files written by `ldplayer replay --results`, one per shard.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The merged results file.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Print what was merged as one JSON object.
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ResultsSummaryArgs {
    /// Results file written by `ldplayer replay --results`.
    pub file: PathBuf,
    /// Print the summary as one JSON object (the keys of `replay --json`'s summary, and
    /// `file_damage`; a ramp's `ramp`, with its seconds).
    #[arg(long)]
    pub json: bool,
    /// For a ramp (`replay --ramp-to`): print its seconds too, one line each (offered, sent,
    /// answered, lost, latency).
    #[arg(long, conflicts_with = "json")]
    pub seconds: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Results file written by `ldplayer replay --results`.
    pub file: PathBuf,
    /// CSV with a header line.
    #[arg(long, conflicts_with = "jsonl")]
    pub csv: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub jsonl: bool,
    /// Output file (default: standard output). A `.gz`, `.xz` or `.zst` suffix compresses it.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print nothing but errors (not even the note about a file cut short).
    #[arg(short, long)]
    pub quiet: bool,
    /// Print a summary (results exported, bytes left out) as one JSON object on standard
    /// output; needs -o.
    #[arg(long, conflicts_with = "quiet", requires = "output")]
    pub json: bool,
    /// Add each query's client, qname, qtype and trace_proto from the trace that was replayed
    /// (read with the replay's --dns-port).
    #[arg(long, value_name = "TRACE")]
    pub with_trace: Option<PathBuf>,
    /// UDP/TCP port carrying DNS in a --with-trace capture (repeat for several).
    #[arg(long = "dns-port", value_name = "PORT", default_values_t = [53u16], allow_negative_numbers = true, value_parser = crate::values::port, requires = "with_trace")]
    pub dns_ports: Vec<u16>,
}
