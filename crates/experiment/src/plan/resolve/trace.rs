//! The `[trace]` section: a trace file, or a synthetic one (`[trace.synth]`) and its mutations.

use super::{Checked, Resolver, DEFAULT_NONBUSY_MAX_QUERIES};
use crate::plan::check;
use crate::plan::kinds::ProtoChoice;
use crate::plan::raw::{At, RawMutate, RawTrace};
use crate::plan::settings::{MutateSpec, SynthSpec, TraceSettings, TraceSource};
use ldplayer_dns::Rtype;

/// The `[trace]` section: a file or a synthetic trace (with `seed`), its mutations, and the
/// non-busy client threshold.
pub(super) fn trace_section(
    r: &mut Resolver,
    raw: &At<RawTrace>,
    seed: u64,
) -> Checked<TraceSettings> {
    let t = raw.get_ref();
    let source = match (&t.file, &t.synth) {
        (Some(_), Some(synth)) => {
            return Err(r.loc.error(
                Some(synth.span()),
                "trace.synth",
                "give either `file` or `synth`, not both",
            ))
        }
        (None, None) => {
            return Err(r.loc.error(
                Some(raw.span()),
                "trace",
                "give the queries: `file = \"trace.bin\"` or `synth = { workload = \"root\", rate = 1000, duration_s = 30 }`",
            ))
        }
        (Some(file), None) => TraceSource::File(r.path(file, "trace.file")?),
        (None, Some(synth)) => TraceSource::Synth(synth_spec(r, synth, seed)?),
    };
    let mutate = match &t.mutate {
        Some(m) => {
            r.spans.insert("trace.mutate", m.span());
            mutate_spec(r, m.get_ref())?
        }
        None => MutateSpec::default(),
    };
    let nonbusy_max_queries = r
        .number(
            &t.nonbusy_max_queries,
            "trace.nonbusy_max_queries",
            check::at_least_one,
        )?
        .unwrap_or(DEFAULT_NONBUSY_MAX_QUERIES);
    Ok(TraceSettings {
        source,
        mutate,
        rate_scale: 1.0,
        nonbusy_max_queries,
    })
}

/// `[trace.synth]`: the synthesizer's workload, checked, seeded from the plan's seed.
fn synth_spec(
    r: &mut Resolver,
    raw: &At<crate::plan::raw::RawSynth>,
    seed: u64,
) -> Checked<SynthSpec> {
    let s = raw.get_ref();
    r.spans.insert("trace.synth", raw.span());
    let rate = r
        .number(&Some(s.rate.clone()), "trace.synth.rate", check::synth_rate)?
        .unwrap_or(1.0);
    let duration_s = r.number(&s.duration_s, "trace.synth.duration_s", check::trace_s)?;
    let count = r.number(&s.count, "trace.synth.count", check::at_least_one)?;
    if duration_s.is_none() && count.is_none() {
        return Err(r.loc.error(
            Some(raw.span()),
            "trace.synth",
            "give the trace's length: `duration_s` (seconds) or `count` (queries)",
        ));
    }
    if let (None, Some(n)) = (duration_s, count) {
        // The trace lasts `count / rate`: as long as a `duration_s` may be.
        let lasts = n as f64 / rate;
        if lasts > check::MAX_RUN_S {
            let span = s.count.as_ref().map(|c| c.span());
            return Err(r.loc.error(
                span,
                "trace.synth.count",
                format!(
                    "{n} queries at {rate} queries/s last {lasts:.0} s: a trace lasts a week \
                     ({} s) at most; give a `duration_s` too, or fewer queries",
                    check::MAX_RUN_S
                ),
            ));
        }
    }
    let qtypes = match &s.qtypes {
        None => None,
        Some(table) => {
            let mut mix = Vec::new();
            for (name, weight) in table.get_ref() {
                let bad = |m: String| r.loc.error(Some(table.span()), "trace.synth.qtypes", m);
                if name.parse::<Rtype>().is_err() {
                    return Err(bad(format!("unknown query type `{name}`")));
                }
                let weight = weight
                    .as_integer()
                    .and_then(|w| u32::try_from(w).ok())
                    .filter(|&w| w > 0)
                    .ok_or_else(|| bad(format!("{name}: the weight must be a positive integer")))?;
                mix.push((name.clone(), weight));
            }
            Some(mix)
        }
    };
    let spec = SynthSpec {
        workload: s.workload,
        rate,
        duration_s,
        count,
        seed: s.seed.unwrap_or(seed),
        clients: r.number(&s.clients, "trace.synth.clients", check::at_least_one)?,
        do_share: r.number(&s.do_share, "trace.synth.do_share", check::share)?,
        tcp_share: r.number(&s.tcp_share, "trace.synth.tcp_share", check::share)?,
        qtypes,
        zone: s.zone.clone(),
        rd: s.rd,
    };
    // The synthesizer has the last word on what it can make.
    if let Err(e) = ldplayer_synth::Synth::new(spec.config()) {
        return Err(r.loc.error(Some(raw.span()), "trace.synth", e.to_string()));
    }
    Ok(spec)
}

/// `[trace] mutate = { ... }`: how the trace is changed before it is replayed (its transport and
/// the like), each value checked.
fn mutate_spec(r: &mut Resolver, m: &RawMutate) -> Checked<MutateSpec> {
    let proto = m.proto.as_ref().map_or(ProtoChoice::Keep, |p| *p.get_ref());
    r.remember("trace.mutate.proto", &m.proto);
    let proto_share = r.number(&m.proto_share, "trace.mutate.proto_share", check::share)?;
    if let (Some(share), ProtoChoice::Keep) = (&m.proto_share, proto) {
        return Err(r.loc.error(
            Some(share.span()),
            "trace.mutate.proto_share",
            "needs `proto` = \"udp\", \"tcp\", \"tls\", \"doh\" or \"doq\" (the transport the share of clients moves to)",
        ));
    }
    let do_share = r.number(&m.do_share, "trace.mutate.do_share", check::share)?;
    r.remember("trace.mutate.set_do", &m.set_do);
    r.remember("trace.mutate.clear_do", &m.clear_do);
    let set_do = m.set_do.as_ref().filter(|b| *b.get_ref());
    let clear_do = m.clear_do.as_ref().filter(|b| *b.get_ref());
    let do_choices = [
        set_do.map(|b| ("set_do", b.span())),
        clear_do.map(|b| ("clear_do", b.span())),
        m.do_share.as_ref().map(|s| ("do_share", s.span())),
    ];
    let mut given = do_choices.iter().flatten();
    if let (Some((first, _)), Some((second, span))) = (given.next(), given.next()) {
        return Err(r.loc.error(
            Some(span.clone()),
            format!("trace.mutate.{second}"),
            format!("conflicts with `{first}`: give one of set_do, clear_do and do_share"),
        ));
    }
    let do_share = match (set_do, clear_do) {
        (Some(_), _) => Some(1.0),
        (_, Some(_)) => Some(0.0),
        _ => do_share,
    };
    let mut qtypes = Vec::new();
    if let Some(list) = &m.qtypes {
        for t in list.get_ref() {
            if t.get_ref().parse::<Rtype>().is_err() {
                return Err(r.loc.error(
                    Some(t.span()),
                    "trace.mutate.qtypes",
                    format!("unknown query type `{}`", t.get_ref()),
                ));
            }
            qtypes.push(t.get_ref().clone());
        }
    }
    r.remember("trace.mutate.udp_size", &m.udp_size);
    Ok(MutateSpec {
        proto,
        proto_share: proto_share.unwrap_or(1.0),
        do_share,
        strip_edns: m.strip_edns,
        add_edns: m.add_edns,
        udp_size: m.udp_size.as_ref().map(|s| *s.get_ref()),
        rd: m.rd,
        time_scale: r
            .number(&m.time_scale, "trace.mutate.time_scale", check::scale)?
            .unwrap_or(1.0),
        keep_clients: r.number(&m.keep_clients, "trace.mutate.keep_clients", check::share)?,
        qtypes,
        qname_suffixes: m.qname_suffixes.clone().unwrap_or_default(),
        unique_names: m.unique_names.as_ref().map(|s| s.get_ref().clone()),
    })
}
