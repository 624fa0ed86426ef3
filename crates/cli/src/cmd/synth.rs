//! `ldplayer synth -o OUTPUT [...]`

use crate::args::{SynthArgs, Workload};
use crate::io::{create_output, end_run, format_from_name};
use crate::progress::{Progress, Watch};
use anyhow::{bail, Context, Result};
use ldplayer_synth::{RootLike, Synth, SynthConfig, Workload as SynthWorkload};
use ldplayer_trace::Source;

/// The synthesizer configuration the flags ask for.
pub fn config(args: &SynthArgs) -> Result<SynthConfig> {
    let mut c = match args.workload {
        Workload::Fixed => {
            if !(args.interval > 0.0 && args.interval.is_finite()) {
                bail!("--interval must be a positive number of seconds");
            }
            SynthConfig::fixed((args.interval * 1e9).round().max(1.0) as u64)
        }
        Workload::Poisson => SynthConfig::poisson(args.rate),
        Workload::Root => SynthConfig::root_like(args.rate),
    };
    if let SynthWorkload::RootLike(RootLike { rate_qps, .. }) = &c.workload {
        debug_assert_eq!(*rate_qps, args.rate);
    }
    c.seed = args.seed;
    c.count = Some(args.count);
    c.duration_ns = args.duration.map(|d| (d * 1e9).round() as u64);
    if let Some(n) = args.clients {
        c.clients = u32::try_from(n).context("--clients is too large")?;
    }
    if let Some(s) = args.do_share {
        c.do_share = s;
    }
    if let Some(s) = args.tcp_share {
        c.tcp_share = s;
    }
    if let Some(mix) = &args.qtypes {
        c.qtypes = parse_mix(mix)?;
    }
    if let Some(z) = &args.zone {
        c.zone = z.clone();
    }
    if args.server.is_some() {
        c.server = args.server;
    }
    if let Some(s) = args.start {
        c.start_ns = (s * 1e9).round() as i64;
    }
    c.rd = args.rd;
    Ok(c)
}

/// Parses `A=45,AAAA=20`.
fn parse_mix(mix: &str) -> Result<Vec<(u16, u32)>> {
    mix.split(',')
        .map(|item| {
            let (t, w) = item.split_once('=').unwrap_or((item, "1"));
            let t = ldplayer_dns::rtype_from_str(t.trim())
                .with_context(|| format!("unknown query type `{t}` in --qtypes"))?;
            let w = w
                .trim()
                .parse()
                .with_context(|| format!("bad weight `{w}` in --qtypes"))?;
            Ok((t, w))
        })
        .collect()
}

pub fn run(args: SynthArgs) -> Result<()> {
    let output = &args.write.output;
    let format = args.to.unwrap_or_else(|| format_from_name(output));
    args.write.check_json()?;
    let mut synth = Synth::new(config(&args)?).context("synth")?;
    let progress = Progress::new(args.write.silent());
    let mut writer = create_output(output, format)?;
    let mut watch = Watch::new(&mut writer, &progress);
    let result = synth.run(&mut watch);
    progress.finish();
    let (records, interrupted) = (watch.records, watch.interrupted);
    end_run(writer, output, "writing the synthetic trace", result)?;
    let secs = progress.elapsed();
    if args.write.json {
        println!(
            "{}",
            serde_json::json!({
                "queries": records,
                "output": output.display().to_string(),
                "output_format": super::out_format_name(format),
                "seconds": secs,
                "interrupted": interrupted,
            })
        );
    } else if !args.write.quiet {
        eprintln!(
            "ldplayer: {} synthetic queries written to {} ({:?}) in {:.2} s ({}){}",
            records,
            output.display(),
            format,
            secs,
            super::per_second(records, secs),
            if interrupted { ", interrupted" } else { "" }
        );
    }
    Ok(())
}
