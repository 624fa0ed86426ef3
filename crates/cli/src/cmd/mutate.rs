//! `ldplayer mutate INPUT -o OUTPUT [...]`

use crate::args::MutateArgs;
use crate::args::ProtoChoice;
use crate::io::{create_output, end_run, format_from_name, open_input};
use crate::progress::{Progress, Watch};
use anyhow::{bail, Context, Result};
use ldplayer_dns::Rtype;
use ldplayer_mutate::{Direction, IpPrefix, MutateConfig, Mutation, Mutator};
use std::hash::Hasher;

/// The mutations the flags ask for.
pub fn config(args: &MutateArgs) -> Result<MutateConfig> {
    let mut m = Vec::new();
    if args.read.queries_only {
        m.push(Mutation::Direction(Direction::Queries));
    }
    if args.read.responses_only {
        m.push(Mutation::Direction(Direction::Responses));
    }
    if args.from.is_some() || args.until.is_some() {
        m.push(Mutation::TimeWindow {
            from_s: args.from,
            to_s: args.until,
        });
    }
    if !args.clients.is_empty() {
        let prefixes = args
            .clients
            .iter()
            .map(|c| {
                c.parse::<IpPrefix>()
                    .with_context(|| format!("--client {c}"))
            })
            .collect::<Result<Vec<_>>>()?;
        m.push(Mutation::ClientPrefixes(prefixes));
    }
    if let Some(share) = args.keep_clients {
        m.push(Mutation::ClientShare(share));
    }
    if !args.qtypes.is_empty() {
        let types = args
            .qtypes
            .iter()
            .map(|t| {
                t.parse::<Rtype>()
                    .with_context(|| format!("unknown query type `{t}`"))
            })
            .collect::<Result<Vec<_>>>()?;
        m.push(Mutation::Qtypes(types));
    }
    if !args.qname_suffixes.is_empty() {
        m.push(Mutation::QnameSuffixes(args.qname_suffixes.clone()));
    }
    match args.proto.and_then(ProtoChoice::forced) {
        None => {
            if args.proto_fraction.is_some() && args.proto.is_some() {
                bail!("--proto-fraction needs --proto udp, tcp, tls, doh or doq");
            }
        }
        Some(proto) => m.push(Mutation::Transport {
            proto,
            client_share: args.proto_fraction.unwrap_or(1.0),
        }),
    }
    if args.strip_edns {
        m.push(Mutation::StripEdns);
    }
    if args.add_edns {
        m.push(Mutation::AddEdns {
            udp_size: args.bufsize.unwrap_or(ldplayer_mutate::DEFAULT_UDP_SIZE),
        });
    }
    if let Some(size) = args.bufsize {
        m.push(Mutation::UdpSize(size));
    }
    if let Some(share) = args.set_do {
        m.push(Mutation::SetDo { share });
    }
    if args.clear_do {
        m.push(Mutation::ClearDo);
    }
    if args.set_rd || args.clear_rd {
        m.push(Mutation::RecursionDesired(args.set_rd));
    }
    if let Some(prefix) = &args.unique_names {
        m.push(Mutation::QnamePrefix(prefix.clone()));
    }
    if let Some(k) = args.time_scale {
        if !(k.is_finite() && k > 0.0) {
            bail!("--time-scale {k:?}: the factor must be a positive, finite number");
        }
        m.push(Mutation::TimeScale(k));
    }
    if let Some(s) = args.time_shift {
        let ns = ldplayer_trace::seconds_to_ns(s).with_context(|| {
            format!(
                "--time-shift {s:?}: a shift must fit in the times a trace can hold: {}",
                ldplayer_trace::TIME_RANGE
            )
        })?;
        m.push(Mutation::TimeShift(ns));
    }
    if let Some(key) = &args.anonymize {
        m.push(Mutation::Anonymize {
            key: Some(key_from_text(key)),
        });
    }
    Ok(MutateConfig {
        seed: args.seed,
        mutations: m,
    })
}

/// A 128-bit anonymization key from the user's text.
fn key_from_text(text: &str) -> [u8; 16] {
    let mut h =
        siphasher::sip128::SipHasher13::new_with_keys(0x6c64_706c_6179_6572, 0x616e_6f6e_796d_697a);
    h.write(text.as_bytes());
    siphasher::sip128::Hasher128::finish128(&h).as_bytes()
}

pub fn run(args: MutateArgs) -> Result<()> {
    let output = &args.write.output;
    let format = args.to.unwrap_or_else(|| format_from_name(output));
    args.write.check_json()?;
    let config = config(&args)?;
    let progress = Progress::new(args.write.silent());
    let mut input = open_input(&args.input, &args.read, &progress)?;
    let mut writer = create_output(output, format)?;
    let mutator = Mutator::new(config, &mut writer).context("mutate")?;
    let mut watch = Watch::new(mutator, &progress);
    let result = input.source.run(&mut watch);
    progress.finish();
    let (interrupted, skipped, malformed) = (
        watch.interrupted,
        watch.skipped.clone(),
        watch.malformed.clone(),
    );
    let stats = watch.inner().stats().clone();
    drop(watch);
    // A damaged input: the summary of what was read, then the error saying where it stopped.
    let read_error = super::is_read_error(&result);
    let ended = end_run(
        writer,
        output,
        &format!("mutating {}", args.input.display()),
        result,
    );
    if ended.is_err() && !read_error {
        return ended;
    }
    if args.write.json {
        println!(
            "{}",
            serde_json::json!({
                "records_in": stats.records_in,
                "records_out": stats.records_out,
                "changed": stats.changed,
                "filtered": stats.filtered,
                "dropped": stats.dropped,
                "unedited": stats.unedited,
                "output": output.display().to_string(),
                "output_format": super::out_format_name(format),
                "interrupted": interrupted,
                "skipped": super::skipped_json(&skipped),
                "malformed": super::skipped_json(&malformed),
            })
        );
    } else if !args.write.quiet {
        let list = |m: &std::collections::BTreeMap<&'static str, u64>| {
            if m.is_empty() {
                "none".to_string()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        eprintln!(
            "ldplayer: {} records in{}, {} out{}; changed: {}; filtered: {}; dropped: {}; unedited: {}; skipped by the reader: {}",
            stats.records_in,
            super::malformed_note(&malformed),
            stats.records_out,
            if interrupted { " (interrupted)" } else { "" },
            list(&stats.changed),
            list(&stats.filtered),
            list(&stats.dropped),
            list(&stats.unedited),
            super::skipped_list(&skipped)
        );
    }
    ended
}
