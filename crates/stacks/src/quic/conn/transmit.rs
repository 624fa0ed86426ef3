//! Packet assembly: which packet number space has something to send, and the packets of a
//! datagram (ACK, CRYPTO, control frames and STREAM frames within the congestion window and the
//! server's limits), protected and counted in flight.

use super::super::wire::{self, LongType};
use super::recovery::Sent;
use super::{Connection, Retx, DATA, HANDSHAKE, INITIAL, MAX_DATAGRAM};

impl Connection {
    /// Writes the next datagram to send into `out` (cleared first); false if there is none.
    pub fn poll_transmit(&mut self, now: i64, out: &mut Vec<u8>) -> bool {
        out.clear();
        if let Some((code, application)) = self.close_pending.take() {
            return self.write_close(now, out, code, application);
        }
        if self.closed.is_some() {
            return false;
        }
        if self.spaces[INITIAL].keys.is_some() && self.space_wants(INITIAL, now) {
            // A datagram with an Initial is padded to 1,200 bytes (RFC 9000 §14.1): the
            // Initial itself, or the 0-RTT packet after it. Queries in 0-RTT go in the same
            // datagram as the ClientHello, so that the server has them before the handshake
            // can finish (as other clients do; quinn's server counts a stream as 0-RTT only
            // if it takes it before the client's Finished).
            let early = self.zero_rtt_keys.is_some()
                && self.one_rtt.is_none()
                && self.spaces[INITIAL].crypto_unsent()
                && self.stream_ready();
            // The client's first Handshake packet goes in the datagram that acknowledges the
            // server's Initial, which pads it: the server has its RTT sample and the client its
            // Finished in one datagram, and only then does the client drop its Initial keys
            // (RFC 9001 §4.9.1), as quinn does.
            let handshake_follows =
                !early && self.spaces[HANDSHAKE].keys.is_some() && self.space_wants(HANDSHAKE, now);
            self.write_packet(
                now,
                out,
                INITIAL,
                MAX_DATAGRAM,
                !early && !handshake_follows,
            );
            if handshake_follows {
                let room = MAX_DATAGRAM.saturating_sub(out.len());
                self.write_packet(now, out, HANDSHAKE, room, true);
                return !out.is_empty();
            }
            let room = MAX_DATAGRAM.saturating_sub(out.len());
            if early && room > 128 {
                self.write_packet(now, out, DATA, room, true);
            }
            if early && out.len() < MAX_DATAGRAM {
                // Nothing went after the Initial: it goes again, padded, in the next one.
                out.clear();
                if let Some(p) = self.recovery.forget_last(INITIAL) {
                    self.requeue_lost(INITIAL, vec![p]);
                }
                self.write_packet(now, out, INITIAL, MAX_DATAGRAM, true);
            }
            return !out.is_empty();
        }
        if self.spaces[HANDSHAKE].keys.is_some() && self.space_wants(HANDSHAKE, now) {
            self.write_packet(now, out, HANDSHAKE, MAX_DATAGRAM, false);
        }
        let room = MAX_DATAGRAM.saturating_sub(out.len());
        if room > 64 && self.space_wants(DATA, now) {
            self.write_packet(now, out, DATA, room, false);
        }
        !out.is_empty()
    }

    /// Whether a space has something to send now.
    pub(super) fn space_wants(&self, space: usize, now: i64) -> bool {
        let s = &self.spaces[space];
        if self.recovery.probes(space) > 0 || s.ack_due(now) || s.has_crypto() {
            return true;
        }
        if space != DATA || !self.can_send_now() {
            return false;
        }
        let control = self.one_rtt.is_some()
            && (self.streams.control_pending() || self.cids.control_pending());
        control || self.stream_ready()
    }

    /// Whether stream data may go now (keys, limits and the congestion window allowing).
    pub(super) fn stream_ready(&self) -> bool {
        if self.recovery.window_full() {
            return false;
        }
        self.streams.has_data()
    }

    /// Writes one packet of `space` into `out`, within `room` bytes; with `pad`, padded so that
    /// the datagram (`out`) is a full 1,200 bytes.
    pub(super) fn write_packet(
        &mut self,
        now: i64,
        out: &mut Vec<u8>,
        space: usize,
        room: usize,
        pad: bool,
    ) {
        self.write_packet_with(now, out, space, room, None, pad)
    }

    /// [`Connection::write_packet`], or with `close` a packet of only a CONNECTION_CLOSE.
    pub(super) fn write_packet_with(
        &mut self,
        now: i64,
        out: &mut Vec<u8>,
        space: usize,
        room: usize,
        close: Option<(u64, bool)>,
        pad: bool,
    ) {
        if close.is_none() {
            self.queue_probe_data(space);
        }
        let start = out.len();
        let zero_rtt = space == DATA && self.one_rtt.is_none();
        let pn = self.spaces[space].next_pn;
        let (length_at, pn_at) = match space {
            DATA if !zero_rtt => {
                let (interval, confirmed) = (self.key_update_packets, self.confirmed);
                let phase = self.one_rtt.as_mut().is_some_and(|k| {
                    // A CONNECTION_CLOSE starts no key update.
                    if close.is_some() {
                        k.phase()
                    } else {
                        k.sending(pn, interval, confirmed)
                    }
                });
                (
                    None,
                    wire::put_short_header(out, &self.cids.dcid, phase, pn as u32),
                )
            }
            _ => {
                let ty = match space {
                    INITIAL => LongType::Initial,
                    HANDSHAKE => LongType::Handshake,
                    _ => LongType::ZeroRtt,
                };
                let ids = &self.cids;
                let token = (space == INITIAL).then_some(&ids.token[..]);
                let (l, p) = wire::put_long_header(out, ty, &ids.dcid, &ids.scid, token, pn as u32);
                (Some(l), p)
            }
        };
        let payload_at = pn_at + 4;
        let limit = (start + room).saturating_sub(16);
        let mut frames: Vec<Retx> = Vec::new();
        let mut eliciting = false;
        let s = &mut self.spaces[space];
        if let Some((code, application)) = close {
            wire::put_close(out, code, application);
        }
        let normal = close.is_none();
        if normal && !zero_rtt {
            // ACK (never in 0-RTT).
            s.write_ack(out, now);
        }
        if normal {
            eliciting |= s.write_crypto(out, limit, &mut frames);
        }
        if normal && space == DATA && !zero_rtt {
            eliciting |= self.cids.write_path_response(out);
            eliciting |= self.streams.write_blocked(out, &mut frames);
            eliciting |= self.cids.write_retire(out, &mut frames);
            eliciting |= self.streams.write_max_data(out, &mut frames);
        }
        if normal && space == DATA {
            eliciting |= self.write_streams(out, limit, &mut frames);
        }
        if normal && self.recovery.probes(space) > 0 && !eliciting {
            out.push(0x01);
            eliciting = true;
        }
        if eliciting {
            self.recovery.on_eliciting_written(space);
        }
        if out.len() == payload_at {
            out.truncate(start);
            return;
        }
        if pad {
            // PADDING frames up to a full datagram (`out` holds this datagram alone).
            let want = MAX_DATAGRAM - 16;
            if out.len() < want {
                out.resize(want, 0);
            }
        }
        if let Some(at) = length_at {
            let len = out.len() - pn_at + 16;
            wire::patch_varint2(out, at, len as u16);
        }
        let local = match space {
            DATA if zero_rtt => self.zero_rtt_keys.as_ref(),
            DATA => self.one_rtt.as_ref().map(|k| &k.local),
            _ => self.spaces[space].keys.as_ref().map(|k| &k.local),
        };
        let Some(local) = local else {
            out.truncate(start);
            return;
        };
        let (header, payload) = out[start..].split_at_mut(payload_at - start);
        let Ok(tag) = local.packet.encrypt_in_place(pn, header, payload) else {
            out.truncate(start);
            return;
        };
        out.extend_from_slice(tag.as_ref());
        let mut sample = [0u8; 16];
        sample.copy_from_slice(&out[payload_at..payload_at + 16]);
        let (head, rest) = out[start..].split_at_mut(pn_at - start);
        if local
            .header
            .encrypt_in_place(&sample, &mut head[0], &mut rest[..4])
            .is_err()
        {
            out.truncate(start);
            return;
        }
        let size = (out.len() - start) as u32;
        self.spaces[space].next_pn += 1;
        if eliciting {
            let packet = Sent {
                pn,
                time: now,
                size,
                frames,
            };
            self.recovery.on_sent(space, now, packet);
            // RFC 9000 §10.1: the first ack-eliciting packet after one is received restarts
            // the idle timer; probes to a silent server do not keep it alive.
            if !self.sent_since_receipt {
                self.sent_since_receipt = true;
                self.last_activity = self.last_activity.max(now);
            }
        }
        if space == HANDSHAKE && self.spaces[INITIAL].keys.is_some() {
            self.discard(INITIAL);
        }
    }

    /// Writes the STREAM frames that fit: lost pieces first, then new queries.
    pub(super) fn write_streams(
        &mut self,
        out: &mut Vec<u8>,
        limit: usize,
        frames: &mut Vec<Retx>,
    ) -> bool {
        let probe = self.recovery.probes(DATA) > 0;
        if !probe && self.recovery.window_full() {
            return false;
        }
        self.streams.write(out, limit, frames, &mut self.events)
    }

    /// A datagram with a CONNECTION_CLOSE, in the highest space with keys.
    pub(super) fn write_close(
        &mut self,
        now: i64,
        out: &mut Vec<u8>,
        code: u64,
        application: bool,
    ) -> bool {
        let space = if self.one_rtt.is_some() {
            DATA
        } else if self.spaces[HANDSHAKE].keys.is_some() {
            HANDSHAKE
        } else if self.spaces[INITIAL].keys.is_some() {
            INITIAL
        } else {
            return false;
        };
        let start = out.len();
        let pad = space == INITIAL;
        self.write_packet_with(
            now,
            out,
            space,
            MAX_DATAGRAM,
            Some((code, application)),
            pad,
        );
        out.len() > start
    }
}
