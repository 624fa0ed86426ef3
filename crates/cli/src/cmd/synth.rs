//! `ldplayer synth -o OUTPUT [...]`

use crate::args::{SynthArgs, Workload};
use crate::io::{create_output, format_from_name};
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
    let format = args
        .to
        .unwrap_or_else(|| format_from_name(&args.write.output));
    let mut synth = Synth::new(config(&args)?).context("synth")?;
    let progress = Progress::new(args.write.quiet);
    let output = create_output(&args.write.output, format)?;
    let mut watch = Watch::new(output, &progress);
    let result = synth.run(&mut watch);
    progress.finish();
    result.context("writing the synthetic trace")?;
    if !args.write.quiet {
        let secs = progress.elapsed();
        eprintln!(
            "ldplayer: {} synthetic queries written to {} ({:?}) in {:.2} s ({}){}",
            watch.records,
            args.write.output.display(),
            format,
            secs,
            super::per_second(watch.records, secs),
            if watch.interrupted {
                ", interrupted"
            } else {
                ""
            }
        );
    }
    Ok(())
}
