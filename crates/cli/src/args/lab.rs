//! `ldplayer lab`: the resolver, the nameservers and the stage of a lab run.

use super::ProtoChoice;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

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
    #[arg(long, value_enum, default_value_t = ProtoChoice::Udp, requires = "trace")]
    pub proto: ProtoChoice,
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
