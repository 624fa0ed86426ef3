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
//! This module is the socket side ([`StreamSessions`], one of the querier's
//! [`Transport`]s): connects, reads and writes, stamps, idle and keepalive timeouts. Framing,
//! TLS and what an answer is matched by belong to each connection's protocol
//! ([`super::transport`]), which sees bytes only.

use super::inflight::Via;
use super::send_times::SendTimes;
use super::session::{Ctx, Readiness, Transport, TOKEN_SPAN};
use super::stream_conn::{
    doh_authority, mark_sent, write_out, Conn, ConnState, StampedRead, Unsent, READ_CHUNK,
};
use super::stream_replies::{self, StreamReply};
use super::transport::{DohFraming, MatchKey, StreamTransport, TcpFraming, TlsFraming};
use super::NONE;
use crate::cause::{kind_of_io, Cause};
use crate::clock;
use crate::config::Stack;
use crate::net;
use crate::reference::doh::H2Doh;
use crate::reference::tls::RustlsSession;
use crate::tls::TlsBase;
use ldplayer_dns::Message;
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_trace::Proto;
use mio::{Interest, Token};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// The TCP, TLS and DoH connections of one querier's clients.
pub(super) struct StreamSessions {
    /// The first of this transport's poll tokens (connection `i` is `token_base + i`).
    token_base: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<u32>,
    open: usize,
    /// Connections with queries queued since the last [`Transport::flush`], each written once
    /// then: one system call (and for TLS one flush) for the queries due together. Writing
    /// after every query cost half of the CPU in the kernel with `--fast` over DoH.
    out: Vec<u32>,
    /// Kernel send stamps read off a socket's error queue.
    stamps: Vec<ldplayer_udp::SendStamp>,
    /// The replay's TLS settings, for DoT and DoH.
    tls: Option<Arc<TlsBase>>,
}

impl StreamSessions {
    /// No connections yet; their tokens start at `token_base`.
    pub(super) fn new(token_base: usize, tls: Option<Arc<TlsBase>>) -> StreamSessions {
        StreamSessions {
            token_base,
            conns: Vec::new(),
            free: Vec::new(),
            open: 0,
            out: Vec::new(),
            stamps: Vec::new(),
            tls,
        }
    }

    /// Forgets a query that ended (it was at `via`) from its connection's list.
    fn forget(&mut self, slot: u32, via: Via) {
        if let Via::Stream { conn, .. } = via {
            if let Some(Some(c)) = self.conns.get_mut(conn as usize) {
                if let Some(p) = c.inflight.iter().position(|&x| x == slot) {
                    c.inflight.swap_remove(p);
                }
            }
        }
    }

    /// Ends a query of a connection as failed with `kind`, for `cause`.
    fn fail(&mut self, slot: u32, kind: ErrorKind, cause: &Cause, ctx: &mut Ctx<'_>) {
        let via = ctx.inflight.fail(slot, kind, cause, ctx.sink);
        self.forget(slot, via);
    }

    fn conn_for(
        &mut self,
        client: u32,
        proto: Proto,
        ctx: &mut Ctx<'_>,
    ) -> Result<(u32, bool), (ErrorKind, Cause)> {
        let Some(c) = ctx.clients.get(client) else {
            return Err((ErrorKind::Send, Cause::ClosedLocally));
        };
        let existing = c.conn;
        let local = c.local;
        if existing != NONE {
            if let Some(Some(conn)) = self.conns.get(existing as usize) {
                if conn.proto == proto && !spent(conn, ctx) {
                    return Ok((existing, false));
                }
            }
            // Another transport for this client, or a connection that carried its share of
            // queries (closed once its last answer is in): open a new connection alongside.
        }
        if self.open >= ctx.config.max_connections {
            self.close_lru_idle_conn(ctx);
        }
        let server = ctx.config.server;
        let dest = match proto {
            Proto::Tls => ctx.config.tls_server.unwrap_or(server),
            Proto::Https => ctx.config.https_server.unwrap_or(server),
            _ => server,
        };
        let protocol = match proto {
            Proto::Tls | Proto::Https => {
                let Some(base) = self.tls.clone() else {
                    return Err((ErrorKind::Tls, Cause::NoTlsConfig));
                };
                let profile = ctx.clients.profile_of(client);
                let (resume, stack, doh) = (profile.resume, profile.stack, profile.doh.clone());
                let alpn = || match proto {
                    Proto::Tls => Vec::new(),
                    _ => vec![b"h2".to_vec()],
                };
                let make = |alpn| match stack {
                    Stack::Lean => base.for_client_with(alpn, resume),
                    Stack::Reference => base.for_reference_client_with(alpn, resume),
                };
                let made = match ctx.clients.get_mut(client) {
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
                        let authority = doh_authority(&base, dest);
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
        let send_times = (ctx.config.kernel_send_times
            && ldplayer_udp::enable_send_timestamps(sock.as_raw_fd(), true).is_ok())
        .then(SendTimes::default);
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                (self.conns.len() - 1) as u32
            }
        };
        if let Err(e) = ctx.registry.register(
            &mut sock,
            Token(self.token_base + idx as usize),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            self.free.push(idx);
            return Err((ErrorKind::Send, Cause::Io(e)));
        }
        let uid = ctx.inflight.new_uid();
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
            idle_ns: ctx.clients.profile_of(client).idle_ns,
        });
        self.open += 1;
        ctx.sink.stats.connections_opened += 1;
        if let Some(c) = ctx.clients.get_mut(client) {
            c.conn = idx;
        }
        Ok((idx, true))
    }

    fn close_lru_idle_conn(&mut self, ctx: &mut Ctx<'_>) {
        let mut best: Option<(i64, u32)> = None;
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && best.is_none_or(|(t, _)| c.last_active_ns < t) {
                    best = Some((c.last_active_ns, i as u32));
                }
            }
        }
        if let Some((_, i)) = best {
            self.close_conn(i, ErrorKind::Reset, Cause::ClosedLocally, ctx);
        }
    }

    /// Writes what can be written; marks queries sent once their bytes are with the kernel.
    fn conn_flush(&mut self, ci: u32, ctx: &mut Ctx<'_>) {
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
                    ctx.sink.first_sends += mark_sent(
                        &mut ctx.inflight.slots,
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
            self.close_conn(ci, kind, cause, ctx);
        } else {
            self.conn_exchange_failures(ci, ctx);
        }
    }

    /// Fails the queries whose exchange failed on its own (DoH: an HTTP status, a reset
    /// stream), and closes the connection when its protocol cannot go on.
    fn conn_exchange_failures(&mut self, ci: u32, ctx: &mut Ctx<'_>) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        let uid = conn.uid;
        let mut failed = Vec::new();
        conn.protocol
            .take_failures(&mut |key, cause| failed.push((key, cause)));
        let fatal = conn.protocol.fatal();
        for (key, cause) in failed {
            if let Some(slot) = ctx.inflight.slot_of(uid, key) {
                self.fail(slot, ErrorKind::Http, &cause, ctx);
            }
        }
        if let Some(cause) = fatal {
            self.close_conn(ci, ErrorKind::Http, cause, ctx);
        }
    }

    /// Once a connection is ready for queries (connected, and its protocol's handshake over),
    /// times its set-up on the query that opened it.
    fn conn_ready(&mut self, ci: u32, at: i64, ctx: &mut Ctx<'_>) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.ready {
            return;
        }
        conn.ready = true;
        let took = (at - conn.opened_ns).max(0);
        for &s in &conn.inflight {
            let slot = &mut ctx.inflight.slots[s as usize];
            if slot.new_connection {
                slot.handshake_ns = took;
            }
        }
    }

    /// Reads the kernel's send stamps queued on connection `ci` into its queries; returns how
    /// many there were.
    fn conn_send_stamps(&mut self, ci: u32, ctx: &mut Ctx<'_>) -> usize {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return 0;
        };
        self.stamps.clear();
        let n =
            ldplayer_udp::read_send_stamps(conn.sock.as_raw_fd(), &mut self.stamps).unwrap_or(0);
        if let Some(t) = conn.send_times.as_mut() {
            for st in &self.stamps {
                t.stamp(&mut ctx.inflight.slots, st.key, st.ns);
            }
        }
        n
    }

    fn conn_read(&mut self, ci: u32, ctx: &mut Ctx<'_>) {
        let honor = ctx.config.honor_keepalive;
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
            match self.conn_received(ci, &mut chunk[..n], honor, at, ctx) {
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
            self.close_conn(ci, kind, cause, ctx);
        } else if eof {
            let handshaking =
                matches!(self.conns.get(ci as usize), Some(Some(c)) if c.protocol.is_handshaking());
            if handshaking {
                self.close_conn(ci, ErrorKind::Tls, Cause::ClosedInHandshake, ctx);
            } else {
                self.close_conn(ci, ErrorKind::Reset, Cause::PeerClosed, ctx);
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
        ctx: &mut Ctx<'_>,
    ) -> Result<bool, (ErrorKind, Cause)> {
        // The protocol is taken out while its messages complete queries (which need the
        // connection's list); an empty TCP framing, which allocates nothing, stands in.
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
                self.conn_ready(ci, at, ctx);
            }
            if garbage.is_some() {
                // The connection is done for: what follows is not read.
                return;
            }
            let slot = match stream_replies::judge(ctx, uid, by_id, timed_out, key, msg) {
                StreamReply::Answer(slot) => slot,
                StreamReply::Ignored => {
                    unmatched += 1;
                    return;
                }
                StreamReply::Failed(slot, via) => {
                    self.forget(slot, via);
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
                    keepalive = stream_replies::keepalive_ns(&m).or(keepalive);
                }
            }
            let via = ctx
                .inflight
                .complete(slot, Outcome::Answered, Some((msg, at)), ctx.sink);
            self.forget(slot, via);
        });
        ctx.sink.stats.unmatched_responses += unmatched;
        if let Ok(r) = &received {
            ctx.sink.stats.unmatched_responses += r.malformed;
            if garbage.is_none() && r.malformed > 0 {
                garbage = Some(stream_replies::short_frame(None));
            }
            if garbage.is_none() {
                garbage = stream_replies::pending_garbage(ctx.inflight, uid, timed_out, &protocol);
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
                    self.conn_ready(ci, at, ctx);
                }
                self.conn_exchange_failures(ci, ctx);
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
    fn close_conn(&mut self, ci: u32, kind: ErrorKind, cause: Cause, ctx: &mut Ctx<'_>) {
        let Some(Some(mut conn)) = self.conns.get_mut(ci as usize).map(Option::take) else {
            return;
        };
        if conn.protocol.resumed() {
            ctx.sink.stats.tls_resumed += 1;
        }
        conn.protocol.close();
        write_out(&mut conn.sock, &mut conn.protocol);
        let _ = ctx.registry.deregister(&mut conn.sock);
        self.open -= 1;
        self.free.push(ci);
        if let Some(c) = ctx.clients.get_mut(conn.client) {
            if c.conn == ci {
                c.conn = NONE;
            }
        }
        let inflight = std::mem::take(&mut conn.inflight);
        if !inflight.is_empty() {
            ctx.sink.note_cause(kind, &cause, inflight.len() as u64);
        }
        for slot in inflight {
            // The connection is gone: nothing to forget the query from.
            ctx.inflight
                .complete(slot, Outcome::Error(kind), None, ctx.sink);
        }
    }
}

/// Whether `conn` carried as many queries as a connection may
/// ([`ReplayConfig::queries_per_connection`](crate::ReplayConfig)): it takes no more, and is
/// closed once its queries in flight are answered.
fn spent(conn: &Conn, ctx: &Ctx<'_>) -> bool {
    ctx.config
        .queries_per_connection
        .is_some_and(|n| conn.queries >= n)
}

impl Transport for StreamSessions {
    fn submit(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        let (client, proto) = {
            let s = &ctx.inflight.slots[slot as usize];
            (s.client, s.proto)
        };
        let (ci, new) = match self.conn_for(client, proto, ctx) {
            Ok(x) => x,
            Err((kind, cause)) => {
                self.fail(slot, kind, &cause, ctx);
                return;
            }
        };
        let Some(Some(conn)) = self.conns.get(ci as usize) else {
            self.fail(slot, ErrorKind::Send, &Cause::ClosedLocally, ctx);
            return;
        };
        let uid = conn.uid;
        let first = conn.queries == 0;
        let by_id = conn.protocol.matches_by_id();
        if by_id && !ctx.inflight.claim_id(slot, uid) {
            self.fail(slot, ErrorKind::Send, &Cause::IdsExhausted, ctx);
            return;
        }
        let s = &mut ctx.inflight.slots[slot as usize];
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
                self.fail(slot, e.kind(), &e.into_cause(), ctx);
                return;
            }
        };
        if let MatchKey::Stream(stream) = queued.key {
            ctx.inflight.claim_stream(slot, uid, stream);
        }
        if !new {
            ctx.sink.stats.connections_reused += 1;
        }
        let now = clock::now_ns();
        let s = &mut ctx.inflight.slots[slot as usize];
        s.via = Via::Stream {
            conn: ci,
            uid,
            key: queued.key,
        };
        s.new_connection = first;
        let gen = s.gen;
        if let Some(Some(conn)) = self.conns.get_mut(ci as usize) {
            conn.queries += 1;
            conn.last_active_ns = now;
            conn.unsent.push_back(Unsent {
                slot,
                gen,
                wire_end: queued.wire_end,
            });
            conn.inflight.push(slot);
        }
        let deadline = ctx.deadline_of(slot, now);
        ctx.inflight.push_timeout(slot, deadline);
        self.out.push(ci);
    }

    /// Writes the connections that queries were queued on since the last call.
    fn flush(&mut self, ctx: &mut Ctx<'_>) {
        if self.out.is_empty() {
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        out.sort_unstable();
        out.dedup();
        for &ci in &out {
            self.conn_flush(ci, ctx);
        }
        out.clear();
        self.out = out;
    }

    fn owns(&self, token: usize) -> bool {
        token.wrapping_sub(self.token_base) < TOKEN_SPAN
    }

    fn ready(&mut self, token: usize, ready: Readiness, ctx: &mut Ctx<'_>) {
        let ci = (token - self.token_base) as u32;
        // An error event is most often the kernel's send stamps; when there were none, it is
        // the socket's error, which a read or the connect check reports.
        let failed = ready.error && self.conn_send_stamps(ci, ctx) == 0;
        if ready.error && !failed && !ready.readable && !ready.writable {
            return;
        }
        let (readable, writable) = (ready.readable || failed, ready.writable || failed);
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state == ConnState::Connecting {
            if let Ok(Some(e)) | Err(e) = conn.sock.take_error() {
                let kind = match kind_of_io(&e) {
                    ErrorKind::Refused => ErrorKind::Refused,
                    _ => ErrorKind::Reset,
                };
                self.close_conn(ci, kind, Cause::Io(e), ctx);
                return;
            }
            match conn.sock.peer_addr() {
                Ok(_) => {
                    conn.state = ConnState::Open;
                    if !conn.protocol.is_handshaking() {
                        self.conn_ready(ci, clock::now_ns(), ctx);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                    if readable {
                        // Readable but not connected: the connect failed.
                        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
                        self.close_conn(ci, ErrorKind::Refused, Cause::Io(refused), ctx);
                    }
                    return;
                }
                Err(e) => {
                    self.close_conn(ci, ErrorKind::Refused, Cause::Io(e), ctx);
                    return;
                }
            }
        }
        if readable {
            self.conn_read(ci, ctx);
        }
        if writable || readable {
            self.conn_flush(ci, ctx);
        }
    }

    /// Marks the connection of a query that was sent as having had a timeout (a response no
    /// query in flight has may then be late), and ends the query.
    fn expired(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        let s = &ctx.inflight.slots[slot as usize];
        if let (Via::Stream { conn, uid, .. }, true) = (s.via, s.sent_ns != 0) {
            if let Some(Some(c)) = self.conns.get_mut(conn as usize) {
                c.timed_out |= c.uid == uid;
            }
        }
        let via = ctx.inflight.time_out(slot, ctx.sink);
        self.forget(slot, via);
    }

    /// Closes idle connections and those that carried their share of queries.
    fn housekeeping(&mut self, now: i64, ctx: &mut Ctx<'_>) {
        let mut idle = Vec::new();
        for (i, c) in self.conns.iter().enumerate() {
            if let Some(c) = c {
                if c.inflight.is_empty() && (now - c.last_active_ns > c.idle_ns || spent(c, ctx)) {
                    idle.push(i as u32);
                }
            }
        }
        for i in idle {
            self.close_conn(i, ErrorKind::Reset, Cause::ClosedLocally, ctx);
        }
    }

    fn close(&mut self, ctx: &mut Ctx<'_>) {
        for i in 0..self.conns.len() {
            self.close_conn(i as u32, ErrorKind::Reset, Cause::ClosedLocally, ctx);
        }
    }
}
