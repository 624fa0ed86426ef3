//! `ldplayer replay`: the query engine's flags, the stack and the send-time clock.

use super::{dnstap_types, ProtoChoice};
use clap::{Args, ValueEnum};
use ldplayer_trace::{DohMethod, Stack};
use std::path::PathBuf;

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
    #[arg(long, value_enum, default_value_t = ProtoChoice::Keep)]
    pub proto: ProtoChoice,
    /// The HTTP method of DNS over HTTPS queries.
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = DohMethod::Post)]
    pub doh_method: DohMethod,
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
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = crate::values::key_update_packets, default_value_t = ldplayer_replay::DEFAULT_QUIC_KEY_UPDATE_PACKETS)]
    pub quic_key_update_packets: u64,
    /// The client stack of DoT, DoH and DoQ: `lean`, ldplayer's own (a few KiB per idle
    /// session), or `reference`, the stacks other clients use (rustls' ClientConnection, h2,
    /// quinn, h3), to hold a measurement against them in the same build.
    #[arg(long, value_enum, default_value_t = Stack::Lean)]
    pub stack: Stack,
    /// Where each query's send time comes from: `kernel`, the kernel's timestamp of its last
    /// packet (SO_TIMESTAMPING); `kernel-sampled`, over UDP the kernel's stamps of every 8th
    /// datagram of each batch sent together and of its last, the datagrams between timed by
    /// interpolation (a stamp costs the kernel a message and the querier a read); or `user`,
    /// the clock read before the send call (cheaper; on a busy or virtual machine tens of µs
    /// early). Default: `kernel`, with --fast `kernel-sampled`.
    #[arg(long, value_name = "SOURCE", value_enum)]
    pub send_times: Option<SendTimes>,
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

/// Where a replayed query's send time comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SendTimes {
    /// The kernel's timestamp of the query's last packet.
    Kernel,
    /// Over UDP, the kernel's timestamps of every 8th datagram of a batch sent together and of
    /// its last; the datagrams between are timed by interpolation between the two around them.
    KernelSampled,
    /// The clock read just before the send call.
    User,
}
