//! Checks of a plan's runs as a whole: how many there are, and whether each run's combination
//! of values holds together (a kind that cannot serve a transport, options only a resolver
//! takes, what each kind takes of its settings), reported at the value most to blame.

use super::check;
use super::error::{Locator, PlanError};
use super::kinds::{ProtoChoice, ServerKind};
use super::network::LossModelChoice;
use super::raw::RawPlan;
use super::settings::RunSettings;
use super::vary::VaryKey;
use super::{Plan, VaryDimension};
use std::collections::HashMap;
use std::ops::Range;

type Checked<T> = Result<T, PlanError>;

/// Where each varied value stands in the file: per dimension, the key's place and each value's.
type VarySpans = Vec<(Range<usize>, Vec<Range<usize>>)>;

/// The place of each dimension's key and values.
fn vary_spans(raw: &RawPlan) -> VarySpans {
    raw.vary
        .0
        .iter()
        .map(|(k, vs)| (k.span(), vs.get_ref().iter().map(|v| v.span()).collect()))
        .collect()
}

/// Refuses a plan of more than [`check::MAX_RUNS`] runs, before they are made: at `repeat`
/// when it is given, else at the last varied key.
pub(super) fn runs_within_bound(
    loc: &Locator,
    raw: &RawPlan,
    vary: &[VaryDimension],
    repeat: u32,
) -> Checked<()> {
    let combinations = vary
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(d.values.len()));
    let total = combinations.and_then(|c| c.checked_mul(repeat as usize));
    if total.is_some_and(|t| t <= check::MAX_RUNS) {
        return Ok(());
    }
    let (span, key) = match (&raw.run.repeat, raw.vary.0.last()) {
        (Some(rep), _) if rep.get_ref() > &1 => (Some(rep.span()), "run.repeat".to_string()),
        (_, Some((k, _))) => (Some(k.span()), format!("vary.{}", k.get_ref())),
        _ => (None, "run.repeat".to_string()),
    };
    let count = |n: Option<usize>| n.map_or_else(|| "too many".to_string(), |n| n.to_string());
    Err(loc.error(
        span,
        key,
        format!(
            "{} combinations × {repeat} repeats make {} runs: a plan has {} runs at most",
            count(combinations),
            count(total),
            check::MAX_RUNS
        ),
    ))
}

/// Checks every run's combination of values, and reports the first that does not hold
/// together at the value most to blame.
pub(super) fn check_runs(
    loc: &Locator,
    key_spans: &HashMap<&'static str, Range<usize>>,
    plan: &Plan,
    raw: &RawPlan,
) -> Checked<()> {
    let spans = vary_spans(raw);
    let mut seen = std::collections::HashSet::new();
    for run in plan.combinations() {
        let settings = plan.settings_of(&run);
        let Err((culprits, home, message)) = cross_check(&settings) else {
            continue;
        };
        if !seen.insert(message.clone()) {
            continue;
        }
        // The first culprit varied in this run takes the blame; otherwise the key in its
        // section.
        // `server` varies the kind and the threads together: it answers for both.
        let varied = culprits.iter().find_map(|c| {
            let d = plan.vary.iter().position(|d| {
                d.key == *c
                    || (d.key == VaryKey::Server && matches!(c, VaryKey::Kind | VaryKey::Threads))
            })?;
            Some((d, run[d]))
        });
        let (span, key) = match varied {
            Some((d, i)) => (
                Some(spans[d].1[i].clone()),
                format!("vary.{}[{i}]", plan.vary[d].key),
            ),
            None => (key_spans.get(home).cloned(), home.to_string()),
        };
        let which = if plan.vary.is_empty() {
            String::new()
        } else {
            format!("in the run with {}: ", plan.varied_text(&run, ", "))
        };
        return Err(loc.error(span, key, format!("{which}{message}")));
    }
    Ok(())
}

/// What does not hold together in one run: the varied keys to blame (first first), the key
/// outside `[vary]` to point at when none of them is varied, and what is wrong.
fn cross_check(s: &RunSettings) -> Result<(), (Vec<VaryKey>, &'static str, String)> {
    super::kind_limits::kind_limits(s)?;
    let kind = s.server.kind;
    let tls = s.trace.mutate.proto == ProtoChoice::Tls;
    let able = |can: fn(&ServerKind) -> bool| {
        let kinds: Vec<_> = ServerKind::ALL
            .into_iter()
            .filter(can)
            .map(ServerKind::name)
            .collect();
        kinds.join(", ")
    };
    if tls && !kind.supports_tls() {
        return Err((
            vec![VaryKey::Kind, VaryKey::Proto],
            "server.kind",
            format!(
                "{kind} does not serve DNS over TLS here, so proto = \"tls\" cannot run against it (these do: {})",
                able(|k| k.supports_tls())
            ),
        ));
    }
    if s.server.tls && !kind.supports_tls() {
        return Err((
            vec![VaryKey::Kind],
            "server.tls",
            format!("{kind} does not serve DNS over TLS here: remove `tls = true` from [server]"),
        ));
    }
    if tls && !s.server.tls {
        return Err((
            vec![VaryKey::Proto],
            "server.tls",
            "proto = \"tls\" needs the server's TLS: remove `tls = false` from [server]".into(),
        ));
    }
    let encrypted = [
        (ProtoChoice::Doh, kind.supports_https(), "DNS over HTTPS"),
        (ProtoChoice::Doq, kind.supports_quic(), "DNS over QUIC"),
    ];
    for (proto, supported, what) in encrypted {
        if s.trace.mutate.proto == proto && !supported {
            return Err((
                vec![VaryKey::Kind, VaryKey::Proto],
                "server.kind",
                format!(
                    "{kind} does not serve {what} here, so proto = \"{}\" cannot run against it (these do: {})",
                    proto.as_str(),
                    if proto == ProtoChoice::Doh {
                        able(|k| k.supports_https())
                    } else {
                        able(|k| k.supports_quic())
                    }
                ),
            ));
        }
    }
    if s.client.population.is_some() && s.trace.mutate.proto != ProtoChoice::Keep {
        return Err((
            vec![VaryKey::Proto],
            "client.population",
            "a population gives each client its group's transport: it cannot go with `proto`"
                .into(),
        ));
    }
    if let Ok(Some(population)) = s.client.read_population() {
        for proto in population.transports() {
            let supported = match proto {
                ldplayer_trace::Proto::Tls => kind.supports_tls(),
                ldplayer_trace::Proto::Https => kind.supports_https(),
                ldplayer_trace::Proto::Quic => kind.supports_quic(),
                ldplayer_trace::Proto::Udp | ldplayer_trace::Proto::Tcp => true,
            };
            if !supported {
                return Err((
                    vec![VaryKey::Kind],
                    "client.population",
                    format!("the population has {proto} clients, and {kind} does not serve {proto} here"),
                ));
            }
        }
    }
    let local_zones = !s.server.zones.is_empty();
    if kind.is_recursive() && local_zones && !kind.answers_local_zones() {
        return Err((
            vec![VaryKey::Kind],
            "server.zones",
            format!("{kind} does not answer from zone files of its own here (unbound and kresd do): give it a hierarchy with `manifest` or `hierarchy`"),
        ));
    }
    if kind.is_recursive()
        && s.server.manifest.is_none()
        && s.server.hierarchy.is_none()
        && !local_zones
    {
        return Err((
            vec![VaryKey::Kind],
            "server.kind",
            format!("{kind} is recursive: give it a hierarchy with `manifest` (from `ldplayer zones build`) or `hierarchy = {{ ... }}` (a synthetic one), or `zones` to answer from itself"),
        ));
    }
    let options = s.server.resolver;
    if !kind.is_recursive() && (options.any() || s.server.validation.is_some()) {
        let key = if s.server.validation.is_some() {
            "server.trust_anchor"
        } else if options.aggressive_nsec.is_some() {
            "server.aggressive_nsec"
        } else {
            "server.qname_minimisation"
        };
        return Err((
            vec![VaryKey::Kind, VaryKey::AggressiveNsec, VaryKey::QnameMinimisation],
            key,
            format!("{kind} is not a resolver: DNSSEC validation and resolver options are for unbound, kresd, pdns-recursor and bind-resolver"),
        ));
    }
    if options.aggressive_nsec.is_some() && s.server.validation.is_none() {
        return Err((
            vec![VaryKey::AggressiveNsec],
            "server.aggressive_nsec",
            "aggressive NSEC answers from validated NSEC and NSEC3 records only: without `trust_anchor` the resolver does not validate and the option would change nothing".into(),
        ));
    }
    if kind == ServerKind::Kresd && options.aggressive_nsec == Some(false) {
        return Err((
            vec![VaryKey::Kind, VaryKey::AggressiveNsec],
            "server.aggressive_nsec",
            "Knot Resolver 5 always answers from validated NSEC and NSEC3 ranges: it cannot turn aggressive NSEC off".into(),
        ));
    }
    if kind == ServerKind::Kresd
        && s.server
            .validation
            .as_ref()
            .is_some_and(|v| v.time.is_some())
    {
        return Err((
            vec![VaryKey::Kind],
            "server.validation_time",
            "Debian's kresd links jemalloc, which libfaketime cannot wrap: it cannot validate at another time (use unbound or pdns-recursor)".into(),
        ));
    }
    if s.trace.mutate.strip_edns && s.trace.mutate.do_share.is_some_and(|d| d > 0.0) {
        return Err((
            vec![VaryKey::DoShare, VaryKey::SetDo],
            "trace.mutate",
            "`strip_edns` removes the OPT record that carries DO: it cannot go with a DO share"
                .into(),
        ));
    }
    if s.network.queue_kb.is_some() && s.network.bandwidth_mbps.is_none() {
        return Err((
            vec![VaryKey::QueueKb, VaryKey::BandwidthMbps],
            "network.queue_kb",
            "a queue belongs to a rate limit: give `bandwidth_mbps` too".into(),
        ));
    }
    if s.network.burst_len != 1.0 && s.network.loss_model != LossModelChoice::GilbertElliott {
        return Err((
            vec![VaryKey::BurstLen],
            "network.burst_len",
            "bursts need `loss_model = \"gilbert-elliott\"`".into(),
        ));
    }
    if let Some(d) = s.trace.expected_duration_s() {
        if s.warmup_s >= d {
            return Err((
                vec![VaryKey::RateScale],
                "run.warmup_s",
                format!(
                    "the warm-up ({} s) is as long as the trace ({d:.3} s): nothing would be measured",
                    s.warmup_s
                ),
            ));
        }
    }
    for stage in s.trace.mutate_stages(s.seed) {
        if let Err(e) = ldplayer_mutate::Mutator::new(stage, ldplayer_trace::Collect::default()) {
            return Err((
                vec![
                    VaryKey::Proto,
                    VaryKey::DoShare,
                    VaryKey::SetDo,
                    VaryKey::RateScale,
                ],
                "trace.mutate",
                e.to_string(),
            ));
        }
    }
    Ok(())
}
