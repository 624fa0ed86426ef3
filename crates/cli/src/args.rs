//! Command-line arguments. The subcommands, flags and their names are an interface contract:
//! users' scripts rely on them, so add options freely but never rename or remove one.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// DNS experimentation at scale: convert, inspect, mutate and synthesize DNS traces, replay
/// them against real servers over UDP, TCP and TLS, serve zones, rebuild a hierarchy's zones
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

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Trace to replay: pcap, pcapng, dnstap, text or binary (`-` for standard input).
    pub trace: PathBuf,
    /// Server to query: HOST[:PORT] (port 53, or 853 for TLS and DoQ and 443 for DoH, when left
    /// out). Repeat to send every query of the trace to each server on the same schedule, each
    /// with its own sockets and connections, as if it were replayed alone; the results record
    /// which server (`target`, from 0 in this order), for `ldplayer diff`.
    #[arg(long, required = true)]
    pub server: Vec<String>,
    /// Where DNS over TLS queries go when the replay mixes transports (`--proto keep`, or
    /// `--population`): HOST:PORT. Default: --server's host on port 853 when --server gives no
    /// port, else --server itself.
    #[arg(long, value_name = "HOST:PORT")]
    pub tls_server: Option<String>,
    /// Where DNS over HTTPS queries go when the replay mixes transports: HOST:PORT. Default:
    /// --server's host on port 443 when --server gives no port, else --server itself.
    #[arg(long, value_name = "HOST:PORT")]
    pub https_server: Option<String>,
    /// Where DNS over QUIC queries go when the replay mixes transports: HOST:PORT (UDP).
    /// Default: --server's host on port 853 when --server gives no port, else --server itself.
    #[arg(long, value_name = "HOST:PORT")]
    pub quic_server: Option<String>,
    /// Transport: keep each query's own (from the trace or `mutate`), or force udp, tcp, tls,
    /// doh (DNS over HTTPS, HTTP/2) or doq (DNS over QUIC).
    #[arg(long, value_enum, default_value_t = Transport::Keep)]
    pub proto: Transport,
    /// The HTTP method of DNS over HTTPS queries.
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = DohMethodArg::Post)]
    pub doh_method: DohMethodArg,
    /// The path of the DoH server's URI template.
    #[arg(long, value_name = "PATH", default_value = "/dns-query")]
    pub doh_path: String,
    /// DNS over HTTPS on HTTP/3 (QUIC, UDP) instead of HTTP/2 (TLS over TCP), to the same
    /// --https-server address.
    #[arg(long)]
    pub doh_http3: bool,
    /// Scale the trace's timing: 2 replays twice as fast.
    #[arg(long, value_name = "K", conflicts_with_all = ["rate", "fast"], allow_negative_numbers = true, value_parser = crate::values::factor)]
    pub speed: Option<f64>,
    /// Pace queries evenly at this rate, ignoring the trace's times.
    #[arg(long, value_name = "QPS", conflicts_with = "fast", allow_negative_numbers = true, value_parser = crate::values::rate)]
    pub rate: Option<f64>,
    /// Send as fast as the server answers, with a bounded number of queries in flight.
    #[arg(long)]
    pub fast: bool,
    /// Ramp the offered load linearly from 0 to QPS over --ramp-s seconds (resperf's method,
    /// with the trace's own clients, each keeping its transport, connection and session
    /// profile): the trace's k-th query is due when the integral of the rate reaches k, and
    /// the trace's queries past the ramp's end are not sent. The summary gives the server's
    /// capacity (see --max-loss) and the results file keeps the ramp for `results summary`
    /// and `report`.
    #[arg(long, value_name = "QPS", conflicts_with_all = ["speed", "rate", "fast"], requires = "ramp_s", allow_negative_numbers = true, value_parser = crate::values::rate)]
    pub ramp_to: Option<f64>,
    /// The ramp's length (with --ramp-to).
    #[arg(long, value_name = "SECONDS", requires = "ramp_to", allow_negative_numbers = true, value_parser = crate::values::ramp_seconds)]
    pub ramp_s: Option<f64>,
    /// With --ramp-to: the capacity is the highest answer rate of the seconds before the first
    /// one that lost more than PCT% of its queries (resperf's -L; 100, its default: the
    /// highest answer rate of the whole ramp).
    #[arg(long, value_name = "PCT", requires = "ramp_to", allow_negative_numbers = true, value_parser = crate::values::percent)]
    pub max_loss: Option<f64>,
    /// With --ramp-to: the search for the capacity also stops at the first second whose
    /// latency (at --latency-percentile) exceeded MS milliseconds.
    #[arg(long, value_name = "MS", requires = "ramp_to", allow_negative_numbers = true, value_parser = crate::values::positive_ms)]
    pub max_latency_ms: Option<f64>,
    /// The percentile of each second's latencies that --max-latency-ms bounds (95).
    #[arg(long, value_name = "P", requires = "max_latency_ms", allow_negative_numbers = true, value_parser = crate::values::percentile)]
    pub latency_percentile: Option<f64>,
    /// Close a TCP, TLS or DoH connection after N queries and open a new one for the client's
    /// next query (dnsperf's --num-queries-per-conn); by default a connection is reused until
    /// idle.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::values::queries_per_connection)]
    pub queries_per_connection: Option<u64>,
    /// Exit with status 1 when the replay did not keep the trace's timing (timing error p99
    /// over 1 ms, or fewer than 90% of seconds within ±1% of the trace's rate); the summary
    /// says it either way.
    #[arg(long)]
    pub strict: bool,
    /// Queries in flight with --fast (at most; the window is topped up each time an eighth of
    /// it is answered).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub max_in_flight: usize,
    /// Write every query's result to this file (read it with `ldplayer results export`).
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// Keep every answer in the results file, byte for byte as received, with its result (on
    /// every transport), for `ldplayer diff`; the file grows by the answers' size.
    #[arg(long, requires = "results")]
    pub keep_answers: bool,
    /// When the replay is done, draw its report (as `ldplayer report`) into this HTML file,
    /// with its figures in a folder named after it beside it (`run.html`: `run-figures/`). Needs
    /// --results.
    #[arg(long, value_name = "FILE", requires = "results")]
    pub report: Option<PathBuf>,
    /// Print the end-of-run summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Querier threads (each original client always goes to the same one).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::values::queriers)]
    pub queriers: Option<usize>,
    /// Pin querier threads to these cores, e.g. 1 or 0,1; ldplayer's other threads (reader,
    /// result writer, progress) then keep off them, so each querier has its core to itself.
    #[arg(long, value_delimiter = ',')]
    pub pin: Vec<usize>,
    /// Run the querier threads with real-time priority (SCHED_FIFO) where permitted (root or
    /// CAP_SYS_NICE); says so when refused and runs at normal priority.
    #[arg(long)]
    pub realtime: bool,
    /// Seconds to wait for an answer.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0, allow_negative_numbers = true, value_parser = crate::values::positive_seconds)]
    pub timeout: f64,
    /// Retries of a UDP query that timed out.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = crate::values::retries)]
    pub udp_retries: u32,
    /// Seconds a TCP/TLS connection may stay idle before it is closed (serve has the same flag).
    #[arg(long, value_name = "SECONDS", default_value_t = 20.0, allow_negative_numbers = true, value_parser = crate::values::seconds)]
    pub idle_timeout: f64,
    /// Replay only shard I of N (from 0) of the trace's clients, every query of a client in
    /// the same shard; `auto` takes the shard from a Kubernetes Indexed Job, a Slurm array or
    /// LDPLAYER_SHARD=I/N. Merge the shards' results with `ldplayer results merge`.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// Replay the trace as this population (see docs/cli.md, "population"): each client's queries
    /// go over the transport of the group the population file assigns it to.
    #[arg(long, value_name = "FILE", conflicts_with = "proto")]
    pub population: Option<PathBuf>,
    /// Run the replay as N shards in N child processes of this host (each with its own
    /// open-file limit and, with --pin, its own core) and merge their results into --results.
    #[arg(long, value_name = "N", conflicts_with = "shard", allow_negative_numbers = true, value_parser = crate::values::processes)]
    pub processes: Option<u32>,
    /// The number of shards, for `--shard auto` in a Kubernetes Indexed Job (its completions;
    /// or set LDPLAYER_SHARDS).
    #[arg(long, value_name = "N", requires = "shard", allow_negative_numbers = true, value_parser = crate::values::shards)]
    pub shards: Option<u32>,
    /// Start the trace at this instant of this host's clock (RFC 3339, e.g.
    /// 2026-11-24T01:00:00Z, or Unix seconds), so that shards on several processes or hosts
    /// keep one schedule (original timing: the trace's first query is sent then).
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub start_at: Option<String>,
    /// With --start-at: how many seconds late a shard may still begin, keeping its place in the
    /// shared schedule (the queries due before it began are not sent but recorded as
    /// late-start, and it says by how much); later than that, it refuses to start.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, allow_negative_numbers = true, value_parser = crate::values::seconds)]
    pub late_start: f64,
    /// Do not retry truncated (TC=1) UDP answers over TCP.
    #[arg(long)]
    pub no_tc_retry: bool,
    /// Ignore the EDNS TCP keepalive timeouts servers send.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Give each original client its own local address from this prefix (e.g. 127.0.0.0/8),
    /// lifting the 64k-port limit.
    #[arg(long, value_name = "CIDR")]
    pub source_prefix: Option<String>,
    /// Send each client's queries from its original address, as in the trace. Every address
    /// must be local (`ip route add local 0.0.0.0/0 dev lo` in a namespace of its own, as
    /// `experiment` does); unusable ones (loopback, the other family...) get stand-ins in
    /// 198.18.0.0/15.
    #[arg(long, conflicts_with = "source_prefix")]
    pub original_sources: bool,
    /// PEM file of the CA that signed the TLS server's certificate.
    #[arg(long, value_name = "PEM")]
    pub tls_ca: Option<PathBuf>,
    /// Accept any TLS certificate (test servers only).
    #[arg(long)]
    pub tls_insecure: bool,
    /// Server name to send and verify in TLS (default: the --server host).
    #[arg(long)]
    pub tls_name: Option<String>,
    /// Do not resume TLS sessions.
    #[arg(long)]
    pub no_tls_resume: bool,
    /// Do not send DoQ queries in 0-RTT on resumed sessions (they wait for the handshake).
    #[arg(long)]
    pub no_zero_rtt: bool,
    /// The lean QUIC stack (DoQ, DoH over HTTP/3) updates its keys (RFC 9001 §6) after this
    /// many packets sent with the same keys, as quinn and quic-go clients do; 0: none before
    /// the cipher's confidentiality limit (RFC 9001 §6.6, millions of packets).
    #[arg(long, value_name = "N", default_value_t = ldplayer_replay::DEFAULT_QUIC_KEY_UPDATE_PACKETS)]
    pub quic_key_update_packets: u64,
    /// The client stack of DoT, DoH and DoQ: `lean`, ldplayer's own (a few KiB per idle
    /// session), or `reference`, the stacks other clients use (rustls' ClientConnection, h2,
    /// quinn, h3), to hold a measurement against them in the same build.
    #[arg(long, value_enum, default_value_t = StackArg::Lean)]
    pub stack: StackArg,
    /// Where each query's send time comes from: `kernel`, the kernel's timestamp of its last
    /// packet (SO_TIMESTAMPING, one more system call per query), or `user`, the clock read
    /// before the send call (cheaper; on a busy or virtual machine tens of µs early).
    #[arg(long, value_name = "SOURCE", value_enum, default_value_t = SendTimes::Kernel)]
    pub send_times: SendTimes,
    /// UDP/TCP port carrying DNS in captures (repeat for several).
    #[arg(long = "dns-port", value_name = "PORT", default_values_t = [53u16], allow_negative_numbers = true, value_parser = crate::values::port)]
    pub dns_ports: Vec<u16>,
    /// Do not send malformed queries (skip them, counted by their `dns-*` reason).
    #[arg(long)]
    pub drop_malformed: bool,
    /// The dnstap message types replayed from a dnstap log, comma-separated (or `all`).
    /// Default: CLIENT_QUERY,CLIENT_RESPONSE.
    #[arg(long, value_name = "TYPES", value_parser = dnstap_types)]
    pub dnstap_types: Option<ldplayer_trace::dnstap::DnstapTypes>,
    /// Print nothing but errors (with --json, only the JSON summary).
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to answer on, e.g. 127.0.0.1:5300 (repeat for several). Required in plain mode;
    /// with --manifest the default is 0.0.0.0:53 and [::]:53.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Vec<std::net::SocketAddr>,
    /// Zone files (plain mode: every zone on every listen address); each zone's origin comes
    /// from `$ORIGIN` or its SOA, or is given as `FILE@ORIGIN` (for a file whose names are
    /// relative, `@` among them, and that sets no `$ORIGIN`, as nsd's `zone: name:` gives it).
    #[arg(
        value_name = "ZONEFILE",
        required_unless_present = "manifest",
        conflicts_with = "manifest"
    )]
    pub zones: Vec<PathBuf>,
    /// Split mode: a manifest of nameserver addresses and the zone files each serves; every
    /// query is answered from the zones of the address it was sent to, other addresses are
    /// refused (see docs/formats.md).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Port of the default listen addresses with --manifest.
    #[arg(long, default_value_t = 53, allow_negative_numbers = true, value_parser = crate::values::port_or_any)]
    pub port: u16,
    /// UDP worker threads per listen address.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub udp_workers: usize,
    /// Do not answer over TCP.
    #[arg(long)]
    pub no_tcp: bool,
    /// Minimal responses: no authority NS in positive answers, as knot does.
    #[arg(long)]
    pub minimal_responses: bool,
    /// Seconds an idle TCP connection is kept (the same name and default as replay's).
    #[arg(
        long = "idle-timeout",
        visible_alias = "tcp-idle-timeout",
        value_name = "SECONDS",
        default_value_t = ldplayer_server::DEFAULT_TCP_IDLE_TIMEOUT.as_secs_f64(),
        allow_negative_numbers = true,
        value_parser = crate::values::seconds
    )]
    pub tcp_idle_timeout: f64,
    /// Write the counters every second to this file, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Answer DNS over TLS (RFC 7858) on this address too, e.g. 127.0.0.1:853 (repeat for
    /// several); needs --tls-cert and --tls-key, or --tls-self-signed.
    #[arg(long, value_name = "ADDR:PORT")]
    pub tls_listen: Vec<std::net::SocketAddr>,
    /// Answer DNS over HTTPS (RFC 8484, HTTP/2: GET ?dns= and POST application/dns-message) on
    /// this address too, e.g. 127.0.0.1:443 (repeat for several); needs the same certificate
    /// options as --tls-listen.
    #[arg(long, value_name = "ADDR:PORT")]
    pub https_listen: Vec<std::net::SocketAddr>,
    /// Answer DNS over QUIC (RFC 9250, ALPN doq, 0-RTT on resumed sessions) on this UDP
    /// address too, e.g. 127.0.0.1:853 (repeat for several); needs the same certificate options
    /// as --tls-listen.
    #[arg(long, value_name = "ADDR:PORT")]
    pub quic_listen: Vec<std::net::SocketAddr>,
    /// The path DNS over HTTPS is served on; other paths are answered 404.
    #[arg(long, value_name = "PATH", default_value = ldplayer_server::DEFAULT_DOH_PATH)]
    pub doh_path: String,
    /// Most DNS-over-HTTPS connections, and most DNS-over-QUIC connections, open at once (each);
    /// more are closed as soon as accepted (DoH) or refused (DoQ).
    #[arg(long, value_name = "N", default_value_t = 1024, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub max_encrypted_connections: usize,
    /// The TLS certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Make a throw-away CA and a server certificate it signs (for the TLS and HTTPS addresses, the
    /// manifest's nameserver addresses and localhost) in this directory: ca.pem (for clients
    /// to trust, e.g. kdig +tls-ca=DIR/ca.pem), server.pem and server.key.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    /// The hierarchy: nameserver addresses and their zone files (e.g. from `zones build`).
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// Root hints for the resolver (default: made from the root zone in the manifest).
    #[arg(long, value_name = "FILE")]
    pub hints: Option<PathBuf>,
    /// The recursive resolver to run.
    #[arg(long, value_enum, default_value_t = RecursiveResolver::Unbound)]
    pub resolver: RecursiveResolver,
    /// The nameservers: ldplayer's meta-server, or one nsd per address (ground truth).
    #[arg(long, value_enum, default_value_t = Nameservers::Ldplayer)]
    pub nameservers: Nameservers,
    /// Names to resolve one after the other: `name [type] [+flag]...` per line (type A by
    /// default; flags +rd, +ad, +cd, +do, or +no before one: RD and AD unless turned off).
    #[arg(long, value_name = "FILE", required_unless_present_any = ["trace", "stage"], conflicts_with = "trace")]
    pub names: Option<PathBuf>,
    /// Write what the resolver answered for each name here (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// A trace to replay at the resolver with the query engine (its timing, or --rate).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// With --trace: pace queries evenly at this rate.
    #[arg(long, value_name = "QPS", allow_negative_numbers = true, value_parser = crate::values::rate)]
    pub rate: Option<f64>,
    /// With --trace: replay results file.
    #[arg(long, value_name = "FILE")]
    pub results: Option<PathBuf>,
    /// With --trace: the transport from the stub clients to the resolver: udp, tcp, tls (the
    /// resolver on 127.0.0.1:853), doh (HTTP/2 on 127.0.0.1:443, `/dns-query`), or keep (each
    /// record's own). The resolver serves TLS and HTTPS with a certificate the lab makes.
    #[arg(long, value_enum, default_value_t = Transport::Udp, requires = "trace")]
    pub proto: Transport,
    /// With --trace: replay the trace as this population (see docs/cli.md, "population"):
    /// each client over its group's transport with its group's session profile.
    #[arg(
        long,
        value_name = "FILE",
        requires = "trace",
        conflicts_with = "proto"
    )]
    pub population: Option<PathBuf>,
    /// Print the summary as one JSON object: with --trace the replay's, with --names how many
    /// names were resolved (the answers then need --answers).
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors (and the answers, without --answers).
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
    /// Validate DNSSEC with this trust anchor for the root: a file of DS or DNSKEY records, or
    /// `auto` for the key-signing keys of the emulated root zone.
    #[arg(long, value_name = "FILE|auto")]
    pub trust_anchor: Option<String>,
    /// With --trust-anchor: the moment the resolver validates at (RFC 3339, Unix seconds, or
    /// YYYYMMDDHHMMSS as in RRSIGs), e.g. the capture's time, when the recorded signatures have
    /// expired since. Unbound takes it as an option; the other resolvers run under faketime.
    #[arg(
        long,
        value_name = "TIME",
        requires = "trust_anchor",
        allow_negative_numbers = true
    )]
    pub time: Option<String>,
    /// With --trust-anchor: a domain not to validate (a negative trust anchor; repeat for
    /// several), as Deckard's `domain-insecure`.
    #[arg(long, value_name = "DOMAIN", requires = "trust_anchor")]
    pub insecure: Vec<String>,
    /// Capture the resolver's upstream traffic (the link between the namespaces) to this pcap.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
    /// Collect the resolver's own log of its upstream traffic (its dnstap RESOLVER_QUERY and
    /// RESOLVER_RESPONSE messages, sent to a collector on a Unix socket) into this binary
    /// trace, e.g. upstream.bin: a second witness beside --capture and the meta-server's
    /// counts (unbound only).
    #[arg(long, value_name = "FILE")]
    pub dnstap: Option<PathBuf>,
    /// Keep configurations and logs here (default: a temporary directory, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Internal: which namespace this process runs in.
    #[arg(long, hide = true, value_enum)]
    pub stage: Option<LabStage>,
}

#[derive(Debug, Subcommand)]
pub enum ZonesCommand {
    /// Rebuild the zones of every level (root, TLDs, SLDs) from captures of a recursive
    /// resolver's upstream traffic, or from Deckard scenarios (.rpl: each nameserver address's
    /// recorded answers); writes the zones (root.zone and one bundle per level, or with
    /// `--layout files` a file per zone and a BIND configuration with views), a manifest for
    /// `serve --manifest` and root hints into DIR.
    Build(ZonesBuildArgs),
    /// Print a Deckard scenario's queries for `ldplayer lab --names`, or its expected answers.
    ///
    /// Without --expected: the names file for `ldplayer lab --names`, one line
    /// `NAME TYPE +rd|+nord +ad|+noad +cd|+nocd +do|+nodo  # STEP n` per QUERY step: the
    /// query's flags as the scenario sends them (RD, AD, CD in the header, DO in EDNS).
    ///
    /// With --expected: one line per CHECK_ANSWER step, for the last QUERY step before it,
    /// `NAME TYPE RCODE [AD] record; record; ...`: records in presentation format without TTL,
    /// owner, class and type in lowercase, sorted, exactly as the lab prints the resolver's
    /// answer; AD where the check compares flags and expects it. RRSIG records are left out
    /// unless the query asks with DO (or for RRSIG): without DO, resolvers do not return them.
    ///
    /// A scenario checks its hierarchy through the lab (--lab-options: the trust anchor, date
    /// and insecure domains its CONFIG gives, without which a DNSSEC scenario is not
    /// validated as recorded):
    ///
    ///   ldplayer zones build s.rpl -o zones
    ///   ldplayer zones deckard-queries s.rpl --lab-options opts > names
    ///   ldplayer zones deckard-queries s.rpl --expected > expected
    ///   ldplayer lab --manifest zones/manifest --names names --answers answers $(cat opts)
    ///   diff expected answers
    ///
    /// When every QUERY step is followed by a CHECK_ANSWER step (as in the scenarios of
    /// Deckard's sets/resolver), the two files have their lines in the same order.
    #[command(verbatim_doc_comment)]
    DeckardQueries(ZonesDeckardArgs),
    /// Write a synthetic hierarchy (root, TLDs, second-level zones with a wildcard) in the
    /// layout of `zones build`: zone files, a manifest for `serve --manifest` and `lab`, root
    /// hints, a BIND configuration; nameservers in 10.0.0.0/8; optionally DNSSEC-signed.
    Synth(ZonesSynthArgs),
}

#[derive(Debug, Args)]
pub struct ZonesSynthArgs {
    /// Output directory (created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// TLDs under the root: the root-like workload's 30 first (com, net, arpa, ...), then
    /// tld30, tld31, ...
    #[arg(long, value_name = "N", default_value_t = 30, allow_negative_numbers = true, value_parser = crate::values::count_from_zero)]
    pub tlds: usize,
    /// Second-level zones under each TLD (sld0, sld1, ...).
    #[arg(long, value_name = "N", default_value_t = 10, allow_negative_numbers = true, value_parser = crate::values::count_from_zero)]
    pub slds: usize,
    /// Nameserver addresses the second-level zones are shared among (round robin).
    #[arg(long, value_name = "P", default_value_t = 16, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub providers: usize,
    /// Sign the root and every TLD with ldnsutils (keys in DIR/keys); second-level zones stay
    /// unsigned (insecure delegations).
    #[arg(long)]
    pub sign: bool,
    /// Sign with NSEC3 (no salt, no extra iterations, no opt-out) instead of NSEC; implies
    /// --sign.
    #[arg(long)]
    pub nsec3: bool,
    /// How the zones are laid out in DIR (see `zones build --layout`); `files` (one zone file
    /// per zone, and named.conf) by default here.
    #[arg(long, value_enum, default_value_t = ZoneLayout::Files)]
    pub layout: ZoneLayout,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ZonesDeckardArgs {
    /// The Deckard scenario (.rpl).
    pub scenario: PathBuf,
    /// Print the expected answers of the CHECK_ANSWER steps instead of the queries.
    #[arg(long)]
    pub expected: bool,
    /// Also write the `ldplayer lab` arguments the scenario's CONFIG asks for here, one per
    /// line (`--trust-anchor FILE.anchor` with its trust anchors, `--time` its
    /// val-override-date, `--insecure` its domain-insecure), for `ldplayer lab ... $(cat FILE)`.
    #[arg(long, value_name = "FILE")]
    pub lab_options: Option<PathBuf>,
    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print nothing but the names (or answers) and errors: no notes about the scenario.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ZonesBuildArgs {
    /// Captures or traces holding the nameservers' responses (pcap, pcapng, text, binary, or a
    /// resolver's dnstap log, of which RESOLVER_RESPONSE messages are read by default), or
    /// Deckard scenarios (.rpl, or any file with a CONFIG_END line): every RANGE entry is taken
    /// as a response from each ADDRESS of its range (an entry with answers but neither AA nor
    /// RA is taken as authoritative). The scenarios' stub-addr (the resolver's root hints)
    /// serve the root from the start; when the rebuilt root zone has no NS records, its NS set
    /// is made from them, named by a recorded name with that address or
    /// stub-addr-N.deckard.invalid. (reported on standard error). Several captures or traces
    /// are read as one, after the scenarios (see `convert`).
    #[arg(required_unless_present = "zone")]
    pub inputs: Vec<PathBuf>,
    /// An existing zone file, taken as it is (repeat for several; `FILE@ORIGIN` when its names
    /// are relative without an `$ORIGIN`). Its zone is served by the addresses of its apex NS
    /// names found in any of the zones (the root zone's glue gives the root servers' and the
    /// TLD servers' addresses), and by --zone-server. It replaces a zone of the same name
    /// rebuilt from the inputs.
    #[arg(long, value_name = "FILE")]
    pub zone: Vec<String>,
    /// Serve zone ZONE at ADDRESS too, e.g. `example.com=192.0.2.53` (repeat for several).
    #[arg(long, value_name = "ZONE=ADDRESS")]
    pub zone_server: Vec<String>,
    /// Output directory (created if missing).
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// How the zones are laid out in DIR: `bundles` (root.zone, and the other zones in one
    /// file per level, level1.zones for the TLDs, level2.zones below them...: few files
    /// whatever the number of zones; read by `serve --manifest` and `lab`), or `files` (one
    /// zone file per zone and named.conf, for BIND and nsd).
    #[arg(long, value_enum, default_value_t = ZoneLayout::Bundles)]
    pub layout: ZoneLayout,
    /// Print the build report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "json")]
    pub quiet: bool,
    #[command(flatten)]
    pub jobs: JobsArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

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

/// How `zones build` and `zones synth` lay the zones out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ZoneLayout {
    /// root.zone, and the other zones in one bundle per level (levelN.zones).
    Bundles,
    /// One zone file per zone, and named.conf.
    Files,
}

impl From<ZoneLayout> for ldplayer_zonebuild::Layout {
    fn from(l: ZoneLayout) -> Self {
        match l {
            ZoneLayout::Bundles => ldplayer_zonebuild::Layout::Bundles,
            ZoneLayout::Files => ldplayer_zonebuild::Layout::Files,
        }
    }
}

/// A transport to force, or `keep` each message's own (`--proto`): the experiment plans'
/// `proto` too.
pub use ldplayer_trace::ProtoChoice as Transport;

/// The HTTP method of DNS-over-HTTPS queries (`replay --doh-method`): the one the replay,
/// population files and plans name.
pub use ldplayer_trace::DohMethod as DohMethodArg;

/// The client stack of the encrypted transports (`replay --stack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StackArg {
    /// ldplayer's own lean stacks.
    Lean,
    /// rustls' ClientConnection (DoT), h2 (DoH), quinn (DoQ) and h3 (DoH over HTTP/3).
    Reference,
}

/// Where a replayed query's send time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SendTimes {
    /// The kernel's timestamp of the query's last packet.
    Kernel,
    /// The clock read just before the send call.
    User,
}

/// The recursive resolvers the lab can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecursiveResolver {
    /// Unbound (Debian package unbound).
    Unbound,
    /// Knot Resolver, kresd (knot-resolver).
    KnotResolver,
    /// BIND's named (bind9).
    Bind9,
    /// PowerDNS Recursor (pdns-recursor).
    PdnsRecursor,
}

impl RecursiveResolver {
    /// The lab's name for it.
    pub fn kind(self) -> ldplayer_lab::ResolverKind {
        match self {
            RecursiveResolver::Unbound => ldplayer_lab::ResolverKind::Unbound,
            RecursiveResolver::KnotResolver => ldplayer_lab::ResolverKind::KnotResolver,
            RecursiveResolver::Bind9 => ldplayer_lab::ResolverKind::Bind9,
            RecursiveResolver::PdnsRecursor => ldplayer_lab::ResolverKind::PdnsRecursor,
        }
    }
}

/// The nameservers the lab's server side runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Nameservers {
    /// ldplayer's meta-server, one process answering for every address.
    Ldplayer,
    /// One nsd per nameserver address (ground truth).
    Nsd,
}

impl Nameservers {
    /// The lab's name for it.
    pub fn kind(self) -> ldplayer_lab::NameserverKind {
        match self {
            Nameservers::Ldplayer => ldplayer_lab::NameserverKind::Meta,
            Nameservers::Nsd => ldplayer_lab::NameserverKind::Nsd,
        }
    }
}

/// Which of the lab's namespaces a re-run `lab` process is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LabStage {
    /// The resolver side.
    Resolver,
    /// The server side.
    Server,
}

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

/// Synthetic workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Fixed inter-arrival time (`--interval`) and unique names: the paper's syn-0..syn-4.
    Fixed,
    /// Poisson arrivals at `--rate` queries per second.
    Poisson,
    /// A root-server-like workload at `--rate`: heavy-tailed clients, junk names, a qtype mix.
    Root,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Output format (default: from the output's extension: .txt/.tsv text, .pcap pcap, else binary).
    #[arg(long, value_enum)]
    pub to: Option<OutFormat>,
    #[command(flatten)]
    pub write: WriteArgs,
    /// Workload shape.
    #[arg(long, value_enum, default_value_t = Workload::Fixed)]
    pub workload: Workload,
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
    pub proto: Option<Transport>,
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
