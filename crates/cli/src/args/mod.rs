//! Command-line arguments. The subcommands, flags and their names are an interface contract:
//! users' scripts rely on them, so add options freely but never rename or remove one.

// The doc comments below are clap's help texts (`HOST[:PORT]`, `[::]:53`), not rustdoc markup:
// their brackets are not links.
#![allow(rustdoc::broken_intra_doc_links)]

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod lab;
mod replay;
mod results;
mod serve;
mod study;
mod trace;
mod zones;

pub use lab::*;
pub use replay::*;
pub use results::*;
pub use serve::*;
pub use study::*;
pub use trace::*;
pub use zones::*;

/// A transport to force, or `keep` each message's own (`--proto`): the experiment plans'
/// `proto` too.
pub use ldplayer_trace::ProtoChoice;

/// DNS experimentation at scale: convert, inspect, mutate and synthesize DNS traces, replay
/// them against real servers over UDP, TCP, TLS, DoH and DoQ, serve zones, rebuild a hierarchy's zones
/// and run a resolver against it in an isolated lab.
#[derive(Debug, Parser)]
#[command(
    name = "ldplayer",
    version,
    about,
    long_about = None,
    after_help = "A typical study:\n  \
        ldplayer convert capture.pcap -o trace.bin        # any capture to the fast binary format\n  \
        ldplayer mutate trace.bin --proto tcp -o tcp.bin  # what if every client used TCP?\n  \
        ldplayer replay tcp.bin --server 127.0.0.1:5300 --results tcp.res\n  \
        ldplayer results export tcp.res --csv -o tcp.csv  # one row per query, for pandas or R\n\n\
        Try it with nothing installed: ldplayer demo. Formats and commands: docs/ in the source."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert a trace (pcap, pcapng, dnstap, text or binary; gzip/xz/zstd read transparently)
    /// to text, binary, pcap or dnstap.
    Convert(ConvertArgs),
    /// Summarize a trace: duration, queries, responses, clients, rates, transports, EDNS, DO,
    /// top types and rcodes, skipped records.
    Inspect(InspectArgs),
    /// Write a seeded synthetic trace.
    Synth(SynthArgs),
    /// Apply seeded, reproducible what-if changes to a trace.
    Mutate(MutateArgs),
    /// Replay a trace against a DNS server with the trace's timing (or scaled, paced, or as fast
    /// as it answers) over UDP, TCP, TLS, HTTPS (DoH) or QUIC (DoQ), recording every query's
    /// outcome.
    Replay(Box<ReplayArgs>),
    /// Serve zone files authoritatively: every zone on every listen address, or (with
    /// --manifest) as a meta-server answering each query from the zones of the address it was
    /// sent to.
    Serve(ServeArgs),
    /// Work with replay results files.
    #[command(subcommand)]
    Results(ResultsCommand),
    /// Rebuild the zones of a DNS hierarchy (root, TLDs, SLDs) from a resolver's upstream
    /// captures or Deckard scenarios, for `serve --manifest` and `lab`.
    #[command(subcommand)]
    Zones(ZonesCommand),
    /// Run a real recursive resolver against an emulated hierarchy in network namespaces with
    /// no route out, and send it a list of names or a trace.
    Lab(LabArgs),
    /// Run a what-if study: every run of a TOML plan (trace, server, emulated network, the keys
    /// it varies), each in its own network namespaces joined by an emulated link, with the
    /// server's memory, CPU and connections sampled each second, into one folder with a tidy
    /// summary.csv.
    Experiment(ExperimentArgs),
    /// Draw the figures of replays (results files) and experiments (their folders) into one
    /// self-contained HTML file, every figure also as SVG and PNG beside it; several inputs are
    /// shown side by side.
    Report(ReportArgs),
    /// Run the main job on the embedded default, with nothing external: a small what-if study
    /// (UDP against TCP and TLS under an emulated 20 ms round trip, ldplayer's own server) ending
    /// with its report and findings; with --pipeline, the trace pipeline and a replay on
    /// loopback instead.
    Demo(DemoArgs),
    /// Compare two replays (results files) or two experiments (folders) of one trace metric by
    /// metric; exit with status 1 when a metric worsened past its --max-regression bound, 2
    /// when the comparison could not be made.
    Compare(crate::cmd::compare::CompareArgs),
    /// Compare the answers of several servers to the same queries, respdiff-style: replays'
    /// results files with answers (`replay --keep-answers`), one target tested against the
    /// others field by field; unstable references kept apart; exit with status 1 past a
    /// --max-differences bound, 2 when no comparison can be made.
    Diff(crate::cmd::diff::DiffArgs),
    /// dnstap: collect what DNS servers log about their traffic, live, into a trace.
    #[command(subcommand)]
    Dnstap(DnstapCommand),
    /// Client populations: fit one to a real trace (its transport mix, per-client rates and
    /// gaps), for `replay --population`.
    #[command(subcommand)]
    Population(PopulationCommand),
}

#[derive(Debug, Subcommand)]
pub enum DnstapCommand {
    /// Listen on a Unix or TCP socket for servers' dnstap (Frame Streams, bi-directional
    /// handshake or not) and write what arrives as a trace until stopped (Ctrl-C, SIGTERM,
    /// --count, --seconds); every whole frame is kept when a writer disconnects.
    Listen(DnstapListenArgs),
}

#[derive(Debug, Args)]
pub struct DnstapListenArgs {
    /// Listen on a Unix socket at this path (Unbound's dnstap-socket-path, BIND's
    /// `dnstap-output unix`, Knot's sink).
    #[arg(
        long,
        value_name = "PATH",
        required_unless_present = "tcp",
        conflicts_with = "tcp"
    )]
    pub unix: Option<PathBuf>,
    /// Listen on this TCP address, HOST:PORT (Unbound's dnstap-ip; port 0 takes a free one,
    /// printed when listening).
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<std::net::SocketAddr>,
    /// Output format (default: from the output's name: .txt/.tsv text, .pcap pcap,
    /// .dnstap/.fstrm dnstap, else binary). A dnstap output keeps every frame as it arrived.
    #[arg(long, value_enum)]
    pub to: Option<OutFormat>,
    /// The dnstap message types written as records, comma-separated (default: all).
    #[arg(long, value_name = "TYPES", value_parser = dnstap_types)]
    pub dnstap_types: Option<ldplayer_trace::dnstap::DnstapTypes>,
    /// Stop after this many frames.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::values::queries)]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = crate::values::positive_seconds)]
    pub seconds: Option<f64>,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Subcommand)]
pub enum PopulationCommand {
    /// Measure a trace's clients (transport mix, per-client query rates, gaps between a
    /// client's queries) and write a population file that resembles it.
    Fit(PopulationFitArgs),
}

#[derive(Debug, Args)]
pub struct PopulationFitArgs {
    /// Input trace (`-` for standard input).
    pub input: PathBuf,
    /// The population file to write (TOML).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The seed of the population's assignment of clients to groups.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::values::seed)]
    pub seed: u64,
    /// Print what was measured as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}
