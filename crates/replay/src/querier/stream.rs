//! TCP and TLS: one connection per original client, reused until idle, queries pipelined and
//! answers matched by ID in any order, RFC 7828 keepalive honoured.

use super::*;

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
    pub(super) rbuf: Vec<u8>,
    pub(super) inflight: Vec<u32>,
    pub(super) queries: u64,
    pub(super) last_active_ns: i64,
    pub(super) idle_ns: i64,
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
    pub(super) fn conn_for(&mut self, client: u32, proto: Proto) -> Result<(u32, bool), ErrorKind> {
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
            self.close_conn(i, ErrorKind::Reset);
        }
    }

    pub(super) fn send_stream(&mut self, slot: u32, proto: Proto) {
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
    pub(super) fn conn_flush(&mut self, ci: u32) {
        let Some(Some(conn)) = self.conns.get_mut(ci as usize) else {
            return;
        };
        if conn.state != ConnState::Open {
            return;
        }
        let mut failure = None;
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
                    Err(_) => {
                        failure = Some(ErrorKind::Tls);
                        break;
                    }
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

    pub(super) fn conn_event(&mut self, ci: u32, readable: bool, writable: bool) {
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

    pub(super) fn conn_read(&mut self, ci: u32) {
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
    pub(super) fn conn_frames(&mut self, ci: u32, honor: bool) {
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

    /// Closes a connection; its queries in flight fail with `kind`.
    pub(super) fn close_conn(&mut self, ci: u32, kind: ErrorKind) {
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
}
