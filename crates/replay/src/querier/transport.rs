//! The seam between a stream connection's socket and its protocol: [`StreamProtocol`], a
//! stream transport's state without I/O.
//!
//! The querier reaches every transport through one seam, [`super::session::Transport`]; the
//! stream sessions ([`super::stream::StreamSessions`]) are one of its implementations, and this
//! trait is the seam inside them. They own everything that touches the system: the
//! non-blocking socket and its events, the kernel's send and receive stamps, the connect and the
//! handshake's timing, the idle timeout. They hand the protocol the bytes they read and write the
//! bytes the protocol has for the socket. The protocol frames (and, for TLS, encrypts) queries,
//! and turns what arrives back into whole DNS messages, each with the [`MatchKey`] that finds
//! its query in the in-flight table. So each protocol is tested from bytes alone, and a new one
//! is one more implementation of the trait and one more [`StreamTransport`] variant:
//!
//! - **TCP** ([`TcpFraming`]): a 2-byte length before each message (RFC 1035 §4.2.2); answers
//!   come in any order and are matched by DNS ID, so the querier gives each query an ID unique on
//!   its connection before it is queued ([`StreamProtocol::matches_by_id`]).
//! - **TLS** ([`TlsFraming`]): the same framing inside a TLS session (RFC 7858), one record per
//!   message; queries wait in the framing until the handshake is over.
//! - **DoH** ([`DohFraming`], RFC 8484): an HTTP/2 connection over TLS, one stream per query.
//!   Its `queue_query` queues a request (a POST with the query as `application/dns-message`, or
//!   a GET with the query in the URL) and returns `MatchKey::Stream(n)`, `n` counting the
//!   connection's queries; `received` runs h2 over the decrypted bytes and hands back each
//!   response body with its query's key. The response's DNS ID plays no part, so
//!   `matches_by_id` is false and the in-flight table neither claims nor rewrites IDs for it.
//!   An exchange can fail on its own (an HTTP status, a reset stream): the querier takes those
//!   failures with [`StreamProtocol::take_failures`].
//! - **The reference stack** (`--stack reference`, `crate::reference`): DoT on rustls'
//!   `ClientConnection` under the same [`TlsFraming`], DoH on the `h2` crate; the socket side
//!   is the same, so are the kernel's stamps.
//! - **DoQ** (RFC 9250) and **DoH over HTTP/3** are not [`StreamProtocol`]s: their connections
//!   are QUIC over UDP, run on a thread of their own beside the querier. They reach the querier
//!   through the same [`super::session::Transport`] as the others
//!   ([`super::doq_glue::QuicSessions`]); inside it, the seam is that thread's handle
//!   (`super::doq::Doq`: queries in, `DoqEvent`s out), started on the lean stack (`Doq::start`,
//!   the sans-IO `ldplayer_stacks::quic` with `ldplayer_stacks::doq` and `ldplayer_stacks::h3`
//!   on its streams) or the reference one (`crate::reference::quic`, quinn and h3), one
//!   bidirectional stream per query either way.
//!
//! The lean protocol code itself (the TLS record layer, HTTP/2 and HPACK, QUIC, HTTP/3 and
//! QPACK, DoQ's framing) is the `ldplayer-stacks` crate, sans IO; what is here and in
//! `tcp_framing`, `tls_framing` and `doh_framing` fits it to the querier (match keys, send
//! positions, causes); `doh_exchange` is what DoH's lean and reference clients share.
//!
//! The socket side of a protocol (the bytes waiting, what the socket took, the handshake, the
//! goodbye) is its session's, a [`StreamSession`]: the TLS session for DoT and DoH, lean or
//! reference, and for plain TCP only its bytes waiting ([`super::outgoing::Outgoing`]). Each
//! protocol names its session; the trait's socket-side calls go to it.
//!
//! Send times: a query is sent when the socket has taken the last byte the protocol produced
//! for it. The protocol tells where that byte lies in its output stream: at once from
//! [`StreamProtocol::queue_query`] when the query is on its way as soon as it is queued (TCP),
//! or through [`StreamProtocol::seal`] once it is (TLS, after the handshake).

pub(super) use super::doh_framing::DohFraming;
pub(super) use super::tcp_framing::TcpFraming;
pub(super) use super::tls_framing::TlsFraming;
use crate::cause::Cause;
use ldplayer_results::ErrorKind;
use ldplayer_stacks::tls::{SessionError, TlsRecords};
use rustls::HandshakeKind;

/// What a response is matched to its query by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MatchKey {
    /// The DNS ID, unique among the queries in flight on the connection (TCP, TLS).
    Id(u16),
    /// The protocol's stream that carried the query (DoH's HTTP/2 streams, DoQ's QUIC streams).
    Stream(u64),
}

/// A query handed to a protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Queued {
    /// What its answer will be matched by.
    pub key: MatchKey,
    /// Where its last byte lies in the protocol's output stream (counted from the connection's
    /// first byte), if that is known yet; otherwise [`StreamProtocol::seal`] tells later.
    pub wire_end: Option<u64>,
}

/// What the bytes given to [`StreamProtocol::received`] gave besides messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Received {
    /// The peer closed the session (TLS close_notify): nothing more will come.
    pub peer_closed: bool,
    /// Complete frames too short to be a DNS message, dropped.
    pub malformed: u64,
}

/// Why a protocol failed.
#[derive(Debug)]
pub(crate) enum StreamError {
    /// The query cannot be framed (longer than a frame can say, or shorter than an ID).
    BadQuery,
    /// The TLS session failed.
    Tls(SessionError),
}

impl StreamError {
    /// The kind of error of the queries that fail for it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StreamError::BadQuery => ErrorKind::BadQuery,
            StreamError::Tls(_) => ErrorKind::Tls,
        }
    }

    /// Why the queries failed.
    pub fn into_cause(self) -> Cause {
        match self {
            StreamError::BadQuery => Cause::Unframeable,
            StreamError::Tls(e) => session_cause(e),
        }
    }
}

/// Why the queries on a failed TLS session failed.
pub(crate) fn session_cause(e: SessionError) -> Cause {
    match e {
        SessionError::Tls(e) => Cause::Tls(e),
        SessionError::Record | SessionError::Failed => Cause::TlsRecord,
    }
}

impl From<SessionError> for StreamError {
    fn from(e: SessionError) -> Self {
        StreamError::Tls(e)
    }
}

/// A stream transport's protocol state, without I/O: the querier feeds it the bytes it read
/// from the socket and writes the bytes it has for the socket; it frames queries and hands back
/// whole DNS messages with their match key.
pub(crate) trait StreamProtocol {
    /// The session the protocol's bytes go through to the socket.
    type Session: StreamSession;

    /// The protocol's session.
    fn session(&self) -> &Self::Session;

    /// The protocol's session, to write to or end.
    fn session_mut(&mut self) -> &mut Self::Session;

    /// Whether answers are matched by DNS ID ([`MatchKey::Id`]): the querier then makes each
    /// query's ID unique on the connection before it is queued.
    fn matches_by_id(&self) -> bool;

    /// Frames a query (`wire`, a whole DNS message) for sending.
    fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError>;

    /// Turns the queries queued without a known end into output as far as the protocol can now
    /// (TLS: once the handshake is over), calling `sealed` with each one's end in the output
    /// stream, in the order they were queued.
    fn seal(&mut self, sealed: &mut impl FnMut(u64)) -> Result<(), StreamError> {
        let _ = sealed;
        Ok(())
    }

    /// The bytes waiting for the socket: its session's.
    #[inline]
    fn output(&self) -> &[u8] {
        self.session().output()
    }

    /// Forgets the first `n` bytes of [`output`](Self::output): the socket took them.
    #[inline]
    fn consume_output(&mut self, n: usize) {
        self.session_mut().consume_output(n)
    }

    /// Bytes the socket took over the connection's life.
    #[inline]
    fn written_total(&self) -> u64 {
        self.session().written_total()
    }

    /// Takes bytes read from the socket (which the protocol may decrypt in place), hands each
    /// DNS message completed by them to `message` with its key, and queues what it has to say
    /// in turn.
    fn received(
        &mut self,
        bytes: &mut [u8],
        message: &mut impl FnMut(MatchKey, &[u8]),
    ) -> Result<Received, StreamError>;

    /// The frame whose start has been received but not its end, if any: the length it declares
    /// and its bytes so far (TCP and TLS), for the querier to judge its header before the rest
    /// comes.
    fn pending_frame(&self) -> Option<(usize, &[u8])> {
        None
    }

    /// Hands over the queries that failed on their own since the last call (DoH: an HTTP
    /// status other than 200, a reset stream), each with its key and why.
    fn take_failures(&mut self, failed: &mut impl FnMut(MatchKey, Cause)) {
        let _ = failed;
    }

    /// Why the connection as a whole cannot go on (DoH: no HTTP/2, an HTTP/2 connection
    /// error), once; the querier then closes it.
    fn fatal(&mut self) -> Option<Cause> {
        None
    }

    /// Whether the session's handshake is still going on (queries wait for it).
    #[inline]
    fn is_handshaking(&self) -> bool {
        self.session().is_handshaking()
    }

    /// Whether the session resumed an earlier one (TLS), once its handshake is over.
    fn resumed(&self) -> bool {
        self.session().resumed()
    }

    /// Ends the session before the socket is closed (see [`StreamSession::close`]).
    fn close(&mut self) {
        self.session_mut().close()
    }
}

/// The session under a protocol, which its bytes go through to the socket: a TLS session
/// (DoT, DoH, lean or reference), or for plain TCP only the bytes waiting
/// ([`super::outgoing::Outgoing`]). The socket side's calls on a [`StreamProtocol`] go to it.
pub(crate) trait StreamSession {
    /// The bytes waiting for the socket.
    fn output(&self) -> &[u8];

    /// Forgets the first `n` bytes of [`output`](Self::output): the socket took them.
    fn consume_output(&mut self, n: usize);

    /// Bytes the socket took over the connection's life.
    fn written_total(&self) -> u64;

    /// Whether the handshake is still going on.
    fn is_handshaking(&self) -> bool;

    /// Whether the session resumed an earlier one, once its handshake is over.
    fn resumed(&self) -> bool;

    /// Ends the session before the socket is closed: TLS queues its close_notify; plain TCP
    /// drops what was not written (those queries fail with the connection).
    fn close(&mut self);
}

/// A TLS session, lean ([`ldplayer_stacks::tls::TlsSession`]) or reference
/// (`crate::reference::tls::RustlsSession`).
impl<S: TlsRecords> StreamSession for S {
    #[inline]
    fn output(&self) -> &[u8] {
        TlsRecords::output(self)
    }

    #[inline]
    fn consume_output(&mut self, n: usize) {
        TlsRecords::consume_output(self, n)
    }

    #[inline]
    fn written_total(&self) -> u64 {
        self.sent_total()
    }

    #[inline]
    fn is_handshaking(&self) -> bool {
        TlsRecords::is_handshaking(self)
    }

    fn resumed(&self) -> bool {
        self.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    fn close(&mut self) {
        TlsRecords::close(self)
    }
}

/// The protocol of one connection. An enum rather than a trait object: the querier calls it
/// for every query and every read, and the calls take closures.
pub(crate) enum StreamTransport {
    /// DNS over TCP.
    Tcp(TcpFraming),
    /// DNS over TLS.
    Tls(Box<TlsFraming>),
    /// DNS over HTTPS.
    Doh(Box<DohFraming>),
    /// DNS over TLS on the reference stack (rustls' `ClientConnection`).
    ReferenceTls(Box<TlsFraming<crate::reference::tls::RustlsSession>>),
    /// DNS over HTTPS on the reference stack (h2 over rustls).
    ReferenceDoh(Box<crate::reference::doh::H2Doh>),
}

impl Default for StreamTransport {
    /// An empty TCP framing, which allocates nothing: the placeholder while a connection's
    /// protocol is taken out to deliver its messages.
    fn default() -> Self {
        StreamTransport::Tcp(TcpFraming::default())
    }
}

/// Calls `$call` on the connection's protocol, whichever it is.
macro_rules! each {
    ($self:expr, $p:ident => $call:expr) => {
        match $self {
            StreamTransport::Tcp($p) => $call,
            StreamTransport::Tls($p) => $call,
            StreamTransport::Doh($p) => $call,
            StreamTransport::ReferenceTls($p) => $call,
            StreamTransport::ReferenceDoh($p) => $call,
        }
    };
}

/// The calls of [`StreamProtocol`] on whichever protocol the connection has. Inherent methods
/// rather than the trait's: the enum has no one session type to name.
impl StreamTransport {
    /// [`StreamProtocol::matches_by_id`].
    pub fn matches_by_id(&self) -> bool {
        each!(self, p => p.matches_by_id())
    }
    /// [`StreamProtocol::queue_query`].
    pub fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError> {
        each!(self, p => p.queue_query(wire))
    }
    /// [`StreamProtocol::seal`].
    pub fn seal(&mut self, sealed: &mut impl FnMut(u64)) -> Result<(), StreamError> {
        each!(self, p => p.seal(sealed))
    }
    /// [`StreamProtocol::output`].
    pub fn output(&self) -> &[u8] {
        each!(self, p => p.output())
    }
    /// [`StreamProtocol::consume_output`].
    pub fn consume_output(&mut self, n: usize) {
        each!(self, p => p.consume_output(n))
    }
    /// [`StreamProtocol::written_total`].
    pub fn written_total(&self) -> u64 {
        each!(self, p => p.written_total())
    }
    /// [`StreamProtocol::received`].
    pub fn received(
        &mut self,
        bytes: &mut [u8],
        message: &mut impl FnMut(MatchKey, &[u8]),
    ) -> Result<Received, StreamError> {
        each!(self, p => p.received(bytes, message))
    }
    /// [`StreamProtocol::pending_frame`].
    pub fn pending_frame(&self) -> Option<(usize, &[u8])> {
        each!(self, p => p.pending_frame())
    }
    /// [`StreamProtocol::take_failures`].
    pub fn take_failures(&mut self, failed: &mut impl FnMut(MatchKey, Cause)) {
        each!(self, p => p.take_failures(failed))
    }
    /// [`StreamProtocol::fatal`].
    pub fn fatal(&mut self) -> Option<Cause> {
        each!(self, p => p.fatal())
    }
    /// [`StreamProtocol::is_handshaking`].
    pub fn is_handshaking(&self) -> bool {
        each!(self, p => p.is_handshaking())
    }
    /// [`StreamProtocol::resumed`].
    pub fn resumed(&self) -> bool {
        each!(self, p => p.resumed())
    }
    /// [`StreamProtocol::close`].
    pub fn close(&mut self) {
        each!(self, p => p.close())
    }
}
