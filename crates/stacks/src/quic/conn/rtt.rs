//! The round-trip time estimator (RFC 9002 §5): the smoothed RTT and its variation, the newest
//! and smallest samples, and the base of the probe timeout (§6.2.1) they give.

/// RFC 9002 §6.2.2: the RTT assumed before a sample.
const INITIAL_RTT_NS: i64 = 333_000_000;
/// RFC 9002 §6.1.2: the timer granularity.
const GRANULARITY_NS: i64 = 1_000_000;

/// The RTT estimate of one connection.
pub(super) struct Rtt {
    smoothed: i64,
    var: i64,
    latest: i64,
    /// The smallest RTT sample (RFC 9002 §5.2).
    min: i64,
    /// When the first RTT sample was taken: persistent congestion counts later losses only.
    first_sample_at: Option<i64>,
}

impl Rtt {
    /// The estimate before any sample (§6.2.2).
    pub(super) fn new() -> Rtt {
        Rtt {
            smoothed: INITIAL_RTT_NS,
            var: INITIAL_RTT_NS / 2,
            latest: INITIAL_RTT_NS,
            min: INITIAL_RTT_NS,
            first_sample_at: None,
        }
    }

    /// When the first sample was taken, if one has been.
    #[inline]
    pub(super) fn first_sample_at(&self) -> Option<i64> {
        self.first_sample_at
    }

    /// The smoothed RTT plus four times its variation (at least the granularity) plus
    /// `ack_delay`: a PTO without backoff (§6.2.1), and the unit of persistent congestion's
    /// duration (§7.6.1).
    #[inline]
    pub(super) fn pto_base(&self, ack_delay: i64) -> i64 {
        self.smoothed + (4 * self.var).max(GRANULARITY_NS) + ack_delay
    }

    /// How long after a packet was sent it counts as lost once a later one is acknowledged
    /// (§6.1.2: 9/8 of the larger of the latest and smoothed RTT, at least the granularity).
    #[inline]
    pub(super) fn loss_delay(&self) -> i64 {
        (self.latest.max(self.smoothed) * 9 / 8).max(GRANULARITY_NS)
    }

    /// RFC 9002 §5: a sample taken at `now` of `latest`, of which the peer delayed its
    /// acknowledgement `ack_delay`.
    pub(super) fn sample(&mut self, now: i64, latest: i64, ack_delay: i64) {
        let latest = latest.max(1);
        self.latest = latest;
        if self.first_sample_at.is_none() {
            self.first_sample_at = Some(now);
            self.min = latest;
            self.smoothed = latest;
            self.var = latest / 2;
            return;
        }
        self.min = self.min.min(latest);
        // §5.3: the delay comes off only as far as it leaves the sample above min_rtt.
        let adjusted = if latest >= self.min + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        self.var = (3 * self.var + (self.smoothed - adjusted).abs()) / 4;
        self.smoothed = (7 * self.smoothed + adjusted) / 8;
    }
}
