//! Queries in flight: slots, DNS IDs per socket or connection, timeouts and completion.

use super::answer::{self, Mismatch};
use super::*;
use crate::cause::{Cause, Context};

/// Most keys of queries that timed out remembered per querier (see [`Querier::remember_late`]).
const LATE_MAX: usize = 1 << 16;
/// How long after its timeout an answer to a query is late rather than garbage: servers that
/// resolve recursively take seconds, and 30 s is past any resolver's own limit.
const LATE_NS: i64 = 30_000_000_000;

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
    /// A response for another question came with its key: if no answer comes, it fails as a
    /// bad response rather than timing out.
    pub(super) mismatch: bool,
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
        target: 0,
    }
}

/// The in-flight table's key of DNS ID `id` on the socket or connection `uid`.
pub(super) fn key(uid: u64, id: u16) -> u64 {
    (uid << 16) | id as u64
}

/// What a message received for a socket's or connection's key (DNS ID or stream) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reply {
    /// The answer of the query in this slot.
    Answer(u32),
    /// Not the answer of the query in this slot, whose key it carries.
    Mismatch(u32, Mismatch),
    /// A late answer: a query that timed out a moment ago had its key (a response to another
    /// question that reached the query now holding the key counts so too).
    Late,
    /// No query in flight has its key, and none had it lately.
    Stray,
}

impl Querier {
    /// What `msg`, received on socket or connection `uid` with `key`, is to the queries in
    /// flight there (see [`answer::check`]).
    pub(super) fn reply_of(&self, uid: u64, key: MatchKey, msg: &[u8]) -> Reply {
        let slot = match key {
            MatchKey::Id(id) => self.ids.get(&self::key(uid, id)).copied(),
            MatchKey::Stream(stream) => self.streams.get(&(uid, stream)).copied(),
        };
        let late =
            || matches!(key, MatchKey::Id(id) if self.late.contains_key(&self::key(uid, id)));
        let Some(slot) = slot else {
            return if late() { Reply::Late } else { Reply::Stray };
        };
        let s = &self.slots[slot as usize];
        match answer::check(&s.wire, s.qlen, msg) {
            Ok(()) => Reply::Answer(slot),
            Err(Mismatch::QuestionMismatch) if late() => Reply::Late,
            Err(m) => Reply::Mismatch(slot, m),
        }
    }

    /// Remembers that the query with DNS ID key `key` timed out, until `until_ns`: an answer
    /// that comes later is late, not garbage. At most [`LATE_MAX`] are kept, the oldest
    /// forgotten first.
    pub(super) fn remember_late(&mut self, key: u64, until_ns: i64) {
        if self.late_order.len() >= LATE_MAX {
            if let Some((until, old)) = self.late_order.pop_front() {
                // Unless it was remembered again since.
                if self.late.get(&old) == Some(&until) {
                    self.late.remove(&old);
                }
            }
        }
        self.late.insert(key, until_ns);
        self.late_order.push_back((until_ns, key));
    }

    /// Forgets the late keys whose time is up.
    pub(super) fn forget_late(&mut self, now: i64) {
        while let Some(&(until, key)) = self.late_order.front() {
            if until > now {
                break;
            }
            self.late_order.pop_front();
            // A key remembered again later keeps its newer time.
            if self.late.get(&key).is_some_and(|&u| u <= now) {
                self.late.remove(&key);
            }
        }
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
                    mismatch: false,
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
        s.qlen = answer::question_len(&s.wire);
        s.mismatch = false;
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
            target: 0,
        };
        let mut answer: &[u8] = &[];
        if let Some((wire, at)) = resp {
            answer = wire;
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
        self.push_answered(r, answer);
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
            let s = &self.slots[slot as usize];
            // An answer may still come for a query that was sent: late, not garbage, for a while.
            let late_key = match s.via {
                Via::Udp { uid, .. }
                | Via::Stream {
                    uid,
                    key: MatchKey::Id(_),
                    ..
                } if s.sent_ns != 0 => Some(key(uid, s.id)),
                _ => None,
            };
            let (mismatch, unsent) = (s.mismatch, s.sent_ns == 0);
            if let (Via::Stream { conn, uid, .. }, false) = (s.via, unsent) {
                if let Some(Some(c)) = self.conns.get_mut(conn as usize) {
                    c.timed_out |= c.uid == uid;
                }
            }
            if let Some(k) = late_key {
                self.remember_late(k, deadline.saturating_add(LATE_NS));
            }
            if mismatch {
                self.fail(slot, ErrorKind::BadResponse, &Cause::QuestionMismatch);
                continue;
            }
            if unsent {
                // Still queued behind a connect or TLS handshake that never finished.
                self.stats.timeouts_unsent += 1;
            }
            self.complete(slot, Outcome::Timeout, None);
        }
    }
}
