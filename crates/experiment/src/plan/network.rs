//! The emulated link of a run: delay, loss, jitter, rate, and optional per-client RTTs.

use super::settings::seconds;
use ldplayer_trace::{splitmix64, unit_interval as unit, SPLITMIX64_GAMMA};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// Queue of the rate limiter when the plan gives none: 100 ms at the link's rate, at least
/// this many bytes.
pub const MIN_DEFAULT_QUEUE_BYTES: usize = 64 * 1024;

/// Queue limit without a rate limit: a cap on the emulator's memory, never reached by DNS
/// at the rates this machine replays.
pub const UNLIMITED_QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// How packets are lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossModelChoice {
    /// Each packet independently.
    Bernoulli,
    /// In bursts: a two-state Gilbert–Elliott chain that loses every packet in its bad state.
    GilbertElliott,
}

/// The link between the clients' and the server's namespaces, the same each way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkSettings {
    /// Round-trip time in ms added by the link; each direction delays by half.
    pub rtt_ms: f64,
    /// Share of packets lost in each direction, in [0, 1).
    pub loss: f64,
    /// How packets are lost.
    pub loss_model: LossModelChoice,
    /// Mean length of a loss burst in packets (Gilbert–Elliott; at least 1).
    pub burst_len: f64,
    /// Jitter in ms added to each direction's delay.
    pub jitter_ms: f64,
    /// Whether jitter may reorder packets (otherwise a packet never overtakes the one before).
    pub reorder: bool,
    /// Microseconds before each departure the link's threads stop sleeping and poll: the host
    /// wakes a sleeping thread late (tens of µs at the median here), which this takes back at
    /// the cost of that much CPU per packet. 0 (the default) never polls.
    #[serde(default)]
    pub spin_us: f64,
    /// Rate limit of each direction in Mbit/s; `None` for none.
    pub bandwidth_mbps: Option<f64>,
    /// Rate limiter queue of each direction in KiB; `None` for the default.
    pub queue_kb: Option<f64>,
    /// Per-client extra RTTs, when clients should not all be equally far.
    pub client_rtt: Option<ClientRtt>,
}

impl Default for NetworkSettings {
    /// A perfect link: no delay, no loss, no limit.
    fn default() -> Self {
        NetworkSettings {
            rtt_ms: 0.0,
            loss: 0.0,
            loss_model: LossModelChoice::Bernoulli,
            burst_len: 1.0,
            jitter_ms: 0.0,
            reorder: false,
            spin_us: 0.0,
            bandwidth_mbps: None,
            queue_kb: None,
            client_rtt: None,
        }
    }
}

/// How packets are lost in one direction: the link emulator's own model.
pub use ldplayer_link::LossModel as LossSettings;

/// One direction of the link: the link emulator's own parameters.
pub use ldplayer_link::LinkParams as DirectionSettings;

impl NetworkSettings {
    /// The parameters of each direction: (clients to server, server to clients). Both are
    /// the same: half the RTT each, and the loss, jitter and rate of the plan.
    pub fn link_params(&self) -> (DirectionSettings, DirectionSettings) {
        let rate_bps = self.bandwidth_mbps.map(|m| (m * 1e6).round() as u64);
        let queue_limit_bytes = match (self.queue_kb, rate_bps) {
            (Some(kb), _) => (kb * 1024.0).round() as usize,
            (None, Some(bps)) => ((bps / 8 / 10) as usize).max(MIN_DEFAULT_QUEUE_BYTES),
            (None, None) => UNLIMITED_QUEUE_BYTES,
        };
        let one = DirectionSettings {
            delay: seconds(self.rtt_ms / 2e3),
            jitter: seconds(self.jitter_ms / 1e3),
            reorder: self.reorder,
            loss: self.loss_settings(),
            rate_bps,
            queue_limit_bytes,
        };
        (one.clone(), one)
    }

    /// The loss of each direction. A Gilbert–Elliott chain losing every packet when bad and
    /// none when good, leaving the bad state with probability `1 / burst_len`, loses the
    /// share `loss` of packets in bursts of mean length `burst_len` when it enters the bad
    /// state with probability `loss / (burst_len (1 - loss))`.
    pub fn loss_settings(&self) -> LossSettings {
        if self.loss <= 0.0 {
            return LossSettings::None;
        }
        match self.loss_model {
            LossModelChoice::Bernoulli => LossSettings::Bernoulli { p: self.loss },
            LossModelChoice::GilbertElliott => {
                let p_bad_to_good = 1.0 / self.burst_len;
                LossSettings::GilbertElliott {
                    p_good_to_bad: (self.loss * p_bad_to_good / (1.0 - self.loss)).min(1.0),
                    p_bad_to_good,
                    loss_good: 0.0,
                    loss_bad: 1.0,
                }
            }
        }
    }
}

/// How per-client RTTs are spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RttDistribution {
    /// Every client the same, `median_ms`.
    Fixed,
    /// Uniform between `min_ms` and `max_ms`.
    Uniform,
    /// Log-normal with median `median_ms` and shape `sigma`, clamped to [`min_ms`, `max_ms`].
    Lognormal,
}

/// Per-client extra RTTs, drawn once per client address from a distribution, added to the
/// link's RTT (half each way).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClientRtt {
    /// The distribution.
    pub dist: RttDistribution,
    /// Smallest RTT in ms.
    pub min_ms: f64,
    /// Largest RTT in ms.
    pub max_ms: f64,
    /// Median RTT in ms (fixed and log-normal).
    pub median_ms: f64,
    /// Shape of the log-normal: the standard deviation of the RTT's logarithm.
    pub sigma: f64,
}

impl ClientRtt {
    /// The extra RTT of `client`: the same for the same address and seed on every machine
    /// (a fixed 64-bit mix of the address bytes and the seed, not the standard library's
    /// hasher, which may change between releases).
    pub fn sample(&self, client: IpAddr, seed: u64) -> Duration {
        let ms = match self.dist {
            RttDistribution::Fixed => self.median_ms,
            RttDistribution::Uniform => {
                let u = unit(mix(client, seed, 1));
                self.min_ms + u * (self.max_ms - self.min_ms)
            }
            RttDistribution::Lognormal => {
                // Box–Muller from two independent uniforms in (0, 1].
                let u1 = 1.0 - unit(mix(client, seed, 2));
                let u2 = unit(mix(client, seed, 3));
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (self.median_ms * (self.sigma * z).exp()).clamp(self.min_ms, self.max_ms)
            }
        };
        seconds(ms / 1e3)
    }
}

/// SplitMix64's finalizer over the address bytes, the seed and a stream number.
fn mix(client: IpAddr, seed: u64, stream: u64) -> u64 {
    let bytes = match client {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    };
    let mut h = seed ^ stream.wrapping_mul(SPLITMIX64_GAMMA);
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = splitmix64(h ^ u64::from_le_bytes(word));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clients(n: u32) -> impl Iterator<Item = IpAddr> {
        (0..n).map(|i| IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i)))
    }

    #[test]
    fn each_direction_gets_half_the_rtt_and_the_whole_loss() {
        let n = NetworkSettings {
            rtt_ms: 20.0,
            loss: 0.02,
            bandwidth_mbps: Some(8.0),
            ..NetworkSettings::default()
        };
        let (a, b) = n.link_params();
        assert_eq!(a, b);
        assert_eq!(a.delay, Duration::from_millis(10));
        assert_eq!(a.loss, LossSettings::Bernoulli { p: 0.02 });
        assert_eq!(a.rate_bps, Some(8_000_000));
        assert_eq!(a.queue_limit_bytes, 100_000);
    }

    #[test]
    fn gilbert_elliott_keeps_the_mean_loss_and_the_burst_length() {
        let n = NetworkSettings {
            loss: 0.02,
            loss_model: LossModelChoice::GilbertElliott,
            burst_len: 4.0,
            ..NetworkSettings::default()
        };
        let LossSettings::GilbertElliott {
            p_good_to_bad: g,
            p_bad_to_good: b,
            ..
        } = n.loss_settings()
        else {
            panic!("not Gilbert–Elliott: {:?}", n.loss_settings());
        };
        assert!((b - 0.25).abs() < 1e-12);
        assert!(
            (g / (g + b) - 0.02).abs() < 1e-12,
            "stationary loss {}",
            g / (g + b)
        );
    }

    #[test]
    fn client_rtts_are_stable_and_within_their_bounds() {
        let u = ClientRtt {
            dist: RttDistribution::Uniform,
            min_ms: 10.0,
            max_ms: 30.0,
            median_ms: 0.0,
            sigma: 0.0,
        };
        let mut sum = 0.0;
        for c in clients(10_000) {
            let d = u.sample(c, 7);
            assert_eq!(d, u.sample(c, 7));
            let ms = d.as_secs_f64() * 1e3;
            assert!((10.0..=30.0).contains(&ms), "{ms}");
            sum += ms;
        }
        let mean = sum / 10_000.0;
        assert!((mean - 20.0).abs() < 0.5, "mean {mean}");
        let one = clients(1).next().unwrap();
        assert_ne!(u.sample(one, 7), u.sample(one, 8));
    }

    #[test]
    fn log_normal_rtts_have_their_median() {
        let l = ClientRtt {
            dist: RttDistribution::Lognormal,
            min_ms: 0.0,
            max_ms: 10_000.0,
            median_ms: 40.0,
            sigma: 0.8,
        };
        let mut v: Vec<f64> = clients(10_001)
            .map(|c| l.sample(c, 1).as_secs_f64() * 1e3)
            .collect();
        v.sort_by(f64::total_cmp);
        let median = v[5000];
        assert!((median - 40.0).abs() < 2.0, "median {median}");
    }
}
