//! `ldplayer convert INPUT [--to text|binary|pcap] -o OUTPUT [--json | -q]`

use crate::args::ConvertArgs;
use crate::io::{create_output, end_run, open_input, strict_format_from_name};
use crate::progress::{Progress, Watch};
use anyhow::Result;

pub fn run(args: ConvertArgs) -> Result<()> {
    let output = &args.write.output;
    let to = match args.to {
        Some(f) => f,
        None => strict_format_from_name(output)?,
    };
    args.write.check_json()?;
    let progress = Progress::new(args.write.silent());
    let mut input = open_input(&args.input, &args.read, &progress)?;
    let mut writer = create_output(output, to)?;
    let mut watch = Watch::new(crate::io::QrFilter::new(&mut writer, &args.read), &progress);
    let result = input.source.run(&mut watch);
    progress.finish();
    let (records, interrupted, skipped, malformed) = (
        watch.records,
        watch.interrupted,
        watch.skipped,
        watch.malformed,
    );
    let written = writer.written();
    // A damaged input: the summary of what was read, then the error saying where it stopped.
    let read_error = super::is_read_error(&result);
    let ended = end_run(
        writer,
        output,
        &format!("converting {}", args.input.display()),
        result,
    );
    if ended.is_err() && !read_error {
        return ended;
    }
    let secs = progress.elapsed();
    if args.write.json {
        println!(
            "{}",
            serde_json::json!({
                "messages": records,
                "written": written,
                "input_format": super::format_name(input.format),
                "output_format": super::out_format_name(to),
                "output": output.display().to_string(),
                "seconds": secs,
                "interrupted": interrupted,
                "skipped": super::skipped_json(&skipped),
                "malformed": super::skipped_json(&malformed),
            })
        );
    } else if !args.write.quiet {
        eprintln!(
            "ldplayer: {} messages{} from {:?} to {:?} in {:.2} s ({}){}; skipped: {}",
            records,
            super::malformed_note(&malformed),
            input.format,
            to,
            secs,
            super::per_second(records, secs),
            if interrupted { ", interrupted" } else { "" },
            super::skipped_list(&skipped)
        );
    }
    ended
}
