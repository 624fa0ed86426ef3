//! `ldplayer demo`: the main job on the embedded default, with nothing external.
//!
//! Synthesizes a root-like trace, writes it as a pcap, converts the pcap to text and the text to
//! binary, checks that every message came through byte-identical, and prints the summary.

use crate::args::{DemoArgs, OutFormat, ReadArgs};
use crate::io::{create_output, open_input};
use crate::progress::{Progress, Watch};
use anyhow::{bail, Context, Result};
use ldplayer_inspect::Inspector;
use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_trace::{Collect, Source};
use std::path::Path;
use std::time::Instant;

pub fn run(args: DemoArgs) -> Result<()> {
    let temp;
    let dir = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            d.as_path()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("ldplayer-demo-")
                .tempdir()
                .context("cannot create a scratch directory")?;
            temp.path()
        }
    };
    let config = SynthConfig {
        count: Some(args.count),
        tcp_share: 0.05,
        clients: 20_000,
        seed: 2018,
        ..SynthConfig::root_like(20_000.0)
    };
    let read = ReadArgs {
        dns_ports: vec![53],
        queries_only: false,
        responses_only: false,
    };
    let progress = Progress::new(true);

    let step = |what: &str, t: Instant, n: u64| {
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "demo: {what:<44} {n:>9} messages {secs:>7.3} s  {}",
            super::per_second(n, secs)
        );
    };

    let pcap = dir.join("root-like.pcap");
    let t = Instant::now();
    let mut out = Watch::new(create_output(&pcap, OutFormat::Pcap)?, &progress);
    Synth::new(config.clone())?.run(&mut out)?;
    drop(out);
    step("synthesize a root-like trace -> pcap", t, args.count);

    let text = dir.join("root-like.txt");
    let n = convert(&pcap, &text, OutFormat::Text, &read, &progress)?;
    let bin = dir.join("root-like.bin");
    let m = convert(&text, &bin, OutFormat::Binary, &read, &progress)?;
    if n != args.count || m != args.count {
        bail!(
            "demo: {} queries synthesized but {n} read from the pcap and {m} from the text",
            args.count
        );
    }

    let t = Instant::now();
    let mut original = Collect::default();
    Synth::new(config)?.run(&mut original)?;
    let mut replayed = Collect::default();
    open_input(&bin, &read, &progress)?
        .source
        .run(&mut replayed)?;
    let same = original
        .records
        .iter()
        .zip(&replayed.records)
        .filter(|(a, b)| {
            a.wire == b.wire
                && a.time_ns == b.time_ns
                && a.src == b.src
                && a.dst == b.dst
                && a.proto == b.proto
        })
        .count();
    if same != original.records.len() || replayed.records.len() != original.records.len() {
        bail!(
            "demo: only {same} of {} messages came through pcap -> text -> binary unchanged",
            original.records.len()
        );
    }
    step("check: every message byte-identical", t, same as u64);

    let t = Instant::now();
    let mut inspector = Inspector::new();
    open_input(&bin, &read, &progress)?
        .source
        .run(&mut inspector)?;
    step("inspect", t, inspector.summary().messages);
    println!("{:<28} {}", "trace", bin.display());
    print!("{}", inspector.summary());
    if args.dir.is_none() {
        eprintln!("demo: files removed (keep them with --dir DIR)");
    }
    Ok(())
}

/// Converts `from` into `to`, returning the number of records written.
fn convert(
    from: &Path,
    to: &Path,
    format: OutFormat,
    read: &ReadArgs,
    progress: &Progress,
) -> Result<u64> {
    let t = Instant::now();
    let mut input = open_input(from, read, progress)?;
    let mut out = Watch::new(create_output(to, format)?, progress);
    input.source.run(&mut out)?;
    let n = out.records;
    drop(out);
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "demo: {:<44} {n:>9} messages {secs:>7.3} s  {}",
        format!("{:?} -> {:?}", input.format, format).to_lowercase(),
        super::per_second(n, secs)
    );
    Ok(n)
}
