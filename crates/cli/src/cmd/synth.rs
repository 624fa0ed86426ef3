//! `ldplayer synth -o OUTPUT [...]`

use crate::args::SynthArgs;
use crate::io::{create_output, format_from_name};
use crate::progress::{Progress, Watch};
use anyhow::{bail, Context, Result};
use ldplayer_dns::Rtype;
use ldplayer_synth::{
    RootLike, Synth, SynthConfig, SynthError, Workload as SynthWorkload, WorkloadKind,
};
use ldplayer_trace::{SinkError, Source, TraceError};

/// The synthesizer configuration the flags ask for.
pub fn config(args: &SynthArgs) -> Result<SynthConfig> {
    let mut c = match args.workload {
        WorkloadKind::Fixed => {
            let interval = positive_ns("--interval", args.interval)?;
            SynthConfig::fixed(interval as u64)
        }
        WorkloadKind::Poisson => SynthConfig::poisson(args.rate),
        WorkloadKind::Root => SynthConfig::root_like(args.rate),
    };
    if let SynthWorkload::RootLike(RootLike { rate_qps, .. }) = &c.workload {
        debug_assert_eq!(*rate_qps, args.rate);
    }
    c.seed = args.seed;
    c.count = Some(args.count);
    c.duration_ns = args
        .duration
        .map(|d| positive_ns("--duration", d).map(|ns| ns as u64))
        .transpose()?;
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
        c.start_ns = ldplayer_trace::seconds_to_ns(s).with_context(|| {
            format!(
                "--start {s:?}: the start must be a time a trace can hold: {}",
                ldplayer_trace::TIME_RANGE
            )
        })?;
    }
    c.rd = args.rd;
    if let Some(path) = &args.population {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let population = ldplayer_population::Population::from_toml(&text)
            .with_context(|| path.display().to_string())?;
        if args.clients.is_none() {
            let n = population.clients.with_context(|| {
                format!(
                    "{}: say how many clients (`clients = N`, or --clients N)",
                    path.display()
                )
            })?;
            c.clients = u32::try_from(n).context("the population's clients are too many")?;
        }
        let addrs = ldplayer_synth::client_addresses(&c)?;
        let mix = population
            .client_mix(&addrs)
            .with_context(|| path.display().to_string())?;
        c.workload = SynthWorkload::Clients(Box::new(ldplayer_synth::ClientMix {
            rates_qps: mix.rates_qps,
            protos: mix.protos,
            gap_cvs: mix.gap_cvs,
        }));
    }
    Ok(c)
}

/// A positive number of seconds in nanoseconds (at least 1), or an error naming `flag` and the
/// limits.
fn positive_ns(flag: &str, seconds: f64) -> Result<i64> {
    match ldplayer_trace::seconds_to_ns(seconds) {
        Some(ns) if ns >= 1 => Ok(ns),
        Some(_) => bail!("{flag} {seconds:?}: must be positive, at least 1e-9 s (times have nanosecond resolution)"),
        None => bail!(
            "{flag} {seconds:?}: must be a positive number of seconds that a trace's times can hold: {}",
            ldplayer_trace::TIME_RANGE
        ),
    }
}

/// Parses `A=45,AAAA=20`.
fn parse_mix(mix: &str) -> Result<Vec<(Rtype, u32)>> {
    mix.split(',')
        .map(|item| {
            let (t, w) = item.split_once('=').unwrap_or((item, "1"));
            let t = t
                .trim()
                .parse::<Rtype>()
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
    let mut synth = Synth::new(config(&args)?).map_err(|e| match e {
        SynthError::TimeOutOfRange { .. } => anyhow::Error::new(e)
            .context("the times that --start, --interval or --rate, and -n or --duration give"),
        e => anyhow::Error::new(e).context("synth"),
    })?;
    let progress = Progress::new(args.write.silent());
    let mut writer = create_output(output, format)?;
    let mut watch = Watch::new(&mut writer, &progress);
    let result = synth.run(&mut watch);
    progress.finish();
    let (records, interrupted) = (watch.records, watch.interrupted);
    match result {
        Ok(()) | Err(TraceError::Sink(SinkError::Stopped)) => writer.close()?,
        // A synthetic trace cut short is no trace to keep: the output stays as it was.
        Err(e) => {
            drop(writer);
            return Err(e).with_context(|| {
                format!(
                    "writing the synthetic trace ({} left as it was)",
                    output.display()
                )
            });
        }
    }
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
