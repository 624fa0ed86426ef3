//! What one direction of the link does to packets: delay, jitter, loss and a rate limit with
//! a bounded queue, checked before the emulator starts.

use std::time::Duration;

use crate::LinkError;

/// The longest delay or jitter accepted: an hour is far beyond any network, and keeps every
/// departure time in nanoseconds far from overflowing.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// The default bound of the rate limiter's queue: 1 MiB, about 700 full-size Ethernet frames.
pub const DEFAULT_QUEUE_LIMIT_BYTES: usize = 1 << 20;

/// One direction's impairments.
///
/// A packet offered to the direction goes through, in this order: the rate limiter's queue
/// (tail drop when full), serialisation at `rate_bps`, loss on the wire (`loss`), then the
/// propagation delay `delay` plus a jitter drawn uniformly in `[0, jitter]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkParams {
    /// One-way base delay, added to every packet.
    pub delay: Duration,
    /// Extra delay drawn uniformly in `[0, jitter]` (nanosecond steps) for each packet.
    pub jitter: Duration,
    /// Whether jitter may reorder packets. When false (the default) a packet never leaves
    /// before the one offered before it: its departure is the later of its own and the
    /// previous packet's, as on a real FIFO path.
    pub reorder: bool,
    /// Which packets are lost on the wire.
    pub loss: LossModel,
    /// Serialisation limit in bits per second; `None` is an infinitely fast link.
    pub rate_bps: Option<u64>,
    /// Bound in bytes of the rate limiter's queue (packets not yet serialised): a packet that
    /// would make it exceed the bound is dropped (tail drop). Ignored without `rate_bps`.
    pub queue_limit_bytes: usize,
}

impl Default for LinkParams {
    /// A perfect link: no delay, no jitter, no loss, no rate limit.
    fn default() -> Self {
        LinkParams {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            reorder: false,
            loss: LossModel::None,
            rate_bps: None,
            queue_limit_bytes: DEFAULT_QUEUE_LIMIT_BYTES,
        }
    }
}

/// Which packets are lost, decided for each packet that reaches the wire.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LossModel {
    /// Nothing is lost.
    None,
    /// Each packet is lost with probability `p`, independently of the others.
    Bernoulli {
        /// The loss probability, in `[0, 1]`.
        p: f64,
    },
    /// Bursty loss: a two-state Markov chain (Gilbert–Elliott). Each packet is lost with the
    /// current state's probability, then the state changes with the given transition
    /// probability. The chain starts in the good state. The long-run loss rate is
    /// [`LossModel::mean_loss`].
    GilbertElliott {
        /// Probability of moving from the good to the bad state after a packet.
        p_good_to_bad: f64,
        /// Probability of moving from the bad to the good state after a packet.
        p_bad_to_good: f64,
        /// Loss probability in the good state (often 0).
        loss_good: f64,
        /// Loss probability in the bad state (often 1).
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run share of packets lost: `p` for Bernoulli; for Gilbert–Elliott the
    /// stationary mix `π_good·loss_good + π_bad·loss_bad` with
    /// `π_bad = p_good_to_bad / (p_good_to_bad + p_bad_to_good)` (the chain never leaves the
    /// good state when both transition probabilities are 0).
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let moves = p_good_to_bad + p_bad_to_good;
                if moves == 0.0 {
                    return loss_good;
                }
                let bad = p_good_to_bad / moves;
                (1.0 - bad) * loss_good + bad * loss_bad
            }
        }
    }

    /// Every probability, named, for validation.
    fn probabilities(&self) -> Vec<(&'static str, f64)> {
        match *self {
            LossModel::None => Vec::new(),
            LossModel::Bernoulli { p } => vec![("loss p", p)],
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => vec![
                ("p_good_to_bad", p_good_to_bad),
                ("p_bad_to_good", p_bad_to_good),
                ("loss_good", loss_good),
                ("loss_bad", loss_bad),
            ],
        }
    }
}

impl LinkParams {
    /// Checks that every probability is in `[0, 1]`, delay and jitter are at most
    /// [`MAX_DELAY`], a rate limit is above zero and the queue can hold something.
    pub fn validate(&self) -> Result<(), LinkError> {
        for (name, p) in self.loss.probabilities() {
            if !(0.0..=1.0).contains(&p) {
                return Err(LinkError::InvalidParams(format!(
                    "{name} = {p} is not a probability in [0, 1]"
                )));
            }
        }
        for (name, d) in [("delay", self.delay), ("jitter", self.jitter)] {
            if d > MAX_DELAY {
                return Err(LinkError::InvalidParams(format!(
                    "{name} = {d:?} is longer than {MAX_DELAY:?}"
                )));
            }
        }
        if self.rate_bps == Some(0) {
            return Err(LinkError::InvalidParams(
                "rate_bps = 0 would carry nothing; leave it unset for no limit".into(),
            ));
        }
        if self.queue_limit_bytes == 0 {
            return Err(LinkError::InvalidParams(
                "queue_limit_bytes = 0: the queue must hold at least one packet".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_a_perfect_valid_link() {
        let p = LinkParams::default();
        assert_eq!(p.delay, Duration::ZERO);
        assert_eq!(p.loss, LossModel::None);
        assert_eq!(p.rate_bps, None);
        p.validate().expect("the default is valid");
    }

    #[test]
    fn validation_names_the_bad_value() {
        let bad = |params: LinkParams, needle: &str| {
            let e = params.validate().expect_err("invalid").to_string();
            assert!(e.contains(needle), "{e}");
        };
        bad(
            LinkParams {
                loss: LossModel::Bernoulli { p: 1.5 },
                ..Default::default()
            },
            "loss p = 1.5",
        );
        bad(
            LinkParams {
                loss: LossModel::Bernoulli { p: f64::NAN },
                ..Default::default()
            },
            "NaN",
        );
        bad(
            LinkParams {
                loss: LossModel::GilbertElliott {
                    p_good_to_bad: 0.1,
                    p_bad_to_good: -0.1,
                    loss_good: 0.0,
                    loss_bad: 1.0,
                },
                ..Default::default()
            },
            "p_bad_to_good",
        );
        bad(
            LinkParams {
                delay: Duration::from_secs(7200),
                ..Default::default()
            },
            "delay",
        );
        bad(
            LinkParams {
                rate_bps: Some(0),
                ..Default::default()
            },
            "rate_bps",
        );
        bad(
            LinkParams {
                queue_limit_bytes: 0,
                ..Default::default()
            },
            "queue_limit_bytes",
        );
    }

    #[test]
    fn gilbert_elliott_mean_loss_is_the_stationary_mix() {
        let ge = LossModel::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.09,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        assert!((ge.mean_loss() - 0.1).abs() < 1e-12);
        let stuck = LossModel::GilbertElliott {
            p_good_to_bad: 0.0,
            p_bad_to_good: 0.0,
            loss_good: 0.25,
            loss_bad: 1.0,
        };
        assert_eq!(stuck.mean_loss(), 0.25);
    }

    #[test]
    fn params_round_trip_through_json() {
        let p = LinkParams {
            delay: Duration::from_millis(80),
            jitter: Duration::from_micros(500),
            reorder: true,
            loss: LossModel::GilbertElliott {
                p_good_to_bad: 0.01,
                p_bad_to_good: 0.5,
                loss_good: 0.0,
                loss_bad: 0.9,
            },
            rate_bps: Some(10_000_000),
            queue_limit_bytes: 4096,
        };
        let json = serde_json::to_string(&p).expect("serialises");
        assert_eq!(
            serde_json::from_str::<LinkParams>(&json).expect("parses"),
            p
        );
    }
}
