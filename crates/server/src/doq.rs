//! DNS over QUIC (RFC 9250): its settings, and the thread that serves it.
//!
//! Like DNS over HTTPS, the listeners run on one thread of their own with a single-threaded
//! tokio runtime, here driving `quinn` endpoints; they share the zones with the other threads,
//! and the thread's counters are written by that thread only. Each connection (TLS 1.3 inside
//! QUIC, ALPN `doq`) carries one query per bidirectional stream: the client sends the query
//! with a 2-byte length prefix and finishes its side, the server answers the same way and
//! finishes its own. Each stream is answered in a task of its own.
//!
//! RFC 9250 rules the server enforces: a query's message ID must be 0 (§4.2.1: otherwise the
//! connection is closed with `DOQ_PROTOCOL_ERROR`), a stream carries one message (more bytes
//! after it, a length that does not match, or a message shorter than a header: the stream is
//! reset with `DOQ_PROTOCOL_ERROR`). Answers are those of UDP and TCP (never truncated), from
//! the zones of the address the client sent to (split horizon).
//!
//! Clients may resume their sessions (tickets) and send 0-RTT queries; the server accepts them
//! (DNS queries are idempotent, RFC 9250 §4.5) and counts the connections that did.
//!
//! Bounds: at most [`DoqConfig::max_connections`] connections (more are refused), at most
//! [`DoqConfig::max_streams`] concurrent streams per connection (QUIC's stream credit), and a
//! connection idle for [`DoqConfig::idle_timeout`] is closed by QUIC's idle timeout.
//!
//! A connection offered while the cap is reached waits up to half a second for one to close
//! before it is refused. QUIC's idle timeout runs out on the client first: each side restarts
//! it on every packet it receives, and the server's last is the client's acknowledgement of
//! the last answer, sent up to its ACK delay (25 ms by default) after the client's own timer
//! restarted. A client that reconnects as soon as its idle connection times out therefore
//! finds the old one still open on the server for a few milliseconds; refused at once, it
//! would be turned away while the server is about to have room.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ldplayer_zone::{AnswerOptions, Views, ZoneSet};
use quinn::{Connection, RecvStream, SendStream, VarInt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::stats::{bump, Counters, Transport};
use crate::tls::TlsIdentity;
use crate::tokio_front::{self, OpenGuard};

/// The port DNS over QUIC is served on by convention (RFC 9250 §4.1.1).
pub const DOQ_PORT: u16 = 853;

/// The ALPN token of DNS over QUIC (RFC 9250 §4.1.1).
pub const DOQ_ALPN: &[u8] = b"doq";

/// RFC 9250 §4.3 error codes.
const DOQ_NO_ERROR: u32 = 0x0;
const DOQ_PROTOCOL_ERROR: u32 = 0x2;

/// The longest stream a query may take: the prefix and the longest DNS message.
const MAX_STREAM: usize = 2 + 65535;

/// The shortest message that can be a DNS query (a header).
const MIN_MESSAGE: usize = 12;

/// How long a stream may take to bring its whole query.
const STREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection offered at the cap waits for an open one to close before it is
/// refused: long enough for the server's idle timeout of a connection its client has just
/// timed out to follow the client's (its ACK delay and a round trip, a few milliseconds on
/// a LAN), short of a client's first retransmission of its Initial packet (about 1 s).
const CAP_WAIT: Duration = Duration::from_millis(500);

/// DNS over QUIC: where to listen, with which certificate, and its bounds.
#[derive(Debug, Clone)]
pub struct DoqConfig {
    /// UDP addresses to accept QUIC connections on. Port 0 picks a free port; see
    /// [`RunningServer::doq_local_addrs`](crate::RunningServer::doq_local_addrs).
    pub listen: Vec<SocketAddr>,
    /// The certificate chain and key the server presents.
    pub identity: TlsIdentity,
    /// Most connections open at once. One offered beyond waits up to half a second for an
    /// open one to close, then is refused.
    pub max_connections: usize,
    /// Most streams (queries in flight) per connection at once.
    pub max_streams: u32,
    /// A connection with no packet for this long is closed (QUIC's idle timeout).
    pub idle_timeout: Duration,
}

impl DoqConfig {
    /// Listens on `listen` with `identity`, with at most 1024 connections of at most 100
    /// concurrent streams each, closed after
    /// [`DEFAULT_TCP_IDLE_TIMEOUT`](crate::DEFAULT_TCP_IDLE_TIMEOUT) idle.
    pub fn new(listen: Vec<SocketAddr>, identity: TlsIdentity) -> DoqConfig {
        DoqConfig {
            listen,
            identity,
            max_connections: 1024,
            max_streams: 100,
            idle_timeout: crate::DEFAULT_TCP_IDLE_TIMEOUT,
        }
    }
}

/// What went wrong with a DoQ connection or stream, as counted in
/// [`DoqErrors`](crate::DoqErrors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DoqError {
    /// A query whose message ID is not 0: the connection is closed.
    NonzeroId,
    /// A stream that is not one whole message (shorter than a header, a wrong length, bytes
    /// after the message): the stream is reset.
    BadStream,
    /// A stream the client reset or did not finish in time.
    Incomplete,
    /// A connection whose handshake failed.
    Handshake,
    /// A connection refused for the cap.
    Refused,
}

/// How many kinds [`DoqError`] has.
pub(crate) const DOQ_ERROR_KINDS: usize = 5;

/// The QUIC server configuration: the DoT certificate, TLS 1.3 only (QUIC's), ALPN `doq`, 0-RTT
/// accepted, and the connection's bounds.
pub(crate) fn server_config(
    identity: &TlsIdentity,
    config: &DoqConfig,
    resumed: Arc<std::sync::atomic::AtomicU64>,
) -> Result<quinn::ServerConfig, crate::ServerError> {
    let tls = crate::tls::server_config(identity)?;
    let mut tls = (*tls).clone();
    tls.ticketer = Arc::new(NoTickets);
    tls.session_storage = Arc::new(CountingStore {
        inner: rustls::server::ServerSessionMemoryCache::new(SESSIONS_KEPT),
        resumed,
    });
    tls.alpn_protocols = vec![DOQ_ALPN.to_vec()];
    // Needed for 0-RTT (RFC 9001 §4.6.1: the value must be 0xffffffff for QUIC), with
    // stateful resumption.
    tls.max_early_data_size = u32::MAX;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| crate::ServerError::Tls(format!("DNS over QUIC: {e}")))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(config.max_streams))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(config.idle_timeout)
                .unwrap_or_else(|_| quinn::IdleTimeout::from(VarInt::from_u32(u32::MAX))),
        ));
    server.transport_config(Arc::new(transport));
    Ok(server)
}

/// What every connection task of the DoQ thread shares.
struct Shared {
    views: Arc<Views>,
    opts: AnswerOptions,
    counters: Arc<Counters>,
}

/// Queries to an address in no view are answered from no zones: REFUSED.
static NOTHING: std::sync::LazyLock<ZoneSet> = std::sync::LazyLock::new(ZoneSet::new);

/// Runs the DoQ listeners (bound UDP sockets) until `stop` is set; then every connection is
/// closed.
pub(crate) fn run(
    sockets: Vec<std::net::UdpSocket>,
    server: quinn::ServerConfig,
    config: &DoqConfig,
    views: Arc<Views>,
    opts: AnswerOptions,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let Some(runtime) = tokio_front::runtime("DNS over QUIC") else {
        return;
    };
    let shared = Arc::new(Shared {
        views,
        opts: AnswerOptions { tcp: true, ..opts },
        counters,
    });
    let open = Arc::new(AtomicUsize::new(0));
    // One permit per connection the cap allows, held by the connection's task until it ends.
    let slots = Arc::new(Semaphore::new(
        config.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    runtime.block_on(async move {
        let mut endpoints = Vec::new();
        for socket in sockets {
            let listen = socket.local_addr().ok();
            match quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                Some(server.clone()),
                socket,
                Arc::new(quinn::TokioRuntime),
            ) {
                Ok(endpoint) => {
                    let (shared, open, slots) = (shared.clone(), open.clone(), slots.clone());
                    endpoints.push(endpoint.clone());
                    tokio::spawn(accept_loop(endpoint, listen, shared, open, slots));
                }
                Err(e) => eprintln!("ldplayer-server: DNS over QUIC listener: {e}"),
            }
        }
        tokio_front::until_stopped(&stop).await;
        for e in &endpoints {
            e.close(VarInt::from_u32(DOQ_NO_ERROR), b"");
        }
    });
}

/// Accepts the connections of one endpoint: each takes one of the cap's `slots`, waiting up to
/// [`CAP_WAIT`] for one when none is free; refused if none frees by then.
async fn accept_loop(
    endpoint: quinn::Endpoint,
    listen: Option<SocketAddr>,
    shared: Arc<Shared>,
    open: Arc<AtomicUsize>,
    slots: Arc<Semaphore>,
) {
    while let Some(incoming) = endpoint.accept().await {
        bump(&shared.counters.doq_accepted);
        // The address the client sent to: reported per packet where the socket can (a
        // wildcard listener), else the listener's own.
        let dest = incoming
            .local_ip()
            .or_else(|| listen.map(|l| l.ip()).filter(|ip| !ip.is_unspecified()));
        let (shared, open) = (shared.clone(), open.clone());
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                let slot = Slot::new(permit, open, &shared);
                tokio::spawn(connection(incoming, dest, shared, slot));
            }
            // The waiters are bounded by quinn's own (`ServerConfig::max_incoming`, and the
            // bytes of their buffered packets), each for CAP_WAIT at most.
            Err(_) => {
                let slots = slots.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(CAP_WAIT, slots.acquire_owned()).await {
                        Ok(Ok(permit)) => {
                            let slot = Slot::new(permit, open, &shared);
                            connection(incoming, dest, shared, slot).await;
                        }
                        _ => {
                            bump(&shared.counters.doq_errors[DoqError::Refused as usize]);
                            incoming.refuse();
                        }
                    }
                });
            }
        }
    }
}

/// One connection's place under the cap: counted open (and in the gauge) and holding one
/// permit, until its task ends. quinn ends a connection's streams (`accept_bi` fails) as soon
/// as it is closed: at once for an idle timeout, when the close is received or sent otherwise
/// (its draining period does not wait for that), so the place is given back then.
struct Slot {
    // Dropped in this order: the count first, then the permit that a waiting connection takes.
    _open: OpenGuard,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    fn new(permit: OwnedSemaphorePermit, open: Arc<AtomicUsize>, shared: &Shared) -> Slot {
        Slot {
            _open: OpenGuard::new(open, shared.counters.clone(), Counters::doq_open),
            _permit: permit,
        }
    }
}

/// Serves one connection: its handshake (0-RTT queries are taken while it runs), then its
/// streams until it closes.
async fn connection(
    incoming: quinn::Incoming,
    dest: Option<IpAddr>,
    shared: Arc<Shared>,
    _slot: Slot,
) {
    let counters = &shared.counters;
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(_) => return bump(&counters.doq_errors[DoqError::Handshake as usize]),
    };
    // A server's conversion to 0.5-RTT always succeeds: streams the client opened in 0-RTT
    // are accepted before the handshake is over. The future completes when it is.
    let (conn, established) = match connecting.into_0rtt() {
        Ok(pair) => pair,
        Err(connecting) => match connecting.await {
            Ok(conn) => {
                bump(&counters.doq_handshakes);
                return serve_streams(conn, dest, shared.clone()).await;
            }
            Err(_) => return bump(&counters.doq_errors[DoqError::Handshake as usize]),
        },
    };
    let watch = conn.clone();
    let counters_h = shared.counters.clone();
    tokio::spawn(async move {
        established.await;
        // Done, or done and already closed by either side (a client may close as soon as its
        // 0-RTT answers are in); a transport error or a timeout means the handshake failed.
        match watch.close_reason() {
            None
            | Some(quinn::ConnectionError::ApplicationClosed(_))
            | Some(quinn::ConnectionError::LocallyClosed) => bump(&counters_h.doq_handshakes),
            Some(_) => bump(&counters_h.doq_errors[DoqError::Handshake as usize]),
        }
    });
    serve_streams(conn, dest, shared).await;
}

/// Answers the connection's streams until it closes.
async fn serve_streams(conn: Connection, dest: Option<IpAddr>, shared: Arc<Shared>) {
    loop {
        match conn.accept_bi().await {
            Ok((send, recv)) => {
                if recv.is_0rtt() {
                    bump(&shared.counters.doq_zero_rtt);
                }
                tokio::spawn(stream_task(send, recv, conn.clone(), shared.clone(), dest));
            }
            Err(quinn::ConnectionError::TimedOut) => {
                return bump(&shared.counters.doq_idle_closed);
            }
            Err(_) => return,
        }
    }
}

/// Sessions a DoQ connection may resume, kept by the server (rustls allows 0-RTT only with
/// such single-use, stateful tickets, not with self-contained ones).
const SESSIONS_KEPT: usize = 65_536;

/// The server's store of resumable sessions, counting the resumptions it grants (`take` finds
/// the session a ticket names): rustls tells no more about resumption through QUIC.
#[derive(Debug)]
struct CountingStore {
    inner: Arc<dyn rustls::server::StoresServerSessions>,
    resumed: Arc<std::sync::atomic::AtomicU64>,
}

impl rustls::server::StoresServerSessions for CountingStore {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.inner.put(key, value)
    }
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key)
    }
    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let value = self.inner.take(key);
        if value.is_some() {
            self.resumed.fetch_add(1, Ordering::Relaxed);
        }
        value
    }
    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}

/// No self-contained tickets: the stateful store above issues them.
#[derive(Debug)]
struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// Answers one stream: reads the query, answers it, or resets the stream (or closes the
/// connection) for a protocol error, counted.
async fn stream_task(
    mut send: SendStream,
    mut recv: RecvStream,
    conn: Connection,
    shared: Arc<Shared>,
    dest: Option<IpAddr>,
) {
    let counters = &shared.counters;
    let read = tokio::time::timeout(STREAM_TIMEOUT, recv.read_to_end(MAX_STREAM)).await;
    let stream = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(quinn::ReadToEndError::TooLong)) => {
            bump(&counters.doq_errors[DoqError::BadStream as usize]);
            let _ = recv.stop(VarInt::from_u32(DOQ_PROTOCOL_ERROR));
            let _ = send.reset(VarInt::from_u32(DOQ_PROTOCOL_ERROR));
            return;
        }
        // Reset by the client, the connection gone, or never finished.
        Ok(Err(_)) | Err(_) => {
            bump(&counters.doq_errors[DoqError::Incomplete as usize]);
            let _ = send.reset(VarInt::from_u32(DOQ_PROTOCOL_ERROR));
            return;
        }
    };
    let Some(query) = one_message(&stream) else {
        bump(&counters.doq_errors[DoqError::BadStream as usize]);
        let _ = send.reset(VarInt::from_u32(DOQ_PROTOCOL_ERROR));
        return;
    };
    if query[0] != 0 || query[1] != 0 {
        bump(&counters.doq_errors[DoqError::NonzeroId as usize]);
        conn.close(
            VarInt::from_u32(DOQ_PROTOCOL_ERROR),
            b"DNS over QUIC queries must have message ID 0",
        );
        return;
    }
    counters.query(query.len(), Transport::Doq);
    let zones = match shared.views.for_destination(dest) {
        Some(z) => z,
        None => {
            bump(&counters.no_view);
            &NOTHING
        }
    };
    let mut response = Vec::with_capacity(512);
    let Some(outcome) = zones.answer_into(query, &shared.opts, &mut response) else {
        // No answer is due (QR set): the stream was no query.
        bump(&counters.doq_errors[DoqError::BadStream as usize]);
        let _ = send.reset(VarInt::from_u32(DOQ_PROTOCOL_ERROR));
        return;
    };
    counters.response(&outcome, response.len(), Transport::Doq);
    let mut answer = Vec::with_capacity(2 + response.len());
    answer.extend_from_slice(&(response.len() as u16).to_be_bytes());
    answer.extend_from_slice(&response);
    if send.write_all(&answer).await.is_ok() {
        let _ = send.finish();
    }
}

/// The DNS message of a stream: a 2-byte length then exactly that many bytes, at least a
/// header; `None` otherwise.
fn one_message(stream: &[u8]) -> Option<&[u8]> {
    let (prefix, message) = stream.split_at_checked(2)?;
    let len = u16::from_be_bytes([prefix[0], prefix[1]]) as usize;
    (len == message.len() && len >= MIN_MESSAGE).then_some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_exactly_one_framed_message() {
        let mut q = vec![0, 12];
        q.extend_from_slice(&[0; 12]);
        assert_eq!(one_message(&q).map(<[u8]>::len), Some(12));
        let mut longer = q.clone();
        longer.push(0);
        assert_eq!(one_message(&longer), None);
        assert_eq!(one_message(&q[..10]), None);
        assert_eq!(one_message(&[0, 3, 1, 2, 3]), None);
        assert_eq!(one_message(&[0]), None);
    }
}
