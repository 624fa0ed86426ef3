//! The population file: its groups and their settings, read from and written to TOML.

use ldplayer_trace::{stable_hash, Proto};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Why a population file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PopulationError {
    /// Not TOML, or not the shape of a population file.
    #[error("population file: {0}")]
    Syntax(String),
    /// The groups' shares do not add up to 1.
    #[error("population file: the groups' shares add up to {0}, not 1")]
    Shares(f64),
    /// A group's setting is out of range.
    #[error("population file: group `{group}`: {what}")]
    Group {
        /// The group's name.
        group: String,
        /// What is wrong.
        what: String,
    },
}

/// A population of clients: its groups, and the seed of the assignment of clients to them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Population {
    /// Seeds the stable hash that assigns clients to groups: the same seed and shares put a
    /// client in the same group.
    #[serde(default)]
    pub seed: u64,
    /// How many clients a generated population has (`synth`); a replay takes the trace's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u64>,
    /// The groups, in order.
    #[serde(rename = "group")]
    pub groups: Vec<Group>,
}

/// One group of clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Its name, for reports.
    pub name: String,
    /// Its share of the clients, from 0 to 1.
    pub share: f64,
    /// Its transport: `udp`, `tcp`, `tls`, `doh` or `doq`.
    #[serde(with = "proto_name")]
    pub proto: Proto,
    /// Seconds its connections stay open idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<f64>,
    /// Whether its clients resume TLS sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumption: Option<bool>,
    /// Whether its clients send 0-RTT data on resumed sessions (DoQ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<bool>,
    /// The DoH method of its clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doh_method: Option<DohMethod>,
    /// The client stack of its DoT, DoH and DoQ clients: ldplayer's lean one or the
    /// reference one (rustls, h2, quinn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Stack>,
    /// Seconds its clients wait for an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// How many times its clients resend a UDP query that timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// When its clients send.
    #[serde(default)]
    pub arrivals: Arrivals,
}

/// The HTTP method of DNS over HTTPS queries (`doh_method`, `"get"` or `"post"`), as the replay
/// and plans name it.
pub use ldplayer_trace::DohMethod;

/// Which client stack carries a group's DoT, DoH and DoQ (`stack`, `"lean"` or
/// `"reference"`), as the replay (`ldplayer replay --stack`) and plans name it.
pub use ldplayer_trace::Stack;

/// When a group's clients send their queries.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Arrivals {
    /// At the trace's own times (a replay).
    #[default]
    Trace,
    /// Poisson arrivals per client, each client's rate (queries per second) drawn once from
    /// `rate`.
    Poisson {
        /// The distribution of the clients' rates.
        rate: RateDist,
    },
    /// Each client's rate drawn once from `rate`, its gaps drawn one by one from a log-normal
    /// distribution with mean `1 / rate` and coefficient of variation `gap_cv` (a renewal
    /// process). `gap_cv` 1 is as irregular as Poisson; more is bursty (short gaps in a burst,
    /// long silences between), less is regular. `population fit` chooses it over Poisson when
    /// the trace's clients are far from Poisson.
    Renewal {
        /// The distribution of the clients' rates.
        rate: RateDist,
        /// The standard deviation of a client's gaps over their mean.
        gap_cv: f64,
    },
}

impl Arrivals {
    /// The distribution of the clients' rates, for arrivals that are generated.
    pub fn rate(&self) -> Option<&RateDist> {
        match self {
            Arrivals::Trace => None,
            Arrivals::Poisson { rate } | Arrivals::Renewal { rate, .. } => Some(rate),
        }
    }

    /// The coefficient of variation of a client's gaps: 1 for Poisson arrivals.
    pub fn gap_cv(&self) -> Option<f64> {
        match self {
            Arrivals::Trace => None,
            Arrivals::Poisson { .. } => Some(1.0),
            Arrivals::Renewal { gap_cv, .. } => Some(*gap_cv),
        }
    }
}

/// What each client of a population generates, for `synth --population`: one entry per client
/// in each list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientMix {
    /// Queries per second.
    pub rates_qps: Vec<f64>,
    /// Transports.
    pub protos: Vec<Proto>,
    /// The coefficient of variation of the client's gaps (1: Poisson).
    pub gap_cvs: Vec<f64>,
}

/// A distribution of per-client query rates (queries per second).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "dist")]
pub enum RateDist {
    /// Every client at the same rate.
    Fixed {
        /// The rate.
        rate: f64,
    },
    /// Exponentially distributed rates with this mean.
    Exponential {
        /// The mean rate.
        mean: f64,
    },
    /// Log-normal rates: the log of the rate is normal with median `ln(median)` and standard
    /// deviation `sigma` (most clients are slow, a few very busy).
    Lognormal {
        /// The median rate.
        median: f64,
        /// The standard deviation of the rate's natural log.
        sigma: f64,
    },
}

impl RateDist {
    /// The mean rate of the distribution.
    pub fn mean(&self) -> f64 {
        match *self {
            RateDist::Fixed { rate } => rate,
            RateDist::Exponential { mean } => mean,
            RateDist::Lognormal { median, sigma } => median * (sigma * sigma / 2.0).exp(),
        }
    }

    /// A rate drawn from the distribution, given two independent uniform numbers in (0, 1)
    /// (deterministic: the caller's seeded numbers make the population reproducible).
    pub fn sample(&self, u1: f64, u2: f64) -> f64 {
        let (u1, u2) = (u1.clamp(1e-300, 1.0), u2.clamp(0.0, 1.0));
        match *self {
            RateDist::Fixed { rate } => rate,
            RateDist::Exponential { mean } => -mean * u1.ln(),
            RateDist::Lognormal { median, sigma } => {
                // Box–Muller: one standard normal from two uniforms.
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                median * (sigma * z).exp()
            }
        }
    }

    fn check(&self) -> Result<(), String> {
        let positive = |v: f64, what: &str| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("the rate's {what} must be positive and finite"))
            }
        };
        match *self {
            RateDist::Fixed { rate } => positive(rate, "rate"),
            RateDist::Exponential { mean } => positive(mean, "mean"),
            RateDist::Lognormal { median, sigma } => {
                positive(median, "median")?;
                if sigma.is_finite() && sigma >= 0.0 {
                    Ok(())
                } else {
                    Err("the rate's sigma must be zero or more".into())
                }
            }
        }
    }
}

/// The transports by the names people use for them.
mod proto_name {
    use ldplayer_trace::Proto;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Proto, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(super::proto_to_name(*p))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Proto, D::Error> {
        let name = String::deserialize(d)?;
        super::proto_from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown transport `{name}` (udp, tcp, tls, doh or doq)"
            ))
        })
    }
}

/// The name of a transport in population files (`doh`, `doq` for DNS over HTTPS and QUIC).
pub(crate) fn proto_to_name(p: Proto) -> &'static str {
    match p {
        Proto::Udp => "udp",
        Proto::Tcp => "tcp",
        Proto::Tls => "tls",
        Proto::Https => "doh",
        Proto::Quic => "doq",
    }
}

/// The transport of a name (also the text format's `https` and `quic`).
pub(crate) fn proto_from_name(name: &str) -> Option<Proto> {
    match name.to_ascii_lowercase().as_str() {
        "doh" => Some(Proto::Https),
        "doq" => Some(Proto::Quic),
        other => other.parse().ok(),
    }
}

impl Population {
    /// Reads a population file and checks it.
    pub fn from_toml(text: &str) -> Result<Population, PopulationError> {
        let p: Population =
            toml::from_str(text).map_err(|e| PopulationError::Syntax(e.to_string()))?;
        p.check()?;
        Ok(p)
    }

    /// The population as a TOML file.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Checks the shares (they add up to 1 within 1e-6) and every group's settings.
    pub fn check(&self) -> Result<(), PopulationError> {
        if self.groups.is_empty() {
            return Err(PopulationError::Syntax("no [[group]]".into()));
        }
        let bad = |g: &Group, what: String| PopulationError::Group {
            group: g.name.clone(),
            what,
        };
        for g in &self.groups {
            if !(g.share.is_finite() && (0.0..=1.0).contains(&g.share)) {
                return Err(bad(g, format!("share {} is not between 0 and 1", g.share)));
            }
            for (v, what) in [(g.idle_timeout, "idle_timeout"), (g.timeout, "timeout")] {
                if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                    return Err(bad(g, format!("{what} must be a number of seconds")));
                }
            }
            if g.timeout == Some(0.0) {
                return Err(bad(g, "timeout must be positive".into()));
            }
            if let Some(rate) = g.arrivals.rate() {
                rate.check().map_err(|w| bad(g, w))?;
            }
            if let Arrivals::Renewal { gap_cv, .. } = g.arrivals {
                if !(gap_cv.is_finite() && (0.01..=100.0).contains(&gap_cv)) {
                    return Err(bad(g, "gap_cv must be from 0.01 to 100".into()));
                }
            }
        }
        let total: f64 = self.groups.iter().map(|g| g.share).sum();
        if (total - 1.0).abs() > 1e-6 {
            return Err(PopulationError::Shares(total));
        }
        Ok(())
    }

    /// Each client's query rate (queries per second), transport and gap variation (1 for
    /// Poisson arrivals), for generating a trace of clients at `addrs`: the client's group by
    /// [`group_of`](Self::group_of), its rate drawn from the group's distribution with numbers
    /// seeded by the population's seed and the client's address. Fails naming a group whose
    /// arrivals are the trace's (a trace to generate has none).
    pub fn client_mix(&self, addrs: &[IpAddr]) -> Result<ClientMix, PopulationError> {
        let mut mix = ClientMix::default();
        for &addr in addrs {
            let g = &self.groups[self.group_of(addr)];
            let (Some(rate), Some(gap_cv)) = (g.arrivals.rate(), g.arrivals.gap_cv()) else {
                return Err(PopulationError::Group {
                    group: g.name.clone(),
                    what: "its arrivals are the trace's (kind = \"trace\"): to generate a \
                           trace, give it arrivals = { kind = \"poisson\", rate = ... }"
                        .into(),
                });
            };
            let h = stable_hash(addr);
            let u1 = unit(h, self.seed ^ 0x7261_7465_5f75_3101);
            let u2 = unit(h, self.seed ^ 0x7261_7465_5f75_3202);
            mix.rates_qps.push(rate.sample(1.0 - u1, u2));
            mix.protos.push(g.proto);
            mix.gap_cvs.push(gap_cv);
        }
        Ok(mix)
    }

    /// The group of client `addr`: a seeded, stable hash of its address, mapped to the groups'
    /// cumulative shares. The same seed and shares give the same group in every run.
    pub fn group_of(&self, addr: IpAddr) -> usize {
        let u = unit(stable_hash(addr), self.seed);
        let mut acc = 0.0;
        for (i, g) in self.groups.iter().enumerate() {
            acc += g.share;
            if u < acc {
                return i;
            }
        }
        // Rounding: the last group with a share.
        self.groups.iter().rposition(|g| g.share > 0.0).unwrap_or(0)
    }
}

/// A number in [0, 1) from a client's hash and the population's seed (splitmix64 of both).
fn unit(hash: u64, seed: u64) -> f64 {
    use ldplayer_trace::{splitmix64_finalize, unit_interval, SPLITMIX64_GAMMA};
    unit_interval(splitmix64_finalize(
        hash ^ seed.wrapping_mul(SPLITMIX64_GAMMA),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIXED: &str = r#"
seed = 7
clients = 25000

[[group]]
name = "udp"
share = 0.6
proto = "udp"
timeout = 2.0
retries = 1

[[group]]
name = "tcp"
share = 0.1
proto = "tcp"
idle_timeout = 10.0

[[group]]
name = "dot"
share = 0.15
proto = "tls"
idle_timeout = 10.0
resumption = true

[[group]]
name = "doh"
share = 0.1
proto = "doh"
doh_method = "get"
arrivals = { kind = "poisson", rate = { dist = "lognormal", median = 0.05, sigma = 1.5 } }

[[group]]
name = "doq"
share = 0.05
proto = "doq"
zero_rtt = true
stack = "reference"
"#;

    #[test]
    fn reads_checks_and_writes_a_population() {
        let p = Population::from_toml(MIXED).unwrap();
        assert_eq!(p.groups.len(), 5);
        assert_eq!(p.groups[3].proto, Proto::Https);
        assert_eq!(p.groups[4].proto, Proto::Quic);
        assert_eq!(p.groups[3].doh_method, Some(DohMethod::Get));
        assert_eq!(p.groups[4].stack, Some(Stack::Reference));
        assert_eq!(p.groups[3].stack, None);
        assert_eq!(p.groups[0].arrivals, Arrivals::Trace);
        let written = p.to_toml();
        // The stack and the DoH method keep their spellings in the file written.
        assert!(written.contains("stack = \"reference\"\n"), "{written}");
        assert!(written.contains("doh_method = \"get\"\n"), "{written}");
        assert_eq!(written.matches("stack =").count(), 1, "{written}");
        let again = Population::from_toml(&written).unwrap();
        assert_eq!(again, p);
        let m = RateDist::Lognormal {
            median: 0.05,
            sigma: 1.5,
        }
        .mean();
        assert!((m - 0.05 * (1.125f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let shares = MIXED.replace("share = 0.6", "share = 0.5");
        assert!(matches!(
            Population::from_toml(&shares),
            Err(PopulationError::Shares(_))
        ));
        let proto = MIXED.replace("proto = \"tcp\"", "proto = \"sctp\"");
        let e = Population::from_toml(&proto).unwrap_err().to_string();
        assert!(e.contains("sctp"), "{e}");
        let rate = MIXED.replace("median = 0.05", "median = -1.0");
        let e = Population::from_toml(&rate).unwrap_err().to_string();
        assert!(e.contains("doh") && e.contains("median"), "{e}");
        let unknown = MIXED.replace("retries = 1", "retries = 1\ncolour = 3");
        assert!(Population::from_toml(&unknown).is_err());
        assert!(Population::from_toml("seed = 1").is_err());
    }

    proptest! {
        #[test]
        fn assignment_is_stable_and_follows_the_shares(seed in any::<u64>(), a in 0.05f64..0.9) {
            let text = format!(
                "seed = {seed}\n[[group]]\nname = \"a\"\nshare = {a}\nproto = \"udp\"\n\
                 [[group]]\nname = \"b\"\nshare = {}\nproto = \"tcp\"\n", 1.0 - a);
            let p = Population::from_toml(&text).unwrap();
            let n = 20_000u32;
            let mut in_a = 0u32;
            for i in 0..n {
                let addr = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
                let g = p.group_of(addr);
                prop_assert_eq!(g, p.group_of(addr));
                if g == 0 {
                    in_a += 1;
                }
            }
            let share = f64::from(in_a) / f64::from(n);
            // Binomial: 4 standard deviations at most 0.0142 for n = 20,000.
            prop_assert!((share - a).abs() < 0.015, "share {} for {}", share, a);
        }
    }
}
