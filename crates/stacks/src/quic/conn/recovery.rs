//! Loss detection and congestion control (RFC 9002): RTT samples, acknowledgements, packets
//! declared lost and their frames queued again, probe timeouts, NewReno's window and persistent
//! congestion.

use super::*;

impl Connection {
    pub(super) fn pto_base(&self, space: usize) -> i64 {
        let ack_delay = if space == DATA {
            (self.peer.max_ack_delay_ms as i64) * 1_000_000
        } else {
            0
        };
        self.srtt + (4 * self.rttvar).max(GRANULARITY_NS) + ack_delay
    }

    /// The earliest loss-detection deadline: (time, space, whether a loss timer rather than a
    /// PTO).
    pub(super) fn loss_or_pto(&self) -> Option<(i64, usize, bool)> {
        let mut best: Option<(i64, usize, bool)> = None;
        for (i, s) in self.spaces.iter().enumerate() {
            if let Some(t) = s.loss_time {
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, i, true));
                }
            }
        }
        if best.is_some() {
            return best;
        }
        let backoff = 1i64 << self.pto_count.min(16);
        for (i, s) in self.spaces.iter().enumerate() {
            let keys = if i == DATA {
                self.one_rtt.is_some() || self.zero_rtt_keys.is_some()
            } else {
                s.keys.is_some()
            };
            if !keys || s.sent.is_empty() {
                continue;
            }
            // RFC 9002 §6.2.1: no PTO for application data before the handshake completes.
            if i == DATA && !self.handshake_done {
                continue;
            }
            let t = s.last_eliciting_sent + self.pto_base(i) * backoff;
            if best.is_none_or(|b| t < b.0) {
                best = Some((t, i, false));
            }
        }
        if best.is_none() && !self.confirmed && self.closed.is_none() {
            // The client keeps the handshake going when nothing is in flight (§6.2.2.1).
            let space = if self.spaces[HANDSHAKE].keys.is_some() {
                HANDSHAKE
            } else {
                INITIAL
            };
            if self.spaces[space].keys.is_some() && !self.handshake_done {
                let last = self.spaces[space].last_eliciting_sent;
                best = Some((last + self.pto_base(space) * backoff, space, false));
            }
        }
        best
    }

    /// RFC 9002 §6.2.4: a probe timeout sends two ack-eliciting probes, with new data if
    /// there is some, else the oldest data in flight again. What is in flight stays in
    /// flight: a late acknowledgement still acknowledges it (and gives its RTT sample), and
    /// only loss detection declares it lost. A PTO is not a loss: the congestion window stays.
    /// (This client used to move the whole flight back to its queues on a PTO: every ACK later
    /// than the PTO, as quinn's for 0-RTT data, counted a packet lost and sent it again.)
    pub(super) fn on_pto(&mut self, space: usize) {
        self.pto_count += 1;
        self.spaces[space].probes = 2;
        let new_data = match space {
            DATA => !self.stream_retx.is_empty() || self.new_stream_data_ready(),
            _ => self.spaces[space].has_crypto(),
        };
        if new_data {
            return;
        }
        let oldest = self.spaces[space]
            .sent
            .front()
            .map(|p| p.frames.clone())
            .unwrap_or_default();
        for f in oldest {
            self.requeue(space, f);
        }
    }

    pub(super) fn on_ack(&mut self, now: i64, space: usize, frame: &Frame<'_>, delay: u64) {
        let Frame::Ack { largest, .. } = *frame else {
            return;
        };
        if largest >= self.spaces[space].next_pn {
            self.violation(PROTOCOL_VIOLATION, "quic-protocol-violation");
            return;
        }
        if space == DATA {
            if let Some(k) = self.one_rtt.as_mut() {
                k.on_ack(largest);
            }
        }
        let ranges: Vec<(u64, u64)> = frame.ack_ranges().collect();
        let s = &mut self.spaces[space];
        let mut newest: Option<(u64, i64)> = None;
        let mut acked_bytes = 0u64;
        let mut kept = VecDeque::with_capacity(s.sent.len());
        let mut acked_any = false;
        let mut acked_times = Vec::new();
        for p in s.sent.drain(..) {
            if ranges.iter().any(|&(lo, hi)| lo <= p.pn && p.pn <= hi) {
                acked_any = true;
                acked_times.push(p.time);
                acked_bytes += u64::from(p.size);
                if newest.is_none_or(|(pn, _)| p.pn > pn) {
                    newest = Some((p.pn, p.time));
                }
                if p.time > self.recovery_start {
                    // Congestion avoidance grows by a datagram per window; slow start by what
                    // was acknowledged.
                    if self.cwnd < self.ssthresh {
                        self.cwnd += u64::from(p.size);
                    } else {
                        self.cwnd += MAX_DATAGRAM as u64 * u64::from(p.size) / self.cwnd.max(1);
                    }
                }
            } else {
                kept.push_back(p);
            }
        }
        s.sent = kept;
        s.largest_acked = Some(s.largest_acked.map_or(largest, |l| l.max(largest)));
        self.in_flight = self.in_flight.saturating_sub(acked_bytes);
        if !acked_any {
            return;
        }
        if let Some((pn, time)) = newest {
            if pn == largest {
                // RFC 9002 §5.3: the peer's delay, no more than its max_ack_delay once the
                // handshake is confirmed; Initial acknowledgements are not delayed.
                let ack_delay = if space == DATA {
                    let d = (delay << self.peer.ack_delay_exponent.min(20)) as i64 * 1000;
                    if self.confirmed {
                        d.min(self.peer.max_ack_delay_ms as i64 * 1_000_000)
                    } else {
                        d
                    }
                } else {
                    0
                };
                self.rtt_sample(now, now - time, ack_delay);
            }
        }
        if self.handshake_done || space != INITIAL {
            self.pto_count = 0;
        }
        self.detect_lost(space, now, &acked_times);
        let s = &mut self.spaces[space];
        if let Some(&newest) = acked_times.iter().max() {
            s.newest_acked_sent = s.newest_acked_sent.max(newest);
        }
    }

    /// RFC 9002 §5: a sample taken at `now` of `latest`, of which the peer delayed its
    /// acknowledgement `ack_delay`.
    pub(super) fn rtt_sample(&mut self, now: i64, latest: i64, ack_delay: i64) {
        let latest = latest.max(1);
        self.latest_rtt = latest;
        if !self.has_rtt {
            self.has_rtt = true;
            self.first_sample_at = Some(now);
            self.min_rtt = latest;
            self.srtt = latest;
            self.rttvar = latest / 2;
            return;
        }
        self.min_rtt = self.min_rtt.min(latest);
        // §5.3: the delay comes off only as far as it leaves the sample above min_rtt.
        let adjusted = if latest >= self.min_rtt + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        self.rttvar = (3 * self.rttvar + (self.srtt - adjusted).abs()) / 4;
        self.srtt = (7 * self.srtt + adjusted) / 8;
    }

    /// RFC 9002 §6.1: packets three below the largest acknowledged, or sent a little longer
    /// than an RTT before it, are lost; `acked` are the send times of the packets the ACK that
    /// runs this acknowledged (none for the loss timer).
    pub(super) fn detect_lost(&mut self, space: usize, now: i64, acked: &[i64]) {
        let s = &mut self.spaces[space];
        s.loss_time = None;
        let Some(largest) = s.largest_acked else {
            return;
        };
        let delay = (self.latest_rtt.max(self.srtt) * 9 / 8).max(GRANULARITY_NS);
        let mut lost = Vec::new();
        let mut kept = VecDeque::with_capacity(s.sent.len());
        for p in s.sent.drain(..) {
            if p.pn > largest {
                kept.push_back(p);
            } else if p.time + delay <= now || largest >= p.pn + 3 {
                lost.push(p);
            } else {
                s.loss_time = Some(
                    s.loss_time
                        .map_or(p.time + delay, |t| t.min(p.time + delay)),
                );
                kept.push_back(p);
            }
        }
        s.sent = kept;
        self.lost_packets += lost.len() as u64;
        let persistent = self.persistent_congestion(space, &lost, acked);
        let mut congestion = false;
        for p in lost {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
            congestion |= p.time > self.recovery_start;
            for f in p.frames {
                self.requeue(space, f);
            }
        }
        if congestion {
            self.recovery_start = now;
            self.ssthresh = (self.cwnd / 2).max(MIN_WINDOW);
            self.cwnd = self.ssthresh;
        }
        if persistent {
            // §7.6.2: the window collapses to its minimum.
            self.recovery_start = now;
            self.cwnd = MIN_WINDOW;
        }
    }

    /// RFC 9002 §7.6: whether `lost` (in the order sent) hold two ack-eliciting packets sent
    /// further apart than three PTOs (without backoff), after the first RTT sample, with no
    /// packet sent between them acknowledged (`acked` now, or earlier).
    pub(super) fn persistent_congestion(&self, space: usize, lost: &[Sent], acked: &[i64]) -> bool {
        let Some(first_sample) = self.first_sample_at else {
            return false;
        };
        let after = first_sample.max(self.spaces[space].newest_acked_sent);
        let mut span = lost.iter().map(|p| p.time).filter(|&t| t > after);
        let Some(start) = span.next() else {
            return false;
        };
        // The run of losses ends at the first packet acknowledged after its start.
        let end_limit = acked.iter().copied().filter(|&t| t > start).min();
        let end = span
            .filter(|&t| end_limit.is_none_or(|limit| t < limit))
            .max()
            .unwrap_or(start);
        let max_ack_delay = self.peer.max_ack_delay_ms as i64 * 1_000_000;
        let duration =
            (self.srtt + (4 * self.rttvar).max(GRANULARITY_NS) + max_ack_delay).saturating_mul(3);
        end - start > duration
    }

    pub(super) fn requeue(&mut self, space: usize, frame: Retx) {
        match frame {
            Retx::Crypto { offset, len } => {
                if !self.spaces[space].crypto_out.is_empty() {
                    self.spaces[space].crypto_retx.push_back((offset, len));
                }
            }
            Retx::Stream(c) => {
                if self.stream_bytes(c.id).is_some() {
                    self.stream_retx.push_back(c);
                }
            }
            Retx::MaxData => self.max_data_pending = true,
            Retx::RetireCid(seq) => self.retire_cid = Some(seq),
            Retx::StreamDataBlocked(id) => {
                // Again if the stream is still blocked at the same limit.
                let limit = self.stream_limit(id);
                if let Some(s) = self.streams.get(&id) {
                    if s.blocked_at == Some(limit) && s.sent_to < s.query.len() as u64 {
                        self.stream_blocked = Some((id, limit));
                    }
                }
            }
        }
    }

    /// Forgets the last packet sent in `space` and queues its frames again (a datagram that
    /// was not sent after all).
    pub(super) fn requeue_last(&mut self, space: usize) {
        let s = &mut self.spaces[space];
        if let Some(p) = s.sent.pop_back() {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
            for f in p.frames {
                self.requeue(space, f);
            }
        }
    }
}
