//! Packet assembly: which packet number space has something to send, and the packets of a
//! datagram (ACK, CRYPTO, control frames and STREAM frames within the congestion window and the
//! server's limits), protected and counted in flight.

use super::*;

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
                && self.spaces[INITIAL].crypto_sent == 0
                && self.stream_ready();
            self.write_packet(now, out, INITIAL, MAX_DATAGRAM, !early);
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
            && (self.max_data_pending
                || self.path_response.is_some()
                || self.retire_cid.is_some()
                || self.stream_blocked.is_some());
        control || self.stream_ready()
    }

    /// Whether stream data may go now (keys, limits and the congestion window allowing).
    pub(super) fn stream_ready(&self) -> bool {
        if self.recovery.window_full() {
            return false;
        }
        !self.stream_retx.is_empty() || self.new_stream_data_ready()
    }

    /// What the server takes on stream `id` (RFC 9000 §4.1): its transport parameter, or more
    /// from its MAX_STREAM_DATA frames.
    pub(super) fn stream_limit(&self, id: u64) -> u64 {
        let max = self.streams.get(&id).map_or(0, |s| s.send_max);
        max.max(self.stream_data_limit)
    }

    /// How much of stream `id`'s request may go now (from `sent_to`), within the stream's
    /// limit and the connection's; `None` for a stream the server's stream count does not let
    /// open yet, or one forgotten.
    fn new_stream_credit(&self, id: u64) -> Option<u64> {
        if id == UNI_STREAM_ID {
            // A few bytes (HTTP/3's SETTINGS), sent whole once the server allows the stream.
            return (self.max_streams_uni > 0).then_some(u64::MAX);
        }
        let s = self.streams.get(&id)?;
        if id / 4 >= self.max_streams {
            return None;
        }
        let left = (s.query.len() as u64).checked_sub(s.sent_to)?;
        let stream = self.stream_limit(id).saturating_sub(s.sent_to);
        let connection = self.max_data.saturating_sub(self.data_sent);
        Some(left.min(stream).min(connection))
    }

    /// Whether some new stream data (or a request's FIN) may go now.
    pub(super) fn new_stream_data_ready(&self) -> bool {
        self.unsent.iter().any(|&id| {
            let left = self
                .streams
                .get(&id)
                .map_or(1, |s| (s.query.len() as u64).saturating_sub(s.sent_to));
            self.new_stream_credit(id)
                .is_some_and(|n| n > 0 || left == 0)
        })
    }

    /// The next piece of new stream data that may go: from the first stream that has some
    /// and the server's limits allow (RFC 9000 §4), the rest of it kept for when the server
    /// raises them. A stream held at its own limit has a STREAM_DATA_BLOCKED queued (§19.13),
    /// once per limit.
    fn next_new_chunk(&mut self) -> Option<Chunk> {
        let mut i = 0;
        while let Some(&id) = self.unsent.get(i) {
            if id != UNI_STREAM_ID && !self.streams.contains_key(&id) {
                // Forgotten.
                self.unsent.remove(i);
                continue;
            }
            let Some(credit) = self.new_stream_credit(id) else {
                i += 1;
                continue;
            };
            if id == UNI_STREAM_ID {
                self.unsent.remove(i);
                let len = self.uni.map_or(0, <[u8]>::len) as u32;
                self.data_sent += u64::from(len);
                // The unidirectional stream stays open for the connection's life.
                return Some(Chunk {
                    id,
                    offset: 0,
                    len,
                    fin: false,
                });
            }
            let limit = self.stream_limit(id);
            let Some(s) = self.streams.get_mut(&id) else {
                self.unsent.remove(i);
                continue;
            };
            let total = s.query.len() as u64;
            if credit == 0 && s.sent_to < total {
                if s.sent_to >= limit && s.blocked_at != Some(limit) {
                    s.blocked_at = Some(limit);
                    self.stream_blocked = Some((id, limit));
                }
                i += 1;
                continue;
            }
            let offset = s.sent_to;
            s.sent_to += credit;
            self.data_sent += credit;
            let fin = s.sent_to == total;
            if fin {
                self.unsent.remove(i);
            }
            return Some(Chunk {
                id,
                offset: offset as u32,
                len: credit as u32,
                fin,
            });
        }
        None
    }

    /// A stream's bytes as sent: a request's, or the client's unidirectional stream's.
    pub(super) fn stream_bytes(&self, id: u64) -> Option<&[u8]> {
        match self.uni {
            Some(c) if id == UNI_STREAM_ID => Some(c),
            _ => self.streams.get(&id).map(|s| &s.query[..]),
        }
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
                    wire::put_short_header(out, &self.dcid, phase, pn as u32),
                )
            }
            _ => {
                let ty = match space {
                    INITIAL => LongType::Initial,
                    HANDSHAKE => LongType::Handshake,
                    _ => LongType::ZeroRtt,
                };
                let token = (space == INITIAL).then_some(&self.token[..]);
                let (l, p) =
                    wire::put_long_header(out, ty, &self.dcid, &self.scid, token, pn as u32);
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
        // ACK (never in 0-RTT).
        if normal && !zero_rtt && s.unacked_eliciting > 0 && !s.received.is_empty() {
            let delay = ((now - s.largest_received_at).max(0) / 1000) >> 3;
            wire::put_ack(out, &s.received, delay as u64);
            s.unacked_eliciting = 0;
            s.ack_deadline = None;
        }
        // CRYPTO: what was lost first, then what is new.
        while normal && out.len() + 32 < limit {
            let (offset, len, new) = match s.crypto_retx.pop_front() {
                Some((o, l)) => (o as usize, l as usize, false),
                None if s.crypto_sent < s.crypto_out.len() => {
                    (s.crypto_sent, s.crypto_out.len() - s.crypto_sent, true)
                }
                None => break,
            };
            let fit = len.min(limit - out.len() - 16);
            let end = (offset + fit).min(s.crypto_out.len());
            if end <= offset {
                break;
            }
            wire::put_crypto(out, offset as u64, &s.crypto_out[offset..end]);
            let sent = end - offset;
            if new {
                s.crypto_sent = end;
            } else if sent < len {
                s.crypto_retx
                    .push_front(((offset + sent) as u64, (len - sent) as u32));
            }
            frames.push(Retx::Crypto {
                offset: offset as u64,
                len: sent as u32,
            });
            eliciting = true;
        }
        if normal && space == DATA && !zero_rtt {
            if let Some(data) = self.path_response.take() {
                out.push(0x1b);
                out.extend_from_slice(&data);
                eliciting = true;
            }
            if let Some((id, limit)) = self.stream_blocked.take() {
                wire::put_stream_data_blocked(out, id, limit);
                frames.push(Retx::StreamDataBlocked(id));
                eliciting = true;
            }
            if let Some(seq) = self.retire_cid.take() {
                out.push(0x19);
                wire::put_varint(out, seq);
                frames.push(Retx::RetireCid(seq));
                eliciting = true;
            }
            if self.max_data_pending {
                self.max_data_pending = false;
                out.push(0x10);
                wire::put_varint(out, self.local_max_data);
                frames.push(Retx::MaxData);
                eliciting = true;
            }
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
        let mut wrote = false;
        let probe = self.recovery.probes(DATA) > 0;
        if !probe && self.recovery.window_full() {
            return false;
        }
        loop {
            let room = limit.saturating_sub(out.len() + wire::STREAM_OVERHEAD);
            if room == 0 {
                break;
            }
            let chunk = match self.stream_retx.pop_front() {
                Some(c) => c,
                None => match self.next_new_chunk() {
                    Some(c) => c,
                    None => break,
                },
            };
            let fit = (chunk.len as usize).min(room) as u32;
            if fit < chunk.len && room < 64 {
                self.stream_retx.push_front(chunk);
                break;
            }
            let (from, to) = (chunk.offset as usize, (chunk.offset + fit) as usize);
            let Some(data) = self.stream_bytes(chunk.id).and_then(|b| b.get(from..to)) else {
                continue;
            };
            let fin = chunk.fin && fit == chunk.len;
            wire::put_stream(out, chunk.id, u64::from(chunk.offset), data, fin);
            frames.push(Retx::Stream(Chunk {
                id: chunk.id,
                offset: chunk.offset,
                len: fit,
                fin,
            }));
            if fit < chunk.len {
                self.stream_retx.push_front(Chunk {
                    id: chunk.id,
                    offset: chunk.offset + fit,
                    len: chunk.len - fit,
                    fin: chunk.fin,
                });
            }
            if let Some(s) = self.streams.get_mut(&chunk.id) {
                if !s.sent {
                    s.sent = true;
                    self.events.push_back(Event::Sent { stream: chunk.id });
                }
            }
            wrote = true;
        }
        wrote
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
