//! Queries in flight: slots, DNS IDs per socket or connection, timeouts and completion.

use super::*;
use crate::cause::{Cause, Context};

/// One query from dispatch to its result: its times, where it went and the ID it carries there.
pub(super) struct Slot {
    pub(super) gen: u32,
    pub(super) live: bool,
    pub(super) index: u64,
    pub(super) trace_ns: i64,
    pub(super) intended_ns: i64,
    pub(super) sent_ns: i64,
    pub(super) deadline_ns: i64,
    pub(super) proto: Proto,
    pub(super) new_connection: bool,
    /// For the query that opened its connection: how long the connection took to be ready.
    pub(super) handshake_ns: i64,
    pub(super) client: u32,
    pub(super) via: Via,
    pub(super) id: u16,
    /// Length of the question section to compare with answers (0: no check).
    pub(super) qlen: u16,
    pub(super) retries_left: u32,
    pub(super) wire: Vec<u8>,
}

/// The result of a query that never reached the server.
pub(super) fn blank_result(m: &QueryMeta, proto: Proto, outcome: Outcome) -> QueryResult {
    QueryResult {
        index: m.index,
        trace_ns: m.trace_ns,
        intended_ns: m.intended_ns,
        sent_ns: 0,
        received_ns: 0,
        proto,
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: 0,
        truncated: false,
        outcome,
    }
}

/// Length of the first question (name, type, class) when it is uncompressed; 0 otherwise.
pub(super) fn question_len(wire: &[u8]) -> u16 {
    if wire.len() < HEADER_LEN || u16::from_be_bytes([wire[4], wire[5]]) == 0 {
        return 0;
    }
    let mut p = HEADER_LEN;
    loop {
        let Some(&l) = wire.get(p) else { return 0 };
        if l == 0 {
            p += 1;
            break;
        }
        if l & 0xC0 != 0 {
            return 0;
        }
        p += 1 + l as usize;
    }
    if p + 4 > wire.len() {
        return 0;
    }
    (p + 4 - HEADER_LEN) as u16
}

/// Whether a response repeats the query's question (its first `qlen` bytes after the header),
/// ignoring case, and has a question at all; `qlen` 0 matches anything.
pub(super) fn question_matches(query: &[u8], qlen: u16, resp: &[u8]) -> bool {
    if qlen == 0 {
        return true;
    }
    let end = HEADER_LEN + qlen as usize;
    match (query.get(HEADER_LEN..end), resp.get(HEADER_LEN..end)) {
        (Some(a), Some(b)) => resp[4..6] != [0, 0] && a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// The in-flight table's key of DNS ID `id` on the socket or connection `uid`.
pub(super) fn key(uid: u64, id: u16) -> u64 {
    (uid << 16) | id as u64
}

impl Querier {
    /// The slot of the query that `msg`, received on socket or connection `uid`, answers:
    /// the same ID in flight there and the same question. (Callers count the rest as
    /// unmatched.)
    pub(super) fn answered_slot(&self, uid: u64, msg: &[u8]) -> Option<u32> {
        let id = u16::from_be_bytes([*msg.first()?, *msg.get(1)?]);
        let slot = *self.ids.get(&key(uid, id))?;
        let s = &self.slots[slot as usize];
        (msg.len() >= HEADER_LEN && question_matches(&s.wire, s.qlen, msg)).then_some(slot)
    }

    /// The slot of the query that `msg`, received on connection `uid` with `key`, answers:
    /// the same key in flight there and the same question. (Callers count the rest as
    /// unmatched.)
    pub(super) fn answered_stream_slot(&self, uid: u64, key: MatchKey, msg: &[u8]) -> Option<u32> {
        let slot = match key {
            MatchKey::Id(id) => *self.ids.get(&self::key(uid, id))?,
            MatchKey::Stream(stream) => *self.streams.get(&(uid, stream))?,
        };
        let s = &self.slots[slot as usize];
        (msg.len() >= HEADER_LEN && question_matches(&s.wire, s.qlen, msg)).then_some(slot)
    }

    pub(super) fn alloc_slot(&mut self, m: &QueryMeta, proto: Proto) -> u32 {
        let idx = match self.free_slots.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    gen: 0,
                    live: false,
                    index: 0,
                    trace_ns: 0,
                    intended_ns: 0,
                    sent_ns: 0,
                    deadline_ns: 0,
                    proto,
                    new_connection: false,
                    handshake_ns: 0,
                    client: 0,
                    via: Via::None,
                    id: 0,
                    qlen: 0,
                    retries_left: 0,
                    wire: Vec::new(),
                });
                (self.slots.len() - 1) as u32
            }
        };
        let retries = self.profile_of(m.client).udp_retries;
        let wire = self.pending.front().map(|b| b.wire(m)).unwrap_or(&[]);
        let s = &mut self.slots[idx as usize];
        s.live = true;
        s.index = m.index;
        s.trace_ns = m.trace_ns;
        s.intended_ns = m.intended_ns;
        s.sent_ns = 0;
        s.deadline_ns = 0;
        s.proto = proto;
        s.new_connection = false;
        s.handshake_ns = 0;
        s.client = m.client;
        s.via = Via::None;
        s.retries_left = retries;
        s.wire.clear();
        s.wire.extend_from_slice(wire);
        s.id = u16::from_be_bytes([s.wire[0], s.wire[1]]);
        s.qlen = question_len(&s.wire);
        idx
    }

    /// Registers the slot's ID on transport `uid`, rewriting it if already in use there. Fails
    /// when [`MAX_IDS_IN_FLIGHT`] of the transport's IDs are taken: a client faster than the ID
    /// space allows within one timeout cannot be emulated on one socket, and probing a nearly
    /// full space costs more per query than sending it.
    pub(super) fn claim_id(&mut self, slot: u32, uid: u64) -> bool {
        let used = self.id_use.entry(uid).or_insert(0);
        if *used >= MAX_IDS_IN_FLIGHT {
            return false;
        }
        let s = &mut self.slots[slot as usize];
        let mut id = s.id;
        loop {
            if let std::collections::hash_map::Entry::Vacant(e) = self.ids.entry(key(uid, id)) {
                e.insert(slot);
                *used += 1;
                if id != s.id {
                    s.id = id;
                    s.wire[..2].copy_from_slice(&id.to_be_bytes());
                }
                return true;
            }
            // At most MAX_IDS_IN_FLIGHT of 65,536 are taken: a random probe hits a free ID
            // within a few tries (xorshift; quality does not matter, spreading does).
            self.id_rng ^= self.id_rng << 13;
            self.id_rng ^= self.id_rng >> 7;
            self.id_rng ^= self.id_rng << 17;
            id = self.id_rng as u16;
        }
    }

    /// Releases the ID that `claim_id` registered on transport `uid`.
    pub(super) fn release_id(&mut self, uid: u64, id: u16) {
        if self.ids.remove(&key(uid, id)).is_some() {
            if let std::collections::hash_map::Entry::Occupied(mut e) = self.id_use.entry(uid) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
    }

    /// Registers the slot's query as in flight on `stream` of connection `uid`. Protocols that
    /// match by stream never reuse one on a connection, and the query's ID stays as it is.
    pub(super) fn claim_stream(&mut self, slot: u32, uid: u64, stream: u64) {
        self.streams.insert((uid, stream), slot);
    }

    pub(super) fn push_timeout(&mut self, slot: u32, deadline: i64) {
        let s = &mut self.slots[slot as usize];
        s.deadline_ns = deadline;
        self.timeouts.push_back((deadline, slot, s.gen));
    }

    /// Ends a query as failed with `kind`, counting it under `cause`.
    pub(super) fn fail(&mut self, slot: u32, kind: ErrorKind, cause: &Cause) {
        if self.slots[slot as usize].live {
            self.note_cause(kind, cause, 1);
            self.complete(slot, Outcome::Error(kind), None);
        }
    }

    /// Counts `n` queries failed with `kind` for `cause`.
    pub(super) fn note_cause(&mut self, kind: ErrorKind, cause: &Cause, n: u64) {
        let ctx = Context {
            source_prefix: self.config.source_prefix.is_some(),
            server_name: &self.server_name,
        };
        self.stats.note_cause(kind, cause, &ctx, n);
    }

    /// Fails every query in flight on UDP socket `sock` (whose uid is `uid`) at once.
    pub(super) fn fail_udp_in_flight(
        &mut self,
        sock: u32,
        uid: u64,
        kind: ErrorKind,
        cause: &Cause,
    ) {
        let doomed: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&i| {
                let s = &self.slots[i as usize];
                s.live && s.via == Via::Udp { sock, uid }
            })
            .collect();
        if !doomed.is_empty() {
            self.note_cause(kind, cause, doomed.len() as u64);
        }
        for slot in doomed {
            self.complete(slot, Outcome::Error(kind), None);
        }
    }

    pub(super) fn complete(&mut self, slot: u32, outcome: Outcome, resp: Option<(&[u8], i64)>) {
        let s = &mut self.slots[slot as usize];
        if !s.live {
            return;
        }
        let mut r = QueryResult {
            index: s.index,
            trace_ns: s.trace_ns,
            intended_ns: if s.intended_ns == 0 {
                s.sent_ns
            } else {
                s.intended_ns
            },
            sent_ns: s.sent_ns,
            received_ns: 0,
            proto: s.proto,
            new_connection: s.new_connection,
            handshake_ns: s.handshake_ns,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: 0,
            truncated: false,
            outcome,
        };
        if let Some((wire, at)) = resp {
            r.received_ns = at;
            r.response_len = wire.len().min(u16::MAX as usize) as u16;
            let flags = u16::from_be_bytes([wire[2], wire[3]]);
            r.truncated = flags & flag::TC != 0;
            r.rcode = match Message::parse(wire) {
                Ok(m) => m.rcode(),
                Err(_) => ldplayer_dns::Rcode(flags & 0xF),
            };
        }
        let via = s.via;
        let id = s.id;
        s.live = false;
        s.gen = s.gen.wrapping_add(1);
        s.via = Via::None;
        match via {
            Via::Udp { uid, .. } => {
                self.release_id(uid, id);
            }
            Via::Stream { conn, uid, key } => {
                match key {
                    MatchKey::Id(id) => self.release_id(uid, id),
                    MatchKey::Stream(stream) => {
                        self.streams.remove(&(uid, stream));
                    }
                }
                if let Some(Some(c)) = self.conns.get_mut(conn as usize) {
                    if let Some(p) = c.inflight.iter().position(|&x| x == slot) {
                        c.inflight.swap_remove(p);
                    }
                }
            }
            Via::None => {}
        }
        self.free_slots.push(slot);
        self.in_flight = self.in_flight.saturating_sub(1);
        self.push_result(r);
    }

    pub(super) fn expire(&mut self, now: i64) {
        while let Some(&(deadline, slot, gen)) = self.timeouts.front() {
            if deadline > now {
                break;
            }
            self.timeouts.pop_front();
            let s = &self.slots[slot as usize];
            if !s.live || s.gen != gen || s.deadline_ns != deadline {
                continue;
            }
            if let Via::Udp { sock, uid } = s.via {
                if s.retries_left > 0 && !self.stopping {
                    let open = matches!(self.udp.get(sock as usize), Some(Some(u)) if u.uid == uid);
                    if open {
                        self.slots[slot as usize].retries_left -= 1;
                        self.stats.udp_retries += 1;
                        self.udp_out.push(slot);
                        self.flush_udp();
                        continue;
                    }
                }
            }
            if self.slots[slot as usize].sent_ns == 0 {
                // Still queued behind a connect or TLS handshake that never finished.
                self.stats.timeouts_unsent += 1;
            }
            self.complete(slot, Outcome::Timeout, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_length_and_match() {
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(&[3, b'w', b'w', b'w', 0, 0, 1, 0, 1]);
        assert_eq!(question_len(&q), 9);
        let mut r = q.clone();
        r[2] |= 0x80;
        r[13] = b'W';
        assert!(question_matches(&q, 9, &r));
        r[14] = b'x';
        assert!(!question_matches(&q, 9, &r));
        assert_eq!(question_len(&q[..15]), 0);
    }
}
