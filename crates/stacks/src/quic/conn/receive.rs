//! Packets and frames in: header protection removed, packets decrypted (with the key phase's
//! keys, `key_phase`), Retry and Version Negotiation, each frame's effect, the TLS handshake's data
//! and keys, and the streams' data reassembled into whole responses.

use super::super::wire::{self, Frame, Header, LongType, Malformed, Reader, ServerParams};
use super::key_phase::OneRtt;
use super::space::CryptoFailed;
use super::{
    initial_suite, Closed, Connection, Event, CRYPTO_BUFFER_EXCEEDED, CRYPTO_ERROR, DATA,
    FRAME_ENCODING_ERROR, HANDSHAKE, INITIAL, LOCAL_CID_LEN, PROTOCOL_VIOLATION, TLS_LINGER_NS,
    TRANSPORT_PARAMETER_ERROR,
};
use rustls::quic::{KeyChange, Version};

impl Connection {
    /// Takes one received datagram (decrypted in place).
    pub fn handle(&mut self, now: i64, datagram: &mut [u8]) {
        // RFC 9000 §10.3.1: a short-header packet that cannot be taken may be a stateless
        // reset, told by the datagram's last 16 bytes as they came (decryption works in place).
        let tail = reset_tail(datagram);
        let mut at = 0;
        let mut server_cid: Option<Vec<u8>> = None;
        while at < datagram.len() && self.closed.is_none() {
            let Ok(parsed) = wire::parse_header(&datagram[at..], LOCAL_CID_LEN) else {
                return;
            };
            let len = parsed.len;
            let pn_offset = parsed.pn_offset;
            let space = match parsed.header {
                Header::VersionNegotiation => {
                    if !self.heard_server {
                        self.closed = Some(Closed::VersionMismatch);
                        self.streams.forget_all();
                    }
                    return;
                }
                Header::Retry { scid, token } => {
                    let (scid, token) = (scid.to_vec(), token.to_vec());
                    self.on_retry(&datagram[at..], &scid, token);
                    return;
                }
                Header::Long {
                    ty,
                    version,
                    dcid,
                    scid,
                } => {
                    if version != wire::VERSION_1 || dcid != self.cids.scid {
                        at += len;
                        continue;
                    }
                    let space = match ty {
                        LongType::Initial => INITIAL,
                        LongType::Handshake => HANDSHAKE,
                        _ => {
                            at += len;
                            continue;
                        }
                    };
                    if space == INITIAL && !self.heard_server {
                        // The server's own connection ID, used from now on if the packet
                        // proves to be the server's (it decrypts).
                        server_cid = Some(scid.to_vec());
                    }
                    space
                }
                Header::Short { dcid } => {
                    // A stateless reset carries no connection ID of ours: its bytes are random.
                    if dcid != self.cids.scid {
                        self.on_stateless_reset(tail);
                        return;
                    }
                    DATA
                }
            };
            let packet = &mut datagram[at..at + len];
            if !self.on_packet(now, space, packet, pn_offset, server_cid.take()) && space == DATA {
                self.on_stateless_reset(tail);
            }
            at += len;
        }
    }

    pub(super) fn on_retry(&mut self, packet: &[u8], scid: &[u8], token: Vec<u8>) {
        if self.heard_server || !self.cids.retry_acceptable(packet, &token) {
            return;
        }
        let Some(suite) = initial_suite() else {
            return;
        };
        self.cids.on_retry(scid, token);
        let s = &mut self.spaces[INITIAL];
        s.keys = Some(suite.keys(&self.cids.dcid, rustls::Side::Client, Version::V1));
        // Everything sent so far goes again under the new keys, with the token.
        self.recovery.take_flight(INITIAL);
        let data = self.recovery.take_flight(DATA);
        self.spaces[INITIAL].resend_crypto();
        self.requeue_lost(DATA, data);
    }

    /// Removes header protection, decrypts and processes one packet; false if it could not be
    /// decrypted.
    pub(super) fn on_packet(
        &mut self,
        now: i64,
        space: usize,
        packet: &mut [u8],
        pn_offset: usize,
        server_cid: Option<Vec<u8>>,
    ) -> bool {
        if packet.len() < pn_offset + 4 + 16 {
            return false;
        }
        let mut sample = [0u8; 16];
        sample.copy_from_slice(&packet[pn_offset + 4..pn_offset + 20]);
        let (head, rest) = packet.split_at_mut(pn_offset);
        let (first, _) = head.split_at_mut(1);
        let header_key = match space {
            DATA => self.one_rtt.as_ref().map(|k| &k.remote.header),
            _ => self.spaces[space].keys.as_ref().map(|k| &k.remote.header),
        };
        let Some(header_key) = header_key else {
            return false;
        };
        if header_key
            .decrypt_in_place(&sample, &mut first[0], &mut rest[..4])
            .is_err()
        {
            return false;
        }
        let pn_len = usize::from(first[0] & 3) + 1;
        let truncated = rest[..pn_len]
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        let pn = wire::decode_packet_number(
            self.spaces[space].largest_received(),
            truncated,
            8 * pn_len as u32,
        );
        let header_len = pn_offset + pn_len;
        let key_phase = first[0] & 0x04 != 0;
        let (header, payload) = packet.split_at_mut(header_len);
        let plain_len = match space {
            DATA => {
                let pto = self.recovery.pto_base(DATA);
                self.one_rtt
                    .as_mut()
                    .and_then(|k| k.decrypt(now, pto, pn, key_phase, header, payload))
            }
            _ => self.spaces[space]
                .keys
                .as_ref()
                .and_then(|k| k.remote.packet.decrypt_in_place(pn, header, payload).ok())
                .map(|p| p.len()),
        };
        let Some(plain_len) = plain_len else {
            return false;
        };
        if let Some(cid) = server_cid {
            self.cids.dcid = cid;
        }
        let payload = &packet[header_len..header_len + plain_len];
        self.on_plaintext(now, space, pn, payload);
        true
    }

    /// Processes a decrypted packet's frames (fuzz targets enter here, past the crypto).
    pub(crate) fn on_plaintext(&mut self, now: i64, space: usize, pn: u64, payload: &[u8]) {
        if !self.spaces[space].record(pn) {
            return;
        }
        self.heard_server = true;
        self.last_activity = now;
        self.sent_since_receipt = false;
        let mut eliciting = false;
        let mut r = Reader::new(payload);
        while !r.is_empty() {
            let frame = match wire::next_frame(&mut r) {
                Ok(f) => f,
                Err(Malformed) => {
                    self.violation(FRAME_ENCODING_ERROR, "quic-protocol-violation");
                    return;
                }
            };
            eliciting |= frame.is_ack_eliciting();
            self.on_frame(now, space, frame);
            if self.closed.is_some() {
                return;
            }
        }
        if self.confirmed
            && self
                .tls
                .as_ref()
                .is_some_and(|t| t.tls13_tickets_received() > 0)
        {
            // A session ticket for the next connection has come: TLS has nothing left to do.
            self.drop_tls();
        }
        self.spaces[space].on_received(now, pn, eliciting, space == DATA);
    }

    /// A datagram's short-header packet could not be taken: if the datagram ends with the
    /// server's stateless reset token (`tail`, from [`reset_tail`]), the server has lost the
    /// connection, and it ends (RFC 9000 §10.3.1).
    pub(super) fn on_stateless_reset(&mut self, tail: Option<[u8; 16]>) {
        if tail.is_some_and(|tail| self.peer.stateless_reset_token == Some(tail)) {
            self.closed = Some(Closed::Reset);
            self.streams.forget_all();
        }
    }

    pub(super) fn on_frame(&mut self, now: i64, space: usize, frame: Frame<'_>) {
        match frame {
            Frame::Padding | Frame::Ping | Frame::Ignored => {}
            Frame::Ack { delay, .. } => self.on_ack(now, space, &frame, delay),
            Frame::Crypto { offset, data } => self.on_crypto(now, space, offset, data),
            Frame::Stream {
                id,
                offset,
                data,
                fin,
            } if space == DATA => self
                .streams
                .on_stream(id, offset, data, fin, &mut self.events),
            Frame::ResetStream { id } if space == DATA => {
                self.streams
                    .on_ended(id, "quic-stream-reset", &mut self.events)
            }
            Frame::StopSending { id } if space == DATA => {
                self.streams
                    .on_ended(id, "quic-stream-stopped", &mut self.events)
            }
            Frame::MaxData(max) if space == DATA => self.streams.on_max_data(max),
            Frame::MaxStreamData { id, max } if space == DATA => {
                self.streams.on_max_stream_data(id, max)
            }
            Frame::MaxStreamsBidi(max) if space == DATA => self.streams.on_max_streams_bidi(max),
            Frame::MaxStreamsUni(max) if space == DATA => self.streams.on_max_streams_uni(max),
            Frame::NewConnectionId {
                seq,
                retire_prior_to,
                cid,
                reset_token,
            } if space == DATA => {
                if self.cids.on_new_cid(seq, retire_prior_to, cid) {
                    self.peer.stateless_reset_token = Some(reset_token);
                }
            }
            Frame::PathChallenge(data) if space == DATA => self.cids.on_path_challenge(data),
            Frame::ConnectionClose { code, application } => {
                self.closed = Some(Closed::ByPeer { code, application });
                self.streams.forget_all();
            }
            Frame::HandshakeDone if space == DATA => {
                if !self.confirmed {
                    self.confirmed = true;
                    self.discard(HANDSHAKE);
                    self.tls_drop_at = Some(now + TLS_LINGER_NS);
                }
            }
            // Stream and 1-RTT-only frames in a handshake packet.
            _ => self.violation(PROTOCOL_VIOLATION, "quic-protocol-violation"),
        }
    }

    pub(super) fn on_crypto(&mut self, now: i64, space: usize, offset: u64, data: &[u8]) {
        let Some(tls) = self.tls.as_mut() else {
            // Session tickets after the connection let TLS go: acknowledged and dropped.
            return;
        };
        match self.spaces[space].read_crypto(offset, data, tls) {
            Ok(false) => return,
            Ok(true) => {}
            Err(CryptoFailed::BufferExceeded) => {
                self.violation(CRYPTO_BUFFER_EXCEEDED, "quic-protocol-violation");
                return;
            }
            Err(CryptoFailed::Tls) => {
                let alert = tls.alert().map_or(0x50, u8::from);
                self.close_with(Closed::Tls, CRYPTO_ERROR + u64::from(alert), false);
                return;
            }
        }
        self.drive_tls(now);
    }

    /// Takes what TLS has to send, and its new keys.
    pub(super) fn drive_tls(&mut self, now: i64) {
        loop {
            let Some(tls) = self.tls.as_mut() else {
                return;
            };
            let mut out = Vec::new();
            let change = tls.write_hs(&mut out);
            self.spaces[self.write_space].push_crypto(&out);
            match change {
                None => break,
                Some(KeyChange::Handshake { keys }) => {
                    self.spaces[HANDSHAKE].keys = Some(keys);
                    self.write_space = HANDSHAKE;
                }
                Some(KeyChange::OneRtt { keys, next }) => {
                    let first_sent = self.spaces[DATA].next_pn;
                    self.one_rtt = Some(Box::new(OneRtt::new(keys, next, first_sent)));
                    self.write_space = DATA;
                }
            }
        }
        let Some(tls) = self.tls.as_ref() else {
            return;
        };
        if self.handshake_done || tls.is_handshaking() {
            return;
        }
        self.handshake_done = true;
        let params = tls
            .quic_transport_parameters()
            .map(ServerParams::decode)
            .unwrap_or(Err(Malformed));
        let Ok(params) = params else {
            self.violation(TRANSPORT_PARAMETER_ERROR, "quic-bad-transport-parameters");
            return;
        };
        let ids = &self.cids;
        let ids_match = params.original_dcid.as_deref() == Some(&ids.original_dcid)
            && params.initial_scid.as_deref() == Some(&ids.dcid)
            && params.retry_scid == ids.retry_scid;
        if !ids_match {
            self.violation(TRANSPORT_PARAMETER_ERROR, "quic-bad-transport-parameters");
            return;
        }
        let accepted = self.zero_rtt.then(|| tls.is_early_data_accepted());
        let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        self.peer = params.clone();
        self.recovery.set_max_ack_delay(params.max_ack_delay_ms);
        self.take_limits(&params);
        self.zero_rtt_keys = None;
        if accepted == Some(false) {
            // RFC 9001 §4.6.2: nothing sent in 0-RTT arrived; it goes again in 1-RTT.
            let rejected = self.recovery.take_flight(DATA);
            self.requeue_lost(DATA, rejected);
        }
        let _ = now;
        self.events.push_back(Event::Connected {
            resumed,
            zero_rtt_accepted: accepted,
        });
    }

    pub(super) fn take_limits(&mut self, p: &ServerParams) {
        self.streams.take_limits(p);
        if self.peer.max_idle_timeout_ms == 0 {
            self.peer.max_idle_timeout_ms = p.max_idle_timeout_ms;
        }
    }

    pub(super) fn discard(&mut self, space: usize) {
        self.spaces[space].discard();
        self.recovery.discard(space);
    }
}

/// The last 16 bytes of a datagram long enough to be a stateless reset (RFC 9000 §10.3: at
/// least 21 bytes), as they came.
fn reset_tail(datagram: &[u8]) -> Option<[u8; 16]> {
    if datagram.len() < 21 {
        return None;
    }
    datagram[datagram.len() - 16..].try_into().ok()
}
