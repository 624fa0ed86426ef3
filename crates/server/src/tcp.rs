//! The TCP thread: one mio (epoll, edge-triggered) loop that accepts on every listener and serves
//! RFC 1035 §4.2.2 length-framed messages, several per connection (RFC 7766 pipelining; answers
//! go out in query order). On a TLS listener (RFC 7858) the same loop drives a sans-IO
//! `rustls::ServerConnection` per connection: socket bytes go in with `read_tls` and
//! `process_new_packets`, queries come out of its `reader()`, answers go into its `writer()` and
//! the records out with `write_tls`, so the framing, views, idle timeout and back-pressure are
//! the plain TCP ones. Every accepted socket has `TCP_NODELAY`: an answer (with its TLS record,
//! and after the session tickets of a fresh TLS 1.3 connection) leaves at once rather than
//! waiting under Nagle for the client's delayed ACK.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldplayer_zone::{AnswerOptions, Views, ZoneSet};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::net::IpAddr;

use rustls::ServerConnection;

use crate::stats::{bump, Counters, Transport};
use crate::POLL_INTERVAL;

/// Bytes asked of the kernel per read.
const READ_CHUNK: usize = 16 * 1024;
/// No more queries of a connection are answered (or read) while this much of its output waits.
const OUT_LIMIT: usize = 128 * 1024;
/// Messages answered per connection before the others get a turn.
const FRAME_BUDGET: usize = 64;
/// Connections accepted per listener before the others get a turn.
const ACCEPT_BUDGET: usize = 256;
/// Smallest acceptable length prefix: a DNS header.
const MIN_MESSAGE: usize = 12;

/// Settings of the TCP thread.
pub(crate) struct TcpSettings {
    pub idle_timeout: Duration,
    pub max_connections: usize,
    pub opts: AnswerOptions,
}

/// Queries to an address in no view are answered from no zones: REFUSED.
static NOTHING: std::sync::LazyLock<ZoneSet> = std::sync::LazyLock::new(ZoneSet::new);

/// A listening socket, and the TLS configuration of its connections when it serves TLS.
pub(crate) struct Listener {
    pub sock: TcpListener,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// The TLS state of a connection on a TLS listener.
struct Tls {
    session: Box<ServerConnection>,
    /// The handshake has been counted as complete.
    established: bool,
}

/// What one read of the connection's input gave.
enum Got {
    /// Bytes of DNS messages (plaintext for TLS).
    Bytes(usize),
    /// The peer closed its side (a TLS close_notify, or the TCP end).
    Eof,
    /// Nothing more for now.
    Nothing,
    /// TLS records were taken in but gave no plaintext (a handshake): their answer may be
    /// waiting to be written.
    Records,
    /// The read was interrupted: try again.
    Again,
    /// A socket error: close.
    Failed,
    /// A TLS protocol error (already counted): close after sending the alert.
    TlsFailed,
}

struct Conn {
    stream: TcpStream,
    /// Set on TLS listeners.
    tls: Option<Tls>,
    /// The address the client connected to (`getsockname`), which picks the view.
    dest: Option<IpAddr>,
    /// Received bytes; `rbuf[rpos..]` is not answered yet.
    rbuf: Vec<u8>,
    rpos: usize,
    /// Framed responses; `wbuf[wpos..]` is not written yet.
    wbuf: Vec<u8>,
    wpos: usize,
    /// Last time bytes moved either way (or the accept).
    last: Instant,
    /// The peer has closed its side.
    eof: bool,
    /// A malformed length prefix was read: nothing more is read or answered, and the connection
    /// closes once the answers before it are written.
    bad: bool,
}

enum Status {
    /// Waiting for readiness.
    Idle,
    /// Work is left (budget used up): serve again next turn without waiting.
    Again,
    /// Close the connection (the reason is already counted).
    Close,
}

impl Conn {
    fn pending_out(&self) -> usize {
        self.wbuf.len() - self.wpos
    }

    /// Every answer (and, for TLS, every record) has been handed to the kernel.
    fn flushed(&self) -> bool {
        self.pending_out() == 0 && self.tls.as_ref().is_none_or(|t| !t.session.wants_write())
    }

    fn transport(&self) -> Transport {
        if self.tls.is_some() {
            Transport::Tls
        } else {
            Transport::Tcp
        }
    }

    /// Reads what the peer sent into `buf`: the socket's bytes for TCP; for TLS, the plaintext
    /// rustls has decrypted, feeding it socket bytes until it has some or the socket is drained.
    /// Socket bytes that carry no plaintext yet (a handshake) are activity too.
    fn read_in(&mut self, buf: &mut [u8], counters: &Counters, now: Instant) -> Got {
        let Some(tls) = &mut self.tls else {
            return match self.stream.read(buf) {
                Ok(0) => Got::Eof,
                Ok(n) => Got::Bytes(n),
                Err(e) => io_got(&e),
            };
        };
        let mut fed = false;
        loop {
            match tls.session.reader().read(buf) {
                Ok(0) => return Got::Eof,
                Ok(n) => return Got::Bytes(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // The TCP end came without a close_notify: an end all the same.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Got::Eof,
                Err(_) => return Got::Failed,
            }
            match tls.session.read_tls(&mut self.stream) {
                Ok(0) => return Got::Eof,
                Ok(_) => {
                    self.last = now;
                    fed = true;
                }
                Err(e) => {
                    return match io_got(&e) {
                        Got::Nothing if fed => Got::Records,
                        got => got,
                    }
                }
            }
            if tls.session.process_new_packets().is_err() {
                bump(&counters.tls_errors);
                return Got::TlsFailed;
            }
            if !tls.established && !tls.session.is_handshaking() {
                tls.established = true;
                bump(&counters.tls_handshakes);
                if tls.session.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
                    bump(&counters.tls_resumed);
                }
            }
        }
    }

    /// Hands pending answers to the kernel as far as it takes them; for TLS, encrypts them (each
    /// write of `wbuf` becomes whole records) behind any handshake or ticket messages, and
    /// writes all queued records with one `writev`. Returns whether anything moved, or `None`
    /// when the connection must close.
    fn write_out(&mut self, now: Instant) -> Option<bool> {
        let mut progress = false;
        loop {
            let wrote = match &mut self.tls {
                None if self.wpos < self.wbuf.len() => self.stream.write(&self.wbuf[self.wpos..]),
                None => break,
                Some(tls) if tls.session.wants_write() => tls.session.write_tls(&mut self.stream),
                Some(tls) if self.wpos < self.wbuf.len() => {
                    match tls.session.writer().write(&self.wbuf[self.wpos..]) {
                        // rustls holds no more until its records are written.
                        Ok(0) => break,
                        Ok(n) => {
                            self.wpos += n;
                            continue;
                        }
                        Err(_) => return None,
                    }
                }
                Some(_) => break,
            };
            match wrote {
                Ok(0) => return None,
                Ok(n) => {
                    if self.tls.is_none() {
                        self.wpos += n;
                    }
                    self.last = now;
                    progress = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        } else if self.wpos >= OUT_LIMIT {
            self.wbuf.drain(..self.wpos);
            self.wpos = 0;
        }
        Some(progress)
    }

    /// Says goodbye before the socket closes, best effort: a TLS close_notify (or the alert of
    /// a TLS error) in one non-blocking write.
    fn goodbye(&mut self) {
        if let Some(tls) = &mut self.tls {
            // A close_notify ends an established session; in the middle of a handshake, the
            // socket just closes.
            if tls.established {
                tls.session.send_close_notify();
            }
            for _ in 0..4 {
                if !tls.session.wants_write() {
                    break;
                }
                if tls.session.write_tls(&mut self.stream).is_err() {
                    break;
                }
            }
        }
    }

    /// Answers, writes and reads as far as possible without blocking.
    fn serve(
        &mut self,
        views: &Views,
        opts: &AnswerOptions,
        counters: &Counters,
        resp: &mut Vec<u8>,
        now: Instant,
    ) -> Status {
        let mut budget = FRAME_BUDGET;
        let transport = self.transport();
        loop {
            let mut progress = false;
            // Answer complete messages, in order.
            while !self.bad && self.pending_out() < OUT_LIMIT {
                let avail = &self.rbuf[self.rpos..];
                if avail.len() < 2 {
                    break;
                }
                let len = u16::from_be_bytes([avail[0], avail[1]]) as usize;
                if len < MIN_MESSAGE {
                    bump(&counters.tcp_malformed);
                    self.bad = true;
                    break;
                }
                let Some(query) = avail.get(2..2 + len) else {
                    break;
                };
                if budget == 0 {
                    break;
                }
                budget -= 1;
                counters.query(len, transport);
                let zones = match views.for_destination(self.dest) {
                    Some(z) => z,
                    None => {
                        bump(&counters.no_view);
                        &NOTHING
                    }
                };
                match zones.answer_into(query, opts, resp) {
                    Some(outcome) => {
                        counters.response(&outcome, resp.len(), transport);
                        // Responses are at most 65535 bytes with `tcp` set; anything longer
                        // cannot be framed and is dropped.
                        match u16::try_from(resp.len()) {
                            Ok(n) => {
                                self.wbuf.extend_from_slice(&n.to_be_bytes());
                                self.wbuf.extend_from_slice(resp);
                            }
                            Err(_) => bump(&counters.dropped),
                        }
                    }
                    None => bump(&counters.dropped),
                }
                self.rpos += 2 + len;
                progress = true;
            }
            if self.rpos > 0 {
                self.rbuf.drain(..self.rpos);
                self.rpos = 0;
            }
            // Write what is pending.
            match self.write_out(now) {
                Some(wrote) => progress |= wrote,
                None => return Status::Close,
            }
            if budget == 0 && self.has_frame() {
                // With the output backed up, the writable event resumes this instead.
                if self.pending_out() < OUT_LIMIT {
                    return Status::Again;
                }
                return Status::Idle;
            }
            // Read more unless the output is backed up (the peer does not read) or a complete
            // message is already waiting; this bounds the input buffer to one message plus a
            // chunk.
            if !self.eof && !self.bad && self.pending_out() < OUT_LIMIT && !self.has_frame() {
                let start = self.rbuf.len();
                self.rbuf.resize(start + READ_CHUNK, 0);
                let mut chunk = std::mem::take(&mut self.rbuf);
                let got = self.read_in(&mut chunk[start..], counters, now);
                self.rbuf = chunk;
                let n = match got {
                    Got::Bytes(n) => n,
                    _ => 0,
                };
                self.rbuf.truncate(start + n);
                match got {
                    Got::Eof => {
                        self.eof = true;
                        progress = true;
                    }
                    Got::Bytes(_) => {
                        self.last = now;
                        progress = true;
                    }
                    Got::Nothing => {}
                    Got::Records | Got::Again => progress = true,
                    Got::Failed => return Status::Close,
                    Got::TlsFailed => {
                        // Send the alert rustls queued, best effort.
                        let _ = self.write_out(now);
                        return Status::Close;
                    }
                }
            }
            if !progress {
                break;
            }
        }
        if self.bad && self.flushed() {
            return Status::Close;
        }
        if self.eof && self.flushed() && !self.has_frame() {
            if self.rbuf.len() > self.rpos {
                // The peer closed in the middle of a message.
                bump(&counters.tcp_malformed);
            }
            return Status::Close;
        }
        Status::Idle
    }

    /// A complete message (or an invalid length prefix) is waiting in the input.
    fn has_frame(&self) -> bool {
        if self.bad {
            return false;
        }
        let avail = &self.rbuf[self.rpos..];
        if avail.len() < 2 {
            return false;
        }
        let len = u16::from_be_bytes([avail[0], avail[1]]) as usize;
        len < MIN_MESSAGE || avail.len() >= 2 + len
    }
}

/// What a failed socket read means for the connection.
fn io_got(e: &io::Error) -> Got {
    match e.kind() {
        io::ErrorKind::WouldBlock => Got::Nothing,
        io::ErrorKind::Interrupted => Got::Again,
        _ => Got::Failed,
    }
}

/// The connection table: slot `i` has token `base + i`.
struct Table {
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    live: usize,
}

impl Table {
    fn close(&mut self, poll: &Poll, slot: usize) {
        if let Some(mut c) = self.conns.get_mut(slot).and_then(Option::take) {
            c.goodbye();
            let _ = poll.registry().deregister(&mut c.stream);
            self.free.push(slot);
            self.live -= 1;
        }
    }

    /// The slot of the connection with the oldest activity.
    fn oldest(&self) -> Option<usize> {
        self.conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.as_ref().map(|c| (i, c.last)))
            .min_by_key(|&(_, t)| t)
            .map(|(i, _)| i)
    }

    fn insert(&mut self, conn: Conn) -> usize {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.conns[i] = Some(conn);
                i
            }
            None => {
                self.conns.push(Some(conn));
                self.conns.len() - 1
            }
        }
    }
}

/// The TCP loop: runs until `stop` is set.
pub(crate) fn run(
    mut poll: Poll,
    mut listeners: Vec<Listener>,
    views: Arc<Views>,
    settings: TcpSettings,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let opts = AnswerOptions {
        tcp: true,
        ..settings.opts
    };
    let base = listeners.len();
    let mut events = Events::with_capacity(256);
    let mut table = Table {
        conns: Vec::new(),
        free: Vec::new(),
        live: 0,
    };
    let mut resp = Vec::with_capacity(4096);
    // Listeners with connections possibly left to accept.
    let mut accept_more = vec![false; base];
    // An accept failed (e.g. EMFILE): retry every listener at the next wake-up.
    let mut accept_retry = false;
    let mut again: Vec<usize> = Vec::new();
    let mut todo: Vec<usize> = Vec::new();
    let mut last_sweep = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let busy = !again.is_empty() || accept_more.iter().any(|&b| b);
        let timeout = if busy { Duration::ZERO } else { POLL_INTERVAL };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                std::thread::sleep(POLL_INTERVAL / 10);
            }
            continue;
        }
        let now = Instant::now();
        todo.clear();
        todo.append(&mut again);
        for ev in events.iter() {
            let t = ev.token().0;
            if t < base {
                accept_more[t] = true;
            } else {
                todo.push(t - base);
            }
        }
        if accept_retry {
            accept_retry = false;
            accept_more.iter_mut().for_each(|b| *b = true);
        }
        // Accept.
        for (li, listener) in listeners.iter_mut().enumerate() {
            if !accept_more[li] {
                continue;
            }
            accept_more[li] = false;
            for n in 0.. {
                if n == ACCEPT_BUDGET {
                    accept_more[li] = true;
                    break;
                }
                let mut stream = match listener.sock.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                    Err(_) => {
                        accept_retry = true;
                        break;
                    }
                };
                bump(&counters.tcp_accepted);
                let tls = match &listener.tls {
                    None => None,
                    Some(config) => {
                        bump(&counters.tls_accepted);
                        match ServerConnection::new(config.clone()) {
                            Ok(session) => Some(Tls {
                                session: Box::new(session),
                                established: false,
                            }),
                            Err(_) => {
                                bump(&counters.tls_errors);
                                continue;
                            }
                        }
                    }
                };
                if table.live >= settings.max_connections {
                    match table.oldest() {
                        Some(old) => {
                            table.close(&poll, old);
                            bump(&counters.tcp_evicted);
                        }
                        None => {
                            // A cap of zero: refuse everything.
                            bump(&counters.tcp_evicted);
                            continue;
                        }
                    }
                }
                let _ = stream.set_nodelay(true);
                let slot = table.free.last().copied().unwrap_or(table.conns.len());
                if poll
                    .registry()
                    .register(
                        &mut stream,
                        Token(base + slot),
                        Interest::READABLE | Interest::WRITABLE,
                    )
                    .is_err()
                {
                    continue;
                }
                let dest = stream.local_addr().ok().map(|a| a.ip());
                let slot = table.insert(Conn {
                    stream,
                    tls,
                    dest,
                    rbuf: Vec::with_capacity(READ_CHUNK),
                    rpos: 0,
                    wbuf: Vec::new(),
                    wpos: 0,
                    last: now,
                    eof: false,
                    bad: false,
                });
                counters.tcp_open(table.live);
                todo.push(slot);
            }
        }
        // Serve.
        for &slot in &todo {
            let Some(Some(conn)) = table.conns.get_mut(slot) else {
                continue;
            };
            match conn.serve(&views, &opts, &counters, &mut resp, now) {
                Status::Idle => {}
                Status::Again => {
                    if !again.contains(&slot) {
                        again.push(slot);
                    }
                }
                Status::Close => {
                    table.close(&poll, slot);
                    again.retain(|&s| s != slot);
                }
            }
        }
        // Close idle connections.
        if now.duration_since(last_sweep) >= POLL_INTERVAL {
            last_sweep = now;
            for slot in 0..table.conns.len() {
                let idle = matches!(&table.conns[slot],
                    Some(c) if now.duration_since(c.last) >= settings.idle_timeout);
                if idle {
                    table.close(&poll, slot);
                    again.retain(|&s| s != slot);
                    bump(&counters.tcp_idle_closed);
                }
            }
        }
        counters.tcp_open(table.live);
    }
}
