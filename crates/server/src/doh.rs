//! DNS over HTTPS (RFC 8484) over HTTP/2: its settings, and the thread that serves it.
//!
//! The listeners run on one thread of their own with a single-threaded tokio runtime, apart from
//! the mio threads of UDP, TCP and DNS over TLS; they share the zones (the same `Arc<Views>`),
//! and the thread's counters are written by that thread only, like every other thread's. Each
//! connection is TLS (rustls, ALPN `h2` only) then an `h2` server connection whose streams are
//! answered in tasks of their own, so that one slow stream holds no other back.
//!
//! A request is answered from the zones of the address the client connected to (split horizon
//! as for TCP): `GET path?dns=BASE64URL` or `POST path` with `Content-Type:
//! application/dns-message`. What is not a DNS query gets an HTTP error and is counted by kind
//! ([`DohErrors`](crate::DohErrors)): another path 404, another method 405, another content type
//! 415, a body or `dns` parameter that is missing, not base64url or not a DNS query 400, a body
//! longer than a DNS message 413.
//!
//! Answers carry `Cache-Control: max-age` (RFC 8484 §5.1): the answer's smallest TTL, or its
//! negative caching time.
//!
//! Bounds: at most [`DohConfig::max_connections`] connections (more are closed on accept and
//! counted), [`DohConfig::max_streams`] concurrent streams per connection (HTTP/2's
//! `SETTINGS_MAX_CONCURRENT_STREAMS`; h2 refuses the excess streams), and a connection with no
//! new stream for [`DohConfig::idle_timeout`] (or a TLS/HTTP/2 handshake not done within it) is
//! closed.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use h2::server::SendResponse;
use h2::RecvStream;
use http::{header, Method, Request, Response, StatusCode};
use ldplayer_zone::{AnswerOptions, Views, ZoneSet};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::stats::{bump, Counters, Transport};
use crate::tls::TlsIdentity;
use crate::tokio_front::{self, OpenGuard};

/// The path DNS over HTTPS is served on unless told otherwise (RFC 8484's example URI template,
/// and what kdig, dnsperf and DNS Shotgun ask for by default).
pub const DEFAULT_DOH_PATH: &str = "/dns-query";

/// The port HTTPS is served on by convention.
pub const DOH_PORT: u16 = 443;

/// The media type of a DNS message in HTTP (RFC 8484 §6).
pub const DNS_MESSAGE: &str = "application/dns-message";

/// The longest DNS message a request may carry.
const MAX_MESSAGE: usize = 65535;

/// The most header bytes a request may have: room for a GET of the longest message in base64url
/// (87,380 characters) and the usual headers.
const MAX_HEADER_LIST: u32 = 128 * 1024;

/// The shortest message that can be a DNS query (a header).
const MIN_MESSAGE: usize = 12;

/// How long a connection closed for being idle may take to finish the streams it has.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// DNS over HTTPS: where to listen, with which certificate, on which path, and its bounds.
#[derive(Debug, Clone)]
pub struct DohConfig {
    /// Addresses to accept HTTPS connections on. Port 0 picks a free port; see
    /// [`RunningServer::doh_local_addrs`](crate::RunningServer::doh_local_addrs).
    pub listen: Vec<SocketAddr>,
    /// The certificate chain and key the server presents.
    pub identity: TlsIdentity,
    /// The path queries are sent to; any other path is answered 404.
    pub path: String,
    /// Most connections open at once; a connection beyond it is closed as soon as accepted.
    pub max_connections: usize,
    /// Most streams (queries in flight) per connection at once.
    pub max_streams: u32,
    /// A connection that opens no stream for this long is closed (gracefully: GOAWAY).
    pub idle_timeout: Duration,
}

impl DohConfig {
    /// Listens on `listen` with `identity`, on [`DEFAULT_DOH_PATH`], with at most 1024
    /// connections of at most 100 concurrent streams each, closed after
    /// [`DEFAULT_TCP_IDLE_TIMEOUT`](crate::DEFAULT_TCP_IDLE_TIMEOUT) idle.
    pub fn new(listen: Vec<SocketAddr>, identity: TlsIdentity) -> DohConfig {
        DohConfig {
            listen,
            identity,
            path: DEFAULT_DOH_PATH.to_string(),
            max_connections: 1024,
            max_streams: 100,
            idle_timeout: crate::DEFAULT_TCP_IDLE_TIMEOUT,
        }
    }
}

/// What every connection task of the DoH thread shares.
struct Shared {
    views: Arc<Views>,
    opts: AnswerOptions,
    path: String,
    max_streams: u32,
    idle_timeout: Duration,
    counters: Arc<Counters>,
}

/// Queries to an address in no view are answered from no zones: REFUSED.
static NOTHING: std::sync::LazyLock<ZoneSet> = std::sync::LazyLock::new(ZoneSet::new);

/// The rustls configuration of the DoH listeners: the DoT one with ALPN `h2` only, so that a
/// client offering only other protocols is refused in the handshake (RFC 8484 §5.2 requires
/// HTTP/2 or later).
pub(crate) fn server_config(
    identity: &TlsIdentity,
) -> Result<Arc<rustls::ServerConfig>, crate::ServerError> {
    let mut config = (*crate::tls::server_config(identity)?).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// Runs the DoH listeners until `stop` is set; then every connection is dropped.
pub(crate) fn run(
    listeners: Vec<std::net::TcpListener>,
    tls: Arc<rustls::ServerConfig>,
    config: &DohConfig,
    views: Arc<Views>,
    opts: AnswerOptions,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let Some(runtime) = tokio_front::runtime("DNS over HTTPS") else {
        return;
    };
    let shared = Arc::new(Shared {
        views,
        opts: AnswerOptions { tcp: true, ..opts },
        path: config.path.clone(),
        max_streams: config.max_streams,
        idle_timeout: config.idle_timeout,
        counters,
    });
    let acceptor = TlsAcceptor::from(tls);
    let open = Arc::new(AtomicUsize::new(0));
    let max_connections = config.max_connections;
    runtime.block_on(async move {
        for l in listeners {
            match TcpListener::from_std(l) {
                Ok(l) => {
                    let (acceptor, shared, open) = (acceptor.clone(), shared.clone(), open.clone());
                    tokio::spawn(accept_loop(l, acceptor, shared, open, max_connections));
                }
                Err(e) => eprintln!("ldplayer-server: DNS over HTTPS listener: {e}"),
            }
        }
        tokio_front::until_stopped(&stop).await;
    });
    // Dropping the runtime drops every task: the accept loops and the connections.
}

/// Accepts connections on one listener, closing those beyond `max_connections`.
async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    open: Arc<AtomicUsize>,
    max_connections: usize,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors or a connection aborted before accept: try again shortly.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        bump(&shared.counters.doh_accepted);
        if open.load(Ordering::Relaxed) >= max_connections {
            bump(&shared.counters.doh_errors[DohError::Refused as usize]);
            continue;
        }
        let guard = OpenGuard::new(open.clone(), shared.counters.clone(), Counters::doh_open);
        tokio::spawn(connection(stream, acceptor.clone(), shared.clone(), guard));
    }
}

/// Serves one connection: the TLS and HTTP/2 handshakes, then its streams until the client
/// closes it, an error, or the idle timeout.
async fn connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    _open: OpenGuard,
) {
    let counters = &shared.counters;
    let dest = stream.local_addr().ok().map(|a| a.ip());
    let _ = stream.set_nodelay(true);
    let idle = shared.idle_timeout;
    let tls = match tokio::time::timeout(idle, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(_)) => return bump(&counters.doh_errors[DohError::Tls as usize]),
        Err(_) => return bump(&counters.doh_idle_closed),
    };
    bump(&counters.doh_handshakes);
    if tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
        bump(&counters.doh_resumed);
    }
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(shared.max_streams)
        .max_header_list_size(MAX_HEADER_LIST)
        .handshake::<_, Bytes>(tls);
    let mut conn = match tokio::time::timeout(idle, handshake).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(_)) => return bump(&counters.doh_errors[DohError::Http as usize]),
        Err(_) => return bump(&counters.doh_idle_closed),
    };
    loop {
        match tokio::time::timeout(idle, conn.accept()).await {
            Ok(Some(Ok((request, respond)))) => {
                tokio::spawn(stream_task(request, respond, shared.clone(), dest));
            }
            Ok(Some(Err(e))) => {
                // The client going away or resetting is no error of its; a protocol error h2
                // found (and answered with a GOAWAY) is.
                if e.is_library() {
                    bump(&counters.doh_errors[DohError::Http as usize]);
                }
                return;
            }
            Ok(None) => return,
            Err(_) => {
                bump(&counters.doh_idle_closed);
                conn.graceful_shutdown();
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
                    while let Some(Ok(_)) = conn.accept().await {}
                })
                .await;
                return;
            }
        }
    }
}

/// Answers one stream: the DNS answer with 200, or an HTTP error status (counted).
async fn stream_task(
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    shared: Arc<Shared>,
    dest: Option<IpAddr>,
) {
    let counters = &shared.counters;
    let (status, body) = match query_of(request, &shared.path).await {
        Ok(query) => match answer(&query, &shared, dest) {
            Some(answer) => (StatusCode::OK, Some(answer)),
            None => {
                bump(&counters.doh_errors[DohError::BadRequest as usize]);
                (StatusCode::BAD_REQUEST, None)
            }
        },
        Err(status) => {
            bump(&counters.doh_errors[DohError::of(status) as usize]);
            (status, None)
        }
    };
    let mut response = Response::builder().status(status);
    if let Some(body) = &body {
        response = response
            .header(header::CONTENT_TYPE, DNS_MESSAGE)
            .header(header::CONTENT_LENGTH, body.len())
            .header(header::CACHE_CONTROL, format!("max-age={}", max_age(body)));
    } else if status == StatusCode::METHOD_NOT_ALLOWED {
        response = response.header(header::ALLOW, "GET, POST");
    }
    let Ok(response) = response.body(()) else {
        return;
    };
    let end_of_stream = body.is_none();
    // The client may have reset the stream meanwhile: nothing to do then.
    if let Ok(mut send) = respond.send_response(response, end_of_stream) {
        if let Some(body) = body {
            let _ = send.send_data(body, true);
        }
    }
}

/// The DNS query a request carries, or the status that refuses it.
async fn query_of(request: Request<RecvStream>, path: &str) -> Result<Vec<u8>, StatusCode> {
    if request.uri().path() != path {
        return Err(StatusCode::NOT_FOUND);
    }
    let method = request.method().clone();
    if method == Method::GET {
        let encoded = request
            .uri()
            .query()
            .unwrap_or("")
            .split('&')
            .find_map(|kv| kv.strip_prefix("dns="))
            .ok_or(StatusCode::BAD_REQUEST)?;
        // RFC 8484 §4.1: base64url without padding; padding is tolerated.
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let query = engine
            .decode(encoded)
            .map_err(|_| StatusCode::BAD_REQUEST)?;
        if query.len() > MAX_MESSAGE {
            return Err(StatusCode::URI_TOO_LONG);
        }
        Ok(query)
    } else if method == Method::POST {
        let media = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim());
        if !media.is_some_and(|m| m.eq_ignore_ascii_case(DNS_MESSAGE)) {
            return Err(StatusCode::UNSUPPORTED_MEDIA_TYPE);
        }
        read_body(request.into_body()).await
    } else {
        Err(StatusCode::METHOD_NOT_ALLOWED)
    }
}

/// Reads a POST body of at most one DNS message, releasing flow-control capacity as it goes.
async fn read_body(mut body: RecvStream) -> Result<Vec<u8>, StatusCode> {
    let mut query = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|_| StatusCode::BAD_REQUEST)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        if query.len() + chunk.len() > MAX_MESSAGE {
            return Err(StatusCode::PAYLOAD_TOO_LARGE);
        }
        query.extend_from_slice(&chunk);
    }
    Ok(query)
}

/// The answer to `query` from the zones of `dest`, counted; `None` when it is no DNS query
/// (shorter than a header, QR set).
fn answer(query: &[u8], shared: &Shared, dest: Option<IpAddr>) -> Option<Bytes> {
    let counters = &shared.counters;
    if query.len() < MIN_MESSAGE {
        return None;
    }
    counters.query(query.len(), Transport::Doh);
    let zones = match shared.views.for_destination(dest) {
        Some(z) => z,
        None => {
            bump(&counters.no_view);
            &NOTHING
        }
    };
    let mut resp = Vec::with_capacity(512);
    let outcome = zones.answer_into(query, &shared.opts, &mut resp)?;
    counters.response(&outcome, resp.len(), Transport::Doh);
    Some(Bytes::from(resp))
}

/// How long HTTP caches may keep an answer (RFC 8484 §5.1): the smallest TTL of its answer
/// section; for an answer without one (NXDOMAIN, NODATA), the negative caching time of its
/// authority SOA, the smaller of the record's TTL and its MINIMUM field (RFC 2308 §5);
/// for a referral, the smallest TTL of its authority records; 0 when it has none (REFUSED).
fn max_age(answer: &[u8]) -> u32 {
    use ldplayer_dns::{Message, Rtype, Section};
    let Ok(message) = Message::parse(answer) else {
        return 0;
    };
    let mut answers = None::<u32>;
    let mut negative = None::<u32>;
    let mut authority = None::<u32>;
    for rr in message.records() {
        match rr.section {
            Section::Answer => answers = Some(answers.map_or(rr.ttl, |t| t.min(rr.ttl))),
            Section::Authority if rr.rtype == Rtype::SOA => {
                let rdata = rr.rdata();
                let minimum = rdata.len().checked_sub(4).map_or(rr.ttl, |at| {
                    u32::from_be_bytes([rdata[at], rdata[at + 1], rdata[at + 2], rdata[at + 3]])
                });
                negative = Some(rr.ttl.min(minimum));
            }
            Section::Authority => authority = Some(authority.map_or(rr.ttl, |t| t.min(rr.ttl))),
            Section::Additional => {}
        }
    }
    answers.or(negative).or(authority).unwrap_or(0)
}

/// What went wrong with a DoH connection or request, as counted in
/// [`DohErrors`](crate::DohErrors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DohError {
    BadRequest,
    NotFound,
    MethodNotAllowed,
    TooLarge,
    UnsupportedMediaType,
    Tls,
    Http,
    Refused,
}

/// How many kinds [`DohError`] has.
pub(crate) const DOH_ERROR_KINDS: usize = 8;

impl DohError {
    /// The kind of an HTTP error status this module sends.
    fn of(status: StatusCode) -> DohError {
        match status {
            StatusCode::NOT_FOUND => DohError::NotFound,
            StatusCode::METHOD_NOT_ALLOWED => DohError::MethodNotAllowed,
            StatusCode::PAYLOAD_TOO_LARGE | StatusCode::URI_TOO_LONG => DohError::TooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => DohError::UnsupportedMediaType,
            _ => DohError::BadRequest,
        }
    }
}
