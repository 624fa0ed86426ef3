//! DNS over QUIC (RFC 9250) and DNS over HTTPS on HTTP/3 (RFC 9114) on the reference stack:
//! `quinn`, and `h3` with `h3-quinn`, on a tokio runtime of a thread beside the querier. It
//! takes the same [`DoqQuery`]s and tells the same [`DoqEvent`]s as the lean DoQ thread: one
//! connection and one UDP socket (a quinn endpoint, bound to the client's source address when
//! the replay gives it one) per client and transport, closed with its connection; one stream
//! per query (DoQ: ID 0, the 2-byte length, the stream finished); 0-RTT on a resumed session
//! when the client's profile allows it; each client's own session store.
//!
//! Send and answer times are user-space clock reads, as on the lean stack: a query is sent
//! when its stream is handed to quinn (after the handshake, or at once under 0-RTT), answered
//! when its whole answer has been read. quinn paces, probes and recovers from loss as it does
//! for any application (RFC 9002 with its default congestion controller, Cubic).

use crate::cause::Cause;
use crate::clock;
use crate::querier::doq::{Doq, DoqEvent, DoqQuery, DoqSetup, Teller};
use bytes::{Buf, Bytes};
use ldplayer_results::ErrorKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The largest DoQ response accepted: a 2-byte length and a DNS message.
const MAX_RESPONSE: usize = 2 + 65_535;
/// The largest DoH body accepted: a DNS message.
const MAX_BODY: usize = 65_535;

/// Starts the reference DoQ thread; `wake` wakes the querier when events are waiting.
pub(crate) fn start(setup: DoqSetup, wake: Arc<mio::Waker>) -> io::Result<Doq> {
    fixed_mmap_threshold();
    let (queries, rx) = crossbeam_channel::unbounded::<DoqQuery>();
    let (events_tx, events) = crossbeam_channel::unbounded();
    let notify = Arc::new(tokio::sync::Notify::new());
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (notified, stopping) = (notify.clone(), stop.clone());
    let thread = std::thread::Builder::new()
        .name("ldplayer-quinn".into())
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            let tell = Teller {
                tx: events_tx,
                wake,
            };
            local.block_on(&runtime, async move {
                let clients: Rc<RefCell<HashMap<u64, Rc<ClientConn>>>> = Rc::default();
                let setup = Rc::new(setup);
                loop {
                    while let Ok(q) = rx.try_recv() {
                        let key = u64::from(q.client) | u64::from(q.h3.is_some()) << 32;
                        let client = clients
                            .borrow_mut()
                            .entry(key)
                            .or_insert_with(|| Rc::new(ClientConn::default()))
                            .clone();
                        let (setup, tell) = (setup.clone(), tell.clone());
                        tokio::task::spawn_local(async move {
                            // The querier times the query out first; the task then gives up.
                            let limit = setup.query_timeout.saturating_add(Duration::from_secs(1));
                            let _ =
                                tokio::time::timeout(limit, query(&setup, &client, q, &tell)).await;
                        });
                    }
                    if stopping.load(Ordering::Acquire) && rx.is_empty() {
                        break;
                    }
                    notified.notified().await;
                }
                // Every connection closed with DOQ_NO_ERROR (H3_NO_ERROR), and the endpoints
                // given a moment to send it.
                let open: Vec<_> = clients.borrow().values().cloned().collect();
                for c in open {
                    if let Some(o) = c.state.try_lock().ok().and_then(|s| s.as_ref().cloned()) {
                        let code = if o.h3.is_some() { 0x100u32 } else { 0 };
                        o.conn.close(code.into(), b"");
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            });
            drop(local);
        })?;
    let wake_thread = move || notify.notify_one();
    Ok(Doq::from_parts(
        queries,
        Arc::new(wake_thread),
        stop,
        events,
        thread,
    ))
}

/// Keeps large allocations in their own mappings for the life of the process.
///
/// Each quinn endpoint (one per DoQ client) allocates a zeroed receive buffer of about 3 MB, of
/// which only the pages packets land in become resident. glibc raises its mmap threshold when
/// a mapped block is freed, so once the first clients' endpoints closed, later ones came from
/// the heap, zeroed page by page: 19,000 DoQ clients reconnecting after the server's idle
/// timeout grew the replay to 23.7 GB and the kernel killed it. Setting the threshold fixes it
/// (and turns the adjustment off).
fn fixed_mmap_threshold() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes the allocator's tunables; 256 KiB is within range.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
        }
    });
}

/// The HTTP/3 side of a connection: where requests go.
type H3Send = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One client's endpoint and connection (of one transport: DoQ, or DoH over HTTP/3).
#[derive(Default)]
struct ClientConn {
    /// Held while the connection is looked at or opened, so that a client's queries share it.
    state: tokio::sync::Mutex<Option<Open>>,
    /// The client's TLS configuration with its witness of full handshakes.
    tls: std::cell::OnceCell<(Arc<rustls::ClientConfig>, Option<Arc<Witness>>)>,
}

#[derive(Clone)]
struct Open {
    endpoint: quinn::Endpoint,
    conn: quinn::Connection,
    h3: Option<H3Send>,
    /// Packets lost already told to the querier.
    told_lost: Rc<std::cell::Cell<u64>>,
}

/// A connection ready for a query, and whether the query opened it.
struct Ready {
    open: Open,
    new: bool,
    handshake_ns: i64,
}

/// Sees whether a handshake verified the server's certificate (a full handshake) or resumed a
/// session (no certificate): quinn does not say which.
#[derive(Debug)]
struct Witness {
    inner: Arc<dyn ServerCertVerifier>,
    verified: AtomicU64,
}

impl ServerCertVerifier for Witness {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verified.fetch_add(1, Ordering::Relaxed);
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The client's connection, opened (with 0-RTT where it can) if it has none that is alive.
async fn connection(
    setup: &DoqSetup,
    client: &Rc<ClientConn>,
    q: &DoqQuery,
    tell: &Teller,
) -> Result<Ready, (ErrorKind, Cause)> {
    let mut state = client.state.lock().await;
    if let Some(open) = state.as_ref() {
        if open.conn.close_reason().is_none() {
            tell.tell(DoqEvent::Reused);
            return Ok(Ready {
                open: open.clone(),
                new: false,
                handshake_ns: 0,
            });
        }
    }
    let h3 = q.h3.is_some();
    let server = if h3 { setup.https_server } else { setup.server };
    let started = clock::now_ns();
    let endpoint = match state.take() {
        // A connection that ended before its watcher let the socket go: reuse the socket.
        Some(open) => open.endpoint,
        None => {
            let bind = match (q.local, server) {
                (Some(ip), _) => SocketAddr::new(ip, 0),
                (None, SocketAddr::V4(_)) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
                (None, SocketAddr::V6(_)) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
            };
            quinn::Endpoint::client(bind).map_err(|e| (ErrorKind::Send, Cause::Io(e)))?
        }
    };
    // The client's own configuration (its session store), with a witness of full handshakes:
    // made once per client, since rustls resumes only a session made with the same verifier.
    let (tls, witness) = client
        .tls
        .get_or_init(|| {
            let mut tls = (*q.tls).clone();
            let witness = setup.verifier.as_ref().map(|inner| {
                Arc::new(Witness {
                    inner: inner.clone(),
                    verified: AtomicU64::new(0),
                })
            });
            if let Some(w) = &witness {
                tls.dangerous().set_certificate_verifier(w.clone());
            }
            (Arc::new(tls), witness)
        })
        .clone();
    let verified_before = witness
        .as_ref()
        .map_or(0, |w| w.verified.load(Ordering::Relaxed));
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|_| (ErrorKind::Tls, Cause::Quic("quic-tls-config")))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(q.idle_timeout.try_into().ok());
    if !h3 {
        // A DoQ server opens no streams (RFC 9250 §4.2).
        transport
            .max_concurrent_bidi_streams(0u8.into())
            .max_concurrent_uni_streams(0u8.into());
    }
    config.transport_config(Arc::new(transport));
    let name = setup.server_name.as_str();
    let connecting = endpoint
        .connect_with(config, server, name)
        .map_err(|e| (ErrorKind::Send, Cause::Quic(connect_key(&e))))?;
    let resumed = move |w: &Option<Arc<Witness>>| {
        w.as_ref()
            .is_some_and(|w| w.verified.load(Ordering::Relaxed) == verified_before)
    };
    let (conn, zero_rtt) = if q.zero_rtt {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => {
                let (tell, witness) = (tell.clone(), witness.clone());
                tokio::task::spawn_local(async move {
                    let accepted = accepted.await;
                    tell.tell(DoqEvent::Handshake {
                        resumed: resumed(&witness),
                        zero_rtt_accepted: Some(accepted),
                    });
                });
                (conn, true)
            }
            Err(connecting) => {
                let conn = connecting.await.map_err(|e| connection_failure(&e))?;
                tell.tell(DoqEvent::Handshake {
                    resumed: resumed(&witness),
                    zero_rtt_accepted: None,
                });
                (conn, false)
            }
        }
    } else {
        let conn = connecting.await.map_err(|e| connection_failure(&e))?;
        tell.tell(DoqEvent::Handshake {
            resumed: resumed(&witness),
            zero_rtt_accepted: None,
        });
        (conn, false)
    };
    tell.tell(DoqEvent::Opened { zero_rtt });
    let handshake_ns = if zero_rtt {
        0
    } else {
        (clock::now_ns() - started).max(1)
    };
    let h3 = if h3 {
        // No GREASE (RFC 9114 §7.2.8, §6.2.3, which h3 sends by default): aioquic's HTTP/3
        // server (dnspython's DoH3 stack) then read no request at all, and every query of the
        // connection timed out.
        let (mut driver, send) = h3::client::builder()
            .send_grease(false)
            .build(h3_quinn::Connection::new(conn.clone()))
            .await
            .map_err(|_| (ErrorKind::Http, Cause::Http3("h3-connection-error")))?;
        // The HTTP/3 connection's own streams (control, QPACK) are driven beside the requests.
        tokio::task::spawn_local(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Some(send)
    } else {
        None
    };
    let open = Open {
        endpoint,
        conn: conn.clone(),
        h3,
        told_lost: Rc::default(),
    };
    *state = Some(open.clone());
    // When the connection ends (an idle timeout, most often), its socket goes with it: open
    // sockets stay bounded by live connections, whatever the number of clients in the trace.
    let (watched, owner, tell_end, told) = (
        conn.clone(),
        client.clone(),
        tell.clone(),
        open.told_lost.clone(),
    );
    tokio::task::spawn_local(async move {
        watched.closed().await;
        tell_lost(&watched, &told, &tell_end);
        let mut state = owner.state.lock().await;
        if state
            .as_ref()
            .is_some_and(|open| open.conn.stable_id() == watched.stable_id())
        {
            *state = None;
        }
    });
    Ok(Ready {
        open,
        new: true,
        handshake_ns,
    })
}

/// Tells the querier the packets the connection declared lost since it last did.
fn tell_lost(conn: &quinn::Connection, told: &std::cell::Cell<u64>, tell: &Teller) {
    let lost = conn.stats().path.lost_packets;
    if lost > told.get() {
        tell.tell(DoqEvent::Lost {
            packets: lost - told.get(),
        });
        told.set(lost);
    }
}

/// One query: its connection, a stream, the answer.
async fn query(setup: &DoqSetup, client: &Rc<ClientConn>, q: DoqQuery, tell: &Teller) {
    let (slot, gen) = (q.slot, q.gen);
    let fail = |(kind, cause): (ErrorKind, Cause)| {
        tell.tell(DoqEvent::Failed {
            slot,
            gen,
            kind,
            cause,
        })
    };
    let ready = match connection(setup, client, &q, tell).await {
        Ok(r) => r,
        Err(f) => return fail(f),
    };
    let sent = |at| {
        tell.tell(DoqEvent::Sent {
            slot,
            gen,
            at,
            new_connection: ready.new,
            handshake_ns: ready.handshake_ns,
        })
    };
    let outcome = match (&ready.open.h3, &q.h3) {
        (Some(send), Some(how)) => {
            doh3(send.clone(), setup, how.get, &how.path, &q.wire, sent).await
        }
        _ => doq(&ready.open.conn, &q.wire, sent).await,
    };
    tell_lost(&ready.open.conn, &ready.open.told_lost, tell);
    match outcome {
        Ok(msg) => tell.tell(DoqEvent::Answer {
            slot,
            gen,
            at: clock::now_ns(),
            msg,
        }),
        Err(f) => fail(f),
    }
}

/// A DoQ exchange: the query on a stream of its own, the answer read to the stream's end. A
/// query whose 0-RTT data the server rejected is sent again, once, in 1-RTT.
async fn doq(
    conn: &quinn::Connection,
    wire: &[u8],
    sent: impl Fn(i64),
) -> Result<Vec<u8>, (ErrorKind, Cause)> {
    let mut framed = Vec::with_capacity(2 + wire.len());
    framed.extend_from_slice(&(wire.len() as u16).to_be_bytes());
    framed.extend_from_slice(wire);
    // RFC 9250 §4.2.1: the DNS ID is 0 on DoQ.
    if framed.len() >= 4 {
        framed[2..4].copy_from_slice(&[0, 0]);
    }
    let quic = |key| (ErrorKind::Quic, Cause::Quic(key));
    for attempt in 0..2 {
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| connection_failure(&e))?;
        let at = clock::now_ns();
        match send.write_all(&framed).await {
            Ok(()) => {}
            Err(quinn::WriteError::ZeroRttRejected) if attempt == 0 => continue,
            Err(quinn::WriteError::ConnectionLost(e)) => return Err(connection_failure(&e)),
            Err(_) => return Err(quic("quic-stream-stopped")),
        }
        let _ = send.finish();
        if attempt == 0 {
            sent(at);
        }
        let answer = match recv.read_to_end(MAX_RESPONSE).await {
            Ok(a) => a,
            Err(quinn::ReadToEndError::TooLong) => return Err(quic("quic-response-too-long")),
            Err(quinn::ReadToEndError::Read(e)) => match e {
                quinn::ReadError::ZeroRttRejected if attempt == 0 => continue,
                quinn::ReadError::Reset(_) => return Err(quic("quic-stream-reset")),
                quinn::ReadError::ConnectionLost(e) => return Err(connection_failure(&e)),
                _ => return Err(quic("quic-stream-error")),
            },
        };
        // One message: its length, then the message, and nothing after.
        return match answer.as_slice() {
            [a, b, msg @ ..] if usize::from(u16::from_be_bytes([*a, *b])) == msg.len() => {
                Ok(msg.to_vec())
            }
            _ => Err(quic("quic-bad-response")),
        };
    }
    Err(quic("quic-0rtt-rejected"))
}

/// A DoH exchange over HTTP/3 (RFC 8484 §4.1: DNS ID 0), POST or GET.
async fn doh3(
    mut send: H3Send,
    setup: &DoqSetup,
    get: bool,
    path: &str,
    wire: &[u8],
    sent: impl Fn(i64),
) -> Result<Vec<u8>, (ErrorKind, Cause)> {
    use base64::Engine as _;
    const DNS_MESSAGE: &str = "application/dns-message";
    let mut msg = wire.to_vec();
    if msg.len() >= 2 {
        msg[..2].copy_from_slice(&[0, 0]);
    }
    let authority = &setup.authority;
    let request = if get {
        let dns = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&msg);
        let sep = if path.contains('?') { '&' } else { '?' };
        http::Request::get(format!("https://{authority}{path}{sep}dns={dns}"))
            .header(http::header::ACCEPT, DNS_MESSAGE)
            .body(())
    } else {
        http::Request::post(format!("https://{authority}{path}"))
            .header(http::header::ACCEPT, DNS_MESSAGE)
            .header(http::header::CONTENT_TYPE, DNS_MESSAGE)
            .header(http::header::CONTENT_LENGTH, msg.len())
            .body(())
    }
    .map_err(|_| (ErrorKind::BadQuery, Cause::Unframeable))?;
    let h3 = |e: h3::error::StreamError| (ErrorKind::Http, Cause::Http3(h3_key(&e)));
    let at = clock::now_ns();
    let mut stream = send.send_request(request).await.map_err(h3)?;
    if !get {
        stream.send_data(Bytes::from(msg)).await.map_err(h3)?;
    }
    stream.finish().await.map_err(h3)?;
    sent(at);
    let response = stream.recv_response().await.map_err(h3)?;
    let status = response.status().as_u16();
    if status != 200 {
        return Err((ErrorKind::Http, Cause::HttpStatus(status)));
    }
    let dns = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| ldplayer_stacks::doh::is_dns_message(v.as_bytes()));
    if !dns {
        return Err((ErrorKind::Http, Cause::NotDnsContent));
    }
    let mut body = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.map_err(h3)? {
        while chunk.has_remaining() {
            let c = chunk.chunk();
            if body.len() + c.len() > MAX_BODY {
                return Err((ErrorKind::Http, Cause::Http3("h3-body-too-large")));
            }
            body.extend_from_slice(c);
            let n = c.len();
            chunk.advance(n);
        }
    }
    if body.len() < ldplayer_dns::HEADER_LEN {
        return Err((ErrorKind::Http, Cause::NotDnsContent));
    }
    Ok(body)
}

/// How an HTTP/3 request failed, as a stable key.
fn h3_key(e: &h3::error::StreamError) -> &'static str {
    use h3::error::StreamError as E;
    match e {
        E::StreamError { .. } => "h3-stream-error",
        E::RemoteTerminate { .. } => "h3-stream-reset",
        E::ConnectionError { .. } => "h3-connection-error",
        E::HeaderTooBig { .. } => "h3-header-too-big",
        E::RemoteClosing { .. } => "h3-goaway",
        _ => "h3-error",
    }
}

/// The kind and cause of a query on a connection that failed.
fn connection_failure(e: &quinn::ConnectionError) -> (ErrorKind, Cause) {
    use quinn::ConnectionError as E;
    let key = match e {
        // A TLS alert (certificate refused, no common ALPN...) is a TLS failure.
        E::TransportError(t) if (0x100..0x200).contains(&u64::from(t.code)) => {
            return (ErrorKind::Tls, Cause::Quic("quic-tls-alert"))
        }
        E::TransportError(_) => "quic-protocol-violation",
        E::VersionMismatch => "quic-version-mismatch",
        E::ConnectionClosed(_) | E::ApplicationClosed(_) => "quic-closed-by-server",
        E::Reset => "quic-reset",
        E::TimedOut => "quic-timed-out",
        E::LocallyClosed => "quic-closed-by-replay",
        E::CidsExhausted => "quic-cids-exhausted",
    };
    (ErrorKind::Quic, Cause::Quic(key))
}

fn connect_key(e: &quinn::ConnectError) -> &'static str {
    match e {
        quinn::ConnectError::InvalidServerName(_) => "quic-invalid-server-name",
        quinn::ConnectError::InvalidRemoteAddress(_) => "quic-invalid-address",
        quinn::ConnectError::EndpointStopping => "quic-endpoint-stopping",
        _ => "quic-connect-error",
    }
}
