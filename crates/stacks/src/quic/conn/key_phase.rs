//! The 1-RTT keys and their updates (RFC 9001 §6): the server's updates followed, this
//! client's own started after a number of packets (once the handshake is confirmed and the
//! current keys have had a packet acknowledged, §6.1 and §6.5), and the previous phase's read
//! key kept for three PTOs after the new phase's first packet came, so that the server's packets
//! of the old phase that arrive late still decrypt (§6.5).

use rustls::quic::{DirectionalKeys, Keys, PacketKey, PacketKeySet, Secrets};

/// What a key update leaves under the confidentiality limit (quinn's `KEY_UPDATE_MARGIN`).
const KEY_UPDATE_MARGIN: u64 = 10_000;

/// The 1-RTT keys and what key updates need.
pub(super) struct OneRtt {
    /// This client's keys, and the server's (header protection never changes).
    pub(super) local: DirectionalKeys,
    pub(super) remote: DirectionalKeys,
    /// The secrets of the next key phase.
    next: Secrets,
    phase: bool,
    /// The previous phase's read key, kept after a key update for the server's packets of that
    /// phase that come late, until `previous_until`.
    previous: Option<Box<dyn PacketKey>>,
    /// When the previous read key goes: three PTOs after the first packet of the new phase
    /// came (`None`: none has come yet).
    previous_until: Option<i64>,
    /// The first packet number received in this phase after a key update: a packet of the
    /// other phase below it is of the previous phase, one above it of the next.
    first_received: Option<u64>,
    /// The first packet number sent with these keys, and whether one at or past it has been
    /// acknowledged.
    first_sent: u64,
    acked: bool,
    /// Key updates this client started.
    started: u64,
}

impl OneRtt {
    /// The handshake's 1-RTT keys; `first_sent`, the first packet number they will protect.
    pub(super) fn new(keys: Keys, next: Secrets, first_sent: u64) -> OneRtt {
        OneRtt {
            local: keys.local,
            remote: keys.remote,
            next,
            phase: false,
            previous: None,
            previous_until: None,
            first_received: None,
            first_sent,
            acked: false,
            started: 0,
        }
    }

    /// The key phase bit of the packets sent now.
    #[inline]
    pub(super) fn phase(&self) -> bool {
        self.phase
    }

    /// Key updates this client started.
    #[inline]
    pub(super) fn started(&self) -> u64 {
        self.started
    }

    /// Whether the previous phase's read key is still kept.
    #[cfg(test)]
    pub(super) fn holds_previous(&self) -> bool {
        self.previous.is_some()
    }

    /// When the previous phase's read key is to go.
    #[inline]
    pub(super) fn previous_until(&self) -> Option<i64> {
        self.previous.as_ref().and(self.previous_until)
    }

    /// Drops the previous phase's read key once its time is up.
    pub(super) fn on_timeout(&mut self, now: i64) {
        if self.previous_until.is_some_and(|t| t <= now) {
            self.previous = None;
            self.previous_until = None;
        }
    }

    /// An acknowledgement in the data space, up to `largest`.
    pub(super) fn on_ack(&mut self, largest: u64) {
        if largest >= self.first_sent {
            self.acked = true;
        }
    }

    /// Decrypts a 1-RTT packet in place (its plaintext's length), with the keys its phase bit
    /// and number call for: the current ones, the previous phase's (a late packet), or the next
    /// phase's (the server updated its keys: followed, this client's write keys too). `pto`
    /// is the current probe timeout, for how long the previous read key is kept.
    pub(super) fn decrypt(
        &mut self,
        now: i64,
        pto: i64,
        pn: u64,
        key_phase: bool,
        header: &[u8],
        payload: &mut [u8],
    ) -> Option<usize> {
        if key_phase == self.phase {
            let len = self
                .remote
                .packet
                .decrypt_in_place(pn, header, payload)
                .ok()?
                .len();
            if self.first_received.is_none() && self.previous.is_some() {
                // The server's first packet of the phase this client started.
                self.first_received = Some(pn);
                self.previous_until = Some(now.saturating_add(pto.saturating_mul(3)));
            }
            return Some(len);
        }
        if let Some(previous) = &self.previous {
            match self.first_received {
                Some(first) if pn < first => {
                    return previous
                        .decrypt_in_place(pn, header, payload)
                        .ok()
                        .map(|p| p.len());
                }
                Some(_) => {}
                None => {
                    // This client started the phase and the server has sent nothing in it yet:
                    // a packet of the other phase is most often a late one of the previous
                    // phase, but a server that updates again at once, before any packet of the
                    // phase this client started (aioquic's `request_key_update` does, against
                    // §6.1's "MUST NOT initiate a subsequent key update" until one is
                    // acknowledged), sends the next phase's. §6.5 lets an endpoint refuse such
                    // consecutive updates (quinn closes with KEY_UPDATE_ERROR); this client
                    // follows them, so that its session outlives the server's haste. The
                    // ciphertext is kept for the second try: a failed open leaves the buffer
                    // unspecified. Only packets in this window pay the copy.
                    let sealed = payload.to_vec();
                    if let Ok(p) = previous.decrypt_in_place(pn, header, payload) {
                        return Some(p.len());
                    }
                    payload.copy_from_slice(&sealed);
                }
            }
        }
        let mut next = self.next.clone();
        let PacketKeySet { local, remote } = next.next_packet_keys();
        let len = remote.decrypt_in_place(pn, header, payload).ok()?.len();
        // The next packet sent is the new phase's first ([`OneRtt::sending`] sets it).
        self.switch(local, remote, next, u64::MAX);
        self.first_received = Some(pn);
        self.previous_until = Some(now.saturating_add(pto.saturating_mul(3)));
        Some(len)
    }

    /// Before a packet numbered `pn` goes: starts a key update if `interval` packets went with
    /// the current keys (cut to the suite's confidentiality limit), the handshake is
    /// `confirmed`, one of them was acknowledged and the previous read key is gone; and
    /// records the first packet of a phase the server started. Returns the phase bit to send.
    pub(super) fn sending(&mut self, pn: u64, interval: u64, confirmed: bool) -> bool {
        if self.first_sent == u64::MAX {
            self.first_sent = pn;
        }
        let limit = self
            .local
            .packet
            .confidentiality_limit()
            .saturating_sub(KEY_UPDATE_MARGIN)
            .max(1);
        let interval = if interval == 0 {
            limit
        } else {
            interval.min(limit)
        };
        let due = pn.saturating_sub(self.first_sent) >= interval;
        if due && confirmed && self.acked && self.previous.is_none() {
            let mut next = self.next.clone();
            let PacketKeySet { local, remote } = next.next_packet_keys();
            self.switch(local, remote, next, pn);
            self.first_received = None;
            self.previous_until = None;
            self.started += 1;
        }
        self.phase
    }

    /// Moves to the next phase's keys, the current read key kept as the previous one.
    fn switch(
        &mut self,
        local: Box<dyn PacketKey>,
        remote: Box<dyn PacketKey>,
        next: Secrets,
        first_sent: u64,
    ) {
        self.local.packet = local;
        let old = std::mem::replace(&mut self.remote.packet, remote);
        self.previous = Some(old);
        self.next = next;
        self.phase = !self.phase;
        self.first_sent = first_sent;
        self.acked = false;
    }
}
