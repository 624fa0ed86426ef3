//! The mutator: a sink that filters and edits records on their way to another sink.

use crate::anon::Anonymizer;
use crate::choice::{client_of, is_response};
use crate::config::MutateConfig;
use crate::error::MutateError;
use crate::filter::View;
use crate::plan::Plan;
use crate::stats::MutateStats;
use chacha20::rand_core::{Rng as _, SeedableRng};
use chacha20::ChaCha8Rng;
use ldplayer_dns::Message;
use ldplayer_trace::{Record, Sink, SinkError, SkipReason};

/// A [`Sink`] that applies a [`MutateConfig`] to every record and passes what remains to `S`.
///
/// Skip notices and `finish` go straight through to the inner sink. What was done is counted in
/// [`Mutator::stats`]. The same input and configuration always give the same output.
#[derive(Debug)]
pub struct Mutator<S: Sink> {
    inner: S,
    plan: Plan,
    needs_message: bool,
    needs_qname: bool,
    rng: ChaCha8Rng,
    anonymizer: Option<Anonymizer>,
    start_ns: Option<i64>,
    stats: MutateStats,
    wire: Vec<u8>,
    qname: Vec<u8>,
    changes: Vec<&'static str>,
}

impl<S: Sink> Mutator<S> {
    /// Checks `config` and wraps `inner`.
    pub fn new(config: MutateConfig, inner: S) -> Result<Mutator<S>, MutateError> {
        let plan = Plan::new(&config)?;
        Ok(Mutator {
            inner,
            needs_message: plan.filters.iter().any(|f| f.needs_question())
                || !plan.message.is_empty(),
            needs_qname: plan
                .filters
                .iter()
                .any(|f| matches!(f, crate::filter::Filter::QnameSuffixes(_))),
            rng: ChaCha8Rng::seed_from_u64(config.seed ^ 0x7175_6572_795f_646f),
            anonymizer: plan.anonymize_key.map(Anonymizer::new),
            plan,
            start_ns: None,
            stats: MutateStats::default(),
            wire: Vec::with_capacity(512),
            qname: Vec::with_capacity(256),
            changes: Vec::with_capacity(8),
        })
    }

    /// What has been done so far.
    pub fn stats(&self) -> &MutateStats {
        &self.stats
    }

    /// The wrapped sink.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The wrapped sink, mutably.
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Unwraps the inner sink and the final counts.
    pub fn into_parts(self) -> (S, MutateStats) {
        (self.inner, self.stats)
    }
}

impl<S: Sink> Sink for Mutator<S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.stats.records_in += 1;
        let seq = self.stats.records_in;
        let start = *self.start_ns.get_or_insert(record.time_ns);
        let response = is_response(record);
        let client = client_of(record);
        let msg = if self.needs_message {
            Message::parse(record.wire).ok()
        } else {
            None
        };
        let qname = match msg {
            Some(m) if self.needs_qname => {
                self.qname.clear();
                m.qname_wire(&mut self.qname).then_some(&self.qname[..])
            }
            _ => None,
        };
        let view = View {
            response,
            client,
            offset_ns: record.time_ns as i128 - start as i128,
            qtype: msg.and_then(|m| m.qtype()),
            qname,
        };
        if let Some(f) = self.plan.filters.iter().find(|f| !f.keeps(&view)) {
            MutateStats::count(&mut self.stats.filtered, f.name());
            return Ok(());
        }

        let mut out = *record;
        self.changes.clear();
        if let Some(t) = self.plan.transport.as_mut() {
            let was = (out.proto, out.conn);
            t.apply(client, &mut out.proto, &mut out.conn);
            if (out.proto, out.conn) != was {
                self.changes.push("transport");
            }
        }
        if !response && !self.plan.message.is_empty() {
            let draw = if self.plan.message.set_do.is_some() {
                self.rng.next_u64()
            } else {
                0
            };
            match msg {
                // A malformed query goes on byte for byte: servers get such queries too, and
                // dropping them would change the workload the what-if is about.
                None => MutateStats::count(&mut self.stats.unedited, "malformed"),
                Some(m) => {
                    match self
                        .plan
                        .message
                        .edit(&m, seq, draw, &mut self.wire, &mut self.changes)
                    {
                        Ok(true) => out.wire = &self.wire,
                        Ok(false) => {}
                        Err(reason) => {
                            MutateStats::count(&mut self.stats.dropped, reason);
                            return Ok(());
                        }
                    }
                }
            }
        }
        if let Some(k) = self.plan.time_scale {
            let t = scale(out.time_ns, start, k)
                .ok_or_else(|| time_error("time-scale", format!("{k:?}"), seq, record.time_ns))?;
            if t != out.time_ns {
                out.time_ns = t;
                self.changes.push("time-scale");
            }
        }
        if let Some(shift) = self.plan.time_shift {
            let t = out.time_ns.checked_add(shift).ok_or_else(|| {
                let mut secs = String::new();
                ldplayer_trace::format_time(shift, &mut secs);
                time_error("time-shift", secs, seq, record.time_ns)
            })?;
            if t != out.time_ns {
                out.time_ns = t;
                self.changes.push("time-shift");
            }
        }
        if let Some(a) = self.anonymizer.as_mut() {
            let pseudonym = a.anonymize(client);
            if pseudonym != client {
                if response {
                    out.dst.set_ip(pseudonym);
                } else {
                    out.src.set_ip(pseudonym);
                }
                self.changes.push("anonymize");
            }
        }
        self.inner.record(&out)?;
        self.stats.records_out += 1;
        for c in &self.changes {
            MutateStats::count(&mut self.stats.changed, c);
        }
        Ok(())
    }

    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.inner.skipped(reason, location);
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}

/// The sink error for a time edit that left the time range.
fn time_error(mutation: &'static str, value: String, record: u64, time_ns: i64) -> SinkError {
    SinkError::Other(
        MutateError::TimeOutOfRange {
            mutation,
            value,
            record,
            time_ns,
        }
        .to_string(),
    )
}

/// `start + (t - start) * k`, rounded to the nanosecond; `None` when it does not fit in `i64`.
pub(crate) fn scale(t: i64, start: i64, k: f64) -> Option<i64> {
    let offset = ((t as i128 - start as i128) as f64 * k).round();
    // Offsets beyond ±2^64 (or NaN) cannot fit whatever the start; below that, i128 holds the
    // sum.
    if offset.is_nan() || offset.abs() >= 1.8e19 {
        return None;
    }
    i64::try_from(start as i128 + offset as i128).ok()
}

#[cfg(test)]
mod tests {
    use super::scale;

    #[test]
    fn scaling_is_exact_and_refuses_what_does_not_fit() {
        assert_eq!(scale(1_000, 1_000, 3.0), Some(1_000));
        assert_eq!(scale(1_500, 1_000, 2.0), Some(2_000));
        assert_eq!(scale(1_500, 1_000, 0.5), Some(1_250));
        assert_eq!(scale(1_001, 1_000, 0.5), Some(1_001)); // 0.5 rounds away from zero
        assert_eq!(scale(500, 1_000, 2.0), Some(0));
        assert_eq!(scale(i64::MAX, i64::MIN, 2.0), None);
        assert_eq!(scale(i64::MIN, i64::MAX, 2.0), None);
        assert_eq!(scale(1_001, 1_000, 1e300), None);
        let t0 = 1_704_067_200_000_000_000;
        assert_eq!(
            scale(t0 + 123_456_789_012, t0, 10.0),
            Some(t0 + 1_234_567_890_120)
        );
        // Near the end of the range (an offset exactly representable as f64), and past it.
        let room = i64::MAX - t0;
        let near = room & !0xfff;
        assert_eq!(scale(t0 + near, t0, 1.0), Some(t0 + near));
        assert_eq!(scale(t0 + room / 2 + 1, t0, 2.0), None);
    }
}
