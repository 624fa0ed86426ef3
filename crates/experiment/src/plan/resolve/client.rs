//! The `[network]` and `[client]` sections: the link, the clients' round trips, and how the
//! clients send (trace timing, `--fast`, a capacity ramp).

use super::{Checked, Resolver, DEFAULT_TIMEOUT_S};
use crate::plan::check;
use crate::plan::kinds::ClientMode;
use crate::plan::network::{ClientRtt, LossModelChoice, NetworkSettings, RttDistribution};
use crate::plan::raw::{At, RawClient, RawNetwork};
use crate::plan::settings::{ClientSettings, ServerSettings};

/// The `[network]` section: loss model, bursts and the clients' round trips, each checked.
pub(super) fn network_section(r: &mut Resolver, n: &RawNetwork) -> Checked<NetworkSettings> {
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

/// `[network.client_rtt]`: the distribution the clients' round trips are drawn from.
fn client_rtt(r: &mut Resolver, raw: &At<crate::plan::raw::RawClientRtt>) -> Checked<ClientRtt> {
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
pub(super) fn client_section(
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
            if let Err(e) = crate::plan::settings::read_population(&path) {
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
