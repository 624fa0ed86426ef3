//! Loss detection and congestion control (RFC 9002): the ack-eliciting packets in flight in
//! each packet number space, acknowledgements and the RTT samples they give, packets declared
//! lost, probe timeouts, NewReno's window and persistent congestion.
//!
//! It knows packets, not frames: the packets it declares lost (or gives back) are returned to
//! the connection, which queues their frames again.

use super::rtt::Rtt;
use super::{Retx, DATA, HANDSHAKE, INITIAL, MAX_DATAGRAM};
use std::collections::VecDeque;

const INITIAL_WINDOW: u64 = 10 * MAX_DATAGRAM as u64;
const MIN_WINDOW: u64 = 2 * MAX_DATAGRAM as u64;

/// An ack-eliciting packet in flight.
pub(super) struct Sent {
    /// Its packet number.
    pub(super) pn: u64,
    /// When it was sent.
    pub(super) time: i64,
    /// Its size on the wire.
    pub(super) size: u32,
    /// Its frames that go again if it is lost.
    pub(super) frames: Vec<Retx>,
}

/// What loss recovery keeps per packet number space.
#[derive(Default)]
struct Flight {
    largest_acked: Option<u64>,
    sent: VecDeque<Sent>,
    loss_time: Option<i64>,
    last_eliciting_sent: i64,
    /// When the newest packet acknowledged so far was sent (persistent congestion counts
    /// only losses after it).
    newest_acked_sent: i64,
    /// Probes due (a PTO fired): the next packets must be ack-eliciting, and may go beyond
    /// the congestion window.
    probes: u8,
}

/// What the connection's key state tells loss recovery when it looks for its next deadline.
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyState {
    /// Which spaces have keys to send with (the data space: 1-RTT or 0-RTT keys).
    pub(super) keys: [bool; 3],
    /// The TLS handshake has completed.
    pub(super) handshake_done: bool,
    /// The handshake is not yet confirmed and the connection is open: the client keeps it
    /// going with probes even with nothing in flight (§6.2.2.1).
    pub(super) keep_alive: bool,
}

/// Loss detection and congestion control of one connection.
pub(super) struct Recovery {
    flights: [Flight; 3],
    rtt: Rtt,
    pto_count: u32,
    cwnd: u64,
    ssthresh: u64,
    in_flight: u64,
    recovery_start: i64,
    /// Packets declared lost (their frames queued again) over the connection's life.
    lost_packets: u64,
    /// The server's max_ack_delay (ns): its transport parameter's default until it came.
    max_ack_delay: i64,
}

impl Recovery {
    /// The state of a connection opened at `now`: no RTT sample, the initial window;
    /// `max_ack_delay_ms`, the server's until its transport parameters come.
    pub(super) fn new(now: i64, max_ack_delay_ms: u64) -> Recovery {
        Recovery {
            flights: Default::default(),
            rtt: Rtt::new(),
            pto_count: 0,
            cwnd: INITIAL_WINDOW,
            ssthresh: u64::MAX,
            in_flight: 0,
            recovery_start: now,
            lost_packets: 0,
            max_ack_delay: (max_ack_delay_ms as i64) * 1_000_000,
        }
    }

    /// Takes the server's max_ack_delay transport parameter (ms).
    pub(super) fn set_max_ack_delay(&mut self, ms: u64) {
        self.max_ack_delay = (ms as i64) * 1_000_000;
    }

    /// The congestion window, in bytes.
    #[cfg(test)]
    pub(super) fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Packets declared lost so far.
    #[inline]
    pub(super) fn lost_packets(&self) -> u64 {
        self.lost_packets
    }

    /// Whether a full datagram more would go beyond the congestion window.
    #[inline]
    pub(super) fn window_full(&self) -> bool {
        self.in_flight + MAX_DATAGRAM as u64 > self.cwnd
    }

    /// Probes still due in `space`.
    #[inline]
    pub(super) fn probes(&self, space: usize) -> u8 {
        self.flights[space].probes
    }

    /// An ack-eliciting packet went in `space`: one probe fewer is due.
    #[inline]
    pub(super) fn on_eliciting_written(&mut self, space: usize) {
        let f = &mut self.flights[space];
        f.probes = f.probes.saturating_sub(1);
    }

    /// Whether no packet is in flight in any space.
    pub(super) fn is_empty(&self) -> bool {
        self.flights.iter().all(|f| f.sent.is_empty())
    }

    /// Gives back the memory of the queues of packets in flight (none is).
    pub(super) fn compact(&mut self) {
        for f in &mut self.flights {
            f.sent = VecDeque::new();
        }
    }

    /// The PTO of `space` without backoff; the server's max_ack_delay counts in the data
    /// space only.
    pub(super) fn pto_base(&self, space: usize) -> i64 {
        let ack_delay = if space == DATA { self.max_ack_delay } else { 0 };
        self.rtt.pto_base(ack_delay)
    }

    /// The earliest loss-detection deadline: (time, space, whether a loss timer rather than a
    /// PTO).
    pub(super) fn loss_or_pto(&self, k: KeyState) -> Option<(i64, usize, bool)> {
        let mut best: Option<(i64, usize, bool)> = None;
        for (i, s) in self.flights.iter().enumerate() {
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
        for (i, s) in self.flights.iter().enumerate() {
            if !k.keys[i] || s.sent.is_empty() {
                continue;
            }
            // RFC 9002 §6.2.1: no PTO for application data before the handshake completes.
            if i == DATA && !k.handshake_done {
                continue;
            }
            let t = s.last_eliciting_sent + self.pto_base(i) * backoff;
            if best.is_none_or(|b| t < b.0) {
                best = Some((t, i, false));
            }
        }
        if best.is_none() && k.keep_alive {
            // The client keeps the handshake going when nothing is in flight (§6.2.2.1).
            let space = if k.keys[HANDSHAKE] {
                HANDSHAKE
            } else {
                INITIAL
            };
            if k.keys[space] && !k.handshake_done {
                let last = self.flights[space].last_eliciting_sent;
                best = Some((last + self.pto_base(space) * backoff, space, false));
            }
        }
        best
    }

    /// RFC 9002 §6.2.4: a probe timeout in `space` makes two ack-eliciting probes due. What is
    /// in flight stays in flight: a late acknowledgement still acknowledges it (and gives its
    /// RTT sample), and only loss detection declares it lost. A PTO is not a loss: the
    /// congestion window stays.
    pub(super) fn on_pto(&mut self, space: usize) {
        self.pto_count += 1;
        self.flights[space].probes = 2;
    }

    /// The frames of the oldest packet in flight in `space` that still holds some, taken out
    /// of it, for a probe with no new data to send them again (quinn-proto's
    /// `maybe_queue_probe`). The packet stays in flight; taken out, its frames do not go a
    /// third time if it is declared lost, and the next probe takes the next packet's, or the
    /// first probe's own when it was the only one: both probes of a PTO carry data.
    pub(super) fn take_oldest_frames(&mut self, space: usize) -> Vec<Retx> {
        self.flights[space]
            .sent
            .iter_mut()
            .find(|p| !p.frames.is_empty())
            .map(|p| std::mem::take(&mut p.frames))
            .unwrap_or_default()
    }

    /// An ack-eliciting packet went in `space` at `now`.
    pub(super) fn on_sent(&mut self, space: usize, now: i64, packet: Sent) {
        self.in_flight += u64::from(packet.size);
        let f = &mut self.flights[space];
        f.last_eliciting_sent = now;
        f.sent.push_back(packet);
    }

    /// An ACK frame of `space` (its `ranges` and their `largest`) came at `now`: the packets
    /// acknowledged leave the flight and grow the window, the newest gives an RTT sample (with
    /// the peer's delay, `ack_delay`, asked only then), and loss detection runs. Returns the
    /// packets declared lost; `handshake_done` says whether the PTO backoff may reset on an
    /// Initial ACK.
    pub(super) fn on_ack(
        &mut self,
        now: i64,
        space: usize,
        ranges: &[(u64, u64)],
        largest: u64,
        handshake_done: bool,
        ack_delay: impl FnOnce() -> i64,
    ) -> Vec<Sent> {
        let s = &mut self.flights[space];
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
            return Vec::new();
        }
        if let Some((pn, time)) = newest {
            if pn == largest {
                self.rtt.sample(now, now - time, ack_delay());
            }
        }
        if handshake_done || space != INITIAL {
            self.pto_count = 0;
        }
        let lost = self.detect_lost(space, now, &acked_times);
        let s = &mut self.flights[space];
        if let Some(&newest) = acked_times.iter().max() {
            s.newest_acked_sent = s.newest_acked_sent.max(newest);
        }
        lost
    }

    /// RFC 9002 §6.1: packets three below the largest acknowledged, or sent a little longer
    /// than an RTT before it, are lost; `acked` are the send times of the packets the ACK that
    /// runs this acknowledged (none for the loss timer). Returns the packets declared lost.
    pub(super) fn detect_lost(&mut self, space: usize, now: i64, acked: &[i64]) -> Vec<Sent> {
        let delay = self.rtt.loss_delay();
        let s = &mut self.flights[space];
        s.loss_time = None;
        let Some(largest) = s.largest_acked else {
            return Vec::new();
        };
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
        for p in &lost {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
            congestion |= p.time > self.recovery_start;
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
        lost
    }

    /// RFC 9002 §7.6: whether `lost` (in the order sent) hold two ack-eliciting packets sent
    /// further apart than three PTOs (without backoff), after the first RTT sample, with no
    /// packet sent between them acknowledged (`acked` now, or earlier).
    fn persistent_congestion(&self, space: usize, lost: &[Sent], acked: &[i64]) -> bool {
        let Some(first_sample) = self.rtt.first_sample_at() else {
            return false;
        };
        let after = first_sample.max(self.flights[space].newest_acked_sent);
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
        let duration = self.rtt.pto_base(self.max_ack_delay).saturating_mul(3);
        end - start > duration
    }

    /// Forgets the last packet sent in `space` (a datagram that was not sent after all) and
    /// returns it.
    pub(super) fn forget_last(&mut self, space: usize) -> Option<Sent> {
        let p = self.flights[space].sent.pop_back()?;
        self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
        Some(p)
    }

    /// Takes every packet in flight in `space` out of the flight (a Retry, or 0-RTT the server
    /// refused): they will never be acknowledged.
    pub(super) fn take_flight(&mut self, space: usize) -> Vec<Sent> {
        let sent: Vec<Sent> = self.flights[space].sent.drain(..).collect();
        for p in &sent {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
        }
        sent
    }

    /// The keys of `space` are gone (RFC 9002 §6.4): its packets leave the flight, its timers
    /// and probes go, and the PTO backoff resets.
    pub(super) fn discard(&mut self, space: usize) {
        let f = &mut self.flights[space];
        for p in f.sent.drain(..) {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
        }
        f.loss_time = None;
        f.probes = 0;
        self.pto_count = 0;
    }
}
