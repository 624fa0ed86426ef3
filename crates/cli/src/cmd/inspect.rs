//! `ldplayer inspect INPUT [--json | -q]`

use crate::args::InspectArgs;
use crate::io::{open_input, QrFilter};
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};
use ldplayer_inspect::Inspector;

pub fn run(args: InspectArgs) -> Result<()> {
    let progress = Progress::new(args.json || args.quiet);
    let mut input = open_input(&args.input, &args.read, &progress)?;
    let mut inspector = Inspector::new();
    let mut watch = Watch::new(QrFilter::new(&mut inspector, &args.read), &progress);
    let result = input.source.run(&mut watch);
    progress.finish();
    result.with_context(|| format!("reading {}", args.input.display()))?;
    let summary = inspector.summary();
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else if !args.quiet {
        println!(
            "{:<28} {} ({:?})",
            "trace",
            args.input.display(),
            input.format
        );
        print!("{summary}");
    }
    Ok(())
}
