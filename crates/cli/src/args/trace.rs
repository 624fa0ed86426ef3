//! The trace commands (`convert`, `inspect`, `synth`, `mutate`) and the reading and writing
//! flags they share.

use super::ProtoChoice;
use clap::{Args, ValueEnum};
use ldplayer_synth::WorkloadKind;
use std::path::PathBuf;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutFormat {
    /// Tab-separated text, one line per message.
    Text,
    /// Length-prefixed binary records.
    Binary,
    /// A pcap capture (opens in Wireshark).
    Pcap,
    /// A dnstap file (Frame Streams of dnstap messages, as servers log): CLIENT_QUERY and
    /// CLIENT_RESPONSE messages.
    Dnstap,
}

/// Options for reading captures.
#[derive(Debug, Clone, Args)]
pub struct ReadArgs {
    /// UDP/TCP port carrying DNS in captures (repeat for several).
    #[arg(long = "dns-port", value_name = "PORT", default_values_t = [53u16], allow_negative_numbers = true, value_parser = crate::values::port)]
    pub dns_ports: Vec<u16>,
    /// Keep only queries.
    #[arg(long, conflicts_with = "responses_only")]
    pub queries_only: bool,
    /// Keep only responses.
    #[arg(long)]
    pub responses_only: bool,
    /// Skip malformed messages (counted by their `dns-*` reason) instead of keeping them.
    #[arg(long)]
    pub drop_malformed: bool,
    /// The dnstap message types read from dnstap logs, comma-separated (or `all`): the others
    /// are counted, not read. Default: CLIENT_QUERY,CLIENT_RESPONSE (what the server was asked
    /// and answered); RESOLVER_RESPONSE for `zones build`.
    #[arg(long, value_name = "TYPES", value_parser = dnstap_types)]
    pub dnstap_types: Option<ldplayer_trace::dnstap::DnstapTypes>,
}

impl ReadArgs {
    /// Reading every message (queries and responses, malformed ones kept, dnstap's default
    /// types) on `dns_ports`: what commands that read a trace of their own choosing want.
    pub fn every_message(dns_ports: Vec<u16>) -> Self {
        ReadArgs {
            dns_ports,
            queries_only: false,
            responses_only: false,
            drop_malformed: false,
            dnstap_types: None,
        }
    }
}

/// Parses `--dnstap-types`.
pub fn dnstap_types(s: &str) -> Result<ldplayer_trace::dnstap::DnstapTypes, String> {
    s.parse()
}

impl From<&ReadArgs> for ldplayer_trace::open::ReadOptions {
    /// The reading half of the arguments (`--queries-only` and `--responses-only` filter
    /// later, see `QrFilter`); notes go to standard error.
    fn from(read: &ReadArgs) -> Self {
        ldplayer_trace::open::ReadOptions {
            dns_ports: read.dns_ports.clone(),
            drop_malformed: read.drop_malformed,
            dnstap_types: read.dnstap_types.unwrap_or_default(),
            ..Default::default()
        }
    }
}

/// How many files are decoded at once, for commands that read many.
#[derive(Debug, Clone, Args)]
pub struct JobsArgs {
    /// Decode up to N input files at once, each on a core of its own (default: the cores this
    /// process may use).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::values::jobs)]
    pub jobs: Option<usize>,
}

impl JobsArgs {
    /// The number of files decoded at once: `--jobs`, or the cores available.
    pub fn get(&self) -> usize {
        self.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
    }
}

/// Output options shared by commands that write traces.
#[derive(Debug, Clone, Args)]
pub struct WriteArgs {
    /// Output file (`-` for standard output). A `.gz`, `.xz` or `.zst` suffix compresses it.
    #[arg(short, long, value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Do not show progress or the final summary (errors only).
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the final summary as one JSON object on standard output (the output must then be
    /// a file).
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
}

impl WriteArgs {
    /// True when nothing but errors and the JSON summary may be printed.
    pub fn silent(&self) -> bool {
        self.quiet || self.json
    }

    /// Refuses `--json` with `-o -`: the trace and the summary would share standard output.
    pub fn check_json(&self) -> anyhow::Result<()> {
        if self.json && self.output.as_os_str() == "-" {
            anyhow::bail!("--json prints on standard output: give the trace another -o than -");
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input traces (`-` for standard input). Several files (a day of rotated captures) are read
    /// as one: merged in time order, TCP streams and IP fragments crossing a file boundary
    /// reassembled, gaps and overlaps between files reported.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub jobs: JobsArgs,
    /// Output format (default: from the output's name: .txt/.tsv text, .pcap pcap,
    /// .dnstap/.fstrm dnstap, .bin binary).
    #[arg(long, value_enum)]
    pub to: Option<OutFormat>,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Input traces (`-` for standard input); several are read as one (see `convert`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub jobs: JobsArgs,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors (the exit status tells whether the trace could be read).
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Output format (default: from the output's extension: .txt/.tsv text, .pcap pcap, else binary).
    #[arg(long, value_enum)]
    pub to: Option<OutFormat>,
    #[command(flatten)]
    pub write: WriteArgs,
    /// Workload shape: `fixed` sends one query every `--interval`, `poisson` and `root` at
    /// `--rate` on average.
    #[arg(long, value_enum, default_value_t = WorkloadKind::Fixed)]
    pub workload: WorkloadKind,
    /// Inter-arrival time of the fixed workload, seconds (syn-0..syn-4: 1, 0.1, 0.01, 0.001, 0.0001).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.001, allow_negative_numbers = true, value_parser = crate::values::positive_seconds)]
    pub interval: f64,
    /// Queries per second of the Poisson and root workloads.
    #[arg(long, value_name = "QPS", default_value_t = 10_000.0, allow_negative_numbers = true, value_parser = crate::values::rate)]
    pub rate: f64,
    /// Number of queries.
    #[arg(long, short = 'n', default_value_t = 10_000, allow_negative_numbers = true, value_parser = crate::values::queries)]
    pub count: u64,
    /// Stop after this many seconds of trace time, if sooner than `--count`.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::values::positive_seconds)]
    pub duration: Option<f64>,
    /// Random seed: the same seed gives the same trace.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::values::seed)]
    pub seed: u64,
    /// Number of distinct clients.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::values::clients)]
    pub clients: Option<u64>,
    /// Share of queries with the DO bit set (0..1).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true, value_parser = crate::values::fraction)]
    pub do_share: Option<f64>,
    /// Share of clients that use TCP (0..1).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true, value_parser = crate::values::fraction)]
    pub tcp_share: Option<f64>,
    /// Query type mix, e.g. `A=45,AAAA=20,NS=5` (weights).
    #[arg(long)]
    pub qtypes: Option<String>,
    /// Zone under which unique names are made.
    #[arg(long)]
    pub zone: Option<String>,
    /// Server address the queries go to.
    #[arg(long)]
    pub server: Option<std::net::SocketAddr>,
    /// Start time, seconds since the epoch.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::values::time)]
    pub start: Option<f64>,
    /// Set the RD bit (queries from stubs rather than from resolvers).
    #[arg(long)]
    pub rd: bool,
    /// Generate the clients of this population file (see docs/cli.md#population): its
    /// `clients` (or --clients), each in its group by address, sending Poisson arrivals at a
    /// rate drawn from its group's distribution, over its group's transport; --count and
    /// --duration bound the trace as usual. Replaces --workload, --rate and --tcp-share.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tcp_share", "interval"])]
    pub population: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct MutateArgs {
    /// Input trace (`-` for standard input).
    pub input: PathBuf,
    /// Output format (default: from the output's extension, else binary).
    #[arg(long, value_enum)]
    pub to: Option<OutFormat>,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub read: ReadArgs,
    /// Seed of every random or keyed choice.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::values::seed)]
    pub seed: u64,
    /// Set the transport (keep: leave each message's own).
    #[arg(long, value_name = "PROTO", value_enum)]
    pub proto: Option<ProtoChoice>,
    /// Change the transport of only this fraction of clients (chosen per client).
    #[arg(long, value_name = "FRACTION", requires = "proto", allow_negative_numbers = true, value_parser = crate::values::fraction)]
    pub proto_fraction: Option<f64>,
    /// Set the DO bit, on all queries or on this fraction of them.
    #[arg(
        long,
        value_name = "FRACTION",
        num_args = 0..=1,
        default_missing_value = "1",
        allow_negative_numbers = true, value_parser = crate::values::fraction
    )]
    pub set_do: Option<f64>,
    /// Clear the DO bit.
    #[arg(long, conflicts_with = "set_do")]
    pub clear_do: bool,
    /// Set the RD (recursion desired) bit of every query: stub traffic for a resolver.
    #[arg(long)]
    pub set_rd: bool,
    /// Clear the RD bit of every query: traffic for an authoritative server.
    #[arg(long, conflicts_with = "set_rd")]
    pub clear_rd: bool,
    /// Set the EDNS UDP payload size (where there is EDNS).
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true, value_parser = crate::values::bufsize)]
    pub bufsize: Option<u16>,
    /// Add EDNS (version 0) where missing.
    #[arg(long)]
    pub add_edns: bool,
    /// Remove EDNS.
    #[arg(long, conflicts_with_all = ["add_edns", "set_do", "bufsize"])]
    pub strip_edns: bool,
    /// Prefix a unique label (PREFIX + sequence number in hex) to every qname.
    #[arg(long, value_name = "PREFIX", num_args = 0..=1, default_missing_value = "ldp")]
    pub unique_names: Option<String>,
    /// Multiply time offsets from the trace start by K (2 = half the rate).
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = crate::values::factor)]
    pub time_scale: Option<f64>,
    /// Shift all times by this many seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::values::shift)]
    pub time_shift: Option<f64>,
    /// Keep only messages at or after this many seconds from the trace start.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::values::time)]
    pub from: Option<f64>,
    /// Keep only messages before this many seconds from the trace start.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::values::time)]
    pub until: Option<f64>,
    /// Keep only clients in this prefix (repeat for several), e.g. 10.0.0.0/8.
    #[arg(long = "client", value_name = "CIDR")]
    pub clients: Vec<String>,
    /// Keep only these query types (repeat or comma-separate).
    #[arg(long = "qtype", value_name = "TYPE", value_delimiter = ',')]
    pub qtypes: Vec<String>,
    /// Keep only names at or under this suffix (repeat for several).
    #[arg(long = "qname-suffix", value_name = "NAME")]
    pub qname_suffixes: Vec<String>,
    /// Keep this fraction of clients (chosen per client).
    #[arg(long, value_name = "FRACTION", allow_negative_numbers = true, value_parser = crate::values::fraction)]
    pub keep_clients: Option<f64>,
    /// Anonymize client addresses, prefix-preserving, keyed with KEY.
    #[arg(long, value_name = "KEY")]
    pub anonymize: Option<String>,
}
