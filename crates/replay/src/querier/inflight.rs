//! Queries in flight: slots, DNS IDs per socket or connection, stream keys, timeouts, the keys
//! of queries that timed out lately, and completion into the [`Sink`].
//!
//! The table knows no transport: a slot's [`Via`] says which socket or connection carries it,
//! and completing a slot returns that [`Via`] so that the transport which holds the slot in a
//! list of its own (a connection's queries) forgets it.

use super::answer::{self, Mismatch};
use super::sink::Sink;
use super::transport::MatchKey;
use crate::cause::Cause;
use crate::distributor::QueryMeta;
use ldplayer_dns::{flag, Message};
use ldplayer_results::{ErrorKind, Outcome, QueryResult};
use ldplayer_trace::Proto;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Most keys of queries that timed out remembered per querier (see [`Inflight::remember_late`]).
const LATE_MAX: usize = 1 << 16;
/// How long after its timeout an answer to a query is late rather than garbage: servers that
/// resolve recursively take seconds, and 30 s is past any resolver's own limit.
const LATE_NS: i64 = 30_000_000_000;
/// Most DNS IDs in flight on one socket or connection (of 65,536).
const MAX_IDS_IN_FLIGHT: u32 = 60_000;

/// Where a query in flight went.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Via {
    /// Nowhere yet, or a transport that keeps no socket of the querier's (QUIC).
    None,
    /// UDP socket `sock` (whose uid is `uid`).
    Udp { sock: u32, uid: u64 },
    /// Stream connection `conn` (whose uid is `uid`), matched by `key`.
    Stream { conn: u32, uid: u64, key: MatchKey },
}

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

/// The queries in flight of one querier.
pub(super) struct Inflight {
    /// The queries by slot; a slot is reused once its query ended (its `gen` tells uses apart).
    pub slots: Vec<Slot>,
    free_slots: Vec<u32>,
    /// Queries in flight by DNS ID key ([`key`]).
    ids: FxHashMap<u64, u32>,
    /// Queries in flight by connection uid and stream, for protocols that match by stream.
    streams: FxHashMap<(u64, u64), u32>,
    /// Deadlines in the order they were set: (deadline, slot, gen).
    timeouts: VecDeque<(i64, u32, u32)>,
    /// The next socket's or connection's uid.
    next_uid: u64,
    /// IDs in flight per transport (socket or connection uid).
    id_use: FxHashMap<u64, u32>,
    /// Keys (as `ids`) of queries that timed out lately, with when to forget them: an answer
    /// with one of them is late, not garbage ([`Inflight::remember_late`]).
    late: FxHashMap<u64, i64>,
    /// The same keys in the order they are to be forgotten.
    late_order: VecDeque<(i64, u64)>,
    id_rng: u64,
    /// Queries in flight.
    count: usize,
}

impl Inflight {
    /// An empty table.
    pub(super) fn new() -> Inflight {
        Inflight {
            slots: Vec::new(),
            free_slots: Vec::new(),
            ids: FxHashMap::default(),
            streams: FxHashMap::default(),
            timeouts: VecDeque::new(),
            next_uid: 1,
            id_use: FxHashMap::default(),
            late: FxHashMap::default(),
            late_order: VecDeque::new(),
            id_rng: 0x9E37_79B9_7F4A_7C15,
            count: 0,
        }
    }

    /// Queries in flight.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// A uid for a new socket or connection, never given before.
    pub(super) fn new_uid(&mut self) -> u64 {
        let uid = self.next_uid;
        self.next_uid += 1;
        uid
    }

    /// The earliest deadline set (it may have been superseded since).
    pub(super) fn next_deadline(&self) -> Option<i64> {
        self.timeouts.front().map(|&(d, ..)| d)
    }

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

    /// The query in flight with `key` on socket or connection `uid`, if any.
    pub(super) fn slot_of(&self, uid: u64, key: MatchKey) -> Option<u32> {
        match key {
            MatchKey::Stream(stream) => self.streams.get(&(uid, stream)).copied(),
            MatchKey::Id(id) => self.ids.get(&self::key(uid, id)).copied(),
        }
    }

    /// Whether a query in flight on `uid` has DNS ID `id`, or had it lately.
    pub(super) fn knows_id(&self, uid: u64, id: u16) -> bool {
        let k = key(uid, id);
        self.ids.contains_key(&k) || self.late.contains_key(&k)
    }

    /// Remembers that the query with DNS ID key `key` timed out, until `until_ns`: an answer
    /// that comes later is late, not garbage. At most [`LATE_MAX`] are kept, the oldest
    /// forgotten first.
    fn remember_late(&mut self, key: u64, until_ns: i64) {
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

    /// Takes a slot for query `m` (sent over `proto`, `wire` its message, with `retries` UDP
    /// retries) and counts it in flight.
    pub(super) fn alloc(&mut self, m: &QueryMeta, proto: Proto, retries: u32, wire: &[u8]) -> u32 {
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
        self.count += 1;
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

    /// Sets the slot's deadline.
    pub(super) fn push_timeout(&mut self, slot: u32, deadline: i64) {
        let s = &mut self.slots[slot as usize];
        s.deadline_ns = deadline;
        self.timeouts.push_back((deadline, slot, s.gen));
    }

    /// Ends a query as failed with `kind`, counting it under `cause`; returns where it was
    /// ([`Via::None`] if it had ended already).
    pub(super) fn fail(
        &mut self,
        slot: u32,
        kind: ErrorKind,
        cause: &Cause,
        sink: &mut Sink,
    ) -> Via {
        if !self.slots[slot as usize].live {
            return Via::None;
        }
        sink.note_cause(kind, cause, 1);
        self.complete(slot, Outcome::Error(kind), None, sink)
    }

    /// Fails every query in flight on UDP socket `sock` (whose uid is `uid`) at once.
    pub(super) fn fail_udp(
        &mut self,
        sock: u32,
        uid: u64,
        kind: ErrorKind,
        cause: &Cause,
        sink: &mut Sink,
    ) {
        let doomed: Vec<u32> = (0..self.slots.len() as u32)
            .filter(|&i| {
                let s = &self.slots[i as usize];
                s.live && s.via == Via::Udp { sock, uid }
            })
            .collect();
        if !doomed.is_empty() {
            sink.note_cause(kind, cause, doomed.len() as u64);
        }
        for slot in doomed {
            self.complete(slot, Outcome::Error(kind), None, sink);
        }
    }

    /// Ends a query with `outcome` (and its answer and the answer's time, if any): its result
    /// goes to `sink`, its ID or stream is released. Returns where it was ([`Via::None`] if it
    /// had ended already), for its transport to forget it.
    pub(super) fn complete(
        &mut self,
        slot: u32,
        outcome: Outcome,
        resp: Option<(&[u8], i64)>,
        sink: &mut Sink,
    ) -> Via {
        let s = &mut self.slots[slot as usize];
        if !s.live {
            return Via::None;
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
            Via::Udp { uid, .. } => self.release_id(uid, id),
            Via::Stream { uid, key, .. } => match key {
                MatchKey::Id(id) => self.release_id(uid, id),
                MatchKey::Stream(stream) => {
                    self.streams.remove(&(uid, stream));
                }
            },
            Via::None => {}
        }
        self.free_slots.push(slot);
        self.count = self.count.saturating_sub(1);
        sink.push_answered(r, answer);
        via
    }

    /// The next query whose deadline passed by `now`, taken off the deadlines; its transport
    /// then sends it again or ends it ([`Inflight::time_out`]).
    pub(super) fn next_expired(&mut self, now: i64) -> Option<u32> {
        while let Some(&(deadline, slot, gen)) = self.timeouts.front() {
            if deadline > now {
                return None;
            }
            self.timeouts.pop_front();
            let s = &self.slots[slot as usize];
            if s.live && s.gen == gen && s.deadline_ns == deadline {
                return Some(slot);
            }
        }
        None
    }

    /// Ends a query whose deadline passed: a timeout, or a bad response if only a response to
    /// another question came with its key. Its key is remembered for a while so that its
    /// answer, if it still comes, is late rather than garbage. Returns where it was.
    pub(super) fn time_out(&mut self, slot: u32, sink: &mut Sink) -> Via {
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
        let (mismatch, unsent, deadline) = (s.mismatch, s.sent_ns == 0, s.deadline_ns);
        if let Some(k) = late_key {
            self.remember_late(k, deadline.saturating_add(LATE_NS));
        }
        if mismatch {
            return self.fail(slot, ErrorKind::BadResponse, &Cause::QuestionMismatch, sink);
        }
        if unsent {
            // Still queued behind a connect or TLS handshake that never finished.
            sink.stats.timeouts_unsent += 1;
        }
        self.complete(slot, Outcome::Timeout, None, sink)
    }
}
