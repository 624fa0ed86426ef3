//! One client's TLS session without I/O, on rustls' unbuffered API: the querier reads and writes
//! the socket and owns every buffer, so an idle connection keeps only the session state.
//!
//! With rustls' buffered `ClientConnection`, each connection kept a 4 KiB receive buffer (rustls
//! resizes it to its read size after every read) and its plaintext and record queues. Here the
//! received TLS bytes and the encrypted bytes waiting for the socket live in vectors that are
//! released once empty, whole records are decrypted in place in the read buffer on the stack,
//! and after the first answer rustls' state gives way to the traffic keys alone
//! (the `keys` module). Generator memory per idle TLS connection in
//! `bench/connections.sh` (8,000 clients): ≈ 10.0 KB buffered, ≈ 3.7 KB now.

use keys::TrafficKeys;
use rustls::client::UnbufferedClientConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use rustls::{ClientConfig, HandshakeKind, ProtocolVersion};
use rustls_pki_types::ServerName;
use std::sync::Arc;

mod keys;
pub mod secrets;

pub(crate) use keys::fuzz_records;

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A TLS protocol failure reported by rustls (handshake, certificate, alert).
    #[error("TLS: {0}")]
    Tls(rustls::Error),
    /// A record under the traffic keys did not open, or could not be sealed.
    #[error("a TLS record under the traffic keys did not open or could not be sealed")]
    Record,
    /// The session had failed before.
    #[error("the TLS session had failed before")]
    Failed,
}

/// A TLS client session under a stream framing, without I/O: the lean [`TlsSession`] or a
/// reference stack's (the replay's wrapper of rustls' `ClientConnection`). The framing hands
/// it plaintext and the bytes read from the socket; the caller writes its output. The trait
/// lets one framing run over either, so that the two differ in the session alone.
pub trait TlsRecords {
    /// Whether the handshake is still going on.
    fn is_handshaking(&self) -> bool;
    /// TLS bytes queued for the socket over the session's life, written or not.
    fn queued_total(&self) -> u64;
    /// TLS bytes written to the socket over the session's life.
    fn sent_total(&self) -> u64;
    /// How the handshake went (full or resumed), once it is over.
    fn handshake_kind(&self) -> Option<HandshakeKind>;
    /// The application protocol the server chose by ALPN, once the handshake is over.
    fn alpn(&self) -> Option<&[u8]>;
    /// Encrypts as much of `plain` as the session allows now (nothing before the handshake is
    /// over) and returns how many bytes were taken.
    fn write_plain(&mut self, plain: &[u8]) -> Result<usize, SessionError>;
    /// Processes bytes read from the socket, appending what they decrypt to to `plain`, and
    /// queues whatever the session has to send in turn; returns whether the peer closed.
    fn received(&mut self, bytes: &mut [u8], plain: &mut Vec<u8>) -> Result<bool, SessionError>;
    /// The TLS bytes waiting for the socket.
    fn output(&self) -> &[u8];
    /// Forgets the first `n` bytes of [`output`](Self::output): the socket took them.
    fn consume_output(&mut self, n: usize);
    /// Queues a close_notify alert (after the handshake).
    fn close(&mut self);
}

impl TlsRecords for TlsSession {
    #[inline]
    fn is_handshaking(&self) -> bool {
        TlsSession::is_handshaking(self)
    }
    #[inline]
    fn queued_total(&self) -> u64 {
        TlsSession::queued_total(self)
    }
    #[inline]
    fn sent_total(&self) -> u64 {
        TlsSession::sent_total(self)
    }
    #[inline]
    fn handshake_kind(&self) -> Option<HandshakeKind> {
        TlsSession::handshake_kind(self)
    }
    #[inline]
    fn alpn(&self) -> Option<&[u8]> {
        TlsSession::alpn(self)
    }
    #[inline]
    fn write_plain(&mut self, plain: &[u8]) -> Result<usize, SessionError> {
        TlsSession::write_plain(self, plain)
    }
    #[inline]
    fn received(&mut self, bytes: &mut [u8], plain: &mut Vec<u8>) -> Result<bool, SessionError> {
        TlsSession::received(self, bytes, plain)
    }
    #[inline]
    fn output(&self) -> &[u8] {
        TlsSession::output(self)
    }
    #[inline]
    fn consume_output(&mut self, n: usize) {
        TlsSession::consume_output(self, n)
    }
    #[inline]
    fn close(&mut self) {
        TlsSession::close(self)
    }
}

/// Who protects the records.
enum Stage {
    /// rustls: the handshake and the first answers.
    Rustls(Box<UnbufferedClientConnection>),
    /// The traffic keys alone, from the first answer on (see [`keys`]).
    Keys(Box<TrafficKeys>),
    /// The hand-over failed: the session is unusable.
    Failed,
}

/// A TLS client session with caller-driven I/O: see the module's documentation.
pub struct TlsSession {
    stage: Stage,
    /// How the handshake went, kept once rustls is gone.
    kind: Option<HandshakeKind>,
    /// The protocol agreed by ALPN (`h2` for DoH), taken when the handshake ends.
    alpn: Option<Box<[u8]>>,
    /// TLS bytes read from the socket and not yet consumed by rustls.
    incoming: Vec<u8>,
    /// TLS bytes for the socket; `outgoing[sent..]` is still to be written.
    outgoing: Vec<u8>,
    sent: usize,
    /// TLS bytes written to the socket over the session's life.
    sent_total: u64,
    /// The handshake is over: application data may be sent.
    ready: bool,
    peer_closed: bool,
    /// The random of the session's ClientHello, which finds its traffic secrets in the key
    /// log ([`secrets`]), until rustls lets go.
    client_random: Option<Box<[u8; 32]>>,
}

impl TlsSession {
    /// Starts a session to `name` (the ClientHello is queued for [`output`](Self::output)).
    pub fn new(
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> Result<Self, rustls::Error> {
        let mut s = TlsSession {
            stage: Stage::Rustls(Box::new(UnbufferedClientConnection::new(config, name)?)),
            kind: None,
            alpn: None,
            incoming: Vec::new(),
            outgoing: Vec::new(),
            sent: 0,
            sent_total: 0,
            ready: false,
            peer_closed: false,
            client_random: None,
        };
        s.drive(&mut [], &mut (&[] as &[u8]), &mut Vec::new(), false)
            .map_err(|_| rustls::Error::General("cannot start the handshake".into()))?;
        s.client_random = secrets::client_hello_random(&s.outgoing).map(Box::new);
        Ok(s)
    }

    /// Whether the handshake is still going on.
    #[inline]
    pub fn is_handshaking(&self) -> bool {
        !self.ready
    }

    /// TLS bytes queued for the socket over the session's life, written or not: a message
    /// encrypted now is on its way once [`sent_total`](Self::sent_total) reaches this.
    #[inline]
    pub fn queued_total(&self) -> u64 {
        self.sent_total + (self.outgoing.len() - self.sent) as u64
    }

    /// TLS bytes written to the socket over the session's life.
    #[inline]
    pub fn sent_total(&self) -> u64 {
        self.sent_total
    }

    /// Whether the session runs on its traffic keys alone (rustls' state let go), as it does
    /// from its first answer on: what the memory figures and their tests rest on.
    #[inline]
    pub fn on_traffic_keys(&self) -> bool {
        matches!(self.stage, Stage::Keys(_))
    }

    /// How the handshake went (full or resumed), once it is over.
    #[inline]
    pub fn handshake_kind(&self) -> Option<HandshakeKind> {
        match &self.stage {
            Stage::Rustls(conn) => conn.handshake_kind(),
            _ => self.kind,
        }
    }

    /// The application protocol the server chose by ALPN, once the handshake is over.
    #[inline]
    pub fn alpn(&self) -> Option<&[u8]> {
        self.alpn.as_deref()
    }

    /// Encrypts as much of `plain` as the session allows now (nothing before the handshake is
    /// over) and returns how many bytes were taken.
    pub fn write_plain(&mut self, plain: &[u8]) -> Result<usize, SessionError> {
        match &mut self.stage {
            Stage::Keys(keys) => {
                keys.seal(plain, &mut self.outgoing)
                    .map_err(|_| SessionError::Record)?;
                return Ok(plain.len());
            }
            Stage::Failed => return Err(SessionError::Failed),
            Stage::Rustls(_) => {}
        }
        let mut rest = plain;
        let mut incoming = std::mem::take(&mut self.incoming);
        let used = self.drive(&mut incoming, &mut rest, &mut Vec::new(), false);
        incoming.drain(..used.as_ref().map_or(0, |u| *u));
        self.incoming = incoming;
        used?;
        Ok(plain.len() - rest.len())
    }

    /// Processes bytes read from the socket (handshake messages; answers appended to `plain`,
    /// decrypted in place in `bytes`) and queues whatever rustls has to send in turn. Returns
    /// whether the peer closed the session.
    pub fn received(
        &mut self,
        bytes: &mut [u8],
        plain: &mut Vec<u8>,
    ) -> Result<bool, SessionError> {
        let answered_before = plain.len();
        if self.incoming.is_empty() {
            // Whole records are decrypted in place where they were read; only an incomplete
            // one is kept.
            let used = self.process(bytes, plain)?;
            self.incoming.extend_from_slice(&bytes[used..]);
        } else {
            let mut incoming = std::mem::take(&mut self.incoming);
            incoming.extend_from_slice(bytes);
            let used = self.process(&mut incoming, plain);
            incoming.drain(..used.as_ref().map_or(0, |u| *u));
            self.incoming = incoming;
            used?;
        }
        release_if_empty(&mut self.incoming);
        if plain.len() > answered_before && self.incoming.is_empty() && !self.peer_closed {
            self.hand_over_to_keys();
        }
        Ok(self.peer_closed)
    }

    /// Opens the records at the front of `incoming` (answers to `plain`) and returns how many
    /// bytes they took.
    fn process(&mut self, incoming: &mut [u8], plain: &mut Vec<u8>) -> Result<usize, SessionError> {
        match &mut self.stage {
            Stage::Rustls(_) => self.drive(incoming, &mut (&[] as &[u8]), plain, false),
            Stage::Keys(keys) => {
                let opened = keys
                    .open(incoming, plain)
                    .map_err(|_| SessionError::Record)?;
                self.peer_closed |= opened.closed;
                if opened.update_requested {
                    // RFC 8446 §4.6.3: before the next application data.
                    keys.seal_key_update(&mut self.outgoing)
                        .map_err(|_| SessionError::Record)?;
                }
                Ok(opened.consumed)
            }
            Stage::Failed => Err(SessionError::Failed),
        }
    }

    /// Once a TLS 1.3 session has its first answer (and so the server's tickets), keeps only
    /// its traffic keys and lets rustls' state go.
    fn hand_over_to_keys(&mut self) {
        let ready = match &self.stage {
            Stage::Rustls(conn) => {
                !conn.is_handshaking() && conn.protocol_version() == Some(ProtocolVersion::TLSv1_3)
            }
            _ => false,
        };
        if !ready {
            return;
        }
        self.kind = self.handshake_kind();
        if let Stage::Rustls(conn) = std::mem::replace(&mut self.stage, Stage::Failed) {
            if let Ok((secrets, _kernel)) = conn.dangerous_into_kernel_connection() {
                if let Some(mut keys) = TrafficKeys::new(secrets) {
                    let traffic = self
                        .client_random
                        .take()
                        .and_then(|r| secrets::TAP.take(&r));
                    if let Some((client, server)) = traffic {
                        // Without them, a key update fails the session as before.
                        keys.follow_updates(client, server);
                    }
                    self.stage = Stage::Keys(Box::new(keys));
                }
            }
        }
    }

    /// The TLS bytes waiting for the socket.
    #[inline]
    pub fn output(&self) -> &[u8] {
        &self.outgoing[self.sent..]
    }

    /// Forgets the first `n` bytes of [`output`](Self::output): the socket took them.
    #[inline]
    pub fn consume_output(&mut self, n: usize) {
        let n = n.min(self.outgoing.len() - self.sent);
        self.sent += n;
        self.sent_total += n as u64;
        if self.sent == self.outgoing.len() {
            self.outgoing.clear();
            self.sent = 0;
            release_if_empty(&mut self.outgoing);
        }
    }

    /// Queues a close_notify alert (after the handshake) for [`output`](Self::output).
    pub fn close(&mut self) {
        match &mut self.stage {
            Stage::Keys(keys) => {
                // Best effort: a session that cannot say goodbye is closed anyway.
                let _ = keys.seal_close_notify(&mut self.outgoing);
            }
            Stage::Rustls(_) if self.ready => {
                let _ = self.drive(&mut [], &mut (&[] as &[u8]), &mut Vec::new(), true);
            }
            _ => {}
        }
    }

    /// Runs rustls' state machine over the received bytes `incoming` until it waits for the
    /// peer, and returns how many of them it consumed: handshake records go to `outgoing`,
    /// application data to `plain`; once traffic may flow, `send` is encrypted (and advanced
    /// past what was taken) and, if `close`, a close_notify queued.
    fn drive(
        &mut self,
        incoming: &mut [u8],
        send: &mut &[u8],
        plain: &mut Vec<u8>,
        close: bool,
    ) -> Result<usize, SessionError> {
        let Stage::Rustls(conn) = &mut self.stage else {
            return Err(SessionError::Failed);
        };
        let mut closed = false;
        let mut consumed = 0;
        loop {
            let UnbufferedStatus { mut discard, state } =
                conn.process_tls_records(&mut incoming[consumed..]);
            let state = state.map_err(SessionError::Tls)?;
            let mut done = false;
            let mut became_ready = false;
            match state {
                ConnectionState::ReadTraffic(mut traffic) => {
                    while let Some(record) = traffic.next_record() {
                        let record = record.map_err(SessionError::Tls)?;
                        discard += record.discard;
                        plain.extend_from_slice(record.payload);
                    }
                }
                ConnectionState::EncodeTlsData(mut encode) => {
                    // AlreadyEncoded cannot happen: each state is encoded once.
                    let _ = append(&mut self.outgoing, 512, |out| match encode.encode(out) {
                        Ok(n) => Ok(n),
                        Err(EncodeError::InsufficientSize(e)) => Err(Some(e.required_size)),
                        Err(EncodeError::AlreadyEncoded) => Err(None),
                    });
                }
                ConnectionState::TransmitTlsData(transmit) => {
                    // Queued in `outgoing`, for the querier to write.
                    transmit.done();
                }
                ConnectionState::WriteTraffic(mut traffic) => {
                    became_ready = !self.ready;
                    self.ready = true;
                    while !send.is_empty() {
                        // One record at most per call; 22 bytes of overhead per TLS 1.3 record.
                        let take = send.len().min(16 * 1024);
                        append(&mut self.outgoing, take + 64, |out| {
                            match traffic.encrypt(&send[..take], out) {
                                Ok(n) => Ok(n),
                                Err(EncryptError::InsufficientSize(e)) => {
                                    Err(Some(e.required_size))
                                }
                                Err(_) => Err(None),
                            }
                        })
                        .map_err(|()| SessionError::Record)?;
                        *send = &send[take..];
                    }
                    if close && !closed {
                        closed = true;
                        // Best effort: a session that cannot say goodbye is closed anyway.
                        let _ = append(&mut self.outgoing, 64, |out| {
                            match traffic.queue_close_notify(out) {
                                Ok(n) => Ok(n),
                                Err(EncryptError::InsufficientSize(e)) => {
                                    Err(Some(e.required_size))
                                }
                                Err(_) => Err(None),
                            }
                        });
                    }
                    done = true;
                }
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.peer_closed = true;
                    done = true;
                }
                // Waiting for the server's next handshake flight; early data is server-side.
                _ => done = true,
            }
            if became_ready {
                self.alpn = conn.alpn_protocol().map(Box::from);
            }
            consumed += discard;
            if done {
                return Ok(consumed);
            }
        }
    }
}

/// Appends what `write` writes into fresh room at the end of `out`, starting with `room` bytes
/// and growing to the size `write` asks for (`Err(Some(size))`); `Err(None)` is a failure, and
/// `out` is then left as it was.
fn append(
    out: &mut Vec<u8>,
    mut room: usize,
    mut write: impl FnMut(&mut [u8]) -> Result<usize, Option<usize>>,
) -> Result<(), ()> {
    let at = out.len();
    loop {
        out.resize(at + room, 0);
        match write(&mut out[at..]) {
            Ok(n) => {
                out.truncate(at + n);
                return Ok(());
            }
            Err(Some(required)) if required > room => room = required,
            Err(_) => {
                out.truncate(at);
                return Err(());
            }
        }
    }
}

/// Frees a buffer's memory once it holds nothing: most connections are idle most of the time.
fn release_if_empty(buf: &mut Vec<u8>) {
    if buf.is_empty() && buf.capacity() > 0 {
        *buf = Vec::new();
    }
}
