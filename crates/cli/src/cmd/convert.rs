//! `ldplayer convert INPUT --to text|binary|pcap -o OUTPUT`

use crate::args::ConvertArgs;
use crate::io::{create_output, open_input, QrFilter};
use crate::progress::{Progress, Watch};
use anyhow::{Context, Result};

pub fn run(args: ConvertArgs) -> Result<()> {
    let progress = Progress::new(args.write.quiet);
    let mut input = open_input(&args.input, &args.read, &progress)?;
    let output = create_output(&args.write.output, args.to)?;
    let mut watch = Watch::new(QrFilter::new(output, &args.read), &progress);
    let result = input.source.run(&mut watch);
    progress.finish();
    result.with_context(|| format!("converting {}", args.input.display()))?;
    let secs = progress.elapsed();
    if !args.write.quiet {
        eprintln!(
            "ldplayer: {} messages{} from {:?} to {:?} in {:.2} s ({}){}; skipped: {}",
            watch.records,
            super::malformed_note(&watch.malformed),
            input.format,
            args.to,
            secs,
            super::per_second(watch.records, secs),
            if watch.interrupted {
                ", interrupted"
            } else {
                ""
            },
            super::skipped_list(&watch.skipped)
        );
    }
    Ok(())
}
