//! `ldplayer zones`: synthesizing, building and asking a hierarchy's zones, and their layout.

use super::{JobsArgs, ReadArgs};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

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
