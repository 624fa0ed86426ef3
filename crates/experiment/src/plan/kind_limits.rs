//! What each server kind can take of a run's settings as they are written: its idle timeout's
//! unit and range, its threads, a manifest, raw configuration lines.
//!
//! The servers crate writes the idle timeout in the unit the server's configuration takes
//! (whole seconds for nsd, knotd and the PowerDNS Recursor, rounded up and at least 1; 100 ms
//! steps up to 120 s for BIND; milliseconds for Unbound and Knot Resolver), and refuses at
//! start what a kind cannot do. Here the same is checked when the plan is read, so that a run
//! does not get a timeout other than its plan's, nor fail after `--check` passed it.

use super::check::whole;
use super::kinds::ServerKind;
use super::settings::RunSettings;
use super::vary::VaryKey;

/// What does not hold together in one run: the varied keys to blame, the key to point at
/// otherwise, and what is wrong.
pub(super) type Clash = (Vec<VaryKey>, &'static str, String);

/// How a kind takes its idle timeout: its option, the step in seconds, and the least and most.
struct IdleUnit {
    option: &'static str,
    step: f64,
    least: f64,
    most: Option<f64>,
}

fn idle_unit(kind: ServerKind) -> IdleUnit {
    let unit = |option, step, least, most| IdleUnit {
        option,
        step,
        least,
        most,
    };
    match kind {
        ServerKind::Nsd => unit("tcp-timeout", 1.0, 1.0, None),
        ServerKind::Knot => unit("tcp-idle-timeout", 1.0, 1.0, None),
        ServerKind::PdnsRecursor => unit("client-tcp-timeout", 1.0, 1.0, None),
        // A new connection waits `tcp-initial-timeout` for its first query, at least 2.5 s.
        ServerKind::Bind | ServerKind::BindResolver => {
            unit("tcp-idle-timeout", 0.1, 2.5, Some(120.0))
        }
        ServerKind::Unbound => unit("tcp-idle-timeout", 0.001, 0.001, None),
        ServerKind::Kresd => unit("net.tcp_in_idle", 0.001, 0.001, None),
        ServerKind::Ldplayer => unit("tcp_idle_timeout", 0.001, 0.0, None),
    }
}

/// Whether the run's server kind takes the run's settings as written.
pub(super) fn kind_limits(s: &RunSettings) -> Result<(), Clash> {
    let kind = s.server.kind;
    let idle = s.server.idle_timeout_s;
    let unit = idle_unit(kind);
    let in_steps = if unit.step == 1.0 {
        "in whole seconds".to_string()
    } else if unit.step == 0.001 {
        "in whole milliseconds".to_string()
    } else {
        format!("in steps of {} s", unit.step)
    };
    let blame = vec![VaryKey::IdleTimeoutS, VaryKey::Kind];
    if !whole(idle, unit.step) {
        // As the servers crate writes it: rounded up to the next step, in milliseconds.
        let step_ms = (unit.step * 1e3).round();
        let runs_as = ((idle * 1e3 / step_ms).ceil() * step_ms) / 1e3;
        return Err((
            blame,
            "server.idle_timeout_s",
            format!(
                "{kind} takes its idle timeout (`{}`) {in_steps}: {idle} s would run as \
                 {runs_as} s",
                unit.option
            ),
        ));
    }
    if idle < unit.least - 1e-9 || unit.most.is_some_and(|m| idle > m + 1e-9) {
        let range = match unit.most {
            Some(m) => format!("from {} to {m} s", unit.least),
            None => format!("at least {} s", unit.least),
        };
        return Err((
            blame,
            "server.idle_timeout_s",
            format!(
                "{kind}'s idle timeout (`{}`) is {range}, not {idle} s",
                unit.option
            ),
        ));
    }
    if kind == ServerKind::Kresd && s.server.threads.is_some_and(|t| t > 1) {
        return Err((
            vec![VaryKey::Threads, VaryKey::Kind],
            "server.threads",
            "kresd runs one single-threaded process here: threads must be 1".into(),
        ));
    }
    if !kind.is_recursive() && !kind.is_embedded() && s.server.manifest.is_some() {
        return Err((
            vec![VaryKey::Kind],
            "server.manifest",
            format!("{kind} serves zone files, not a manifest: give `zones = [...]`, or use kind ldplayer"),
        ));
    }
    if kind.is_embedded() && !s.server.extra.is_empty() {
        return Err((
            vec![VaryKey::Kind],
            "server",
            "ldplayer's own server has no configuration file: `extra` lines are for the other kinds"
                .into(),
        ));
    }
    Ok(())
}
