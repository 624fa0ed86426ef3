//! `ldplayer zones build INPUT... -o DIR [--json]` (captures, traces or Deckard scenarios) and
//! `ldplayer zones deckard-queries FILE.rpl [--expected] [-o FILE]` and
//! `ldplayer zones synth -o DIR [--tlds N] [--slds N] [--providers P] [--sign] [--nsec3]`.

use crate::args::{ZonesBuildArgs, ZonesCommand, ZonesDeckardArgs, ZonesSynthArgs};
use crate::io::{open_inputs, Output};
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};
use ldplayer_zonebuild::deckard::{self, Scenario};
use ldplayer_zonebuild::from_files::{self, ZoneFile};
use ldplayer_zonebuild::{Hierarchy, ZoneBuilder};
use std::io::Write;
use std::path::Path;

pub fn run(command: ZonesCommand) -> Result<()> {
    match command {
        ZonesCommand::Build(args) => build(args),
        ZonesCommand::DeckardQueries(args) => deckard_queries(args),
        ZonesCommand::Synth(args) => synth(args),
    }
}

/// What `zones synth --json` prints.
#[derive(serde::Serialize)]
struct SynthSummary {
    zones: usize,
    tlds: usize,
    slds: usize,
    nameserver_addresses: usize,
    records: u64,
    /// `null`, `"nsec"` or `"nsec3"`.
    signed: Option<&'static str>,
    directory: String,
    manifest: String,
    root_hints: String,
    /// `null` unless `--layout files`.
    named_conf: Option<String>,
    /// The signing keys' directory, when signed.
    keys: Option<String>,
}

/// Writes a synthetic hierarchy (signed if asked) in the layout of `zones build`.
fn synth(args: ZonesSynthArgs) -> Result<()> {
    use ldplayer_zonebuild::{sign, synthetic};
    let shape = synthetic::Shape {
        tlds: args.tlds,
        slds: args.slds,
        providers: args.providers,
    };
    let mut hierarchy = synthetic::hierarchy(&shape)?;
    let signing = args.sign || args.nsec3;
    let keys = args.output.join("keys");
    if signing {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let options = sign::SignOptions::around(now, args.nsec3);
        sign::sign_hierarchy(&mut hierarchy, &keys, &options).context("signing")?;
    }
    let written = hierarchy
        .write_layout(&args.output, args.layout.into())
        .with_context(|| format!("writing into {}", args.output.display()))?;
    let directory = written
        .manifest
        .parent()
        .unwrap_or(&args.output)
        .to_path_buf();
    let addresses: std::collections::BTreeSet<_> = hierarchy
        .zones
        .iter()
        .flat_map(|z| z.servers.iter())
        .collect();
    let summary = SynthSummary {
        zones: hierarchy.zones.len(),
        tlds: shape.tlds,
        slds: shape.tlds * shape.slds,
        nameserver_addresses: addresses.len(),
        records: hierarchy.report.records,
        signed: signing.then_some(if args.nsec3 { "nsec3" } else { "nsec" }),
        directory: directory.display().to_string(),
        manifest: written.manifest.display().to_string(),
        root_hints: written.root_hints.display().to_string(),
        named_conf: written.named_conf.as_ref().map(|p| p.display().to_string()),
        keys: signing.then(|| directory.join("keys").display().to_string()),
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else if !args.quiet {
        println!(
            "{} zones (the root, {} TLDs, {} second-level) on {} nameserver addresses, {} records, {}",
            summary.zones,
            summary.tlds,
            summary.slds,
            summary.nameserver_addresses,
            summary.records,
            match summary.signed {
                Some(how) => format!("root and TLDs signed ({how}, keys in {})", keys.display()),
                None => "unsigned".to_string(),
            }
        );
        println!(
            "written into {}\nmanifest: {}\nroot hints: {}\nBIND configuration: {}",
            summary.directory,
            summary.manifest,
            summary.root_hints,
            bind_conf(&written)
        );
    }
    Ok(())
}

/// Reads a Deckard scenario, noting on standard error (unless `quiet`) what was adapted or
/// skipped.
fn read_scenario(path: &Path, quiet: bool) -> Result<Scenario> {
    let s = Scenario::from_file(path).map_err(|e| match e {
        deckard::DeckardError::Read { .. } => anyhow::Error::new(e),
        _ => anyhow::Error::new(e).context(path.display().to_string()),
    })?;
    if quiet {
        return Ok(s);
    }
    if s.aa_added > 0 {
        eprintln!(
            "ldplayer: {}: {} range entries answer without AA: taken as authoritative (AA set)",
            path.display(),
            s.aa_added
        );
    }
    if !s.skipped.is_empty() {
        let list: Vec<String> = s.skipped.iter().map(|(k, v)| format!("{v} {k}")).collect();
        eprintln!(
            "ldplayer: {}: skipped (not interpreted): {}",
            path.display(),
            list.join(", ")
        );
    }
    Ok(s)
}

/// The names file of a scenario's queries, or its expected answers.
fn deckard_queries(args: ZonesDeckardArgs) -> Result<()> {
    let s = read_scenario(&args.scenario, args.quiet)?;
    let note = |text: String| {
        if !args.quiet {
            eprintln!("{text}");
        }
    };
    let mut text = String::new();
    if args.expected {
        for c in s.checks() {
            if c.check.entry.as_ref().is_some_and(|e| !e.matches_answer()) {
                note(format!(
                    "ldplayer: {}:{}: STEP {} does not MATCH the answer section; its answer is printed anyway",
                    args.scenario.display(),
                    c.check.line,
                    c.check.id
                ));
            }
            let validates = s.config_values("trust-anchor").next().is_some();
            let checked = c.check.entry.as_ref().is_some_and(|e| e.matches_flags());
            if validates && !checked && (c.asks("DO") || c.asks("AD")) {
                note(format!(
                    "ldplayer: {}:{}: STEP {} does not MATCH flags: its line has no AD, though the \
                     validating resolver may set it (the query asks with DO or AD)",
                    args.scenario.display(),
                    c.check.line,
                    c.check.id
                ));
            }
            if c.question_mismatch() {
                note(format!(
                    "ldplayer: {}:{}: STEP {} checks another question than STEP {} asked",
                    args.scenario.display(),
                    c.check.line,
                    c.check.id,
                    c.query.id
                ));
            }
            match c.expected_line() {
                Some(line) => {
                    text.push_str(&line);
                    text.push('\n');
                }
                None => note(format!(
                    "ldplayer: {}:{}: STEP {} checks a query without a question; left out",
                    args.scenario.display(),
                    c.check.line,
                    c.check.id
                )),
            }
        }
    } else {
        for q in s.queries() {
            match q
                .entry
                .as_ref()
                .and_then(|e| Some((e, e.question.as_ref()?)))
            {
                Some((entry, question)) => {
                    // The query's flags as the scenario sends them.
                    let flags = ldplayer_lab::client::QueryFlags {
                        rd: entry.has_flag("RD"),
                        ad: entry.has_flag("AD"),
                        cd: entry.has_flag("CD"),
                        dnssec_ok: entry.has_flag("DO"),
                    };
                    text.push_str(&format!(
                        "{} {}  # STEP {}\n",
                        question.text(),
                        flags.tokens(),
                        q.id
                    ));
                }
                None => note(format!(
                    "ldplayer: {}:{}: STEP {} QUERY has no question; left out",
                    args.scenario.display(),
                    q.line,
                    q.id
                )),
            }
        }
    }
    let path = args.output.as_deref().unwrap_or(Path::new("-"));
    let mut out = Output::create(path)?;
    out.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.close()?;
    if let Some(options) = &args.lab_options {
        lab_options(&s, &args.scenario, options, &note)?;
    }
    Ok(())
}

/// Writes the `ldplayer lab` arguments a scenario's CONFIG asks for, one per line (for
/// `$(cat FILE)`): its `trust-anchor` records go to FILE.anchor (`--trust-anchor`), its
/// `val-override-date` becomes `--time`. What the lab cannot honour is noted.
fn lab_options(
    s: &ldplayer_zonebuild::deckard::Scenario,
    scenario: &Path,
    options: &Path,
    note: &dyn Fn(String),
) -> Result<()> {
    let mut anchors = String::new();
    let mut args = String::new();
    for item in &s.config {
        let value = item.value.trim().trim_matches('"');
        match item.key.as_str() {
            "trust-anchor" => {
                anchors.push_str(value);
                anchors.push('\n');
            }
            "val-override-date" => args.push_str(&format!("--time\n{value}\n")),
            "domain-insecure" => args.push_str(&format!("--insecure\n{value}\n")),
            // Used by `zones build` (the root hints).
            "stub-addr" => {}
            other => note(format!(
                "ldplayer: {}:{}: CONFIG {other}: not honoured by the lab",
                scenario.display(),
                item.line
            )),
        }
    }
    if !anchors.is_empty() {
        let mut anchor = options.as_os_str().to_owned();
        anchor.push(".anchor");
        let anchor = std::path::PathBuf::from(anchor);
        ldplayer_output::write(&anchor, anchors)?;
        let anchor = std::path::absolute(&anchor).unwrap_or(anchor);
        args = format!("--trust-anchor\n{}\n{args}", anchor.display());
    } else if !args.is_empty() {
        note(format!(
            "ldplayer: {}: val-override-date without a trust-anchor: the lab does not validate",
            scenario.display()
        ));
        args.clear();
    }
    Ok(ldplayer_output::write(options, args)?)
}

/// A `--zone FILE[@ORIGIN]` argument split into its file and origin.
pub(crate) fn zone_arg(arg: &str) -> (&Path, Option<&str>) {
    match arg.rsplit_once('@') {
        Some((p, o)) if !Path::new(arg).exists() => (Path::new(p), Some(o)),
        _ => (Path::new(arg), None),
    }
}

/// The zones of `--zone` files, served where their NS names' addresses and `--zone-server` say.
fn zone_files(files: &[String], servers: &[String]) -> Result<Hierarchy> {
    let mut zones = Vec::new();
    for f in files {
        let (path, origin) = zone_arg(f);
        // Flattened like `serve`'s load errors: the same file gives the same message.
        zones.push(ZoneFile::read(path, origin).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    let mut extra = Vec::new();
    for s in servers {
        let (name, ip) = from_files::zone_server(s)?;
        if !zones.iter().any(|z| z.apex == name) {
            anyhow::bail!("--zone-server {s:?}: no --zone file holds that zone");
        }
        extra.push((name, ip));
    }
    Ok(from_files::hierarchy(zones, &extra)?)
}

/// How many delegations lead to no zone of the hierarchy shown before the rest are counted.
const DELEGATIONS_NAMED: usize = 5;

/// Warns (standard error) that some delegations lead to no zone of the hierarchy, naming a few
/// and saying how to add them.
fn warn_delegations_without_zone(missing: &[String]) {
    if missing.is_empty() {
        return;
    }
    let mut named = missing
        .iter()
        .take(DELEGATIONS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    if missing.len() > DELEGATIONS_NAMED {
        named.push_str(&format!(" and {} more", missing.len() - DELEGATIONS_NAMED));
    }
    eprintln!(
        "ldplayer: warning: {} delegations lead to no zone of this hierarchy ({named}): no \
         nameserver address serves them, so a resolver gets REFUSED below them; add their zones \
         with more --zone files, or give captures of a resolver's upstream traffic (lab \
         --capture) as INPUT",
        missing.len()
    );
}

fn build(mut args: ZonesBuildArgs) -> Result<()> {
    // Tens of millions of small names and records, most freed again: mimalloc's kind of work
    // (the worst case in 0.85 of glibc's wall time, docs/performance.md).
    ldplayer_system::allocator::use_mimalloc();
    // A resolver's dnstap log: the responses it received from upstream are the hierarchy.
    args.read
        .dnstap_types
        .get_or_insert(ldplayer_trace::dnstap::DnstapTypes::RESOLVER_RESPONSE);
    let progress = Progress::new(args.json || args.quiet);
    let mut builder = ZoneBuilder::new();
    let mut root_hints = Vec::new();
    let mut traces = Vec::new();
    for path in &args.inputs {
        if deckard::is_scenario(path) {
            let s = read_scenario(path, args.quiet)?;
            let n = s.feed(&mut builder);
            for a in s.stub_addrs() {
                if !root_hints.contains(&a) {
                    root_hints.push(a);
                }
            }
            if !args.quiet {
                eprintln!(
                    "ldplayer: {}: Deckard scenario: {n} recorded responses from {} ranges",
                    path.display(),
                    s.ranges.len()
                );
            }
            continue;
        }
        traces.push(path.clone());
    }
    // The captures and traces are read as one: in time order, several files at once.
    if !traces.is_empty() {
        let mut input = open_inputs(
            &traces,
            &args.read,
            args.jobs.get(),
            &progress,
            ldplayer_trace::open::Notes::stderr(),
        )?;
        let mut watch = Watch::new(&mut builder, &progress);
        let result = input.source().run(&mut watch);
        if !args.quiet {
            input.tell();
        }
        let what = match input
            .failed()
            .filter(|_| crate::cmd::is_read_error(&result))
        {
            Some(file) => file,
            None => input.describe(),
        };
        result.with_context(|| format!("reading {what}"))?;
    }
    progress.finish();
    let mut hierarchy = if args.inputs.is_empty() {
        zone_files(&args.zone, &args.zone_server)?
    } else if args.zone.is_empty() {
        builder.build()
    } else {
        builder
            .build()
            .merge(zone_files(&args.zone, &args.zone_server)?)
    };
    let added = deckard::complete_root(&mut hierarchy, &root_hints);
    if !added.is_empty() && !args.quiet {
        eprintln!(
            "ldplayer: the rebuilt root zone has no NS records (none in an authoritative answer); \
             made from the scenarios' stub-addr (the resolver's root hints): {}",
            added.join("; ")
        );
    }
    refuse_overwriting_inputs(&hierarchy, &args)?;
    if !args.quiet {
        warn_delegations_without_zone(&hierarchy.report.delegations_without_zone);
    }
    let written = hierarchy
        .write_layout(&args.output, args.layout.into())
        .with_context(|| format!("writing into {}", args.output.display()))?;
    let r = &hierarchy.report;
    if args.json {
        println!("{}", serde_json::to_string(r)?);
    }
    if args.json || args.quiet {
        // The process ends here: freeing millions of records one by one would only delay it.
        std::mem::forget(hierarchy);
        return Ok(());
    }
    let servers: std::collections::BTreeSet<_> = hierarchy
        .zones
        .iter()
        .flat_map(|z| z.servers.iter())
        .collect();
    println!(
        "{} zones for {} nameserver addresses from {} responses ({} records, {} conflicts kept first)",
        hierarchy.zones.len(),
        servers.len(),
        r.responses_used,
        r.records,
        r.conflicts
    );
    for (z, f) in hierarchy.zones.iter().zip(&written.zone_files) {
        println!(
            "  {:<24} {:>6} records  {:>3} servers  {}{}",
            z.name(),
            z.records.len(),
            z.servers.len(),
            f.display(),
            if z.soa_synthesized {
                "  (SOA synthesized)"
            } else {
                ""
            }
        );
    }
    if !r.responses_unused.is_empty() {
        let list: Vec<String> = r
            .responses_unused
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        println!("responses not used: {}", list.join(", "));
    }
    if !r.records_left_out.is_empty() {
        let list: Vec<String> = r
            .records_left_out
            .iter()
            .map(|(why, n)| {
                let examples = r
                    .records_left_out_examples
                    .get(why)
                    .map(|e| e.join("; "))
                    .unwrap_or_default();
                format!("{n} {why} (e.g. {examples})")
            })
            .collect();
        println!("records left out: {}", list.join(", "));
    }
    if r.ttls_restored > 0 {
        println!(
            "TTLs restored: {} signed RRsets recorded with TTLs below their signatures' original \
             TTL (counted down by a cache, or a negative answer's SOA) were given it back",
            r.ttls_restored
        );
    }
    for (what, list) in [
        ("missing addresses (glue)", &r.missing_addresses),
        ("zones with no known server", &r.zones_without_servers),
        ("servers whose zone was inferred", &r.inferred_servers),
    ] {
        if !list.is_empty() {
            println!("{what}: {}", list.join(", "));
        }
    }
    println!(
        "manifest: {}\nroot hints: {}\nBIND configuration: {}",
        written.manifest.display(),
        written.root_hints.display(),
        bind_conf(&written)
    );
    // The process ends here: freeing millions of records one by one would only delay it.
    std::mem::forget(hierarchy);
    Ok(())
}

/// The BIND configuration written, or why there is none.
fn bind_conf(written: &ldplayer_zonebuild::Written) -> String {
    match &written.named_conf {
        Some(p) => p.display().to_string(),
        None => "none: BIND and nsd read one zone per file (--layout files writes them, and \
                 named.conf)"
            .to_string(),
    }
}

/// Refuses to build when a file the hierarchy is about to write into DIR is one of the inputs
/// (a capture, a scenario or a `--zone` file): `zones build --zone hier/root.zone -o hier`
/// would replace the user's zone file by the rebuilt one.
fn refuse_overwriting_inputs(hierarchy: &Hierarchy, args: &ZonesBuildArgs) -> Result<()> {
    // Only a file that exists can be an input: DIR is listed once rather than every one of
    // (perhaps hundreds of thousands of) names looked up.
    let Ok(entries) = std::fs::read_dir(&args.output) else {
        return Ok(());
    };
    let existing: std::collections::HashSet<std::ffi::OsString> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    if existing.is_empty() {
        return Ok(());
    }
    for name in hierarchy.output_names(args.layout.into()) {
        if existing.contains(std::ffi::OsStr::new(&name)) {
            ldplayer_output::check(&args.output.join(&name))?;
        }
    }
    Ok(())
}
