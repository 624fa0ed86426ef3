//! `[vary]`: the keys a plan may vary, their values, and how a value changes a run.

use super::check;
use super::kinds::{ProtoChoice, ServerKind, Stack};
use super::settings::RunSettings;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A key that `[vary]` may list. Its name is the summary's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VaryKey {
    /// `trace.mutate.proto`: the transport every client is moved to.
    Proto,
    /// `server.idle_timeout_s`: the server's TCP/TLS idle timeout (and the client's, a second
    /// longer, unless `[client]` sets it).
    IdleTimeoutS,
    /// `network.rtt_ms`.
    RttMs,
    /// `network.loss`.
    Loss,
    /// `network.jitter_ms`.
    JitterMs,
    /// `network.bandwidth_mbps`.
    BandwidthMbps,
    /// `network.queue_kb`.
    QueueKb,
    /// `network.burst_len`.
    BurstLen,
    /// `trace.mutate.do_share`: the exact share of queries with DO.
    DoShare,
    /// `trace.mutate.set_do`: DO on every query (true) or the trace's own (false).
    SetDo,
    /// The trace's rate factor: 2 replays it twice as fast.
    RateScale,
    /// `server.kind`.
    Kind,
    /// `server.threads`.
    Threads,
    /// `server.aggressive_nsec`: a validating resolver's aggressive use of NSEC (RFC 8198).
    AggressiveNsec,
    /// `server.qname_minimisation`: a resolver's QNAME minimisation (RFC 9156).
    QnameMinimisation,
    /// `client.stack`: the client stack of DoT, DoH and DoQ (`lean` or `reference`).
    Stack,
    /// `server.kind` and `server.threads` together, as `"kind"` or `"kind@threads"`
    /// (`"unbound@2"`): servers that do not share a range of threads in one plan (kresd runs
    /// one thread).
    Server,
}

impl VaryKey {
    /// Every key, in the order the documentation lists them.
    pub const ALL: [VaryKey; 17] = [
        VaryKey::Proto,
        VaryKey::IdleTimeoutS,
        VaryKey::RttMs,
        VaryKey::Loss,
        VaryKey::JitterMs,
        VaryKey::BandwidthMbps,
        VaryKey::QueueKb,
        VaryKey::BurstLen,
        VaryKey::DoShare,
        VaryKey::SetDo,
        VaryKey::RateScale,
        VaryKey::Kind,
        VaryKey::Threads,
        VaryKey::AggressiveNsec,
        VaryKey::QnameMinimisation,
        VaryKey::Stack,
        VaryKey::Server,
    ];

    /// The key's name in `[vary]` and in `summary.csv`.
    pub fn name(self) -> &'static str {
        match self {
            VaryKey::Proto => "proto",
            VaryKey::IdleTimeoutS => "idle_timeout_s",
            VaryKey::RttMs => "rtt_ms",
            VaryKey::Loss => "loss",
            VaryKey::JitterMs => "jitter_ms",
            VaryKey::BandwidthMbps => "bandwidth_mbps",
            VaryKey::QueueKb => "queue_kb",
            VaryKey::BurstLen => "burst_len",
            VaryKey::DoShare => "do_share",
            VaryKey::SetDo => "set_do",
            VaryKey::RateScale => "rate_scale",
            VaryKey::Kind => "kind",
            VaryKey::Threads => "threads",
            VaryKey::AggressiveNsec => "aggressive_nsec",
            VaryKey::QnameMinimisation => "qname_minimisation",
            VaryKey::Stack => "stack",
            VaryKey::Server => "server",
        }
    }

    /// The key with this name.
    pub fn from_name(name: &str) -> Option<VaryKey> {
        VaryKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Where the key is set outside `[vary]` (its dotted path), for messages.
    pub fn home(self) -> &'static str {
        match self {
            VaryKey::Proto => "trace.mutate.proto",
            VaryKey::IdleTimeoutS => "server.idle_timeout_s",
            VaryKey::RttMs => "network.rtt_ms",
            VaryKey::Loss => "network.loss",
            VaryKey::JitterMs => "network.jitter_ms",
            VaryKey::BandwidthMbps => "network.bandwidth_mbps",
            VaryKey::QueueKb => "network.queue_kb",
            VaryKey::BurstLen => "network.burst_len",
            VaryKey::DoShare => "trace.mutate.do_share",
            VaryKey::SetDo => "trace.mutate.set_do",
            VaryKey::RateScale => "vary.rate_scale",
            VaryKey::Kind => "server.kind",
            VaryKey::Threads => "server.threads",
            VaryKey::AggressiveNsec => "server.aggressive_nsec",
            VaryKey::QnameMinimisation => "server.qname_minimisation",
            VaryKey::Stack => "client.stack",
            VaryKey::Server => "server.kind",
        }
    }

    /// The names of every key, for messages: `proto, idle_timeout_s, ...`.
    pub fn names() -> String {
        VaryKey::ALL.map(VaryKey::name).join(", ")
    }

    /// The setting `value` stands for under this key, or what is wrong with it.
    pub fn parse(self, value: &toml::Value) -> Result<Setting, String> {
        fn typed<T: serde::de::DeserializeOwned>(v: &toml::Value) -> Result<T, String> {
            T::deserialize(v.clone()).map_err(|e| e.message().trim_end().to_string())
        }
        let number = |v: &toml::Value| typed::<f64>(v);
        Ok(match self {
            VaryKey::Proto => Setting::Proto(typed(value)?),
            VaryKey::IdleTimeoutS => Setting::IdleTimeoutS(check::idle_timeout_s(number(value)?)?),
            VaryKey::RttMs => Setting::RttMs(check::delay_ms(number(value)?)?),
            VaryKey::Loss => Setting::Loss(check::loss(number(value)?)?),
            VaryKey::JitterMs => Setting::JitterMs(check::delay_ms(number(value)?)?),
            VaryKey::BandwidthMbps => {
                Setting::BandwidthMbps(check::bandwidth_mbps(number(value)?)?)
            }
            VaryKey::QueueKb => Setting::QueueKb(check::queue_kb(number(value)?)?),
            VaryKey::BurstLen => Setting::BurstLen(check::burst_len(number(value)?)?),
            VaryKey::DoShare => Setting::DoShare(check::share(number(value)?)?),
            VaryKey::SetDo => Setting::SetDo(typed(value)?),
            VaryKey::RateScale => Setting::RateScale(check::scale(number(value)?)?),
            VaryKey::Kind => Setting::Kind(typed(value)?),
            VaryKey::Threads => Setting::Threads(check::threads(typed::<u32>(value)?)?),
            VaryKey::AggressiveNsec => Setting::AggressiveNsec(typed(value)?),
            VaryKey::QnameMinimisation => Setting::QnameMinimisation(typed(value)?),
            VaryKey::Stack => Setting::Stack(typed::<Stack>(value)?),
            VaryKey::Server => {
                let text = typed::<String>(value)?;
                let (kind, threads) = match text.split_once('@') {
                    Some((k, n)) => {
                        let n: u32 = n.trim().parse().map_err(|_| {
                            format!("`{text}`: give \"kind\" or \"kind@threads\", threads a whole number")
                        })?;
                        (k, Some(check::threads(n)?))
                    }
                    None => (text.as_str(), None),
                };
                let kind: ServerKind = kind.trim().parse().map_err(|e| format!("{e}"))?;
                Setting::Server(kind, threads)
            }
        })
    }
}

impl fmt::Display for VaryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value of a varied key, checked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// See [`VaryKey::Proto`].
    Proto(ProtoChoice),
    /// See [`VaryKey::IdleTimeoutS`].
    IdleTimeoutS(f64),
    /// See [`VaryKey::RttMs`].
    RttMs(f64),
    /// See [`VaryKey::Loss`].
    Loss(f64),
    /// See [`VaryKey::JitterMs`].
    JitterMs(f64),
    /// See [`VaryKey::BandwidthMbps`].
    BandwidthMbps(f64),
    /// See [`VaryKey::QueueKb`].
    QueueKb(f64),
    /// See [`VaryKey::BurstLen`].
    BurstLen(f64),
    /// See [`VaryKey::DoShare`].
    DoShare(f64),
    /// See [`VaryKey::SetDo`].
    SetDo(bool),
    /// See [`VaryKey::RateScale`].
    RateScale(f64),
    /// See [`VaryKey::Kind`].
    Kind(ServerKind),
    /// See [`VaryKey::Threads`].
    Threads(u32),
    /// See [`VaryKey::AggressiveNsec`].
    AggressiveNsec(bool),
    /// See [`VaryKey::QnameMinimisation`].
    QnameMinimisation(bool),
    /// See [`VaryKey::Stack`].
    Stack(Stack),
    /// See [`VaryKey::Server`]: the kind, and its threads when given.
    Server(ServerKind, Option<u32>),
}

impl Setting {
    /// Makes `settings` what this value says. The client's idle timeout follows the server's
    /// only when `client_idle_follows` (the plan did not set it).
    pub fn apply(self, settings: &mut RunSettings, client_idle_follows: bool) {
        match self {
            Setting::Proto(p) => settings.trace.mutate.proto = p,
            Setting::IdleTimeoutS(s) => {
                settings.server.idle_timeout_s = s;
                if client_idle_follows {
                    settings.client.idle_timeout_s = s + 1.0;
                }
            }
            Setting::RttMs(ms) => settings.network.rtt_ms = ms,
            Setting::Loss(p) => settings.network.loss = p,
            Setting::JitterMs(ms) => settings.network.jitter_ms = ms,
            Setting::BandwidthMbps(m) => settings.network.bandwidth_mbps = Some(m),
            Setting::QueueKb(kb) => settings.network.queue_kb = Some(kb),
            Setting::BurstLen(n) => settings.network.burst_len = n,
            Setting::DoShare(s) => settings.trace.mutate.do_share = Some(s),
            Setting::SetDo(true) => settings.trace.mutate.do_share = Some(1.0),
            Setting::SetDo(false) => settings.trace.mutate.do_share = None,
            Setting::RateScale(k) => settings.trace.rate_scale = k,
            Setting::Kind(k) => settings.server.kind = k,
            Setting::Threads(n) => settings.server.threads = Some(n),
            Setting::AggressiveNsec(on) => settings.server.resolver.aggressive_nsec = Some(on),
            Setting::QnameMinimisation(on) => {
                settings.server.resolver.qname_minimisation = Some(on)
            }
            Setting::Stack(s) => settings.client.stack = s,
            Setting::Server(kind, threads) => {
                settings.server.kind = kind;
                if threads.is_some() {
                    settings.server.threads = threads;
                }
            }
        }
    }
}

/// A value as `summary.csv` and run names show it: strings as they are, numbers as TOML
/// writes them (`20`, `0.02`), booleans `true` or `false`.
pub(super) fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}
