//! One querier thread: an epoll event loop that sends its clients' queries on time over UDP,
//! TCP, TLS, DoH and DoQ, matches the answers and reports one result per query.
//!
//! The querier itself only schedules ([`Querier`]): it takes its batches of queries in order
//! ([`pending`]), keeps each to its time (or to the `--fast` window), gives it a slot of the
//! in-flight table ([`inflight`]) and hands it to its transport's sessions through the one seam
//! [`session::Transport`] ([`udp`], [`stream`] for TCP, TLS and DoH, [`doq_glue`] for QUIC).
//! Results and counters flow into the [`sink`], which hands them to the result writer.

use crate::clock::{self, TimerFd, SPIN_NS};
use crate::config::{ReplayConfig, Timing};
use crate::distributor::{Batch, QueryMeta};
use crate::live::{Live, LiveCounts};
use crate::stats::ReplayStats;
use crate::tls::TlsBase;
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use ldplayer_dns::HEADER_LEN;
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_trace::Proto;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(crate) const WAKER: Token = Token(0);
const TIMER: Token = Token(1);
/// The first poll token of the UDP sockets.
const UDP_BASE: usize = 1 << 40;
/// The first poll token of the stream connections.
const CONN_BASE: usize = 2 << 40;
/// No socket or connection.
pub(super) const NONE: u32 = u32::MAX;
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

/// How late a ramp's querier lets a due send go, so that the sends due within that span go out
/// in one wake-up ([`Timing::Ramp`]; none otherwise); also the longest it sleeps outside
/// `epoll_wait` with answers to come ([`Querier::nap_outside_epoll`]). Woken for each query, a
/// ramp to 50,000 q/s cost 28 µs of CPU a query (a timer, an `epoll_wait`, a `sendmmsg` of one
/// datagram and its stamp read off the error queue for each), 0.7 of resperf's 40 µs spent
/// spinning; batched, 8–10 µs (bench/capacity.sh). A ramp is judged by the second: sends up to
/// 1 ms late, counted in the second they were due, do not move its figures.
pub(crate) fn ramp_batch(timing: &Timing) -> i64 {
    match timing {
        Timing::Ramp { .. } => RAMP_BATCH_NS,
        _ => 0,
    }
}

/// See [`ramp_batch`].
const RAMP_BATCH_NS: i64 = 1_000_000;

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

mod ahead;
mod answer;
mod clients;
pub(crate) mod doh_exchange;
mod doh_framing;
pub(crate) mod doq;
mod doq_glue;
mod doq_stamps;
mod inflight;
pub(crate) mod outgoing;
mod pending;
mod profile;
mod send_times;
mod session;
mod sink;
mod stream;
mod stream_conn;
mod stream_replies;
mod tcp_framing;
#[cfg(test)]
mod test_messages;
mod tls_framing;
pub(crate) mod transport;
mod udp;

use clients::Clients;
use doq_glue::QuicSessions;
use inflight::{blank_result, Inflight, Via};
use pending::Pending;
use session::{Ctx, Readiness, Transport};
pub(crate) use sink::ResultBatch;
use sink::Sink;
use stream::StreamSessions;
use udp::UdpSessions;

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
    q.sink.stats
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

/// How fast queries go: on time (spinning for the last [`spin_window`]), or with `--fast`
/// as fast as a window of queries in flight allows.
struct Pace {
    fast: bool,
    /// How long before a due send the querier stops sleeping and spins ([`spin_window`]).
    spin_ns: i64,
    /// How late past a due send the querier wakes for it, to send everything due by then at
    /// once ([`ramp_batch`]).
    batch_ns: i64,
    max_in_flight: usize,
    /// With `--fast`, the window is topped up once it has drained to this many queries in
    /// flight, then filled to `max_in_flight` at once: an eighth of the window per refill.
    /// Refilling after every answer wrote one or two queries per system call; in batches the
    /// writes carry several and the server answers in bursts (bench/encrypted.sh fast).
    refill_at: usize,
    /// Topping up the window (from `refill_at` to `max_in_flight`).
    refilling: bool,
    /// How many queries the querier takes from its channel ahead of sending them. With `--fast`
    /// nothing else bounds how far the reader runs ahead: the querier took every batch as it
    /// came, so the reader read the whole trace into memory within seconds (5M queries: 0.8 GB
    /// and 1.3 s of CPU, on the server's core). It now takes a window's worth (at least
    /// [`FAST_INTAKE_MIN`]) and leaves the rest in the bounded channel, which holds the reader
    /// back. Original timing is bounded by the preload window instead: no limit here.
    intake_limit: usize,
}

/// The fewest queries a `--fast` querier keeps queued ahead of its window (see
/// [`Pace::intake_limit`]).
const FAST_INTAKE_MIN: usize = 4096;

/// A querier: it schedules its queries and hands each to its transport's sessions.
struct Querier {
    config: Arc<ReplayConfig>,
    poll: Poll,
    events: Events,
    /// Events of the last poll: token and readiness.
    ready: Vec<(Token, Readiness)>,
    timer: TimerFd,
    rx: Receiver<Batch>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
    /// What was last published to `live`.
    published: LiveCounts,
    stopping: bool,
    input_done: bool,
    pace: Pace,
    pending: Pending,
    inflight: Inflight,
    sink: Sink,
    clients: Clients,
    udp: UdpSessions,
    streams: StreamSessions,
    quic: QuicSessions,
    /// Queries whose UDP answer came truncated, to send again over TCP.
    retry_tcp: Vec<u32>,
    last_housekeeping: i64,
}

/// The context of a transport call: the querier's shared state, each field borrowed apart from
/// the transports themselves.
macro_rules! ctx {
    ($q:ident) => {
        Ctx {
            config: &$q.config,
            registry: $q.poll.registry(),
            inflight: &mut $q.inflight,
            sink: &mut $q.sink,
            clients: &mut $q.clients,
            stopping: $q.stopping,
            retry_tcp: &mut $q.retry_tcp,
        }
    };
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
        let server_name = s
            .tls
            .as_ref()
            .map_or_else(String::new, |t| t.server_name.to_str().into_owned());
        let max_in_flight = s.max_in_flight.max(1);
        Ok(Querier {
            pace: Pace {
                fast: matches!(config.timing, Timing::Fast { .. }),
                spin_ns: spin_window(&config.timing),
                batch_ns: ramp_batch(&config.timing),
                max_in_flight,
                refill_at: max_in_flight - (s.max_in_flight / 8).max(1),
                refilling: true,
                intake_limit: if matches!(config.timing, Timing::Fast { .. }) {
                    max_in_flight.max(FAST_INTAKE_MIN)
                } else {
                    usize::MAX
                },
            },
            sink: Sink::new(
                s.results,
                config.keep_answers,
                config.source_prefix.is_some(),
                server_name,
            ),
            clients: Clients::new(&config),
            poll: s.poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            timer,
            rx: s.rx,
            stop: s.stop,
            live: s.live,
            published: LiveCounts::default(),
            stopping: false,
            input_done: false,
            pending: Pending::new(s.recycle),
            inflight: Inflight::new(),
            udp: UdpSessions::new(UDP_BASE),
            streams: StreamSessions::new(CONN_BASE, s.tls.clone()),
            quic: QuicSessions::new(s.tls, s.waker),
            retry_tcp: Vec::new(),
            last_housekeeping: 0,
            config,
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
            if self.sink.due(now, HOUSEKEEPING_NS) {
                self.sink.flush(now);
            }
            if self.input_done && self.pending.is_empty() && self.inflight.len() == 0 {
                break;
            }
            // Sleep until the next send (timerfd), the next timeout or housekeeping.
            let mut wait_ns = HOUSEKEEPING_NS;
            if let Some(d) = self.inflight.next_deadline() {
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
            if self.nap_outside_epoll(now, wake, wait_ns) {
                wait_ns = 0;
            }
            let timeout = std::time::Duration::from_nanos(wait_ns.max(0) as u64);
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // An epoll failure cannot be recovered from: give up on waiting.
                    self.stopping = true;
                }
            }
            self.quic.events(&mut ctx!(self));
            let mut ready = std::mem::take(&mut self.ready);
            ready.clear();
            ready.extend(self.events.iter().map(|e| {
                let r = Readiness {
                    readable: e.is_readable() || e.is_read_closed(),
                    writable: e.is_writable(),
                    error: e.is_error(),
                };
                (e.token(), r)
            }));
            for &(token, r) in &ready {
                match token {
                    WAKER => {}
                    TIMER => self.timer.drain(),
                    Token(t) if self.streams.owns(t) => self.streams.ready(t, r, &mut ctx!(self)),
                    Token(t) if self.udp.owns(t) => {
                        self.udp.ready(t, r, &mut ctx!(self));
                        self.retry_truncated();
                    }
                    _ => {}
                }
            }
            self.ready = ready;
        }
        let mut ctx = ctx!(self);
        for t in [
            &mut self.streams as &mut dyn Transport,
            &mut self.udp,
            &mut self.quic,
        ] {
            t.close(&mut ctx);
        }
        let now = clock::now_ns();
        self.sink.flush(now);
        self.publish_live();
    }

    /// A ramp with answers to come sleeps outside `epoll_wait` (up to [`Pace::batch_ns`], or
    /// until `wake` or `wait_ns` from `now`), then only looks; returns whether it slept so.
    /// Each answer that arrives while the querier sleeps in `epoll_wait` must wake it, and on
    /// loopback and veth the server's own send pays for that wake-up: woken for each answer, a
    /// ramp put a CPU-bound Unbound's UDP capacity at 38,000–42,000 q/s where resperf, which
    /// never sleeps, found 53,000 (bench/capacity.sh). Answers are then read up to a
    /// millisecond late. A datagram's kernel receive stamp does not move; over TCP and TLS a
    /// read's stamp is that of the last segment it took, so an answer read with a later one
    /// counts up to that millisecond more.
    fn nap_outside_epoll(&self, now: i64, wake: Option<i64>, wait_ns: i64) -> bool {
        if self.pace.batch_ns == 0 || self.inflight.len() == 0 || wait_ns <= 0 {
            return false;
        }
        let mut nap = wait_ns.min(self.pace.batch_ns);
        if let Some(w) = wake {
            nap = nap.min(w - now);
        }
        if nap > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(nap as u64));
        }
        true
    }

    /// Publishes this querier's counts for progress displays.
    fn publish_live(&mut self) {
        let now = LiveCounts {
            queued: 0,
            sent: self.sink.first_sends,
            answered: self.sink.stats.answered,
            timeouts: self.sink.stats.timeouts,
            errors: self.sink.stats.total_errors(),
        };
        self.live.publish(&mut self.published, now);
    }

    // ---- input ----

    /// Takes the batches the reader queued, up to [`Pace::intake_limit`] queries.
    fn intake(&mut self) {
        let limit = if self.stopping {
            usize::MAX
        } else {
            self.pace.intake_limit
        };
        while self.pending.queued() < limit {
            match self.rx.try_recv() {
                Ok(b) => {
                    self.sink.stats.queries += b.queries.len() as u64;
                    self.pending.push(b)
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.input_done = true;
                    break;
                }
            }
        }
    }

    fn drop_pending(&mut self) {
        while let Some(m) = self.pending.next() {
            self.pending.advance();
            let proto = self.config.proto_override.unwrap_or(m.proto);
            let r = blank_result(&m, proto, Outcome::Error(ErrorKind::Stopped));
            self.sink.push_result(r);
        }
    }

    /// Sends what is due; returns when the next query is due (realtime ns), if one is waiting.
    fn dispatch_due(&mut self) -> Option<i64> {
        let wake = self.dispatch_due_batched();
        self.flush_all();
        wake
    }

    /// Has every transport send what it queued.
    fn flush_all(&mut self) {
        let mut ctx = ctx!(self);
        self.udp.flush(&mut ctx);
        self.streams.flush(&mut ctx);
    }

    /// [`Querier::dispatch_due`] with the transports' writes left to the caller.
    fn dispatch_due_batched(&mut self) -> Option<i64> {
        let mut wake = None;
        let mut sent_any = false;
        let started = clock::now_ns();
        while let Some(m) = self.pending.next() {
            let pace = &mut self.pace;
            if pace.fast {
                if !pace.refilling && self.inflight.len() > pace.refill_at {
                    break;
                }
                pace.refilling = true;
                if self.inflight.len() >= pace.max_in_flight {
                    pace.refilling = false;
                    break;
                }
            } else {
                let now = clock::now_ns();
                if self.inflight.len() > 0 && now - started > READ_EVERY_NS {
                    // Late or not, answers are read on time too (their times are measured).
                    wake = Some(now);
                    break;
                }
                // A ramp's first send of a wake-up waits until it is `batch_ns` late; the rest
                // of what is due by then goes with it.
                let due_ns = if sent_any {
                    m.intended_ns
                } else {
                    m.intended_ns + pace.batch_ns
                };
                if due_ns > now {
                    let spin_ns = pace.spin_ns;
                    if due_ns - now > spin_ns {
                        wake = Some(due_ns - spin_ns);
                        self.open_ahead(due_ns - spin_ns);
                        break;
                    }
                    self.flush_all();
                    // Time left before the next send: read answers instead of spinning, or at high
                    // rates they pile up in the sockets until their buffers overflow.
                    if self.inflight.len() > 0 && m.intended_ns - clock::now_ns() > POLL_GAP_NS {
                        wake = Some(now);
                        break;
                    }
                    self.open_ahead(m.intended_ns);
                    clock::spin_until(m.intended_ns);
                }
            }
            self.pending.advance();
            self.dispatch(m);
            sent_any = true;
        }
        self.udp.flush(&mut ctx!(self));
        wake
    }

    /// Opens sockets for queued queries while there is time before `until_ns`.
    fn open_ahead(&mut self, until_ns: i64) {
        if !self.pace.fast {
            let (pending, udp) = (&mut self.pending, &mut self.udp);
            ahead::open_ahead(pending, udp, &mut ctx!(self), until_ns);
        }
    }

    /// Gives query `m` a slot and hands it to its transport.
    fn dispatch(&mut self, m: QueryMeta) {
        let proto = self.config.proto_override.unwrap_or(m.proto);
        let len_ok = m.len as usize >= HEADER_LEN
            && match proto {
                Proto::Udp => m.len <= 65_507,
                Proto::Tcp | Proto::Tls | Proto::Https | Proto::Quic => m.len <= 65_535,
            };
        if !len_ok {
            let r = blank_result(&m, proto, Outcome::Error(ErrorKind::BadQuery));
            self.sink.push_result(r);
            return;
        }
        self.clients.ensure(&self.config, m.client, m.src);
        let profile = self.clients.profile_of(m.client);
        let (retries, http3) = (profile.udp_retries, profile.doh.http3);
        let wire = self.pending.wire(&m);
        let slot = self.inflight.alloc(&m, proto, retries, wire);
        let mut ctx = ctx!(self);
        match proto {
            Proto::Udp => self.udp.submit(slot, &mut ctx),
            Proto::Quic => self.quic.submit(slot, &mut ctx),
            Proto::Https if http3 => self.quic.submit(slot, &mut ctx),
            _ => self.streams.submit(slot, &mut ctx),
        }
    }

    /// Sends the queries whose UDP answer came truncated again over TCP.
    fn retry_truncated(&mut self) {
        if self.retry_tcp.is_empty() {
            return;
        }
        let mut retry = std::mem::take(&mut self.retry_tcp);
        for &slot in &retry {
            self.inflight.slots[slot as usize].proto = Proto::Tcp;
            self.streams.submit(slot, &mut ctx!(self));
        }
        self.streams.flush(&mut ctx!(self));
        retry.clear();
        self.retry_tcp = retry;
    }

    /// Hands each query whose deadline passed to its transport, which sends it again or ends
    /// it.
    fn expire(&mut self, now: i64) {
        while let Some(slot) = self.inflight.next_expired(now) {
            let mut ctx = ctx!(self);
            match ctx.inflight.slots[slot as usize].via {
                Via::Udp { .. } => self.udp.expired(slot, &mut ctx),
                Via::Stream { .. } => self.streams.expired(slot, &mut ctx),
                Via::None => self.quic.expired(slot, &mut ctx),
            }
        }
    }

    /// What is done every [`HOUSEKEEPING_NS`]: the live counts published, late keys forgotten,
    /// idle connections and those that carried their share of queries closed.
    fn housekeeping(&mut self, now: i64) {
        self.last_housekeeping = now;
        self.publish_live();
        self.inflight.forget_late(now);
        let mut ctx = ctx!(self);
        for t in [
            &mut self.streams as &mut dyn Transport,
            &mut self.udp,
            &mut self.quic,
        ] {
            t.housekeeping(now, &mut ctx);
        }
    }
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    /// A trace's timing is kept to the microsecond by spinning before each send; a ramp, judged
    /// by the second, sleeps until a little past each send and sends all that is due by then.
    #[test]
    fn only_a_ramp_sleeps_past_its_sends_to_batch_them() {
        assert_eq!(
            spin_window(&Timing::Ramp {
                to_qps: 1000.0,
                ramp_s: 10.0
            }),
            0
        );
        assert_eq!(spin_window(&Timing::Fast { max_in_flight: 10 }), SPIN_NS);
        assert_eq!(spin_window(&Timing::Rate { qps: 100.0 }), SPIN_NS);
        let ramp = Timing::Ramp {
            to_qps: 1000.0,
            ramp_s: 10.0,
        };
        assert!(ramp_batch(&ramp) > 0);
        assert_eq!(ramp_batch(&Timing::Fast { max_in_flight: 10 }), 0);
        assert_eq!(ramp_batch(&Timing::Rate { qps: 100.0 }), 0);
    }
}
