//! `ldplayer inspect INPUT... [--jobs N] [--json | -q]`

use crate::args::InspectArgs;
use crate::io::{open_inputs, QrFilter};
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};
use ldplayer_dns::DnsError;
use ldplayer_dnstap::Census;
use ldplayer_inspect::Inspector;
use ldplayer_population::{Fitter, Quantiles};
use ldplayer_trace::capture::TunnelCounts;
use ldplayer_trace::dnstap::DnstapTypes;
use ldplayer_trace::open::{Notes, ReadNote};
use ldplayer_trace::{Record, Sink, SinkError, SkipReason};
use std::sync::{Arc, Mutex};

/// Feeds the inspector and the population fitter (per-client rates and gaps) in one pass.
struct Both<'a> {
    inspector: &'a mut Inspector,
    fitter: &'a mut Fitter,
}

impl Sink for Both<'_> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.inspector.record(record)?;
        self.fitter.record(record)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.inspector.skipped(reason, location)
    }
    fn malformed(&mut self, error: DnsError, location: u64) {
        self.inspector.malformed(error, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inspector.finish()?;
        self.fitter.finish()
    }
}

/// `inspect --json`: the summary's keys in their order, then the per-client statistics.
#[derive(serde::Serialize)]
struct InspectJson<'a> {
    #[serde(flatten)]
    summary: &'a ldplayer_inspect::Summary,
    client_rate_qps: Option<Quantiles>,
    client_gap_s: Option<Quantiles>,
    /// Packets taken out of each kind of tunnel (`vxlan`, `geneve`, `gre`, `ipip`).
    tunnels: std::collections::BTreeMap<&'static str, u64>,
    /// Several input files: each in time order with its times, and the gaps and overlaps.
    #[serde(skip_serializing_if = "Option::is_none")]
    inputs: Option<serde_json::Value>,
    /// A dnstap log's messages by type and identity (dnstap input only).
    #[serde(skip_serializing_if = "Option::is_none")]
    dnstap: Option<DnstapJson>,
}

/// `inspect --json`'s `dnstap` object.
#[derive(serde::Serialize)]
struct DnstapJson {
    /// Messages by dnstap type, every type counted.
    types: std::collections::BTreeMap<&'static str, u64>,
    /// Messages by identity (`""` for messages naming none).
    identities: std::collections::BTreeMap<String, u64>,
    /// Messages of identities past the first `ldplayer_dnstap::MAX_IDENTITIES`.
    other_identities: u64,
    /// The types read as records (`--dnstap-types`).
    read_types: Vec<&'static str>,
}

impl DnstapJson {
    fn new(census: &Census, kept: DnstapTypes) -> DnstapJson {
        DnstapJson {
            types: census.by_type().map(|(t, n)| (t.name(), n)).collect(),
            identities: census.by_identity().collect(),
            other_identities: census.other_identities(),
            read_types: kept.iter().map(|t| t.name()).collect(),
        }
    }
}

/// `name=count, ...` of a dnstap log's identities, `(none)` for messages naming none.
fn identities_text(census: &Census) -> String {
    let mut parts: Vec<String> = census
        .by_identity()
        .map(|(i, n)| {
            let name = if i.is_empty() { "(none)" } else { &i };
            format!("{name}={n}")
        })
        .collect();
    if census.other_identities() > 0 {
        parts.push(format!("(others)={}", census.other_identities()));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// `p50 A, p90 B, p99 C` with `unit`.
fn quantiles_text(q: &Quantiles, unit: &str) -> String {
    format!(
        "p50 {:.6}, p90 {:.6}, p99 {:.6} {unit}",
        q.p50, q.p90, q.p99
    )
}

pub fn run(args: InspectArgs) -> Result<()> {
    let progress = Progress::new(args.json || args.quiet);
    // Tunnels go into the summary; other notes to standard error.
    let tunnels = Arc::new(Mutex::new(TunnelCounts::default()));
    let dnstap = Arc::new(Mutex::new(None));
    let (noted, noted_dnstap) = (tunnels.clone(), dnstap.clone());
    let notes = Notes::to(move |note| match note {
        ReadNote::Tunneled(counts) => {
            // Several files: each tells its own.
            noted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .merge(counts);
        }
        ReadNote::Dnstap { census, kept } => {
            *noted_dnstap.lock().unwrap_or_else(|e| e.into_inner()) = Some((census.clone(), *kept));
        }
        other => eprintln!("ldplayer: {other}"),
    });
    let mut input = open_inputs(&args.inputs, &args.read, args.jobs.get(), &progress, notes)?;
    let mut inspector = Inspector::new();
    let mut fitter = Fitter::new();
    let both = Both {
        inspector: &mut inspector,
        fitter: &mut fitter,
    };
    let mut watch = Watch::new(QrFilter::new(both, &args.read), &progress);
    let result = input.source().run(&mut watch);
    progress.finish();
    if !args.json {
        input.tell();
    }
    let what = match input.failed().filter(|_| super::is_read_error(&result)) {
        Some(file) => file,
        None => input.describe(),
    };
    // A damaged input: the summary of what was read, then the error saying where it stopped.
    let result = if super::is_read_error(&result) {
        result
    } else {
        result.with_context(|| format!("reading {what}"))?;
        Ok(())
    };
    let summary = inspector.summary();
    let clients = fitter.stats();
    let tunnels = *tunnels.lock().unwrap_or_else(|e| e.into_inner());
    let dnstap = dnstap.lock().unwrap_or_else(|e| e.into_inner()).take();
    if args.json {
        let json = InspectJson {
            summary: &summary,
            client_rate_qps: clients.rate_qps,
            client_gap_s: clients.gap_s,
            tunnels: tunnels.iter().map(|(t, n)| (t.name(), n)).collect(),
            inputs: input.json(),
            dnstap: dnstap.as_ref().map(|(c, k)| DnstapJson::new(c, *k)),
        };
        println!("{}", serde_json::to_string(&json)?);
    } else if !args.quiet {
        println!(
            "{:<28} {} ({})",
            "trace",
            input.describe(),
            input
                .format()
                .map_or("mixed".to_string(), |f| format!("{f:?}"))
        );
        print!("{summary}");
        if let Some(r) = &clients.rate_qps {
            println!("{:<28} {}", "client query rate", quantiles_text(r, "q/s"));
        }
        if let Some(g) = &clients.gap_s {
            println!("{:<28} {}", "client query gap", quantiles_text(g, "s"));
        }
        if !tunnels.is_empty() {
            println!("{:<28} {tunnels}", "inside tunnels");
        }
        if let Some((census, kept)) = &dnstap {
            println!("{:<28} {census}", "dnstap types");
            println!("{:<28} {kept}", "dnstap types read");
            println!("{:<28} {}", "dnstap identities", identities_text(census));
        }
    }
    result.with_context(|| {
        format!("reading {what}: stopped at an error (the summary is of what came before it)")
    })
}
