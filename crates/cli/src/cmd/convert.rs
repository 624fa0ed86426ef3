//! `ldplayer convert INPUT... [--to text|binary|pcap] -o OUTPUT [--jobs N] [--json | -q]`

use crate::args::ConvertArgs;
use crate::io::{
    create_output, create_output_background, end_run, open_inputs, strict_format_from_name,
};
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
    let mut input = open_inputs(
        &args.inputs,
        &args.read,
        args.jobs.get(),
        &progress,
        ldplayer_trace::open::Notes::stderr(),
    )?;
    // Many inputs merged on this thread while others decode: the writing goes to a thread of
    // its own.
    let mut writer = if matches!(input, crate::io::Inputs::Many(_)) && args.jobs.get() > 1 {
        create_output_background(output, to)?
    } else {
        create_output(output, to)?
    };
    let mut watch = Watch::new(crate::io::QrFilter::new(&mut writer, &args.read), &progress);
    let result = input.source().run(&mut watch);
    progress.finish();
    if !args.write.json {
        input.tell();
    }
    let (records, interrupted, skipped, malformed) = (
        watch.records,
        watch.interrupted,
        watch.skipped,
        watch.malformed,
    );
    let written = writer.written();
    // A damaged input: the summary of what was read, then the error saying where it stopped.
    let read_error = super::is_read_error(&result);
    let what = match input.failed().filter(|_| read_error) {
        Some(file) => file,
        None => input.describe(),
    };
    let ended = end_run(writer, output, &format!("converting {what}"), result);
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
                "input_format": input.format().map_or("mixed", super::format_name),
                "inputs": input.json(),
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
            "ldplayer: {} messages{} from {} to {:?} in {:.2} s ({}){}; skipped: {}",
            records,
            super::malformed_note(&malformed),
            input
                .format()
                .map_or("mixed".to_string(), |f| format!("{f:?}")),
            to,
            secs,
            super::per_second(records, secs),
            if interrupted { ", interrupted" } else { "" },
            super::skipped_list(&skipped)
        );
    }
    ended
}
