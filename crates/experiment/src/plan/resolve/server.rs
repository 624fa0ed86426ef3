//! The `[server]` section: the server's kind, zones, synthetic hierarchy and DNSSEC validation.

use super::{Checked, Resolver, DEFAULT_IDLE_TIMEOUT_S};
use crate::plan::check;
use crate::plan::raw::{At, RawServer};
use crate::plan::settings::{ServerSettings, SignChoice, SynthHierarchy};

/// The server's settings, and `tls` if the plan gave it (otherwise it follows the runs).
pub(super) fn server_section(
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
