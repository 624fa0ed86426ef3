//! TCP and TLS: one connection per original client, reused until idle, queries pipelined and
//! answers matched by ID in any order, RFC 7828 keepalive honoured.
//!
//! Times are taken as for UDP: a query is sent when the system call that hands its last byte to
//! the kernel starts (its TLS record's last byte, for TLS), and answered when the kernel received
//! the segment that completed it (`SO_TIMESTAMPNS`; for a read that took several segments, the
//! last one's). A connection's set-up (TCP handshake, and TLS handshake for TLS) is timed apart:
//! queries wait for it before they are sent, so their latency leaves it out and their first
//! query carries it as `handshake_ns`.

use super::send_times::SendTimes;
use super::*;
use crate::cause::{kind_of_io, Cause};
use std::os::fd::RawFd;

/// Whether a connection's non-blocking connect has completed.
#[derive(PartialEq, Eq, Clone, Copy)]
pub(super) enum ConnState {
    Connecting,
    Open,
}

/// A client's TCP or TLS connection: its pending bytes and the queries in flight on it.
pub(super) struct Conn {
    pub(super) uid: u64,
    pub(super) client: u32,
    pub(super) proto: Proto,
    pub(super) sock: TcpStream,
    pub(super) tls: Option<Box<TlsSession>>,
    pub(super) state: ConnState,
    pub(super) wbuf: Vec<u8>,
    pub(super) wpos: usize,
    /// Position of `wbuf[0]` in the stream of DNS messages written to the connection.
    pub(super) wbase: u64,
    /// Queries whose bytes have not all reached the kernel, in the order of their bytes.
    pub(super) unsent: VecDeque<Unsent>,
    /// When the connect started (realtime ns).
    pub(super) opened_ns: i64,
    /// Queries waiting for the kernel's send stamps; `None` without them.
    pub(super) send_times: Option<SendTimes>,
    /// The connection is ready for queries (connected, and for TLS the handshake is over).
    pub(super) ready: bool,
    pub(super) rbuf: Vec<u8>,
    pub(super) inflight: Vec<u32>,
    pub(super) queries: u64,
    pub(super) last_active_ns: i64,
    pub(super) idle_ns: i64,
}

/// A query on its way into a connection: its message ends at `plain_end` in the stream of DNS
/// messages, and at `wire_end` in the stream of bytes on the socket once that is known (at once
/// for TCP; once encrypted for TLS).
pub(super) struct Unsent {
    slot: u32,
    gen: u32,
    plain_end: u64,
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
                return Err((ErrorKind::Tls, Cause::NoTlsConfig));
            };
            let cfg = match self.clients.get_mut(&client) {
                Some(c) => c.tls.get_or_insert_with(|| base.for_client()).clone(),
                None => base.for_client(),
            };
            match TlsSession::new(cfg, base.server_name.clone()) {
                Ok(t) => Some(Box::new(t)),
                Err(e) => return Err((ErrorKind::Tls, Cause::Tls(e))),
            }
        } else {
            None
        };
        let opened_ns = clock::now_ns();
        let mut sock = match net::tcp_connect(local, &self.server) {
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
            tls,
            state: ConnState::Connecting,
            wbuf: Vec::new(),
            wpos: 0,
            wbase: 0,
            unsent: VecDeque::new(),
            opened_ns,
            send_times,
            ready: false,
            rbuf: Vec::new(),
            inflight: Vec::new(),
            queries: 0,
            last_active_ns: opened_ns,
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
        if !self.claim_id(slot, uid) {
            self.fail(slot, ErrorKind::Send, &Cause::IdsExhausted);
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
            let plain_end = conn.wbase + conn.wbuf.len() as u64;
            conn.unsent.push_back(Unsent {
                slot,
                gen: s.gen,
                plain_end,
                wire_end: conn.tls.is_none().then_some(plain_end),
            });
            conn.inflight.push(slot);
        }
        self.push_timeout(slot, now + self.timeout_ns);
        self.conn_flush(ci);
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
        // The time the system call that hands a query's last byte to the kernel starts.
        let mut started = clock::now_ns();
        let mut on_wire = 0;
        if let Some(tls) = conn.tls.as_mut() {
            // One TLS record per DNS message, as stub resolvers send them: nsd 4.6 answers only
            // the first of several queries that arrive in one record (the rest wait in its TLS
            // buffer until the socket is readable again), which timed out pipelined queries
            // queued during the handshake.
            while conn.wpos < conn.wbuf.len() {
                let rest = &conn.wbuf[conn.wpos..];
                let frame = match rest {
                    [a, b, ..] => (2 + u16::from_be_bytes([*a, *b]) as usize).min(rest.len()),
                    _ => rest.len(),
                };
                match tls.write_plain(&rest[..frame]) {
                    Ok(0) => break,
                    Ok(n) => conn.wpos += n,
                    Err(e) => {
                        failure = Some((ErrorKind::Tls, e.into_cause()));
                        break;
                    }
                }
                let taken = conn.wbase + conn.wpos as u64;
                let queued = tls.queued_total();
                for u in conn.unsent.iter_mut().filter(|u| u.wire_end.is_none()) {
                    if u.plain_end > taken {
                        break;
                    }
                    u.wire_end = Some(queued);
                }
            }
            if failure.is_none() {
                started = clock::now_ns();
                if let Err(e) = tls.flush(&mut conn.sock) {
                    failure = Some((kind_of_io(&e), Cause::Io(e)));
                }
            }
            on_wire = tls.sent_total();
        } else {
            while conn.wpos < conn.wbuf.len() {
                let at = clock::now_ns();
                match conn.sock.write(&conn.wbuf[conn.wpos..]) {
                    Ok(0) => break,
                    Ok(n) => {
                        conn.wpos += n;
                        on_wire = conn.wbase + conn.wpos as u64;
                        started = at;
                        self.first_sends += mark_sent(
                            &mut self.slots,
                            &mut conn.unsent,
                            conn.send_times.as_mut(),
                            on_wire,
                            at,
                        );
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failure = Some((kind_of_io(&e), Cause::Io(e)));
                        break;
                    }
                }
            }
        }
        self.first_sends += mark_sent(
            &mut self.slots,
            &mut conn.unsent,
            conn.send_times.as_mut(),
            on_wire,
            started,
        );
        if conn.wpos == conn.wbuf.len() {
            conn.wbase += conn.wbuf.len() as u64;
            conn.wbuf.clear();
            conn.wpos = 0;
            if conn.wbuf.capacity() > KEEP_BUF {
                conn.wbuf = Vec::new();
            }
        }
        if conn.unsent.is_empty() && conn.unsent.capacity() > 0 {
            conn.unsent = VecDeque::new();
        }
        if let Some((kind, cause)) = failure {
            self.close_conn(ci, kind, cause);
        }
    }

    /// Once a connection is ready for queries, times its set-up on the query that opened it.
    fn conn_ready(&mut self, ci: u32, at: i64) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.ready || conn.tls.as_ref().is_some_and(|t| t.is_handshaking()) {
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
                    self.conn_ready(ci, clock::now_ns());
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
        let mut chunk = [0u8; 16 * 1024];
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
            let mut more = false;
            if let Some(tls) = conn.tls.as_mut() {
                let handshaking = tls.is_handshaking();
                match tls.read_from(&mut sock, &mut conn.rbuf) {
                    Ok(r) => eof = r.eof,
                    Err(e) => {
                        if matches!(e, SessionError::Tls(_)) {
                            // Send the alert, if any, then give up.
                            let _ = tls.flush(&mut conn.sock);
                        }
                        let kind = if handshaking || tls.is_handshaking() {
                            ErrorKind::Tls
                        } else {
                            match &e {
                                SessionError::Io(e) => kind_of_io(e),
                                _ => ErrorKind::Tls,
                            }
                        };
                        failure = Some((kind, e.into_cause()));
                    }
                }
                if handshaking && !tls.is_handshaking() {
                    let at = sock.at.unwrap_or_else(clock::now_ns);
                    self.conn_ready(ci, at);
                }
            } else {
                match sock.read(&mut chunk) {
                    Ok(0) => eof = true,
                    Ok(n) => {
                        conn.rbuf.extend_from_slice(&chunk[..n]);
                        more = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => more = true,
                    Err(e) => failure = Some((kind_of_io(&e), Cause::Io(e))),
                }
            }
            // Answers of each read take that read's time.
            let at = sock.at.unwrap_or_else(clock::now_ns);
            self.conn_frames(ci, honor, at);
            if !more {
                break;
            }
        }
        if let Some((kind, cause)) = failure {
            self.close_conn(ci, kind, cause);
        } else if eof {
            let tls_hs = matches!(self.conns.get(ci as usize), Some(Some(c)) if c.tls.as_ref().is_some_and(|t| t.is_handshaking()));
            if tls_hs {
                self.close_conn(ci, ErrorKind::Tls, Cause::ClosedInHandshake);
            } else {
                self.close_conn(ci, ErrorKind::Reset, Cause::PeerClosed);
            }
        }
    }

    /// Takes the complete messages out of a connection's receive buffer.
    pub(super) fn conn_frames(&mut self, ci: u32, honor: bool, now: i64) {
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
            let Some(slot) = self.answered_slot(uid, msg) else {
                self.stats.unmatched_responses += 1;
                continue;
            };
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

    /// Closes a connection; its queries in flight fail with `kind`, for `cause`.
    pub(super) fn close_conn(&mut self, ci: u32, kind: ErrorKind, cause: Cause) {
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
        let inflight = std::mem::take(&mut conn.inflight);
        if !inflight.is_empty() {
            self.note_cause(kind, &cause, inflight.len() as u64);
        }
        for slot in inflight {
            // Keep the connection's number out of the way of complete().
            if let Via::Stream { uid, .. } = self.slots[slot as usize].via {
                self.slots[slot as usize].via = Via::Stream { conn: NONE, uid };
            }
            self.complete(slot, Outcome::Error(kind), None);
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
