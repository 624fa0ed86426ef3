//! One querier thread: an epoll event loop that sends its clients' queries on time over UDP, TCP
//! and TLS, matches the answers and reports one result per query.

use crate::clock::{self, TimerFd, SPIN_NS};
use crate::config::{ReplayConfig, Timing};
use crate::distributor::{Batch, QueryMeta};
use crate::net;
use crate::stats::ReplayStats;
use crate::tls::TlsBase;
use crate::tls_session::{SessionError, TlsSession};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use ldplayer_dns::{flag, Message, HEADER_LEN};
use ldplayer_results::{ErrorKind, Outcome, QueryResult};
use ldplayer_trace::Proto;
use ldplayer_udp::{RecvBatch, Wait, BATCH, RECV_BUF};
use mio::net::{TcpStream, UdpSocket};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rustc_hash::FxHashMap;
use rustls::ClientConfig;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) const WAKER: Token = Token(0);
const TIMER: Token = Token(1);
const UDP_BASE: usize = 1 << 40;
const CONN_BASE: usize = 2 << 40;
const NONE: u32 = u32::MAX;
const RESULT_BATCH: usize = 256;
const HOUSEKEEPING_NS: i64 = 20_000_000;
/// The least time before a due send that is worth a non-blocking look for answers (an empty
/// `epoll_wait` costs about 1 µs here); closer sends are spun for.
const POLL_GAP_NS: i64 = 4_000;
/// The longest the sender goes without reading answers while queries are in flight. Without it a
/// rate whose gaps are all below [`POLL_GAP_NS`] (150k qps here) left answers in the sockets for
/// up to a second, then read them all at once, stalling the sends by 200 ms.
const READ_EVERY_NS: i64 = 50_000;
/// Most DNS IDs in flight on one socket or connection (of 65,536).
const MAX_IDS_IN_FLIGHT: u32 = 60_000;
/// Receive buffers of idle connections larger than this are released.
const KEEP_BUF: usize = 1024;

/// Everything a querier thread needs, built by the engine.
pub(crate) struct Setup {
    pub config: Arc<ReplayConfig>,
    pub poll: Poll,
    pub rx: Receiver<Batch>,
    pub recycle: Sender<Batch>,
    pub results: Sender<Vec<QueryResult>>,
    pub stop: Arc<AtomicBool>,
    pub tls: Option<Arc<TlsBase>>,
    pub max_in_flight: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Via {
    None,
    Udp { sock: u32, uid: u64 },
    Stream { conn: u32, uid: u64 },
}

struct Slot {
    gen: u32,
    live: bool,
    index: u64,
    trace_ns: i64,
    intended_ns: i64,
    sent_ns: i64,
    deadline_ns: i64,
    proto: Proto,
    new_connection: bool,
    client: u32,
    via: Via,
    id: u16,
    /// Length of the question section to compare with answers (0: no check).
    qlen: u16,
    retries_left: u32,
    wire: Vec<u8>,
}

struct Client {
    udp: u32,
    conn: u32,
    local: Option<IpAddr>,
    tls: Option<Arc<ClientConfig>>,
}

struct UdpSock {
    uid: u64,
    client: u32,
    sock: UdpSocket,
    prev: u32,
    next: u32,
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum ConnState {
    Connecting,
    Open,
}

struct Conn {
    uid: u64,
    client: u32,
    proto: Proto,
    sock: TcpStream,
    tls: Option<Box<TlsSession>>,
    state: ConnState,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    inflight: Vec<u32>,
    queries: u64,
    last_active_ns: i64,
    idle_ns: i64,
}

/// Runs a querier to the end and returns its counters.
pub(crate) fn run(setup: Setup) -> ReplayStats {
    clock::set_timer_slack();
    let mut q = match Querier::new(setup) {
        Ok(q) => q,
        Err((setup, e)) => return fail_all(setup, e),
    };
    q.run();
    q.stats
}

/// When the loop cannot even start, every query still gets a result.
fn fail_all(setup: Setup, _e: io::Error) -> ReplayStats {
    let mut stats = ReplayStats::default();
    while let Ok(batch) = setup.rx.recv() {
        let mut out = Vec::with_capacity(batch.queries.len());
        for m in &batch.queries {
            let r = blank_result(m, m.proto, Outcome::Error(ErrorKind::Send));
            stats.count_outcome(r.outcome);
            out.push(r);
        }
        let _ = setup.results.send(out);
    }
    stats
}

fn blank_result(m: &QueryMeta, proto: Proto, outcome: Outcome) -> QueryResult {
    QueryResult {
        index: m.index,
        trace_ns: m.trace_ns,
        intended_ns: m.intended_ns,
        sent_ns: 0,
        received_ns: 0,
        proto,
        new_connection: false,
        rcode: 0,
        response_len: 0,
        truncated: false,
        outcome,
    }
}

/// Length of the first question (name, type, class) when it is uncompressed; 0 otherwise.
fn question_len(wire: &[u8]) -> u16 {
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

fn question_matches(query: &[u8], qlen: u16, resp: &[u8]) -> bool {
    if qlen == 0 {
        return true;
    }
    let end = HEADER_LEN + qlen as usize;
    match (query.get(HEADER_LEN..end), resp.get(HEADER_LEN..end)) {
        (Some(a), Some(b)) => resp[4..6] != [0, 0] && a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// The EDNS TCP keepalive timeout (RFC 7828) of a response, in ns.
fn keepalive_ns(msg: &Message<'_>) -> Option<i64> {
    let mut opts = msg.edns_options();
    while opts.len() >= 4 {
        let code = u16::from_be_bytes([opts[0], opts[1]]);
        let len = u16::from_be_bytes([opts[2], opts[3]]) as usize;
        let data = opts.get(4..4 + len)?;
        if code == ldplayer_dns::option_code::KEEPALIVE && len == 2 {
            return Some(u16::from_be_bytes([data[0], data[1]]) as i64 * 100_000_000);
        }
        opts = &opts[4 + len..];
    }
    None
}

fn key(uid: u64, id: u16) -> u64 {
    (uid << 16) | id as u64
}

struct Querier {
    config: Arc<ReplayConfig>,
    poll: Poll,
    events: Events,
    ready: Vec<(Token, bool, bool)>,
    timer: TimerFd,
    rx: Receiver<Batch>,
    recycle: Sender<Batch>,
    results_tx: Sender<Vec<QueryResult>>,
    results: Vec<QueryResult>,
    last_results_flush: i64,
    stop: Arc<AtomicBool>,
    stopping: bool,
    input_done: bool,
    tls: Option<Arc<TlsBase>>,
    fast: bool,
    max_in_flight: usize,
    in_flight: usize,
    timeout_ns: i64,
    server: SocketAddr,

    pending: VecDeque<Batch>,
    cursor: usize,

    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    ids: FxHashMap<u64, u32>,
    timeouts: VecDeque<(i64, u32, u32)>,
    next_uid: u64,
    /// IDs in flight per transport (socket or connection uid).
    id_use: FxHashMap<u64, u32>,
    id_rng: u64,

    clients: FxHashMap<u32, Client>,
    udp: Vec<Option<UdpSock>>,
    free_udp: Vec<u32>,
    udp_open: usize,
    lru_head: u32,
    lru_tail: u32,
    udp_out: Vec<u32>,
    recv: RecvBatch,
    /// Where an answer is copied out of `recv` before it is completed.
    answer_buf: Vec<u8>,

    conns: Vec<Option<Conn>>,
    free_conns: Vec<u32>,
    conns_open: usize,
    last_housekeeping: i64,

    stats: ReplayStats,
}

impl Querier {
    fn new(s: Setup) -> Result<Querier, (Setup, io::Error)> {
        let mut timer = match TimerFd::new() {
            Ok(t) => t,
            Err(e) => return Err((s, e)),
        };
        if let Err(e) =
            s.poll
                .registry()
                .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)
        {
            return Err((s, e));
        }
        timer.drain();
        let config = s.config;
        Ok(Querier {
            fast: matches!(config.timing, Timing::Fast { .. }),
            max_in_flight: s.max_in_flight.max(1),
            timeout_ns: config.timeout.as_nanos().min(i64::MAX as u128) as i64,
            server: config.server,
            config,
            poll: s.poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            timer,
            rx: s.rx,
            recycle: s.recycle,
            results_tx: s.results,
            results: Vec::with_capacity(RESULT_BATCH),
            last_results_flush: 0,
            stop: s.stop,
            stopping: false,
            input_done: false,
            tls: s.tls,
            in_flight: 0,
            pending: VecDeque::new(),
            cursor: 0,
            slots: Vec::new(),
            free_slots: Vec::new(),
            ids: FxHashMap::default(),
            timeouts: VecDeque::new(),
            next_uid: 1,
            id_use: FxHashMap::default(),
            id_rng: 0x9E37_79B9_7F4A_7C15,
            clients: FxHashMap::default(),
            udp: Vec::new(),
            free_udp: Vec::new(),
            udp_open: 0,
            lru_head: NONE,
            lru_tail: NONE,
            udp_out: Vec::new(),
            recv: RecvBatch::new(),
            answer_buf: Vec::with_capacity(RECV_BUF),
            conns: Vec::new(),
            free_conns: Vec::new(),
            conns_open: 0,
            last_housekeeping: 0,
            stats: ReplayStats::default(),
        })
    }

    fn run(&mut self) {
        loop {
            self.intake();
            if !self.stopping && self.stop.load(Ordering::Relaxed) {
                self.stopping = true;
            }
            if self.stopping {
                self.drop_pending();
            }
            let wake = self.dispatch_due();
            let now = clock::now_ns();
            self.expire(now);
            if now - self.last_housekeeping > HOUSEKEEPING_NS {
                self.housekeeping(now);
            }
            if self.results.len() >= RESULT_BATCH
                || (!self.results.is_empty() && now - self.last_results_flush > HOUSEKEEPING_NS)
            {
                self.flush_results(now);
            }
            if self.input_done && self.pending.is_empty() && self.in_flight == 0 {
                break;
            }
            // Sleep until the next send (timerfd), the next timeout or housekeeping.
            let mut wait_ns = HOUSEKEEPING_NS;
            if let Some(&(d, ..)) = self.timeouts.front() {
                wait_ns = wait_ns.min((d - now).max(0) + 1_000_000);
            }
            if let Some(w) = wake {
                if w <= now {
                    // A send is due within the spin window: only look for answers.
                    wait_ns = 0;
                } else if self.timer.arm(w).is_err() {
                    wait_ns = 0;
                }
            }
            let timeout = std::time::Duration::from_nanos(wait_ns.max(0) as u64);
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // An epoll failure cannot be recovered from: give up on waiting.
                    self.stopping = true;
                }
            }
            let mut ready = std::mem::take(&mut self.ready);
            ready.clear();
            ready.extend(self.events.iter().map(|e| {
                (
                    e.token(),
                    e.is_readable() || e.is_read_closed() || e.is_error(),
                    e.is_writable() || e.is_error(),
                )
            }));
            for &(token, readable, writable) in &ready {
                match token.0 {
                    0 => {}
                    1 => self.timer.drain(),
                    t if t >= CONN_BASE => {
                        self.conn_event((t - CONN_BASE) as u32, readable, writable)
                    }
                    t if t >= UDP_BASE => self.udp_readable((t - UDP_BASE) as u32),
                    _ => {}
                }
            }
            self.ready = ready;
        }
        self.close_all();
        let now = clock::now_ns();
        self.flush_results(now);
    }

    // ---- input ----

    fn intake(&mut self) {
        loop {
            match self.rx.try_recv() {
                Ok(b) => {
                    self.stats.queries += b.queries.len() as u64;
                    self.pending.push_back(b)
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.input_done = true;
                    break;
                }
            }
        }
    }

    fn next_pending(&mut self) -> Option<QueryMeta> {
        loop {
            let b = self.pending.front()?;
            if let Some(m) = b.queries.get(self.cursor) {
                return Some(*m);
            }
            if let Some(mut b) = self.pending.pop_front() {
                b.queries.clear();
                b.bytes.clear();
                let _ = self.recycle.try_send(b);
            }
            self.cursor = 0;
        }
    }

    fn drop_pending(&mut self) {
        while let Some(m) = self.next_pending() {
            self.cursor += 1;
            let proto = self.config.proto_override.unwrap_or(m.proto);
            self.push_result(blank_result(&m, proto, Outcome::Error(ErrorKind::Stopped)));
        }
    }

    /// Sends what is due; returns when the next query is due (realtime ns), if one is waiting.
    fn dispatch_due(&mut self) -> Option<i64> {
        let mut wake = None;
        let started = clock::now_ns();
        while let Some(m) = self.next_pending() {
            if self.fast {
                if self.in_flight >= self.max_in_flight {
                    break;
                }
            } else {
                let now = clock::now_ns();
                if self.in_flight > 0 && now - started > READ_EVERY_NS {
                    // Late or not, answers are read on time too (their times are measured).
                    wake = Some(now);
                    break;
                }
                if m.intended_ns > now {
                    if m.intended_ns - now > SPIN_NS {
                        wake = Some(m.intended_ns - SPIN_NS);
                        break;
                    }
                    self.flush_udp();
                    // Time left before the next send: read answers instead of spinning, or at high
                    // rates they pile up in the sockets until their buffers overflow.
                    if self.in_flight > 0 && m.intended_ns - clock::now_ns() > POLL_GAP_NS {
                        wake = Some(now);
                        break;
                    }
                    clock::spin_until(m.intended_ns);
                }
            }
            self.cursor += 1;
            self.dispatch(m);
            if self.udp_out.len() >= BATCH * 4 {
                self.flush_udp();
            }
        }
        self.flush_udp();
        wake
    }

    fn dispatch(&mut self, m: QueryMeta) {
        let proto = self.config.proto_override.unwrap_or(m.proto);
        let len_ok = m.len as usize >= HEADER_LEN
            && match proto {
                Proto::Udp => m.len <= 65_507,
                Proto::Tcp | Proto::Tls => m.len <= 65_535,
                _ => false,
            };
        if !len_ok {
            self.push_result(blank_result(&m, proto, Outcome::Error(ErrorKind::BadQuery)));
            return;
        }
        let slot = self.alloc_slot(&m, proto);
        if !self.clients.contains_key(&m.client) {
            let local = self
                .config
                .source_prefix
                .map(|p| net::client_addr(p, m.client));
            self.clients.insert(
                m.client,
                Client {
                    udp: NONE,
                    conn: NONE,
                    local,
                    tls: None,
                },
            );
        }
        self.in_flight += 1;
        match proto {
            Proto::Udp => self.send_udp(slot),
            _ => self.send_stream(slot, proto),
        }
    }

    fn alloc_slot(&mut self, m: &QueryMeta, proto: Proto) -> u32 {
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
        let retries = self.config.udp_retries;
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
    fn claim_id(&mut self, slot: u32, uid: u64) -> bool {
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
    fn release_id(&mut self, uid: u64, id: u16) {
        if self.ids.remove(&key(uid, id)).is_some() {
            if let std::collections::hash_map::Entry::Occupied(mut e) = self.id_use.entry(uid) {
                *e.get_mut() -= 1;
                if *e.get() == 0 {
                    e.remove();
                }
            }
        }
    }

    fn push_timeout(&mut self, slot: u32, deadline: i64) {
        let s = &mut self.slots[slot as usize];
        s.deadline_ns = deadline;
        self.timeouts.push_back((deadline, slot, s.gen));
    }

    // ---- completion ----

    fn push_result(&mut self, r: QueryResult) {
        if r.sent_ns != 0 {
            self.stats.sent += 1;
        }
        self.stats.count_outcome(r.outcome);
        self.results.push(r);
    }

    fn flush_results(&mut self, now: i64) {
        self.last_results_flush = now;
        if self.results.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.results, Vec::with_capacity(RESULT_BATCH));
        self.stats.results += batch.len() as u64;
        // If the writer is gone, the results are lost but the replay still ends cleanly.
        let _ = self.results_tx.send(batch);
    }

    /// Ends a query: one result, the slot freed, its ID released.
    fn complete(&mut self, slot: u32, outcome: Outcome, resp: Option<(&[u8], i64)>) {
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
            rcode: 0,
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
                Err(_) => flags & 0xF,
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
            Via::Stream { conn, uid } => {
                self.release_id(uid, id);
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

    fn expire(&mut self, now: i64) {
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
            self.complete(slot, Outcome::Timeout, None);
        }
    }

    // ---- UDP ----

    fn lru_unlink(&mut self, i: u32) {
        let (prev, next) = match &self.udp[i as usize] {
            Some(u) => (u.prev, u.next),
            None => return,
        };
        if prev != NONE {
            if let Some(p) = self.udp[prev as usize].as_mut() {
                p.next = next;
            }
        } else {
            self.lru_head = next;
        }
        if next != NONE {
            if let Some(n) = self.udp[next as usize].as_mut() {
                n.prev = prev;
            }
        } else {
            self.lru_tail = prev;
        }
    }

    /// Moves socket `i` to the most recently used end.
    fn lru_touch(&mut self, i: u32) {
        if self.lru_tail == i {
            return;
        }
        self.lru_unlink(i);
        let tail = self.lru_tail;
        if let Some(u) = self.udp[i as usize].as_mut() {
            u.prev = tail;
            u.next = NONE;
        }
        if tail != NONE {
            if let Some(t) = self.udp[tail as usize].as_mut() {
                t.next = i;
            }
        } else {
            self.lru_head = i;
        }
        self.lru_tail = i;
    }

    fn close_udp(&mut self, i: u32) {
        self.lru_unlink(i);
        if let Some(mut u) = self.udp[i as usize].take() {
            let _ = self.poll.registry().deregister(&mut u.sock);
            if let Some(c) = self.clients.get_mut(&u.client) {
                c.udp = NONE;
            }
            self.free_udp.push(i);
            self.udp_open -= 1;
        }
    }

    fn udp_socket_for(&mut self, client: u32) -> io::Result<(u32, u64)> {
        let (existing, local) = match self.clients.get(&client) {
            Some(c) => (c.udp, c.local),
            None => (NONE, None),
        };
        if existing != NONE {
            if let Some(Some(u)) = self.udp.get(existing as usize) {
                let uid = u.uid;
                self.lru_touch(existing);
                return Ok((existing, uid));
            }
        }
        if self.udp_open >= self.config.max_udp_sockets && self.lru_head != NONE {
            // In-flight queries of the closed socket time out normally.
            self.close_udp(self.lru_head);
        }
        let mut sock = net::udp_socket(local, &self.server)?;
        let idx = match self.free_udp.pop() {
            Some(i) => i,
            None => {
                self.udp.push(None);
                (self.udp.len() - 1) as u32
            }
        };
        self.poll.registry().register(
            &mut sock,
            Token(UDP_BASE + idx as usize),
            Interest::READABLE,
        )?;
        let uid = self.next_uid;
        self.next_uid += 1;
        self.udp[idx as usize] = Some(UdpSock {
            uid,
            client,
            sock,
            prev: NONE,
            next: NONE,
        });
        self.udp_open += 1;
        self.lru_touch(idx);
        if let Some(c) = self.clients.get_mut(&client) {
            c.udp = idx;
        }
        self.stats.udp_sockets_opened += 1;
        Ok((idx, uid))
    }

    fn send_udp(&mut self, slot: u32) {
        let client = self.slots[slot as usize].client;
        match self.udp_socket_for(client) {
            Ok((sock, uid)) => {
                if !self.claim_id(slot, uid) {
                    self.complete(slot, Outcome::Error(ErrorKind::Send), None);
                    return;
                }
                self.slots[slot as usize].via = Via::Udp { sock, uid };
                self.udp_out.push(slot);
            }
            Err(_) => self.complete(slot, Outcome::Error(ErrorKind::Send), None),
        }
    }

    /// Sends the queued UDP queries, grouping consecutive ones of one socket into `sendmmsg`.
    fn flush_udp(&mut self) {
        if self.udp_out.is_empty() {
            return;
        }
        let out = std::mem::take(&mut self.udp_out);
        let mut start = 0;
        let mut failed: Vec<(u32, ErrorKind)> = Vec::new();
        while start < out.len() {
            let Via::Udp { sock, .. } = self.slots[out[start] as usize].via else {
                start += 1;
                continue;
            };
            let mut end = start + 1;
            while end < out.len()
                && matches!(self.slots[out[end] as usize].via, Via::Udp { sock: s, .. } if s == sock)
                && end - start < BATCH
            {
                end += 1;
            }
            let group = &out[start..end];
            let Some(Some(u)) = self.udp.get(sock as usize) else {
                failed.extend(group.iter().map(|&s| (s, ErrorKind::Send)));
                start = end;
                continue;
            };
            let fd = u.sock.as_raw_fd();
            let mut msgs: [&[u8]; BATCH] = [&[]; BATCH];
            for (i, &s) in group.iter().enumerate() {
                msgs[i] = &self.slots[s as usize].wire;
            }
            let now = clock::now_ns();
            let (n, err) = ldplayer_udp::send_connected(fd, &msgs[..group.len()]);
            for &s in &group[..n] {
                let slot = &mut self.slots[s as usize];
                if slot.sent_ns == 0 {
                    slot.sent_ns = now;
                }
                self.push_timeout(s, now + self.timeout_ns);
            }
            if n < group.len() {
                // A connected UDP socket reports an earlier ICMP port unreachable on its next send.
                let kind = match err {
                    Some(e) if e.kind() == io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
                    _ => ErrorKind::Send,
                };
                failed.extend(group[n..].iter().map(|&s| (s, kind)));
            }
            start = end;
        }
        for (s, kind) in failed {
            self.complete(s, Outcome::Error(kind), None);
        }
        let mut out = out;
        out.clear();
        self.udp_out = out;
    }

    fn udp_readable(&mut self, idx: u32) {
        loop {
            let Some(Some(u)) = self.udp.get(idx as usize) else {
                return;
            };
            let fd = u.sock.as_raw_fd();
            let uid = u.uid;
            let n = match self.recv.recv(fd, Wait::No) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    self.stats.udp_unreachable += 1;
                    continue;
                }
                Err(_) => return,
            };
            let now = clock::now_ns();
            for i in 0..n {
                let (data, from) = (self.recv.data(i), self.recv.source(i));
                if from != Some(self.server) || data.len() < HEADER_LEN {
                    self.stats.unmatched_responses += 1;
                    continue;
                }
                let id = u16::from_be_bytes([data[0], data[1]]);
                let Some(&slot) = self.ids.get(&key(uid, id)) else {
                    self.stats.unmatched_responses += 1;
                    continue;
                };
                let s = &self.slots[slot as usize];
                if !question_matches(&s.wire, s.qlen, data) {
                    self.stats.unmatched_responses += 1;
                    continue;
                }
                let tc = u16::from_be_bytes([data[2], data[3]]) & flag::TC != 0;
                if tc && self.config.retry_truncated_over_tcp && !self.stopping {
                    self.release_id(uid, id);
                    self.slots[slot as usize].via = Via::None;
                    self.stats.tc_retries += 1;
                    self.send_stream(slot, Proto::Tcp);
                    continue;
                }
                // Copy out of the receive buffer so that `complete` may borrow self; the copy
                // buffer is reused rather than a zeroed 4 KiB array per answer.
                let mut answer = std::mem::take(&mut self.answer_buf);
                answer.clear();
                answer.extend_from_slice(data);
                self.complete(slot, Outcome::Answered, Some((&answer, now)));
                self.answer_buf = answer;
            }
            if n < BATCH {
                return;
            }
        }
    }

    // ---- TCP and TLS ----

    fn conn_for(&mut self, client: u32, proto: Proto) -> Result<(u32, bool), ErrorKind> {
        let Some(c) = self.clients.get(&client) else {
            return Err(ErrorKind::Send);
        };
        let existing = c.conn;
        let local = c.local;
        if existing != NONE {
            if let Some(Some(conn)) = self.conns.get(existing as usize) {
                if conn.proto == proto {
                    return Ok((existing, false));
                }
            }
            // Another transport for this client: open a new connection alongside.
        }
        if self.conns_open >= self.config.max_connections {
            self.close_lru_idle_conn();
        }
        let tls = if proto == Proto::Tls {
            let Some(base) = self.tls.clone() else {
                return Err(ErrorKind::Tls);
            };
            let cfg = match self.clients.get_mut(&client) {
                Some(c) => c.tls.get_or_insert_with(|| base.for_client()).clone(),
                None => base.for_client(),
            };
            match TlsSession::new(cfg, base.server_name.clone()) {
                Ok(t) => Some(Box::new(t)),
                Err(_) => return Err(ErrorKind::Tls),
            }
        } else {
            None
        };
        let mut sock = match net::tcp_connect(local, &self.server) {
            Ok(s) => s,
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                return Err(ErrorKind::Refused)
            }
            Err(_) => return Err(ErrorKind::Send),
        };
        let idx = match self.free_conns.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                (self.conns.len() - 1) as u32
            }
        };
        if self
            .poll
            .registry()
            .register(
                &mut sock,
                Token(CONN_BASE + idx as usize),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            self.free_conns.push(idx);
            return Err(ErrorKind::Send);
        }
        let uid = self.next_uid;
        self.next_uid += 1;
        self.conns[idx as usize] = Some(Conn {
            uid,
            client,
            proto,
            sock,
            tls,
            state: ConnState::Connecting,
            wbuf: Vec::new(),
            wpos: 0,
            rbuf: Vec::new(),
            inflight: Vec::new(),
            queries: 0,
            last_active_ns: clock::now_ns(),
            idle_ns: self
                .config
                .tcp_idle_timeout
                .as_nanos()
                .min(i64::MAX as u128) as i64,
        });
        self.conns_open += 1;
        self.stats.connections_opened += 1;
        if let Some(c) = self.clients.get_mut(&client) {
            c.conn = idx;
        }
        Ok((idx, true))
    }

    fn close_lru_idle_conn(&mut self) {
        let mut best: Option<(i64, u32)> = None;
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && best.is_none_or(|(t, _)| c.last_active_ns < t) {
                    best = Some((c.last_active_ns, i as u32));
                }
            }
        }
        if let Some((_, i)) = best {
            self.close_conn(i, ErrorKind::Reset);
        }
    }

    fn send_stream(&mut self, slot: u32, proto: Proto) {
        let client = self.slots[slot as usize].client;
        self.slots[slot as usize].proto = proto;
        let (ci, new) = match self.conn_for(client, proto) {
            Ok(x) => x,
            Err(kind) => {
                self.complete(slot, Outcome::Error(kind), None);
                return;
            }
        };
        let Some(Some(conn)) = self.conns.get(ci as usize) else {
            self.complete(slot, Outcome::Error(ErrorKind::Send), None);
            return;
        };
        let uid = conn.uid;
        let first = conn.queries == 0;
        if !self.claim_id(slot, uid) {
            self.complete(slot, Outcome::Error(ErrorKind::Send), None);
            return;
        }
        if !new {
            self.stats.connections_reused += 1;
        }
        let now = clock::now_ns();
        let s = &mut self.slots[slot as usize];
        s.via = Via::Stream { conn: ci, uid };
        s.new_connection = first;
        let len = s.wire.len() as u16;
        if let Some(Some(conn)) = self.conns.get_mut(ci as usize) {
            conn.queries += 1;
            conn.last_active_ns = now;
            conn.wbuf.extend_from_slice(&len.to_be_bytes());
            conn.wbuf.extend_from_slice(&s.wire);
            conn.inflight.push(slot);
        }
        self.push_timeout(slot, now + self.timeout_ns);
        self.conn_flush(ci);
    }

    /// Writes what can be written; marks queries sent once their bytes are with the kernel.
    fn conn_flush(&mut self, ci: u32) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state != ConnState::Open {
            return;
        }
        let mut failure = None;
        if let Some(tls) = conn.tls.as_mut() {
            if conn.wpos < conn.wbuf.len() {
                match tls.write_plain(&conn.wbuf[conn.wpos..]) {
                    Ok(n) => conn.wpos += n,
                    Err(_) => failure = Some(ErrorKind::Tls),
                }
            }
            if failure.is_none() && tls.flush(&mut conn.sock).is_err() {
                failure = Some(ErrorKind::Reset);
            }
        } else {
            while conn.wpos < conn.wbuf.len() {
                match conn.sock.write(&conn.wbuf[conn.wpos..]) {
                    Ok(0) => break,
                    Ok(n) => conn.wpos += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        failure = Some(ErrorKind::Reset);
                        break;
                    }
                }
            }
        }
        if let Some(kind) = failure {
            self.close_conn(ci, kind);
            return;
        }
        let handshaking = conn
            .tls
            .as_ref()
            .is_some_and(|t| t.is_handshaking() || t.wants_write());
        if conn.wpos == conn.wbuf.len() && !handshaking {
            conn.wbuf.clear();
            conn.wpos = 0;
            if conn.wbuf.capacity() > KEEP_BUF {
                conn.wbuf = Vec::new();
            }
            let now = clock::now_ns();
            for &s in &conn.inflight {
                let slot = &mut self.slots[s as usize];
                if slot.sent_ns == 0 {
                    slot.sent_ns = now;
                }
            }
        }
    }

    fn conn_event(&mut self, ci: u32, readable: bool, writable: bool) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state == ConnState::Connecting {
            if let Ok(Some(e)) | Err(e) = conn.sock.take_error() {
                let kind = if e.kind() == io::ErrorKind::ConnectionRefused {
                    ErrorKind::Refused
                } else {
                    ErrorKind::Reset
                };
                self.close_conn(ci, kind);
                return;
            }
            match conn.sock.peer_addr() {
                Ok(_) => conn.state = ConnState::Open,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                    if readable {
                        // Readable but not connected: the connect failed.
                        self.close_conn(ci, ErrorKind::Refused);
                    }
                    return;
                }
                Err(_) => {
                    self.close_conn(ci, ErrorKind::Refused);
                    return;
                }
            }
        }
        if readable {
            self.conn_read(ci);
        }
        if writable || readable {
            self.conn_flush(ci);
        }
    }

    fn conn_read(&mut self, ci: u32) {
        let honor = self.config.honor_keepalive;
        let mut failure = None;
        let mut eof = false;
        {
            let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
                return;
            };
            let mut chunk = [0u8; 16 * 1024];
            loop {
                if let Some(tls) = conn.tls.as_mut() {
                    match tls.read_from(&mut conn.sock, &mut conn.rbuf) {
                        Ok(r) => eof = r.eof,
                        Err(e) => {
                            if matches!(e, SessionError::Tls) {
                                // Send the alert, if any, then give up.
                                let _ = tls.flush(&mut conn.sock);
                            }
                            failure = Some(if tls.is_handshaking() {
                                ErrorKind::Tls
                            } else {
                                match e {
                                    SessionError::Tls => ErrorKind::Tls,
                                    SessionError::Io => ErrorKind::Reset,
                                }
                            });
                        }
                    }
                    break;
                } else {
                    match conn.sock.read(&mut chunk) {
                        Ok(0) => {
                            eof = true;
                            break;
                        }
                        Ok(n) => conn.rbuf.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failure = Some(if e.kind() == io::ErrorKind::ConnectionRefused {
                                ErrorKind::Refused
                            } else {
                                ErrorKind::Reset
                            });
                            break;
                        }
                    }
                }
            }
        }
        self.conn_frames(ci, honor);
        if let Some(kind) = failure {
            self.close_conn(ci, kind);
        } else if eof {
            let tls_hs = matches!(self.conns.get(ci as usize), Some(Some(c)) if c.tls.as_ref().is_some_and(|t| t.is_handshaking()));
            self.close_conn(
                ci,
                if tls_hs {
                    ErrorKind::Tls
                } else {
                    ErrorKind::Reset
                },
            );
        }
    }

    /// Takes the complete messages out of a connection's receive buffer.
    fn conn_frames(&mut self, ci: u32, honor: bool) {
        let now = clock::now_ns();
        let (uid, mut rbuf) = match self.conns.get_mut(ci as usize) {
            Some(Some(c)) => (c.uid, std::mem::take(&mut c.rbuf)),
            _ => return,
        };
        let mut pos = 0;
        let mut keepalive = None;
        while rbuf.len() - pos >= 2 {
            let len = u16::from_be_bytes([rbuf[pos], rbuf[pos + 1]]) as usize;
            if rbuf.len() - pos - 2 < len {
                break;
            }
            let msg = &rbuf[pos + 2..pos + 2 + len];
            pos += 2 + len;
            if msg.len() < HEADER_LEN {
                self.stats.unmatched_responses += 1;
                continue;
            }
            let id = u16::from_be_bytes([msg[0], msg[1]]);
            let Some(&slot) = self.ids.get(&key(uid, id)) else {
                self.stats.unmatched_responses += 1;
                continue;
            };
            let s = &self.slots[slot as usize];
            if !question_matches(&s.wire, s.qlen, msg) {
                self.stats.unmatched_responses += 1;
                continue;
            }
            if honor {
                if let Ok(m) = Message::parse(msg) {
                    keepalive = keepalive_ns(&m).or(keepalive);
                }
            }
            self.complete(slot, Outcome::Answered, Some((msg, now)));
        }
        rbuf.drain(..pos);
        if rbuf.is_empty() && rbuf.capacity() > KEEP_BUF {
            rbuf = Vec::new();
        }
        if let Some(Some(c)) = self.conns.get_mut(ci as usize) {
            c.rbuf = rbuf;
            c.last_active_ns = now;
            if let Some(k) = keepalive {
                c.idle_ns = k;
            }
        }
    }

    /// Closes a connection; its queries in flight fail with `kind`.
    fn close_conn(&mut self, ci: u32, kind: ErrorKind) {
        let Some(Some(mut conn)) = self.conns.get_mut(ci as usize).map(Option::take) else {
            return;
        };
        if let Some(tls) = conn.tls.as_mut() {
            if tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
                self.stats.tls_resumed += 1;
            }
            tls.close(&mut conn.sock);
        }
        let _ = self.poll.registry().deregister(&mut conn.sock);
        self.conns_open -= 1;
        self.free_conns.push(ci);
        if let Some(c) = self.clients.get_mut(&conn.client) {
            if c.conn == ci {
                c.conn = NONE;
            }
        }
        for slot in std::mem::take(&mut conn.inflight) {
            // Keep the connection's number out of the way of complete().
            if let Via::Stream { uid, .. } = self.slots[slot as usize].via {
                self.slots[slot as usize].via = Via::Stream { conn: NONE, uid };
            }
            self.complete(slot, Outcome::Error(kind), None);
        }
    }

    fn housekeeping(&mut self, now: i64) {
        self.last_housekeeping = now;
        let mut idle = Vec::new();
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && now - c.last_active_ns > c.idle_ns {
                    idle.push(i as u32);
                }
            }
        }
        for i in idle {
            self.close_conn(i, ErrorKind::Reset);
        }
    }

    fn close_all(&mut self) {
        for i in 0..self.conns.len() {
            self.close_conn(i as u32, ErrorKind::Reset);
        }
        for i in 0..self.udp.len() {
            self.close_udp(i as u32);
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
