//! TCP and TLS: one connection per original client, reused until idle, queries pipelined and
//! answers matched by ID in any order, RFC 7828 keepalive honoured.
//!
//! Times are taken as for UDP: a query is sent when the system call that hands its last byte to
//! the kernel starts (its TLS record's last byte, for TLS), and answered when the kernel received
//! the segment that completed it (`SO_TIMESTAMPNS`; for a read that took several segments, the
//! last one's). A connection's set-up (TCP handshake, and TLS handshake for TLS) is timed apart:
//! queries wait for it before they are sent, so their latency leaves it out and their first
//! query carries it as `handshake_ns`.
//!
//! This module is the socket side: connects, reads and writes, stamps, idle and keepalive
//! timeouts. Framing, TLS and what an answer is matched by belong to each connection's protocol
//! ([`super::transport`]), which sees bytes only.

use super::send_times::SendTimes;
use super::stream_replies::{self, StreamReply};
use super::transport::{
    DohFraming, MatchKey, StreamProtocol, StreamTransport, TcpFraming, TlsFraming,
};
use super::*;
use crate::cause::{kind_of_io, Cause};
use crate::config::Stack;
use crate::reference::doh::H2Doh;
use crate::reference::tls::RustlsSession;
use rustls_pki_types::ServerName;
use std::os::fd::RawFd;

/// Bytes read from a socket at a time: a TLS record's most, and then some.
const READ_CHUNK: usize = 16 * 1024 + 256;

/// Whether a connection's non-blocking connect has completed.
#[derive(PartialEq, Eq, Clone, Copy)]
pub(super) enum ConnState {
    Connecting,
    Open,
}

/// A client's TCP or TLS connection: its socket, its protocol and the queries in flight on it.
pub(super) struct Conn {
    pub(super) uid: u64,
    pub(super) client: u32,
    pub(super) proto: Proto,
    pub(super) sock: TcpStream,
    /// Framing (and TLS): what the socket reads and writes, without I/O.
    pub(super) protocol: StreamTransport,
    pub(super) state: ConnState,
    /// Queries whose bytes have not all reached the kernel, in the order of their bytes.
    pub(super) unsent: VecDeque<Unsent>,
    /// When the connect started (realtime ns).
    pub(super) opened_ns: i64,
    /// Queries waiting for the kernel's send stamps; `None` without them.
    pub(super) send_times: Option<SendTimes>,
    /// The connection is ready for queries (connected, and for TLS the handshake is over).
    pub(super) ready: bool,
    pub(super) inflight: Vec<u32>,
    pub(super) queries: u64,
    /// A query sent on it timed out: a response with an ID that no query in flight has may be
    /// its late answer, not garbage (under overload, more queries time out than the querier
    /// remembers by ID).
    pub(super) timed_out: bool,
    pub(super) last_active_ns: i64,
    pub(super) idle_ns: i64,
}

/// A query on its way into a connection: its last byte lies at `wire_end` in the stream of
/// bytes on the socket once that is known (at once for TCP; once sealed for TLS).
pub(super) struct Unsent {
    slot: u32,
    gen: u32,
    wire_end: Option<u64>,
}

/// Reads a socket with the kernel's receive times, keeping the last one.
struct StampedRead {
    fd: RawFd,
    at: Option<i64>,
}

impl Read for StampedRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, at) = ldplayer_udp::recv_stream(self.fd, buf)?;
        if at.is_some() {
            self.at = at;
        }
        Ok(n)
    }
}

/// The EDNS TCP keepalive timeout (RFC 7828) of a response, in ns.
pub(super) fn keepalive_ns(msg: &Message<'_>) -> Option<i64> {
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

impl Querier {
    pub(super) fn conn_for(
        &mut self,
        client: u32,
        proto: Proto,
    ) -> Result<(u32, bool), (ErrorKind, Cause)> {
        let Some(c) = self.clients.get(&client) else {
            return Err((ErrorKind::Send, Cause::ClosedLocally));
        };
        let existing = c.conn;
        let local = c.local;
        if existing != NONE {
            if let Some(Some(conn)) = self.conns.get(existing as usize) {
                if conn.proto == proto && !self.spent(conn) {
                    return Ok((existing, false));
                }
            }
            // Another transport for this client, or a connection that carried its share of
            // queries (closed once its last answer is in): open a new connection alongside.
        }
        if self.conns_open >= self.config.max_connections {
            self.close_lru_idle_conn();
        }
        let dest = match proto {
            Proto::Tls => self.config.tls_server.unwrap_or(self.server),
            Proto::Https => self.config.https_server.unwrap_or(self.server),
            _ => self.server,
        };
        let protocol = match proto {
            Proto::Tls | Proto::Https => {
                let Some(base) = self.tls.clone() else {
                    return Err((ErrorKind::Tls, Cause::NoTlsConfig));
                };
                let resume = self.profile_of(client).resume;
                let alpn = || match proto {
                    Proto::Tls => Vec::new(),
                    _ => vec![b"h2".to_vec()],
                };
                let stack = self.profile_of(client).stack;
                let make = |alpn| match stack {
                    Stack::Lean => base.for_client_with(alpn, resume),
                    Stack::Reference => base.for_reference_client_with(alpn, resume),
                };
                let made = match self.clients.get_mut(&client) {
                    Some(c) => {
                        let kept = if proto == Proto::Tls {
                            &mut c.tls
                        } else {
                            &mut c.doh_tls
                        };
                        kept.get_or_insert_with(|| make(alpn())).clone()
                    }
                    None => make(alpn()),
                };
                let name = base.server_name.clone();
                let started = match (proto, stack) {
                    (Proto::Tls, Stack::Lean) => {
                        TlsFraming::new(made, name).map(|t| StreamTransport::Tls(Box::new(t)))
                    }
                    (Proto::Tls, Stack::Reference) => RustlsSession::new(made, name)
                        .map(|s| StreamTransport::ReferenceTls(Box::new(TlsFraming::over(s)))),
                    (_, stack) => {
                        let authority = self.doh_authority(&base, dest);
                        let doh = self.profile_of(client).doh.clone();
                        match stack {
                            Stack::Lean => DohFraming::new(made, name, authority, doh)
                                .map(|d| StreamTransport::Doh(Box::new(d))),
                            Stack::Reference => H2Doh::new(made, name, authority, doh)
                                .map(|d| StreamTransport::ReferenceDoh(Box::new(d))),
                        }
                    }
                };
                match started {
                    Ok(t) => t,
                    Err(e) => return Err((ErrorKind::Tls, Cause::Tls(e))),
                }
            }
            _ => StreamTransport::Tcp(TcpFraming::default()),
        };
        let opened_ns = clock::now_ns();
        let mut sock = match net::tcp_connect(local, &dest) {
            Ok(s) => s,
            Err(e) => return Err((kind_of_io(&e), Cause::Io(e))),
        };
        let send_times = (self.config.kernel_send_times
            && ldplayer_udp::enable_send_timestamps(sock.as_raw_fd(), true).is_ok())
        .then(SendTimes::default);
        let idx = match self.free_conns.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                (self.conns.len() - 1) as u32
            }
        };
        if let Err(e) = self.poll.registry().register(
            &mut sock,
            Token(CONN_BASE + idx as usize),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.free_conns.push(idx);
            return Err((ErrorKind::Send, Cause::Io(e)));
        }
        let uid = self.next_uid;
        self.next_uid += 1;
        self.conns[idx as usize] = Some(Conn {
            uid,
            client,
            proto,
            sock,
            protocol,
            state: ConnState::Connecting,
            unsent: VecDeque::new(),
            opened_ns,
            send_times,
            ready: false,
            inflight: Vec::new(),
            queries: 0,
            timed_out: false,
            last_active_ns: opened_ns,
            idle_ns: self.profile_of(client).idle_ns,
        });
        self.conns_open += 1;
        self.stats.connections_opened += 1;
        if let Some(c) = self.clients.get_mut(&client) {
            c.conn = idx;
        }
        Ok((idx, true))
    }

    /// Whether `conn` carried as many queries as a connection may
    /// ([`ReplayConfig::queries_per_connection`](crate::ReplayConfig)): it takes no more, and
    /// is closed once its queries in flight are answered.
    pub(super) fn spent(&self, conn: &Conn) -> bool {
        self.config
            .queries_per_connection
            .is_some_and(|n| conn.queries >= n)
    }

    /// The `:authority` of DoH requests: the TLS server name when it is a DNS name, else the
    /// address connected to.
    pub(super) fn doh_authority(&self, base: &TlsBase, dest: SocketAddr) -> Arc<str> {
        match &base.server_name {
            ServerName::DnsName(name) if dest.port() == 443 => name.as_ref().into(),
            ServerName::DnsName(name) => format!("{}:{}", name.as_ref(), dest.port()).into(),
            _ => dest.to_string().into(),
        }
    }

    pub(super) fn close_lru_idle_conn(&mut self) {
        let mut best: Option<(i64, u32)> = None;
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && best.is_none_or(|(t, _)| c.last_active_ns < t) {
                    best = Some((c.last_active_ns, i as u32));
                }
            }
        }
        if let Some((_, i)) = best {
            self.close_conn(i, ErrorKind::Reset, Cause::ClosedLocally);
        }
    }

    pub(super) fn send_stream(&mut self, slot: u32, proto: Proto) {
        let client = self.slots[slot as usize].client;
        self.slots[slot as usize].proto = proto;
        let (ci, new) = match self.conn_for(client, proto) {
            Ok(x) => x,
            Err((kind, cause)) => {
                self.fail(slot, kind, &cause);
                return;
            }
        };
        let Some(Some(conn)) = self.conns.get(ci as usize) else {
            self.fail(slot, ErrorKind::Send, &Cause::ClosedLocally);
            return;
        };
        let uid = conn.uid;
        let first = conn.queries == 0;
        let by_id = conn.protocol.matches_by_id();
        if by_id && !self.claim_id(slot, uid) {
            self.fail(slot, ErrorKind::Send, &Cause::IdsExhausted);
            return;
        }
        let s = &mut self.slots[slot as usize];
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        let queued = match conn.protocol.queue_query(&s.wire) {
            Ok(q) => q,
            Err(e) => {
                if by_id {
                    // Its ID is released with it.
                    s.via = Via::Stream {
                        conn: ci,
                        uid,
                        key: MatchKey::Id(s.id),
                    };
                }
                self.fail(slot, e.kind(), &e.into_cause());
                return;
            }
        };
        if let MatchKey::Stream(stream) = queued.key {
            self.claim_stream(slot, uid, stream);
        }
        if !new {
            self.stats.connections_reused += 1;
        }
        let now = clock::now_ns();
        let s = &mut self.slots[slot as usize];
        s.via = Via::Stream {
            conn: ci,
            uid,
            key: queued.key,
        };
        s.new_connection = first;
        if let Some(Some(conn)) = self.conns.get_mut(ci as usize) {
            conn.queries += 1;
            conn.last_active_ns = now;
            conn.unsent.push_back(Unsent {
                slot,
                gen: s.gen,
                wire_end: queued.wire_end,
            });
            conn.inflight.push(slot);
        }
        let deadline = self.deadline_of(slot, now);
        self.push_timeout(slot, deadline);
        if self.batching {
            self.stream_out.push(ci);
        } else {
            self.conn_flush(ci);
        }
    }

    /// Writes the connections that queries were queued on while sends were batched.
    pub(super) fn flush_streams(&mut self) {
        let mut out = std::mem::take(&mut self.stream_out);
        out.sort_unstable();
        out.dedup();
        for &ci in &out {
            self.conn_flush(ci);
        }
        out.clear();
        self.stream_out = out;
    }

    /// Writes what can be written; marks queries sent once their bytes are with the kernel.
    pub(super) fn conn_flush(&mut self, ci: u32) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state != ConnState::Open {
            return;
        }
        let mut failure = None;
        let unsent = &mut conn.unsent;
        let sealing = conn.protocol.seal(&mut |end| {
            if let Some(u) = unsent.iter_mut().find(|u| u.wire_end.is_none()) {
                u.wire_end = Some(end);
            }
        });
        if let Err(e) = sealing {
            failure = Some((e.kind(), e.into_cause()));
        }
        while failure.is_none() {
            let out = conn.protocol.output();
            if out.is_empty() {
                break;
            }
            // The time the system call that hands a query's last byte to the kernel starts.
            let at = clock::now_ns();
            match conn.sock.write(out) {
                Ok(0) => break,
                Ok(n) => {
                    conn.protocol.consume_output(n);
                    self.first_sends += mark_sent(
                        &mut self.slots,
                        &mut conn.unsent,
                        conn.send_times.as_mut(),
                        conn.protocol.written_total(),
                        at,
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failure = Some((kind_of_io(&e), Cause::Io(e))),
            }
        }
        if conn.unsent.is_empty() && conn.unsent.capacity() > 0 {
            conn.unsent = VecDeque::new();
        }
        if let Some((kind, cause)) = failure {
            self.close_conn(ci, kind, cause);
        } else {
            self.conn_exchange_failures(ci);
        }
    }

    /// Fails the queries whose exchange failed on its own (DoH: an HTTP status, a reset
    /// stream), and closes the connection when its protocol cannot go on.
    fn conn_exchange_failures(&mut self, ci: u32) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        let uid = conn.uid;
        let mut failed = Vec::new();
        conn.protocol
            .take_failures(&mut |key, cause| failed.push((key, cause)));
        let fatal = conn.protocol.fatal();
        for (key, cause) in failed {
            let slot = match key {
                MatchKey::Stream(stream) => self.streams.get(&(uid, stream)).copied(),
                MatchKey::Id(id) => self.ids.get(&super::inflight::key(uid, id)).copied(),
            };
            if let Some(slot) = slot {
                self.fail(slot, ErrorKind::Http, &cause);
            }
        }
        if let Some(cause) = fatal {
            self.close_conn(ci, ErrorKind::Http, cause);
        }
    }

    /// Once a connection is ready for queries (connected, and its protocol's handshake over),
    /// times its set-up on the query that opened it.
    fn conn_ready(&mut self, ci: u32, at: i64) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.ready {
            return;
        }
        conn.ready = true;
        let took = (at - conn.opened_ns).max(0);
        for &s in &conn.inflight {
            let slot = &mut self.slots[s as usize];
            if slot.new_connection {
                slot.handshake_ns = took;
            }
        }
    }

    /// Reads the kernel's send stamps queued on connection `ci` into its queries; returns how
    /// many there were.
    fn conn_send_stamps(&mut self, ci: u32) -> usize {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return 0;
        };
        self.stamps.clear();
        let n =
            ldplayer_udp::read_send_stamps(conn.sock.as_raw_fd(), &mut self.stamps).unwrap_or(0);
        if let Some(t) = conn.send_times.as_mut() {
            for st in &self.stamps {
                t.stamp(&mut self.slots, st.key, st.ns);
            }
        }
        n
    }

    pub(super) fn conn_event(&mut self, ci: u32, readable: bool, writable: bool, error: bool) {
        // An error event is most often the kernel's send stamps; when there were none, it is
        // the socket's error, which a read or the connect check reports.
        let failed = error && self.conn_send_stamps(ci) == 0;
        if error && !failed && !readable && !writable {
            return;
        }
        let (readable, writable) = (readable || failed, writable || failed);
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state == ConnState::Connecting {
            if let Ok(Some(e)) | Err(e) = conn.sock.take_error() {
                let kind = match kind_of_io(&e) {
                    ErrorKind::Refused => ErrorKind::Refused,
                    _ => ErrorKind::Reset,
                };
                self.close_conn(ci, kind, Cause::Io(e));
                return;
            }
            match conn.sock.peer_addr() {
                Ok(_) => {
                    conn.state = ConnState::Open;
                    if !conn.protocol.is_handshaking() {
                        self.conn_ready(ci, clock::now_ns());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                    if readable {
                        // Readable but not connected: the connect failed.
                        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
                        self.close_conn(ci, ErrorKind::Refused, Cause::Io(refused));
                    }
                    return;
                }
                Err(e) => {
                    self.close_conn(ci, ErrorKind::Refused, Cause::Io(e));
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

    pub(super) fn conn_read(&mut self, ci: u32) {
        let honor = self.config.honor_keepalive;
        let mut chunk = [0u8; READ_CHUNK];
        let mut failure = None;
        let mut eof = false;
        loop {
            let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
                return;
            };
            let mut sock = StampedRead {
                fd: conn.sock.as_raw_fd(),
                at: None,
            };
            let n = match sock.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // A connection that fails in its handshake fails the handshake.
                    let kind = if conn.protocol.is_handshaking() {
                        ErrorKind::Tls
                    } else {
                        kind_of_io(&e)
                    };
                    failure = Some((kind, Cause::Io(e)));
                    break;
                }
            };
            // Answers of each read take that read's time.
            let at = sock.at.unwrap_or_else(clock::now_ns);
            match self.conn_received(ci, &mut chunk[..n], honor, at) {
                Ok(false) => {}
                Ok(true) => {
                    eof = true;
                    break;
                }
                Err(f) => {
                    failure = Some(f);
                    break;
                }
            }
        }
        if let Some((kind, cause)) = failure {
            self.close_conn(ci, kind, cause);
        } else if eof {
            let handshaking =
                matches!(self.conns.get(ci as usize), Some(Some(c)) if c.protocol.is_handshaking());
            if handshaking {
                self.close_conn(ci, ErrorKind::Tls, Cause::ClosedInHandshake);
            } else {
                self.close_conn(ci, ErrorKind::Reset, Cause::PeerClosed);
            }
        }
    }

    /// Hands bytes read from connection `ci` at `at` to its protocol and completes the queries
    /// they answer; returns whether the peer closed the session.
    fn conn_received(
        &mut self,
        ci: u32,
        bytes: &mut [u8],
        honor: bool,
        at: i64,
    ) -> Result<bool, (ErrorKind, Cause)> {
        // The protocol is taken out while its messages complete queries (which need the whole
        // querier); an empty TCP framing, which allocates nothing, stands in.
        let (uid, handshaking, timed_out, mut protocol) = match self.conns.get_mut(ci as usize) {
            Some(Some(c)) => (
                c.uid,
                c.protocol.is_handshaking(),
                c.timed_out,
                std::mem::take(&mut c.protocol),
            ),
            _ => return Ok(false),
        };
        let by_id = protocol.matches_by_id();
        let mut keepalive = None;
        let mut unmatched = 0;
        let mut garbage = None;
        let received = protocol.received(bytes, &mut |key, msg| {
            if handshaking {
                // An answer: the handshake is over.
                self.conn_ready(ci, at);
            }
            if garbage.is_some() {
                // The connection is done for: what follows is not read.
                return;
            }
            let slot = match self.stream_reply(uid, by_id, timed_out, key, msg) {
                StreamReply::Answer(slot) => slot,
                StreamReply::Ignored => {
                    unmatched += 1;
                    return;
                }
                StreamReply::Garbage(what) => {
                    unmatched += 1;
                    garbage = Some(what);
                    return;
                }
            };
            if honor {
                if let Ok(m) = Message::parse(msg) {
                    keepalive = keepalive_ns(&m).or(keepalive);
                }
            }
            self.complete(slot, Outcome::Answered, Some((msg, at)));
        });
        self.stats.unmatched_responses += unmatched;
        if let Ok(r) = &received {
            self.stats.unmatched_responses += r.malformed;
            if garbage.is_none() && r.malformed > 0 {
                garbage = Some(stream_replies::short_frame(None));
            }
            if garbage.is_none() {
                garbage = self.pending_garbage(uid, timed_out, &protocol);
            }
        }
        let Some(Some(c)) = self.conns.get_mut(ci as usize) else {
            return Ok(false);
        };
        c.protocol = protocol;
        c.last_active_ns = at;
        if let Some(k) = keepalive {
            c.idle_ns = k;
        }
        match (received, garbage) {
            (Ok(_), Some(what)) => Err((ErrorKind::BadResponse, Cause::StreamGarbage(what))),
            (Ok(r), None) => {
                if handshaking && !c.protocol.is_handshaking() {
                    self.conn_ready(ci, at);
                }
                self.conn_exchange_failures(ci);
                Ok(r.peer_closed)
            }
            (Err(e), _) => {
                // Send the alert, if any, then give up.
                write_out(&mut c.sock, &mut c.protocol);
                Err((e.kind(), e.into_cause()))
            }
        }
    }

    /// Closes a connection; its queries in flight fail with `kind`, for `cause`.
    pub(super) fn close_conn(&mut self, ci: u32, kind: ErrorKind, cause: Cause) {
        let Some(Some(mut conn)) = self.conns.get_mut(ci as usize).map(Option::take) else {
            return;
        };
        if conn.protocol.resumed() {
            self.stats.tls_resumed += 1;
        }
        conn.protocol.close();
        write_out(&mut conn.sock, &mut conn.protocol);
        let _ = self.poll.registry().deregister(&mut conn.sock);
        self.conns_open -= 1;
        self.free_conns.push(ci);
        if let Some(c) = self.clients.get_mut(&conn.client) {
            if c.conn == ci {
                c.conn = NONE;
            }
        }
        let inflight = std::mem::take(&mut conn.inflight);
        if !inflight.is_empty() {
            self.note_cause(kind, &cause, inflight.len() as u64);
        }
        for slot in inflight {
            // Keep the connection's number out of the way of complete().
            if let Via::Stream { uid, key, .. } = self.slots[slot as usize].via {
                self.slots[slot as usize].via = Via::Stream {
                    conn: NONE,
                    uid,
                    key,
                };
            }
            self.complete(slot, Outcome::Error(kind), None);
        }
    }
}

/// Writes what the protocol has for the socket as far as the socket takes it now: the last
/// words (a TLS alert or close_notify) before a connection is closed.
fn write_out(sock: &mut TcpStream, protocol: &mut StreamTransport) {
    while !protocol.output().is_empty() {
        match sock.write(protocol.output()) {
            Ok(0) => break,
            Ok(n) => protocol.consume_output(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Marks the queries whose bytes all reached the kernel (up to `on_wire` of the socket's byte
/// stream) as sent at `at`, hands them to `kernel` to wait for their stamps, forgets them, and
/// returns how many were sent for the first time.
fn mark_sent(
    slots: &mut [Slot],
    unsent: &mut VecDeque<Unsent>,
    mut kernel: Option<&mut SendTimes>,
    on_wire: u64,
    at: i64,
) -> u64 {
    let mut first = 0;
    while let Some(u) = unsent.front() {
        match u.wire_end {
            Some(end) if end <= on_wire => {}
            _ => break,
        }
        let slot = &mut slots[u.slot as usize];
        if slot.live && slot.gen == u.gen && slot.sent_ns == 0 {
            slot.sent_ns = at;
            first += 1;
            if let (Some(k), Some(end)) = (kernel.as_deref_mut(), u.wire_end) {
                k.expect(u.slot, u.gen, end);
            }
        }
        unsent.pop_front();
    }
    first
}
