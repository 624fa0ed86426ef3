//! One querier thread: an epoll event loop that sends its clients' queries on time over UDP, TCP
//! and TLS, matches the answers and reports one result per query.

use crate::clock::{self, TimerFd, SPIN_NS};
use crate::config::{ReplayConfig, Timing};
use crate::distributor::{Batch, QueryMeta};
use crate::live::{Live, LiveCounts};
use crate::net;
use crate::stats::ReplayStats;
use crate::tls::TlsBase;
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
/// Bytes of kept answers after which a querier hands its results over, whatever their number:
/// with the result channel's 4,096 batches, what answers can hold in flight stays bounded.
const RESULT_BATCH_ANSWER_BYTES: usize = 256 * 1024;
const HOUSEKEEPING_NS: i64 = 20_000_000;
/// The least time before a due send that is worth a non-blocking look for answers (an empty
/// `epoll_wait` costs about 1 µs here); closer sends are spun for.
const POLL_GAP_NS: i64 = 4_000;
/// The longest the sender goes without reading answers while queries are in flight. Without it a
/// rate whose gaps are all below [`POLL_GAP_NS`] (150k qps here) left answers in the sockets for
/// up to a second, then read them all at once, stalling the sends by 200 ms.
const READ_EVERY_NS: i64 = 50_000;
/// How long before a due send a querier stops sleeping and spins: [`SPIN_NS`] to keep a
/// trace's timing to the microsecond; none on a ramp ([`Timing::Ramp`]), which is judged by the
/// second, as resperf's: its querier sleeps on the timer until a query is due and then sends
/// every query due by then. Spinning cost a ramp most of its CPU below ≈ 12k qps (80 µs
/// before each send; bench/capacity.sh).
pub(crate) fn spin_window(timing: &Timing) -> i64 {
    match timing {
        Timing::Ramp { .. } => 0,
        _ => SPIN_NS,
    }
}

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
    pub results: Sender<ResultBatch>,
    pub stop: Arc<AtomicBool>,
    pub live: Arc<Live>,
    pub tls: Option<Arc<TlsBase>>,
    pub max_in_flight: usize,
    /// Wakes the querier's poll (the DoQ thread tells it about its events so).
    pub waker: Arc<mio::Waker>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Via {
    None,
    Udp { sock: u32, uid: u64 },
    Stream { conn: u32, uid: u64, key: MatchKey },
}

mod ahead;
mod answer;
mod doh_framing;
pub(crate) mod doq;
mod doq_glue;

mod inflight;
mod profile;
mod send_times;
mod stream;
mod stream_replies;
mod tcp_framing;
mod tls_framing;
pub(crate) mod transport;
mod udp;

use inflight::{blank_result, Slot};
use stream::Conn;
use transport::MatchKey;
use udp::UdpSock;

/// Results on their way from a querier to the result writer, with their answers when the replay
/// keeps them ([`ReplayConfig::keep_answers`]).
#[derive(Debug, Default)]
pub(crate) struct ResultBatch {
    pub results: Vec<QueryResult>,
    /// With answers kept: where each result's answer ends in `answers` (its start is where the
    /// previous one ends); a result without one has an empty span. Empty otherwise.
    pub answer_ends: Vec<u32>,
    /// The answers, one after the other.
    pub answers: Vec<u8>,
}

impl ResultBatch {
    fn with_capacity(n: usize, keep_answers: bool) -> ResultBatch {
        ResultBatch {
            results: Vec::with_capacity(n),
            answer_ends: Vec::with_capacity(if keep_answers { n } else { 0 }),
            answers: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.results.len()
    }

    fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Each result with its answer, if it has one.
    pub fn iter(&self) -> impl Iterator<Item = (&QueryResult, Option<&[u8]>)> {
        let mut start = 0usize;
        self.results.iter().enumerate().map(move |(i, r)| {
            let answer = self.answer_ends.get(i).and_then(|&end| {
                let span = start..end as usize;
                start = end as usize;
                (!span.is_empty()).then(|| &self.answers[span])
            });
            (r, answer)
        })
    }
}

struct Client {
    udp: u32,
    conn: u32,
    local: Option<IpAddr>,
    tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoH (ALPN h2), with a session store of its own.
    doh_tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoQ (ALPN doq), with a session store of its own.
    doq_tls: Option<Arc<ClientConfig>>,
    /// Its TLS configuration for DoH over HTTP/3 (ALPN h3), with a session store of its own.
    h3_tls: Option<Arc<ClientConfig>>,
    /// Its session profile (an index into `Querier::profiles`).
    profile: u32,
}

/// Runs a querier to the end and returns its counters.
pub(crate) fn run(setup: Setup) -> ReplayStats {
    clock::set_timer_slack();
    let mut q = match Querier::new(setup) {
        Ok(q) => q,
        Err(failed) => {
            let (setup, e) = *failed;
            return fail_all(setup, e);
        }
    };
    q.run();
    q.stats
}

/// When the loop cannot even start, every query still gets a result.
fn fail_all(setup: Setup, e: io::Error) -> ReplayStats {
    let mut stats = ReplayStats::default();
    let cause = crate::cause::Cause::Io(e);
    let ctx = crate::cause::Context {
        source_prefix: setup.config.source_prefix.is_some(),
        server_name: "",
    };
    while let Ok(batch) = setup.rx.recv() {
        let mut out = ResultBatch::with_capacity(batch.queries.len(), false);
        for m in &batch.queries {
            let r = blank_result(m, m.proto, Outcome::Error(ErrorKind::Send));
            stats.count_outcome(r.outcome);
            out.results.push(r);
        }
        stats.note_cause(ErrorKind::Send, &cause, &ctx, batch.queries.len() as u64);
        let _ = setup.results.send(out);
    }
    stats
}

struct Querier {
    config: Arc<ReplayConfig>,
    poll: Poll,
    events: Events,
    /// Events of the last poll: token, readable, writable, error.
    ready: Vec<(Token, bool, bool, bool)>,
    /// Kernel send stamps read off a socket's error queue.
    stamps: Vec<ldplayer_udp::SendStamp>,
    timer: TimerFd,
    rx: Receiver<Batch>,
    recycle: Sender<Batch>,
    results_tx: Sender<ResultBatch>,
    results: ResultBatch,
    last_results_flush: i64,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
    /// What was last published to `live`.
    published: LiveCounts,
    /// Queries sent so far (each once).
    first_sends: u64,
    stopping: bool,
    input_done: bool,
    tls: Option<Arc<TlsBase>>,
    fast: bool,
    /// How long before a due send the querier stops sleeping and spins ([`spin_window`]).
    spin_ns: i64,
    max_in_flight: usize,
    /// With `--fast`, the window is topped up once it has drained to this many queries in
    /// flight, then filled to `max_in_flight` at once: an eighth of the window per refill.
    /// Refilling after every answer wrote one or two queries per system call; in batches the
    /// writes carry several and the server answers in bursts (bench/encrypted.sh fast).
    refill_at: usize,
    /// Topping up the window (from `refill_at` to `max_in_flight`).
    refilling: bool,
    in_flight: usize,
    server: SocketAddr,
    /// The name the server's TLS certificate is checked against, for error messages.
    server_name: String,
    /// The session profiles of the clients (the replay's own last).
    profiles: Vec<profile::Profile>,

    pending: VecDeque<Batch>,
    cursor: usize,
    /// Queued queries past `cursor` whose clients [`Querier::open_ahead`] has seen to.
    scanned_ahead: usize,

    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    ids: FxHashMap<u64, u32>,
    /// Queries in flight by connection uid and stream, for protocols that match by stream.
    streams: FxHashMap<(u64, u64), u32>,
    timeouts: VecDeque<(i64, u32, u32)>,
    next_uid: u64,
    /// IDs in flight per transport (socket or connection uid).
    id_use: FxHashMap<u64, u32>,
    /// Keys (as `ids`) of queries that timed out lately, with when to forget them: an answer
    /// with one of them is late, not garbage ([`Querier::remember_late`]).
    late: FxHashMap<u64, i64>,
    /// The same keys in the order they are to be forgotten.
    late_order: VecDeque<(i64, u64)>,
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
    /// Connections with queries queued while [`Querier::dispatch_due`] sends what is due, each
    /// written once when it is done (or before it spins for the next query): one system call
    /// (and for TLS one flush) for the queries due together. Writing after every query cost
    /// half of the CPU in the kernel with `--fast` over DoH.
    stream_out: Vec<u32>,
    /// Sends go to `stream_out` instead of being written at once.
    batching: bool,
    /// The DoQ thread, started with the first DoQ query.
    doq: Option<doq::Doq>,
    /// The reference stack's DoQ thread (quinn), started with its first query.
    doq_reference: Option<doq::Doq>,
    waker: Arc<mio::Waker>,
    conns_open: usize,
    last_housekeeping: i64,

    stats: ReplayStats,
}

impl Querier {
    fn new(s: Setup) -> Result<Querier, Box<(Setup, io::Error)>> {
        let mut timer = match TimerFd::new() {
            Ok(t) => t,
            Err(e) => return Err(Box::new((s, e))),
        };
        if let Err(e) =
            s.poll
                .registry()
                .register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)
        {
            return Err(Box::new((s, e)));
        }
        timer.drain();
        let config = s.config;
        let keep_answers = config.keep_answers;
        Ok(Querier {
            fast: matches!(config.timing, Timing::Fast { .. }),
            spin_ns: spin_window(&config.timing),
            max_in_flight: s.max_in_flight.max(1),
            refill_at: s.max_in_flight.max(1) - (s.max_in_flight / 8).max(1),
            refilling: true,
            server: config.server,
            server_name: s
                .tls
                .as_ref()
                .map_or_else(String::new, |t| t.server_name.to_str().into_owned()),
            profiles: profile::resolve(&config),
            config,
            poll: s.poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            stamps: Vec::new(),
            timer,
            rx: s.rx,
            recycle: s.recycle,
            results_tx: s.results,
            results: ResultBatch::with_capacity(RESULT_BATCH, keep_answers),
            last_results_flush: 0,
            stop: s.stop,
            live: s.live,
            published: LiveCounts::default(),
            first_sends: 0,
            stopping: false,
            input_done: false,
            tls: s.tls,
            in_flight: 0,
            pending: VecDeque::new(),
            cursor: 0,
            scanned_ahead: 0,
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
            clients: FxHashMap::default(),
            udp: Vec::new(),
            free_udp: Vec::new(),
            udp_open: 0,
            lru_head: NONE,
            lru_tail: NONE,
            udp_out: Vec::new(),
            recv: RecvBatch::with_timestamps(),
            answer_buf: Vec::with_capacity(RECV_BUF),
            conns: Vec::new(),
            free_conns: Vec::new(),
            stream_out: Vec::new(),
            batching: false,
            doq: None,
            doq_reference: None,
            waker: s.waker,
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
                || self.results.answers.len() >= RESULT_BATCH_ANSWER_BYTES
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
                wait_ns = wait_ns.min(d.saturating_sub(now).max(0).saturating_add(1_000_000));
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
            self.doq_events();
            let mut ready = std::mem::take(&mut self.ready);
            ready.clear();
            ready.extend(self.events.iter().map(|e| {
                (
                    e.token(),
                    e.is_readable() || e.is_read_closed(),
                    e.is_writable(),
                    e.is_error(),
                )
            }));
            for &(token, readable, writable, error) in &ready {
                match token.0 {
                    0 => {}
                    1 => self.timer.drain(),
                    t if t >= CONN_BASE => {
                        self.conn_event((t - CONN_BASE) as u32, readable, writable, error)
                    }
                    t if t >= UDP_BASE => {
                        let idx = (t - UDP_BASE) as u32;
                        // An error event is most often the kernel's send stamps (or an ICMP
                        // report queued with them); when the queue is empty, it is the socket's
                        // error, which a read reports.
                        let queued = error && self.udp_error_queue(idx);
                        if readable || (error && !queued) {
                            self.udp_readable(idx);
                        }
                    }
                    _ => {}
                }
            }
            self.ready = ready;
        }
        self.close_all();
        let now = clock::now_ns();
        self.flush_results(now);
        self.publish_live();
    }

    /// Publishes this querier's counts for progress displays.
    fn publish_live(&mut self) {
        let now = LiveCounts {
            queued: 0,
            sent: self.first_sends,
            answered: self.stats.answered,
            timeouts: self.stats.timeouts,
            errors: self.stats.total_errors(),
        };
        self.live.publish(&mut self.published, now);
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
            self.advance_cursor();
            let proto = self.config.proto_override.unwrap_or(m.proto);
            self.push_result(blank_result(&m, proto, Outcome::Error(ErrorKind::Stopped)));
        }
    }

    /// Sends what is due; returns when the next query is due (realtime ns), if one is waiting.
    fn dispatch_due(&mut self) -> Option<i64> {
        self.batching = true;
        let wake = self.dispatch_due_batched();
        self.batching = false;
        self.flush_streams();
        wake
    }

    /// [`Querier::dispatch_due`] with the connections' writes left to the caller.
    fn dispatch_due_batched(&mut self) -> Option<i64> {
        let mut wake = None;
        let started = clock::now_ns();
        while let Some(m) = self.next_pending() {
            if self.fast {
                if !self.refilling && self.in_flight > self.refill_at {
                    break;
                }
                self.refilling = true;
                if self.in_flight >= self.max_in_flight {
                    self.refilling = false;
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
                    if m.intended_ns - now > self.spin_ns {
                        wake = Some(m.intended_ns - self.spin_ns);
                        self.open_ahead(m.intended_ns - self.spin_ns);
                        break;
                    }
                    self.flush_udp();
                    self.flush_streams();
                    // Time left before the next send: read answers instead of spinning, or at high
                    // rates they pile up in the sockets until their buffers overflow.
                    if self.in_flight > 0 && m.intended_ns - clock::now_ns() > POLL_GAP_NS {
                        wake = Some(now);
                        break;
                    }
                    self.open_ahead(m.intended_ns);
                    clock::spin_until(m.intended_ns);
                }
            }
            self.advance_cursor();
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
                Proto::Tcp | Proto::Tls | Proto::Https | Proto::Quic => m.len <= 65_535,
            };
        if !len_ok {
            self.push_result(blank_result(&m, proto, Outcome::Error(ErrorKind::BadQuery)));
            return;
        }
        self.ensure_client(m.client, m.src);
        let slot = self.alloc_slot(&m, proto);
        self.in_flight += 1;
        match proto {
            Proto::Udp => self.send_udp(slot),
            Proto::Quic => self.send_doq(slot),
            Proto::Https if self.profile_of(m.client).doh.http3 => self.send_doq(slot),
            _ => self.send_stream(slot, proto),
        }
    }

    /// Makes sure `client` has an entry (its source address when a source prefix is set).
    fn ensure_client(&mut self, client: u32, src: IpAddr) {
        if !self.clients.contains_key(&client) {
            let local = match self.config.source_prefix {
                Some(p) => Some(net::client_addr(p, client)),
                None if self.config.original_sources => {
                    Some(net::original_source(src, &self.config.server))
                }
                None => None,
            };
            self.clients.insert(
                client,
                Client {
                    udp: NONE,
                    conn: NONE,
                    local,
                    tls: None,
                    doh_tls: None,
                    doq_tls: None,
                    h3_tls: None,
                    profile: profile::assign(&self.config, self.profiles.len(), src),
                },
            );
        }
    }

    /// The session profile of `client`.
    fn profile_of(&self, client: u32) -> &profile::Profile {
        let i = self
            .clients
            .get(&client)
            .map_or(self.profiles.len() - 1, |c| c.profile as usize);
        &self.profiles[i.min(self.profiles.len() - 1)]
    }

    /// When a query of `slot` sent now times out.
    fn deadline_of(&self, slot: u32, now: i64) -> i64 {
        // A timeout past the clock's end (`--timeout 1e12`) waits until then.
        now.saturating_add(self.profile_of(self.slots[slot as usize].client).timeout_ns)
    }

    // ---- completion ----

    fn push_result(&mut self, r: QueryResult) {
        self.push_answered(r, &[]);
    }

    /// Records a result with its answer (empty: none), kept when the replay keeps answers.
    fn push_answered(&mut self, r: QueryResult, answer: &[u8]) {
        if r.sent_ns != 0 {
            self.stats.sent += 1;
        }
        self.stats.count_outcome(r.outcome);
        self.results.results.push(r);
        if self.config.keep_answers {
            self.results.answers.extend_from_slice(answer);
            let end = u32::try_from(self.results.answers.len()).unwrap_or(u32::MAX);
            self.results.answer_ends.push(end);
        }
    }

    fn flush_results(&mut self, now: i64) {
        self.last_results_flush = now;
        if self.results.is_empty() {
            return;
        }
        let fresh = ResultBatch::with_capacity(RESULT_BATCH, self.config.keep_answers);
        let batch = std::mem::replace(&mut self.results, fresh);
        self.stats.results += batch.len() as u64;
        // If the writer is gone, the results are lost but the replay still ends cleanly.
        let _ = self.results_tx.send(batch);
    }

    /// What is done every [`HOUSEKEEPING_NS`]: the live counts published, late keys forgotten,
    /// idle connections and those that carried their share of queries closed.
    fn housekeeping(&mut self, now: i64) {
        self.last_housekeeping = now;
        self.publish_live();
        self.forget_late(now);
        let mut idle = Vec::new();
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && (now - c.last_active_ns > c.idle_ns || self.spent(c)) {
                    idle.push(i as u32);
                }
            }
        }
        for i in idle {
            self.close_conn(i, ErrorKind::Reset, crate::cause::Cause::ClosedLocally);
        }
    }

    fn close_all(&mut self) {
        for i in 0..self.conns.len() {
            self.close_conn(
                i as u32,
                ErrorKind::Reset,
                crate::cause::Cause::ClosedLocally,
            );
        }
        for i in 0..self.udp.len() {
            self.close_udp(i as u32);
        }
    }
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    /// A trace's timing is kept to the microsecond by spinning before each send; a ramp, judged
    /// by the second, sleeps until each send is due instead.
    #[test]
    fn only_a_ramp_sleeps_until_each_send() {
        assert_eq!(
            spin_window(&Timing::Ramp {
                to_qps: 1000.0,
                ramp_s: 10.0
            }),
            0
        );
        assert_eq!(spin_window(&Timing::Fast { max_in_flight: 10 }), SPIN_NS);
        assert_eq!(spin_window(&Timing::Rate { qps: 100.0 }), SPIN_NS);
    }
}
