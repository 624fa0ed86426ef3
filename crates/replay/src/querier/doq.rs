//! DNS over QUIC (RFC 9250): one connection per original client, one bidirectional stream per
//! query (DNS ID 0, the 2-byte length prefix, then the stream finished), 0-RTT on a resumed
//! session when the server allows it.
//!
//! The connections ([`ldplayer_stacks::quic::conn::Connection`], the replay's own QUIC client,
//! with [`ldplayer_stacks::doq`] or [`ldplayer_stacks::h3`] on its streams) run on a thread of
//! their own beside each querier that has DoQ clients ([`Doq`]), an epoll (mio) loop
//! over the clients' sockets: the querier hands it queries and takes back [`DoqEvent`]s (sent,
//! answered, failed, connections), woken through its poll's waker. The querier keeps what it
//! keeps for every transport (the in-flight table, timeouts, results). The send and answer
//! times are the kernel's, as for UDP, TCP and TLS: an answer's is the receive stamp of the
//! datagram that completed it (`SO_TIMESTAMPNS`, [`ldplayer_udp::recv_datagram`]), a query's
//! the send stamp of the datagram that carried its stream's first bytes ([`super::doq_stamps`],
//! with `kernel_send_times`). Where the kernel gives none, the clock read when the query's
//! first packet is written and as soon as its answer is complete stands.
//!
//! Each client has its own UDP socket (bound to the client's source address when the replay
//! gives it one), closed with its connection, so the server sees the clients apart, and its
//! own TLS session store, so resumption and 0-RTT are per client.

use super::doq_stamps::SendStamps;
use crate::cause::Cause;
use crate::clock;
use ldplayer_results::ErrorKind;
use ldplayer_stacks::quic::conn::{self, Closed, Connection, Event};
use ldplayer_stacks::{doq, h3};
use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use rustc_hash::FxHashMap;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The DoQ thread's waker (client sockets are their slab index + 1).
const WAKE: Token = Token(0);
/// Datagrams read from one socket before the others get a turn.
const READ_BURST: usize = 64;

/// A query for the DoQ thread.
pub(crate) struct DoqQuery {
    pub slot: u32,
    pub gen: u32,
    pub client: u32,
    /// The client's source address, if the replay gives it one.
    pub local: Option<IpAddr>,
    /// The client's TLS configuration (ALPN `doq`, its own session store).
    pub tls: Arc<ClientConfig>,
    /// Whether the client sends 0-RTT on a resumed session.
    pub zero_rtt: bool,
    /// How long the client's connection may stay idle.
    pub idle_timeout: Duration,
    /// DNS over HTTPS on HTTP/3 rather than DoQ: how to ask.
    pub h3: Option<H3Query>,
    /// The whole DNS message.
    pub wire: Vec<u8>,
}

/// How a DoH-over-HTTP/3 query is asked (the client's DoH settings).
pub(crate) struct H3Query {
    pub get: bool,
    pub path: String,
}

/// What the DoQ thread tells the querier.
pub(crate) enum DoqEvent {
    /// A query's stream was written (`at`, realtime ns: the clock read); `handshake_ns` for a
    /// query that opened its connection (the time to a connection ready for it: 0 under 0-RTT).
    Sent {
        slot: u32,
        gen: u32,
        at: i64,
        new_connection: bool,
        handshake_ns: i64,
    },
    /// The kernel's send stamp of the datagram that carried the query's first stream bytes
    /// (`at`, realtime ns), told after its [`DoqEvent::Sent`]: the query's send time from now.
    SendStamp { slot: u32, gen: u32, at: i64 },
    /// A query's whole answer came at `at` (the kernel's receive stamp of the datagram that
    /// completed it, or the clock read without one).
    Answer {
        slot: u32,
        gen: u32,
        at: i64,
        msg: Vec<u8>,
    },
    /// A query failed.
    Failed {
        slot: u32,
        gen: u32,
        kind: ErrorKind,
        cause: Cause,
    },
    /// A connection was opened (`zero_rtt`: its first queries went in 0-RTT).
    Opened { zero_rtt: bool },
    /// A connection's handshake ended: whether it resumed a TLS session, and whether the
    /// server accepted its 0-RTT data (`None` without 0-RTT).
    Handshake {
        resumed: bool,
        zero_rtt_accepted: Option<bool>,
    },
    /// A query went on an open connection.
    Reused,
    /// A connection ended, having declared this many of its packets lost (and sent their
    /// frames again).
    Lost { packets: u64 },
}

/// The DoQ side of one querier: the thread that runs its QUIC connections, on the lean stack
/// ([`Doq::start`]) or the reference one (`crate::reference::quic::start`).
pub(crate) struct Doq {
    queries: crossbeam_channel::Sender<DoqQuery>,
    /// Wakes the DoQ thread (a query, or the end).
    wake: Arc<dyn Fn() + Send + Sync>,
    stop: Arc<AtomicBool>,
    pub events: crossbeam_channel::Receiver<DoqEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the DoQ thread connects.
#[derive(Clone)]
pub(crate) struct DoqSetup {
    /// The DoQ server.
    pub server: SocketAddr,
    /// The DoH server, for DoH over HTTP/3 (UDP), and its `:authority`.
    pub https_server: SocketAddr,
    pub authority: String,
    pub server_name: String,
    /// How long a query may take before its task gives up (the querier times it out first).
    pub query_timeout: Duration,
    /// The server certificate verifier of the clients' TLS configurations, for the reference
    /// stack to see whether a handshake verified a certificate or resumed a session.
    pub verifier: Option<Arc<dyn rustls::client::danger::ServerCertVerifier>>,
    /// Packets sent with one set of keys before the lean stack updates them (0: never).
    pub key_update_packets: u64,
    /// Whether the lean stack takes its send times from the kernel's send stamps.
    pub kernel_send_times: bool,
}

impl Doq {
    /// Starts the thread; `wake` wakes the querier when events are waiting.
    pub fn start(setup: DoqSetup, wake: Arc<mio::Waker>) -> io::Result<Doq> {
        let (queries, rx) = crossbeam_channel::unbounded::<DoqQuery>();
        let (events_tx, events) = crossbeam_channel::unbounded();
        let poll = Poll::new()?;
        let own_wake = Arc::new(mio::Waker::new(poll.registry(), WAKE)?);
        let stop = Arc::new(AtomicBool::new(false));
        let server_name = ServerName::try_from(setup.server_name.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut driver = Driver {
            setup,
            server_name,
            poll,
            rx,
            stop: stop.clone(),
            tell: Teller {
                tx: events_tx,
                wake,
            },
            clients: Vec::new(),
            free: Vec::new(),
            by_client: FxHashMap::default(),
            timers: BinaryHeap::new(),
            buf: vec![0; 65_536],
            out: Vec::with_capacity(1500),
            stamps: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("ldplayer-doq".into())
            .spawn(move || driver.run())?;
        let wake = move || {
            let _ = own_wake.wake();
        };
        Ok(Doq::from_parts(
            queries,
            Arc::new(wake),
            stop,
            events,
            thread,
        ))
    }

    /// A DoQ side from its thread's parts: where queries go, how to wake the thread, its stop
    /// flag, where its events come from, and the thread.
    pub(crate) fn from_parts(
        queries: crossbeam_channel::Sender<DoqQuery>,
        wake: Arc<dyn Fn() + Send + Sync>,
        stop: Arc<AtomicBool>,
        events: crossbeam_channel::Receiver<DoqEvent>,
        thread: std::thread::JoinHandle<()>,
    ) -> Doq {
        Doq {
            queries,
            wake,
            stop,
            events,
            thread: Some(thread),
        }
    }

    /// Hands a query to the DoQ thread; false if the thread is gone.
    pub fn send(&self, q: DoqQuery) -> bool {
        if self.queries.send(q).is_err() {
            return false;
        }
        (self.wake)();
        true
    }
}

impl Drop for Doq {
    /// Ends the thread: its connections are closed (told to the server) and their sockets go.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        (self.wake)();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends events to the querier and wakes it.
#[derive(Clone)]
pub(crate) struct Teller {
    pub tx: crossbeam_channel::Sender<DoqEvent>,
    pub wake: Arc<mio::Waker>,
}

impl Teller {
    /// Tells the querier `e` and wakes it.
    pub fn tell(&self, e: DoqEvent) {
        if self.tx.send(e).is_ok() {
            let _ = self.wake.wake();
        }
    }
}

/// A query in flight on a connection.
struct InFlight {
    stream: u64,
    slot: u32,
    gen: u32,
    /// Whether this query opened the connection.
    opened: bool,
    /// When the DoQ thread forgets it (the querier has timed it out by then).
    forget_at: i64,
}

/// One client's socket and connection.
struct ClientConn {
    /// The client and whether this is its HTTP/3 connection ([`conn_key`]).
    key: u64,
    h3: bool,
    socket: UdpSocket,
    /// The queries waiting for the kernel's send stamps; `None` without them.
    send_stamps: Option<SendStamps>,
    conn: Connection,
    started: i64,
    /// The handshake's time, for the query that opened the connection (0 under 0-RTT).
    handshake_ns: i64,
    in_flight: Vec<InFlight>,
    /// Packets lost already told to the querier.
    told_lost: u64,
    /// The deadline its timer is armed for, and the entry's epoch.
    armed: i64,
    epoch: u64,
}

/// The DoQ thread's loop.
struct Driver {
    setup: DoqSetup,
    server_name: ServerName<'static>,
    poll: Poll,
    rx: crossbeam_channel::Receiver<DoqQuery>,
    stop: Arc<AtomicBool>,
    tell: Teller,
    /// Connections by slab index (their token less one).
    clients: Vec<Option<ClientConn>>,
    free: Vec<usize>,
    by_client: FxHashMap<u64, usize>,
    /// Timers: (deadline, slab index, epoch); stale entries are skipped.
    timers: BinaryHeap<Reverse<(i64, usize, u64)>>,
    /// One receive buffer for every socket.
    buf: Vec<u8>,
    out: Vec<u8>,
    /// Kernel send stamps read off a socket's error queue.
    stamps: Vec<ldplayer_udp::SendStamp>,
}

impl Driver {
    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        let mut next_epoch = 0u64;
        loop {
            let now = clock::now_ns();
            let timeout = self.timers.peek().map(|Reverse((t, _, _))| {
                Duration::from_nanos((t - now).clamp(0, 1_000_000_000) as u64)
            });
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            let mut touched: Vec<usize> = Vec::new();
            for ev in events.iter() {
                if ev.token() == WAKE {
                    continue;
                }
                let idx = ev.token().0 - 1;
                // An error event is most often the kernel's send stamps: read before the
                // answers that came with them, so that the querier has a query's send time
                // before its answer.
                if ev.is_error() {
                    self.send_stamps(idx);
                }
                self.read(idx);
                touched.push(idx);
            }
            while let Ok(q) = self.rx.try_recv() {
                if let Some(idx) = self.query(q, &mut next_epoch) {
                    touched.push(idx);
                }
            }
            let now = clock::now_ns();
            while let Some(&Reverse((t, idx, epoch))) = self.timers.peek() {
                if t > now {
                    break;
                }
                self.timers.pop();
                let Some(c) = self.clients.get_mut(idx).and_then(Option::as_mut) else {
                    continue;
                };
                if c.epoch != epoch || c.armed != t {
                    continue;
                }
                c.armed = i64::MAX;
                c.conn.on_timeout(now);
                touched.push(idx);
            }
            touched.sort_unstable();
            touched.dedup();
            for idx in touched {
                self.settle(idx);
            }
            if self.stop.load(Ordering::Acquire) && self.rx.is_empty() {
                self.close_all();
                return;
            }
        }
        self.close_all();
    }

    /// Reads what came on a client's socket.
    fn read(&mut self, idx: usize) {
        let Some(c) = self.clients.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        for _ in 0..READ_BURST {
            match ldplayer_udp::recv_datagram(c.socket.as_raw_fd(), &mut self.buf) {
                Ok((n, stamp)) => {
                    let now = clock::now_ns();
                    c.conn.handle(now, &mut self.buf[..n]);
                    // What this datagram completed, at the kernel's time of it.
                    take_events(c, &self.tell, now, stamp.unwrap_or(now), None);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // An ICMP error on the connected socket, or a datagram longer than any QUIC
                // packet: as if the packet was lost.
                Err(_) => {}
            }
        }
        // More is waiting: come back after the others (edge-triggered readiness).
        let _ = self
            .poll
            .registry()
            .reregister(&mut c.socket, Token(idx + 1), Interest::READABLE);
    }

    /// Reads the kernel's send stamps queued on client `idx`'s socket and tells the querier
    /// those of datagrams that carried queries' first bytes.
    fn send_stamps(&mut self, idx: usize) {
        let Some(c) = self.clients.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let Some(waiting) = c.send_stamps.as_mut() else {
            return;
        };
        self.stamps.clear();
        let _ = ldplayer_udp::read_send_stamps(c.socket.as_raw_fd(), &mut self.stamps);
        for st in &self.stamps {
            waiting.stamp(st.key, st.ns, |slot, gen, at| {
                self.tell.tell(DoqEvent::SendStamp { slot, gen, at });
            });
        }
    }

    /// Takes a query: onto the client's connection, opened if it has none.
    fn query(&mut self, q: DoqQuery, next_epoch: &mut u64) -> Option<usize> {
        let now = clock::now_ns();
        // A timeout past the clock's end waits until then, not less (nor panics).
        let wait = self
            .setup
            .query_timeout
            .saturating_add(Duration::from_secs(1));
        let forget_at = now.saturating_add(wait.as_nanos().min(i64::MAX as u128) as i64);
        let (idx, opened) = match self.by_client.get(&conn_key(&q)) {
            Some(&idx) => {
                self.tell.tell(DoqEvent::Reused);
                (idx, false)
            }
            None => match self.open(&q, now, next_epoch) {
                Ok(idx) => (idx, true),
                Err((kind, cause)) => {
                    self.tell.tell(DoqEvent::Failed {
                        slot: q.slot,
                        gen: q.gen,
                        kind,
                        cause,
                    });
                    return None;
                }
            },
        };
        let framed = match &q.h3 {
            Some(h3) => {
                let req = h3::Request {
                    get: h3.get,
                    path: h3.path.clone(),
                    authority: self.setup.authority.clone(),
                };
                // RFC 8484 §4.1: DNS ID 0, which keeps GET requests cacheable.
                let mut msg = q.wire.clone();
                if msg.len() >= 2 {
                    msg[..2].copy_from_slice(&[0, 0]);
                }
                h3::request(&req, &msg)
            }
            // RFC 9250 §4.2.1: the DNS ID is 0 on DoQ.
            None => match doq::query(&q.wire) {
                Some(framed) => framed,
                None => {
                    self.tell.tell(DoqEvent::Failed {
                        slot: q.slot,
                        gen: q.gen,
                        kind: ErrorKind::BadQuery,
                        cause: Cause::Unframeable,
                    });
                    return None;
                }
            },
        };
        let c = self.clients[idx].as_mut()?;
        let stream = c.conn.open_stream(framed);
        c.in_flight.push(InFlight {
            stream,
            slot: q.slot,
            gen: q.gen,
            opened,
            forget_at,
        });
        Some(idx)
    }

    /// A new socket and connection for a client.
    fn open(
        &mut self,
        q: &DoqQuery,
        now: i64,
        next_epoch: &mut u64,
    ) -> Result<usize, (ErrorKind, Cause)> {
        let server = if q.h3.is_some() {
            self.setup.https_server
        } else {
            self.setup.server
        };
        let bind = match (q.local, server) {
            (Some(ip), _) => SocketAddr::new(ip, 0),
            (None, SocketAddr::V4(_)) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
            (None, SocketAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
        };
        let send_err = |e: io::Error| (ErrorKind::Send, Cause::Io(e));
        let mut socket = UdpSocket::bind(bind).map_err(send_err)?;
        socket.connect(server).map_err(send_err)?;
        // Answers are timed by the kernel's receive stamps where it gives them.
        let _ = ldplayer_udp::enable_timestamps(socket.as_raw_fd());
        let send_stamps = if self.setup.kernel_send_times {
            SendStamps::enable(socket.as_raw_fd())
        } else {
            None
        };
        let config = conn::Config {
            tls: q.tls.clone(),
            server_name: self.server_name.clone(),
            idle_timeout_ns: q.idle_timeout.as_nanos().min(i64::MAX as u128) as i64,
            zero_rtt: q.zero_rtt,
            // What the application on QUIC's streams asks of them.
            max_stream_recv: if q.h3.is_some() {
                h3::MAX_RESPONSE
            } else {
                doq::MAX_STREAM_RECV
            },
            peer_uni_streams: if q.h3.is_some() {
                h3::SERVER_UNI_STREAMS
            } else {
                0
            },
            key_update_packets: self.setup.key_update_packets,
        };
        let mut conn = Connection::new(config, now)
            .map_err(|_| (ErrorKind::Tls, Cause::Quic("quic-tls-config")))?;
        if q.h3.is_some() {
            // RFC 9114 §6.2.1: the client's control stream, first.
            conn.open_uni_stream(h3::CONTROL_STREAM);
        }
        let idx = self.free.pop().unwrap_or_else(|| {
            self.clients.push(None);
            self.clients.len() - 1
        });
        self.poll
            .registry()
            .register(&mut socket, Token(idx + 1), Interest::READABLE)
            .map_err(|e| {
                self.free.push(idx);
                send_err(e)
            })?;
        if conn.zero_rtt() {
            self.tell.tell(DoqEvent::Opened { zero_rtt: true });
        }
        *next_epoch += 1;
        self.clients[idx] = Some(ClientConn {
            key: conn_key(q),
            h3: q.h3.is_some(),
            socket,
            send_stamps,
            handshake_ns: if conn.zero_rtt() { 0 } else { -1 },
            conn,
            started: now,
            in_flight: Vec::new(),
            told_lost: 0,
            armed: i64::MAX,
            epoch: *next_epoch,
        });
        self.by_client.insert(conn_key(q), idx);
        Ok(idx)
    }

    /// Sends what a connection has to send, tells its events, closes it if it has ended, and
    /// arms its timer.
    fn settle(&mut self, idx: usize) {
        let Some(c) = self.clients.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let now = clock::now_ns();
        // Forget queries the querier has given up on.
        let mut k = 0;
        while k < c.in_flight.len() {
            if c.in_flight[k].forget_at <= now {
                let f = c.in_flight.swap_remove(k);
                c.conn.forget_stream(f.stream);
            } else {
                k += 1;
            }
        }
        // What timers and forgetting left to tell.
        take_events(c, &self.tell, now, now, None);
        for _ in 0..1024 {
            if !c.conn.poll_transmit(now, &mut self.out) {
                break;
            }
            let key = c.send_stamps.as_ref().map(SendStamps::next_key);
            let sent = c.socket.send(&self.out).is_ok();
            if sent {
                if let Some(s) = c.send_stamps.as_mut() {
                    s.count_sent();
                }
            } else {
                // A datagram the kernel will not take now is as good as lost: QUIC sends it
                // again. The kernel may have counted it: its stamps could no longer be told
                // apart, so this socket keeps its clock reads.
                c.send_stamps = None;
            }
            // The queries whose first bytes this datagram carried.
            take_events(c, &self.tell, now, now, key.filter(|_| sent));
        }
        let lost = c.conn.lost_packets();
        if lost > c.told_lost {
            self.tell.tell(DoqEvent::Lost {
                packets: lost - c.told_lost,
            });
            c.told_lost = lost;
        }
        if let Some(why) = c.conn.closed() {
            let (kind, cause) = failure(why);
            for f in c.in_flight.drain(..) {
                self.tell.tell(DoqEvent::Failed {
                    slot: f.slot,
                    gen: f.gen,
                    kind,
                    cause: Cause::Quic(cause),
                });
            }
            self.remove(idx);
            return;
        }
        let next = c
            .in_flight
            .iter()
            .map(|f| f.forget_at)
            .chain(c.conn.next_timeout())
            .min()
            .unwrap_or(i64::MAX);
        // Only an earlier deadline needs a new entry: a later one (an idle timeout pushed
        // back by traffic) waits for the entry already there, which re-arms when it fires.
        // The heap so holds about one entry per connection, not one per packet.
        if next < c.armed {
            c.armed = next;
            self.timers.push(Reverse((next, idx, c.epoch)));
        }
    }

    /// Drops a client's connection and socket (its session store stays with the querier).
    fn remove(&mut self, idx: usize) {
        if let Some(mut c) = self.clients.get_mut(idx).and_then(Option::take) {
            let _ = self.poll.registry().deregister(&mut c.socket);
            self.by_client.remove(&c.key);
            self.free.push(idx);
        }
    }

    /// Closes every connection, telling the servers (DOQ_NO_ERROR, H3_NO_ERROR).
    fn close_all(&mut self) {
        let now = clock::now_ns();
        for c in self.clients.iter_mut().flatten() {
            c.conn
                .close(if c.h3 { h3::NO_ERROR } else { doq::NO_ERROR });
            if c.conn.poll_transmit(now, &mut self.out) {
                let _ = c.socket.send(&self.out);
            }
        }
        self.clients.clear();
        self.by_client.clear();
    }
}

/// Tells the querier what connection `c` has to say: `now` is the clock read, `answer_at` the
/// time of the datagram just handled (its kernel stamp), `sent_key` the kernel's key of the
/// datagram just sent when its send stamp is awaited (the queries whose first bytes it carried
/// wait for that stamp).
fn take_events(c: &mut ClientConn, tell: &Teller, now: i64, answer_at: i64, sent_key: Option<u32>) {
    while let Some(event) = c.conn.poll_event() {
        match event {
            Event::Connected {
                resumed,
                zero_rtt_accepted,
            } => {
                if c.handshake_ns < 0 {
                    c.handshake_ns = (now - c.started).max(1);
                    tell.tell(DoqEvent::Opened { zero_rtt: false });
                }
                tell.tell(DoqEvent::Handshake {
                    resumed,
                    zero_rtt_accepted,
                });
            }
            Event::Sent { stream } => {
                if let Some(f) = c.in_flight.iter().find(|f| f.stream == stream) {
                    tell.tell(DoqEvent::Sent {
                        slot: f.slot,
                        gen: f.gen,
                        at: now,
                        new_connection: f.opened,
                        handshake_ns: if f.opened { c.handshake_ns.max(0) } else { 0 },
                    });
                    if let (Some(key), Some(s)) = (sent_key, c.send_stamps.as_mut()) {
                        s.expect(key, f.slot, f.gen);
                    }
                }
            }
            Event::Answer { stream, data } => {
                let Some(k) = c.in_flight.iter().position(|f| f.stream == stream) else {
                    continue;
                };
                let f = c.in_flight.swap_remove(k);
                let event = if c.h3 {
                    h3_answer(&f, answer_at, &data)
                } else {
                    match doq::answer(&data) {
                        Some(msg) => DoqEvent::Answer {
                            slot: f.slot,
                            gen: f.gen,
                            at: answer_at,
                            msg: msg.to_vec(),
                        },
                        None => DoqEvent::Failed {
                            slot: f.slot,
                            gen: f.gen,
                            kind: ErrorKind::Quic,
                            cause: Cause::Quic("quic-bad-response"),
                        },
                    }
                };
                tell.tell(event);
            }
            Event::StreamFailed { stream, cause } => {
                if let Some(k) = c.in_flight.iter().position(|f| f.stream == stream) {
                    let f = c.in_flight.swap_remove(k);
                    tell.tell(DoqEvent::Failed {
                        slot: f.slot,
                        gen: f.gen,
                        kind: ErrorKind::Quic,
                        cause: Cause::Quic(cause),
                    });
                }
            }
        }
    }
}

/// The key of a client's connection: its number, and whether it is its HTTP/3 one.
fn conn_key(q: &DoqQuery) -> u64 {
    u64::from(q.client) | u64::from(q.h3.is_some()) << 32
}

/// What a DoH-over-HTTP/3 response stream gave: the DNS message, or why not (as for DoH over
/// HTTP/2: the status, the content type, or how HTTP/3 broke).
fn h3_answer(f: &InFlight, now: i64, stream: &[u8]) -> DoqEvent {
    let (kind, cause) = match h3::response(stream) {
        Ok(msg) => {
            return DoqEvent::Answer {
                slot: f.slot,
                gen: f.gen,
                at: now,
                msg,
            }
        }
        Err(h3::Failure::Status(code)) => (ErrorKind::Http, Cause::HttpStatus(code)),
        Err(h3::Failure::NotDns) => (ErrorKind::Http, Cause::NotDnsContent),
        Err(h3::Failure::Malformed(key)) => (ErrorKind::Http, Cause::Http3(key)),
    };
    DoqEvent::Failed {
        slot: f.slot,
        gen: f.gen,
        kind,
        cause,
    }
}

/// The kind and cause of the queries of a connection that ended.
fn failure(why: Closed) -> (ErrorKind, &'static str) {
    match why {
        // A TLS alert (certificate refused, no common ALPN...) is a TLS failure.
        Closed::Tls => (ErrorKind::Tls, "quic-tls-alert"),
        Closed::TimedOut => (ErrorKind::Quic, "quic-timed-out"),
        Closed::ByPeer { .. } => (ErrorKind::Quic, "quic-closed-by-server"),
        Closed::Violation(why) => (ErrorKind::Quic, why),
        Closed::VersionMismatch => (ErrorKind::Quic, "quic-version-mismatch"),
        Closed::Reset => (ErrorKind::Quic, "quic-reset"),
        Closed::Locally => (ErrorKind::Quic, "quic-closed-by-replay"),
    }
}
