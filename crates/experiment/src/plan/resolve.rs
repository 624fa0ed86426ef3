//! From the plan as written to the plan as run: defaults filled in, every value checked, paths
//! resolved, and every run's combination of values checked against the others.

use super::check;
use super::error::{Locator, PlanError};
use super::kinds::{ClientMode, ProtoChoice};
use super::network::{ClientRtt, LossModelChoice, NetworkSettings, RttDistribution};
use super::raw::{At, RawClient, RawMutate, RawNetwork, RawPlan, RawRun, RawServer, RawTrace};
use super::settings::{
    ClientSettings, MutateSpec, RunSettings, ServerSettings, SignChoice, SynthHierarchy, SynthSpec,
    TraceSettings, TraceSource,
};
use super::vary::{label, Setting, VaryKey};
use super::{Plan, VaryDimension, VaryValue};
use ldplayer_dns::Rtype;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The server's idle timeout when the plan gives none: `ldplayer serve`'s and `replay`'s.
pub const DEFAULT_IDLE_TIMEOUT_S: f64 = 20.0;
/// Seconds a client waits for an answer by default: `ldplayer replay --timeout`'s default.
pub const DEFAULT_TIMEOUT_S: f64 = 2.0;
/// Clients with fewer queries than this are non-busy by default (paper §5.3).
pub const DEFAULT_NONBUSY_MAX_QUERIES: u64 = 250;
/// Seconds left out of the statistics at the start of each run by default.
pub const DEFAULT_WARMUP_S: f64 = 5.0;
/// Seconds of sampling after the last query by default.
pub const DEFAULT_COOLDOWN_S: f64 = 1.0;

/// The checker of one plan: its text (for places), its folder (for paths) and the places of
/// the keys it has seen (for errors found only when keys are combined).
struct Resolver<'a> {
    loc: Locator<'a>,
    dir: &'a Path,
    spans: HashMap<&'static str, Range<usize>>,
}

type Checked<T> = Result<T, PlanError>;

impl Resolver<'_> {
    /// A number checked by `rule`, its place remembered under `key`.
    fn number<T: Copy>(
        &mut self,
        value: &Option<At<T>>,
        key: &'static str,
        rule: impl Fn(T) -> Result<T, String>,
    ) -> Checked<Option<T>> {
        let Some(v) = value else { return Ok(None) };
        self.spans.insert(key, v.span());
        rule(*v.get_ref())
            .map(Some)
            .map_err(|m| self.loc.error(Some(v.span()), key, m))
    }

    /// A path of the plan resolved against its folder, which must exist.
    fn path(&self, value: &At<String>, key: &str) -> Checked<PathBuf> {
        let path = self.dir.join(value.get_ref());
        if path.exists() {
            Ok(path)
        } else {
            Err(self.loc.error(
                Some(value.span()),
                key,
                format!("{} does not exist", path.display()),
            ))
        }
    }

    fn remember<T>(&mut self, key: &'static str, value: &Option<At<T>>) {
        if let Some(v) = value {
            self.spans.insert(key, v.span());
        }
    }
}

/// Checks `raw` (read from `text`, in folder `dir`) and makes it a [`Plan`].
pub(super) fn resolve(raw: RawPlan, text: &str, dir: &Path) -> Checked<Plan> {
    let mut r = Resolver {
        loc: Locator::new(text),
        dir,
        spans: HashMap::new(),
    };
    let run = run_section(&mut r, &raw.run)?;
    let trace = trace_section(&mut r, &raw.trace, run.seed)?;
    let (server, tls_given) = server_section(&mut r, &raw.server)?;
    let network = network_section(&mut r, &raw.network)?;
    let (client, client_idle_follows) = client_section(&mut r, &raw.client, &server)?;
    let vary = vary_section(&mut r, &raw)?;
    super::runs::runs_within_bound(&r.loc, &raw, &vary, run.repeat)?;
    let mut base = RunSettings {
        trace,
        server,
        network,
        client,
        warmup_s: run.warmup_s,
        cooldown_s: run.cooldown_s,
        seed: run.seed,
    };
    if tls_given.is_none() {
        let tls_runs = base.trace.mutate.proto == ProtoChoice::Tls
            || vary.iter().any(|d| {
                d.values
                    .iter()
                    .any(|v| v.setting == Setting::Proto(ProtoChoice::Tls))
            });
        base.server.tls = tls_runs;
    }
    let diff = match &raw.diff {
        Some(d) => Some(diff_section(&mut r, d)?),
        None => None,
    };
    base.client.keep_answers = diff.is_some();
    let mut plan = Plan {
        dir: dir.to_path_buf(),
        base,
        client_idle_follows,
        server_tls: tls_given,
        vary,
        repeat: run.repeat,
        diff: None,
    };
    super::runs::check_runs(&r.loc, &r.spans, &plan, &raw)?;
    if let (Some(d), Some(raw_diff)) = (diff, &raw.diff) {
        let runs = plan.runs();
        if !runs.iter().any(|run| d.base_of(run, &runs).is_some()) {
            let names: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
            return Err(r.loc.error(
                Some(raw_diff.get_ref().base.span()),
                "diff.base",
                format!(
                    "no run is named `{}`: give a run's name (its folder under runs/) or its \
                     varied values without the number and repeat; the runs: {}",
                    d.base,
                    names.join(", ")
                ),
            ));
        }
        plan.diff = Some(d);
    }
    Ok(plan)
}

/// `[diff]`: the base run's name and the criteria file (checked).
fn diff_section(r: &mut Resolver, raw: &At<super::raw::RawDiff>) -> Checked<super::DiffPlan> {
    let d = raw.get_ref();
    let criteria = match &d.criteria {
        Some(c) => {
            let path = r.path(c, "diff.criteria")?;
            let text = std::fs::read_to_string(&path).map_err(|e| {
                r.loc.error(
                    Some(c.span()),
                    "diff.criteria",
                    format!("{}: {e}", path.display()),
                )
            })?;
            ldplayer_diff::Criteria::from_toml(&text).map_err(|e| {
                r.loc.error(
                    Some(c.span()),
                    "diff.criteria",
                    format!("{}: {e}", path.display()),
                )
            })?;
            Some(path)
        }
        None => None,
    };
    Ok(super::DiffPlan {
        base: d.base.get_ref().trim().to_string(),
        criteria,
    })
}

struct RunSection {
    repeat: u32,
    warmup_s: f64,
    cooldown_s: f64,
    seed: u64,
}

fn run_section(r: &mut Resolver, raw: &RawRun) -> Checked<RunSection> {
    Ok(RunSection {
        repeat: r
            .number(&raw.repeat, "run.repeat", check::at_least_one)?
            .unwrap_or(1),
        warmup_s: r
            .number(&raw.warmup_s, "run.warmup_s", check::run_s)?
            .unwrap_or(DEFAULT_WARMUP_S),
        cooldown_s: r
            .number(&raw.cooldown_s, "run.cooldown_s", check::run_s)?
            .unwrap_or(DEFAULT_COOLDOWN_S),
        seed: raw.seed.unwrap_or(0),
    })
}

fn trace_section(r: &mut Resolver, raw: &At<RawTrace>, seed: u64) -> Checked<TraceSettings> {
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

fn synth_spec(r: &mut Resolver, raw: &At<super::raw::RawSynth>, seed: u64) -> Checked<SynthSpec> {
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

/// The server's settings, and `tls` if the plan gave it (otherwise it follows the runs).
fn server_section(
    r: &mut Resolver,
    raw: &At<RawServer>,
) -> Checked<(ServerSettings, Option<bool>)> {
    let s = raw.get_ref();
    r.spans.insert("server", raw.span());
    r.spans.insert("server.kind", s.kind.span());
    r.remember("server.tls", &s.tls);
    r.remember("server.zones", &s.zones);
    let mut zones = Vec::new();
    if let Some(list) = &s.zones {
        for z in list.get_ref() {
            zones.push(r.path(z, "server.zones")?);
        }
    }
    let manifest = match &s.manifest {
        Some(m) => {
            r.spans.insert("server.manifest", m.span());
            Some(r.path(m, "server.manifest")?)
        }
        None => None,
    };
    let tls = s.tls.as_ref().map(|t| *t.get_ref());
    let hierarchy = hierarchy(r, s)?;
    let validation = validation(r, s)?;
    r.remember("server.aggressive_nsec", &s.aggressive_nsec);
    r.remember("server.qname_minimisation", &s.qname_minimisation);
    let resolver = ldplayer_servers::ResolverOptions {
        aggressive_nsec: s.aggressive_nsec.as_ref().map(|b| *b.get_ref()),
        qname_minimisation: s.qname_minimisation.as_ref().map(|b| *b.get_ref()),
    };
    Ok((
        ServerSettings {
            kind: *s.kind.get_ref(),
            zones,
            manifest,
            threads: r.number(&s.threads, "server.threads", check::threads)?,
            idle_timeout_s: r
                .number(
                    &s.idle_timeout_s,
                    "server.idle_timeout_s",
                    check::idle_timeout_s,
                )?
                .unwrap_or(DEFAULT_IDLE_TIMEOUT_S),
            tls: tls.unwrap_or(false),
            extra: s.extra.clone(),
            validation,
            resolver,
            hierarchy,
        },
        tls,
    ))
}

/// `hierarchy = { tlds, slds, providers, sign }`: a synthetic hierarchy instead of `manifest`
/// or `zones`.
fn hierarchy(r: &mut Resolver, s: &RawServer) -> Checked<Option<SynthHierarchy>> {
    let Some(h) = &s.hierarchy else {
        return Ok(None);
    };
    r.spans.insert("server.hierarchy", h.span());
    if s.manifest.is_some() || s.zones.is_some() {
        return Err(r.loc.error(
            Some(h.span()),
            "server.hierarchy",
            "a synthetic hierarchy takes the place of `manifest` and `zones`: give one of them",
        ));
    }
    let raw = h.get_ref();
    let defaults = ldplayer_zonebuild::synthetic::Shape::default();
    // One address each in a /16 for the TLDs and for the providers.
    let addresses = |n: usize| {
        let max = ldplayer_zonebuild::synthetic::MAX_ADDRESSES;
        if (1..=max).contains(&n) {
            Ok(n)
        } else {
            Err(format!("from 1 to {max}, not {n}"))
        }
    };
    let tlds = r
        .number(&raw.tlds, "server.hierarchy.tlds", addresses)?
        .unwrap_or(defaults.tlds);
    let slds = r
        .number(&raw.slds, "server.hierarchy.slds", |n: usize| {
            match n.checked_mul(tlds).filter(|&all| all <= check::MAX_SLDS) {
                Some(_) => Ok(n),
                None => Err(format!(
                    "{n} under each of {tlds} TLDs: {} second-level zones at most",
                    check::MAX_SLDS
                )),
            }
        })?
        .unwrap_or(defaults.slds);
    let providers = r
        .number(&raw.providers, "server.hierarchy.providers", addresses)?
        .unwrap_or(defaults.providers);
    Ok(Some(SynthHierarchy {
        tlds,
        slds,
        providers,
        sign: raw.sign.as_ref().map_or(SignChoice::None, |s| *s.get_ref()),
    }))
}

/// `trust_anchor` (`auto` or a file), `validation_time` (a TOML date-time or Unix seconds) and
/// `insecure` domains; the last two only with the first.
fn validation(
    r: &mut Resolver,
    s: &RawServer,
) -> Checked<Option<ldplayer_servers::validation::Validation>> {
    use ldplayer_servers::validation::{self, TrustAnchor, Validation};
    r.remember("server.trust_anchor", &s.trust_anchor);
    r.remember("server.validation_time", &s.validation_time);
    r.remember("server.insecure", &s.insecure);
    let Some(anchor_value) = &s.trust_anchor else {
        for (key, span) in [
            (
                "server.validation_time",
                s.validation_time.as_ref().map(At::span),
            ),
            ("server.insecure", s.insecure.as_ref().map(At::span)),
        ] {
            if let Some(span) = span {
                return Err(r.loc.error(
                    Some(span),
                    key,
                    "only a validating resolver takes it: give `trust_anchor` too",
                ));
            }
        }
        return Ok(None);
    };
    let anchor = if anchor_value.get_ref() == "auto" {
        let unsigned = s.hierarchy.as_ref().is_some_and(|h| {
            h.get_ref()
                .sign
                .as_ref()
                .is_none_or(|s| *s.get_ref() == SignChoice::None)
        });
        if unsigned {
            return Err(r.loc.error(
                Some(anchor_value.span()),
                "server.trust_anchor",
                "`auto` takes the keys of the hierarchy's root, which is not signed: \
                 give the hierarchy `sign = \"nsec\"` or `\"nsec3\"`",
            ));
        }
        TrustAnchor::Auto
    } else {
        TrustAnchor::File(r.path(anchor_value, "server.trust_anchor")?)
    };
    let time = match &s.validation_time {
        None => None,
        Some(t) => Some(
            unix_seconds(t.get_ref())
                .map_err(|m| r.loc.error(Some(t.span()), "server.validation_time", m))?,
        ),
    };
    let mut insecure = Vec::new();
    for d in s.insecure.iter().flat_map(|l| l.get_ref()) {
        insecure.push(validation::domain(d.get_ref()).map_err(|e| {
            r.loc
                .error(Some(d.span()), "server.insecure", e.to_string())
        })?);
    }
    Ok(Some(Validation {
        anchor,
        time,
        insecure,
    }))
}

/// A moment as Unix seconds: a TOML date-time with its offset (`2017-08-21T12:00:00Z`) or an
/// integer.
fn unix_seconds(value: &toml::Value) -> Result<i64, String> {
    match value {
        toml::Value::Integer(i) => Ok(*i),
        toml::Value::Datetime(d) if d.offset.is_some() && d.time.is_some() => d
            .to_string()
            .parse::<jiff::Timestamp>()
            .map(|t| t.as_second())
            .map_err(|e| e.to_string()),
        _ => Err("a date-time with its offset (2017-08-21T12:00:00Z) or Unix seconds".to_string()),
    }
}

fn network_section(r: &mut Resolver, n: &RawNetwork) -> Checked<NetworkSettings> {
    let loss_model = n
        .loss_model
        .as_ref()
        .map_or(LossModelChoice::Bernoulli, |m| *m.get_ref());
    r.remember("network.loss_model", &n.loss_model);
    let burst_len = r.number(&n.burst_len, "network.burst_len", check::burst_len)?;
    let client_rtt = match &n.client_rtt {
        Some(c) => Some(client_rtt(r, c)?),
        None => None,
    };
    Ok(NetworkSettings {
        rtt_ms: r
            .number(&n.rtt_ms, "network.rtt_ms", check::delay_ms)?
            .unwrap_or(0.0),
        loss: r
            .number(&n.loss, "network.loss", check::loss)?
            .unwrap_or(0.0),
        loss_model,
        burst_len: burst_len.unwrap_or(1.0),
        jitter_ms: r
            .number(&n.jitter_ms, "network.jitter_ms", check::delay_ms)?
            .unwrap_or(0.0),
        reorder: n.reorder,
        spin_us: r
            .number(&n.spin_us, "network.spin_us", check::spin_us)?
            .unwrap_or(0.0),
        bandwidth_mbps: r.number(
            &n.bandwidth_mbps,
            "network.bandwidth_mbps",
            check::bandwidth_mbps,
        )?,
        queue_kb: r.number(&n.queue_kb, "network.queue_kb", check::queue_kb)?,
        client_rtt,
    })
}

fn client_rtt(r: &mut Resolver, raw: &At<super::raw::RawClientRtt>) -> Checked<ClientRtt> {
    let c = raw.get_ref();
    let key = "network.client_rtt";
    let min_ms = r.number(&c.min_ms, "network.client_rtt.min_ms", check::delay_ms)?;
    let max_ms = r.number(&c.max_ms, "network.client_rtt.max_ms", check::delay_ms)?;
    let median_ms = r.number(
        &c.median_ms,
        "network.client_rtt.median_ms",
        check::delay_ms,
    )?;
    let sigma = r.number(&c.sigma, "network.client_rtt.sigma", check::non_negative)?;
    let need = |what: &str| {
        r.loc.error(
            Some(raw.span()),
            key,
            format!("a {:?} distribution needs {what}", c.dist),
        )
    };
    let rtt = match c.dist {
        RttDistribution::Fixed => {
            let m = median_ms.ok_or_else(|| need("`median_ms`"))?;
            ClientRtt {
                dist: c.dist,
                min_ms: m,
                max_ms: m,
                median_ms: m,
                sigma: 0.0,
            }
        }
        RttDistribution::Uniform => {
            let (Some(min), Some(max)) = (min_ms, max_ms) else {
                return Err(need("`min_ms` and `max_ms`"));
            };
            ClientRtt {
                dist: c.dist,
                min_ms: min,
                max_ms: max,
                median_ms: (min + max) / 2.0,
                sigma: 0.0,
            }
        }
        RttDistribution::Lognormal => {
            let (Some(median), Some(sigma)) = (median_ms, sigma) else {
                return Err(need("`median_ms` and `sigma`"));
            };
            ClientRtt {
                dist: c.dist,
                min_ms: min_ms.unwrap_or(0.0),
                max_ms: max_ms.unwrap_or(check::MAX_DELAY_MS),
                median_ms: median,
                sigma,
            }
        }
    };
    if rtt.min_ms > rtt.max_ms {
        return Err(r.loc.error(
            Some(raw.span()),
            key,
            format!("min_ms {} is above max_ms {}", rtt.min_ms, rtt.max_ms),
        ));
    }
    Ok(rtt)
}

/// The client's settings, and whether its idle timeout follows the server's.
fn client_section(
    r: &mut Resolver,
    c: &RawClient,
    server: &ServerSettings,
) -> Checked<(ClientSettings, bool)> {
    let idle = r.number(
        &c.idle_timeout_s,
        "client.idle_timeout_s",
        check::idle_timeout_s,
    )?;
    let queriers = r.number(&c.queriers, "client.queriers", check::threads)?;
    let max_udp_sockets = r.number(
        &c.max_udp_sockets,
        "client.max_udp_sockets",
        check::udp_sockets,
    )?;
    r.remember("client.population", &c.population);
    r.remember("client.doh_method", &c.doh_method);
    r.remember("client.stack", &c.stack);
    let (mode, ramp, max_in_flight) = client_mode(r, c)?;
    let queries_per_connection = r.number(
        &c.queries_per_connection,
        "client.queries_per_connection",
        check::at_least_one,
    )?;
    let processes = r.number(&c.processes, "client.processes", check::threads)?;
    let population = match &c.population {
        Some(given) => {
            let path = r.path(given, "client.population")?;
            if let Err(e) = super::settings::read_population(&path) {
                return Err(r.loc.error(Some(given.span()), "client.population", e));
            }
            Some(path)
        }
        None => None,
    };
    Ok((
        ClientSettings {
            population,
            doh_method: c.doh_method.as_ref().map(|m| *m.get_ref()),
            stack: c.stack.as_ref().map(|s| *s.get_ref()).unwrap_or_default(),
            timeout_s: r
                .number(&c.timeout_s, "client.timeout_s", check::timeout_s)?
                .unwrap_or(DEFAULT_TIMEOUT_S),
            idle_timeout_s: idle.unwrap_or(server.idle_timeout_s + 1.0),
            udp_retries: c.udp_retries.unwrap_or(0),
            tls_resume: c.tls_resume.unwrap_or(true),
            tc_retry: c.tc_retry.unwrap_or(true),
            max_udp_sockets,
            queriers,
            keep_answers: false,
            mode,
            ramp,
            max_in_flight,
            queries_per_connection,
            processes,
        },
        idle.is_none(),
    ))
}

/// `[client] mode` with the keys that go with it: a ramp's rate, length and bounds, a closed
/// loop's queries in flight; each refused without its mode, and a ramp without its rate or
/// length.
fn client_mode(
    r: &mut Resolver,
    c: &RawClient,
) -> Checked<(
    ClientMode,
    Option<ldplayer_results::RampSpec>,
    Option<usize>,
)> {
    let mode = c.mode.as_ref().map(|m| *m.get_ref()).unwrap_or_default();
    r.remember("client.mode", &c.mode);
    let to_qps = r.number(&c.ramp_to_qps, "client.ramp_to_qps", check::ramp_qps)?;
    let ramp_s = r.number(&c.ramp_s, "client.ramp_s", check::ramp_s)?;
    let max_loss = r.number(&c.max_loss_pct, "client.max_loss_pct", check::percent)?;
    let max_latency = r.number(
        &c.max_latency_ms,
        "client.max_latency_ms",
        check::latency_ms,
    )?;
    let max_in_flight = r.number(
        &c.max_in_flight,
        "client.max_in_flight",
        check::at_least_one,
    )?;
    let mode_span = c.mode.as_ref().map(|m| m.span());
    let misplaced = |key: &str, span: Option<std::ops::Range<usize>>, wants: ClientMode| {
        r.loc.error(
            span,
            format!("client.{key}"),
            format!(
                "`{key}` is for `mode = \"{}\"`, and this plan's mode is \"{}\"",
                wants.name(),
                mode.name()
            ),
        )
    };
    if mode != ClientMode::Ramp {
        for (key, span) in [
            ("ramp_to_qps", c.ramp_to_qps.as_ref().map(|v| v.span())),
            ("ramp_s", c.ramp_s.as_ref().map(|v| v.span())),
            ("max_loss_pct", c.max_loss_pct.as_ref().map(|v| v.span())),
            (
                "max_latency_ms",
                c.max_latency_ms.as_ref().map(|v| v.span()),
            ),
        ] {
            if span.is_some() {
                return Err(misplaced(key, span, ClientMode::Ramp));
            }
        }
    }
    if mode != ClientMode::Fast && c.max_in_flight.is_some() {
        let span = c.max_in_flight.as_ref().map(|v| v.span());
        return Err(misplaced("max_in_flight", span, ClientMode::Fast));
    }
    let ramp = match mode {
        ClientMode::Ramp => {
            let (Some(to_qps), Some(ramp_s)) = (to_qps, ramp_s) else {
                return Err(r.loc.error(
                    mode_span,
                    "client.mode",
                    "a ramp needs `ramp_to_qps` (the rate it ends at) and `ramp_s` (its length)",
                ));
            };
            let mut spec = ldplayer_results::RampSpec::new(to_qps, ramp_s);
            if let Some(pct) = max_loss {
                spec.max_loss_pct = pct;
            }
            spec.max_latency_ms = max_latency;
            Some(spec)
        }
        _ => None,
    };
    Ok((mode, ramp, max_in_flight))
}

fn vary_section(r: &mut Resolver, raw: &RawPlan) -> Checked<Vec<VaryDimension>> {
    let mut dims: Vec<VaryDimension> = Vec::new();
    for (key, values) in &raw.vary.0 {
        let name = key.get_ref();
        let Some(k) = VaryKey::from_name(name) else {
            return Err(r.loc.error(
                Some(key.span()),
                format!("vary.{name}"),
                format!("`{name}` cannot be varied; these can: {}", VaryKey::names()),
            ));
        };
        if values.get_ref().is_empty() {
            return Err(r.loc.error(
                Some(values.span()),
                format!("vary.{name}"),
                "the list is empty: give at least one value",
            ));
        }
        let other_do = match k {
            VaryKey::DoShare => Some(VaryKey::SetDo),
            VaryKey::SetDo => Some(VaryKey::DoShare),
            _ => None,
        };
        if let Some(other) = other_do.filter(|o| dims.iter().any(|d| d.key == *o)) {
            return Err(r.loc.error(
                Some(key.span()),
                format!("vary.{name}"),
                format!(
                    "vary `{}` or `{}`, not both: both set the DO share",
                    other, k
                ),
            ));
        }
        let mut dim = VaryDimension {
            key: k,
            values: Vec::new(),
        };
        for (i, v) in values.get_ref().iter().enumerate() {
            let at = format!("vary.{name}[{i}]");
            let setting = k
                .parse(v.get_ref())
                .map_err(|m| r.loc.error(Some(v.span()), &at, m))?;
            let text = label(v.get_ref());
            if dim.values.iter().any(|x| x.label == text) {
                return Err(r
                    .loc
                    .error(Some(v.span()), at, format!("`{text}` is listed twice")));
            }
            dim.values.push(VaryValue {
                label: text,
                setting,
            });
        }
        dims.push(dim);
    }
    Ok(dims)
}
