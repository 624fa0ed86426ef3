//! One packet number space (RFC 9000 §12.3) as the connection sees it: its Initial or
//! Handshake keys, the packet numbers sent and received, the ACKs due, and the TLS handshake's
//! CRYPTO data both ways (sent, sent again when lost, received out of order and reassembled).
//! The packets in flight are loss recovery's (`recovery`).

use super::super::wire;
use super::{Retx, MAX_ACK_DELAY_NS, MAX_ACK_RANGES, MAX_CRYPTO_BUFFER};
use rustls::quic::Keys;
use std::collections::VecDeque;

/// One packet number space.
#[derive(Default)]
pub(super) struct Space {
    /// Initial and Handshake keys (the data space's are `key_phase::OneRtt`'s).
    pub(super) keys: Option<Keys>,
    /// The next packet number to send.
    pub(super) next_pn: u64,
    /// Received packet numbers, ascending inclusive ranges.
    received: Vec<(u64, u64)>,
    largest_received_at: i64,
    /// Ack-eliciting packets received since the last ACK sent.
    unacked_eliciting: u32,
    ack_deadline: Option<i64>,
    /// Every CRYPTO byte written, and how far it has been sent once.
    crypto_out: Vec<u8>,
    crypto_sent: usize,
    crypto_retx: VecDeque<(u64, u32)>,
    /// CRYPTO data received: the next offset for TLS, and what came ahead of it.
    crypto_next: u64,
    crypto_ahead: Vec<(u64, Vec<u8>)>,
}

impl Space {
    /// Whether an ACK is due now.
    pub(super) fn ack_due(&self, now: i64) -> bool {
        self.unacked_eliciting > 0 && self.ack_deadline.is_none_or(|d| d <= now)
    }

    /// Whether CRYPTO data waits to go (new, or lost).
    pub(super) fn has_crypto(&self) -> bool {
        !self.crypto_retx.is_empty() || self.crypto_sent < self.crypto_out.len()
    }

    /// Records a received packet number; false if it came before.
    pub(super) fn record(&mut self, pn: u64) -> bool {
        let r = &mut self.received;
        let at = r.partition_point(|&(_, hi)| hi.saturating_add(1) < pn);
        match r.get_mut(at) {
            Some((lo, hi)) if *lo <= pn && pn <= *hi => return false,
            Some((lo, _)) if *lo == pn + 1 => *lo = pn,
            Some((_, hi)) if *hi + 1 == pn => {
                *hi = pn;
                if let Some(&(next_lo, next_hi)) = r.get(at + 1) {
                    if next_lo == pn + 1 {
                        r[at].1 = next_hi;
                        r.remove(at + 1);
                    }
                }
            }
            _ => r.insert(at, (pn, pn)),
        }
        if r.len() > MAX_ACK_RANGES {
            r.remove(0);
        }
        true
    }

    /// The largest packet number received.
    pub(super) fn largest_received(&self) -> Option<u64> {
        self.received.last().map(|&(_, hi)| hi)
    }

    /// When a delayed ACK is due, if one is.
    #[inline]
    pub(super) fn ack_deadline(&self) -> Option<i64> {
        self.ack_deadline
    }

    /// Whether no CRYPTO data has been sent yet.
    #[inline]
    pub(super) fn crypto_unsent(&self) -> bool {
        self.crypto_sent == 0
    }

    /// A packet numbered `pn` was processed at `now`: whether it was ack-eliciting; an ACK is
    /// due at once outside the data space or for a second packet, else after the delay.
    pub(super) fn on_received(&mut self, now: i64, pn: u64, eliciting: bool, data_space: bool) {
        if pn == self.largest_received().unwrap_or(pn) {
            self.largest_received_at = now;
        }
        if eliciting {
            self.unacked_eliciting += 1;
            if !data_space || self.unacked_eliciting >= 2 || self.out_of_order(pn) {
                self.ack_deadline = None;
            } else if self.ack_deadline.is_none() {
                self.ack_deadline = Some(now + MAX_ACK_DELAY_NS);
            }
        }
    }

    /// RFC 9000 §13.2.1: whether `pn` (just recorded) came out of order, below a packet
    /// received already or above a gap; its ACK then goes at once rather than after the
    /// delay, so that the server's loss detection learns of the gap a round trip sooner (as
    /// quinn's client does). A server packet lost, or sent before this client could decrypt
    /// it, otherwise left the server's answer to wait out this client's max_ack_delay.
    fn out_of_order(&self, pn: u64) -> bool {
        match self.received.last() {
            // Below the largest; or the largest, with the one before it missing (counted from 0,
            // as quinn does: a first packet above 0 follows a gap too).
            Some(&(lo, hi)) => pn < hi || (lo == pn && pn > 0),
            None => false,
        }
    }

    /// Writes an ACK frame if an ack-eliciting packet is unacknowledged.
    pub(super) fn write_ack(&mut self, out: &mut Vec<u8>, now: i64) {
        if self.unacked_eliciting > 0 && !self.received.is_empty() {
            let delay = ((now - self.largest_received_at).max(0) / 1000) >> 3;
            wire::put_ack(out, &self.received, delay as u64);
            self.unacked_eliciting = 0;
            self.ack_deadline = None;
        }
    }

    /// CRYPTO data TLS wrote, to send.
    pub(super) fn push_crypto(&mut self, data: &[u8]) {
        self.crypto_out.extend_from_slice(data);
    }

    /// Writes the CRYPTO frames that fit before `limit`: what was lost first, then what is new.
    /// Whether it wrote any.
    pub(super) fn write_crypto(
        &mut self,
        out: &mut Vec<u8>,
        limit: usize,
        frames: &mut Vec<Retx>,
    ) -> bool {
        let mut wrote = false;
        while out.len() + 32 < limit {
            let (offset, len, new) = match self.crypto_retx.pop_front() {
                Some((o, l)) => (o as usize, l as usize, false),
                None if self.crypto_sent < self.crypto_out.len() => (
                    self.crypto_sent,
                    self.crypto_out.len() - self.crypto_sent,
                    true,
                ),
                None => break,
            };
            let fit = len.min(limit - out.len() - 16);
            let end = (offset + fit).min(self.crypto_out.len());
            if end <= offset {
                break;
            }
            wire::put_crypto(out, offset as u64, &self.crypto_out[offset..end]);
            let sent = end - offset;
            if new {
                self.crypto_sent = end;
            } else if sent < len {
                self.crypto_retx
                    .push_front(((offset + sent) as u64, (len - sent) as u32));
            }
            frames.push(Retx::Crypto {
                offset: offset as u64,
                len: sent as u32,
            });
            wrote = true;
        }
        wrote
    }

    /// A CRYPTO frame's data in a packet that will not be acknowledged: it goes again (unless
    /// the handshake's data is gone).
    pub(super) fn requeue_crypto(&mut self, offset: u64, len: u32) {
        if !self.crypto_out.is_empty() {
            self.crypto_retx.push_back((offset, len));
        }
    }

    /// Every CRYPTO byte goes again from the start (after a Retry).
    pub(super) fn resend_crypto(&mut self) {
        self.crypto_sent = 0;
        self.crypto_retx.clear();
    }

    /// A CRYPTO frame came: what follows on from the data TLS has read goes to `tls`, what
    /// comes ahead of it is kept. `Ok(true)` if TLS read something.
    pub(super) fn read_crypto(
        &mut self,
        offset: u64,
        data: &[u8],
        tls: &mut rustls::quic::ClientConnection,
    ) -> Result<bool, CryptoFailed> {
        let end = offset + data.len() as u64;
        if end <= self.crypto_next {
            return Ok(false);
        }
        if offset > self.crypto_next {
            let buffered: usize = self.crypto_ahead.iter().map(|(_, d)| d.len()).sum();
            if buffered + data.len() > MAX_CRYPTO_BUFFER {
                return Err(CryptoFailed::BufferExceeded);
            }
            self.crypto_ahead.push((offset, data.to_vec()));
            return Ok(false);
        }
        let skip = (self.crypto_next - offset) as usize;
        let mut result = tls.read_hs(&data[skip..]);
        self.crypto_next = end;
        // What came ahead and now follows on.
        while result.is_ok() {
            let next = self.crypto_next;
            let Some(i) = self.crypto_ahead.iter().position(|(o, _)| *o <= next) else {
                break;
            };
            let (o, d) = self.crypto_ahead.swap_remove(i);
            let end = o + d.len() as u64;
            if end > next {
                result = tls.read_hs(&d[(next - o) as usize..]);
                self.crypto_next = end;
            }
        }
        result.map(|()| true).map_err(|_| CryptoFailed::Tls)
    }

    /// TLS is gone: the handshake's data with it.
    pub(super) fn drop_crypto(&mut self) {
        self.crypto_out = Vec::new();
        self.crypto_ahead = Vec::new();
        self.crypto_retx = VecDeque::new();
    }

    /// The space's keys are gone (RFC 9001 §4.9): everything it held with them.
    pub(super) fn discard(&mut self) {
        self.keys = None;
        self.unacked_eliciting = 0;
        self.crypto_retx.clear();
        self.crypto_out = Vec::new();
        self.crypto_ahead = Vec::new();
        self.received = Vec::new();
    }

    /// Gives back the memory of the received ranges an idle connection does not use.
    pub(super) fn compact(&mut self) {
        self.received.shrink_to_fit();
    }
}

/// Why CRYPTO data could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CryptoFailed {
    /// More came ahead of the data read than this client buffers.
    BufferExceeded,
    /// TLS refused it (its alert tells why).
    Tls,
}

#[cfg(test)]
mod tests {
    use super::Space;

    /// Receives `pn` (ack-eliciting) in the data space at `now`.
    fn receive(s: &mut Space, pn: u64, now: i64) {
        assert!(s.record(pn));
        s.on_received(now, pn, true, true);
    }

    /// RFC 9000 §13.2.1: one ack-eliciting packet in order waits for the ACK delay; one out of
    /// order (below the largest, or above a gap) is acknowledged at once, as quinn does.
    #[test]
    fn an_ack_waits_for_the_delay_unless_a_packet_comes_out_of_order() {
        let mut s = Space::default();
        receive(&mut s, 0, 0);
        assert!(!s.ack_due(0), "one packet in order waits");
        s.write_ack(&mut Vec::new(), 1);
        receive(&mut s, 1, 2);
        assert!(!s.ack_due(2), "in order again");
        s.write_ack(&mut Vec::new(), 3);
        receive(&mut s, 3, 4);
        assert!(s.ack_due(4), "above a gap (2 is missing)");
        s.write_ack(&mut Vec::new(), 5);
        receive(&mut s, 2, 6);
        assert!(s.ack_due(6), "below the largest");

        let mut first = Space::default();
        receive(&mut first, 4, 0);
        assert!(first.ack_due(0), "the first packet, with 0 to 3 missing");
    }
}
