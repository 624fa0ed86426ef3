//! `ldplayer zones build CAPTURE... -o DIR [--json]`

use crate::args::{ZonesBuildArgs, ZonesCommand};
use crate::io::open_input;
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};
use ldplayer_zonebuild::ZoneBuilder;

pub fn run(command: ZonesCommand) -> Result<()> {
    match command {
        ZonesCommand::Build(args) => build(args),
    }
}

fn build(args: ZonesBuildArgs) -> Result<()> {
    let progress = Progress::new(args.json);
    let mut builder = ZoneBuilder::new();
    for path in &args.inputs {
        let mut input = open_input(path, &args.read, &progress)?;
        let mut watch = Watch::new(&mut builder, &progress);
        input
            .source
            .run(&mut watch)
            .with_context(|| format!("reading {}", path.display()))?;
    }
    progress.finish();
    let hierarchy = builder.build();
    let written = hierarchy
        .write(&args.output)
        .with_context(|| format!("writing into {}", args.output.display()))?;
    let r = &hierarchy.report;
    if args.json {
        println!("{}", serde_json::to_string(r)?);
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
        written.named_conf.display()
    );
    Ok(())
}
