//! DNS over QUIC (RFC 9250) with quinn: one connection per original client, one bidirectional
//! stream per query (DNS ID 0, the 2-byte length prefix, then the stream finished), 0-RTT on a
//! resumed session when the server allows it.
//!
//! quinn runs on a tokio runtime of its own thread beside each querier that has DoQ clients
//! ([`Doq`]): the querier hands it queries and takes back [`DoqEvent`]s (sent, answered,
//! failed, connections), woken through its poll's waker. The querier keeps what it keeps for
//! every transport (the in-flight table, timeouts, results); the send and answer times are the
//! clock read just before the query's stream is written and as soon as its answer is complete
//! (QUIC's packets are quinn's own, so the kernel's stamps cannot be tied to a query).
//!
//! Each client has its own UDP socket (a quinn endpoint bound to the client's source address
//! when the replay gives it one), closed with its connection, so the server sees the clients
//! apart, and its own TLS session store, so resumption and 0-RTT are per client.

use crate::cause::Cause;
use crate::clock;
use ldplayer_results::ErrorKind;
use rustls::ClientConfig;
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// The largest DoQ response accepted: a 2-byte length and a DNS message.
const MAX_RESPONSE: usize = 2 + 65_535;

/// A query for the DoQ thread.
pub(super) struct DoqQuery {
    pub slot: u32,
    pub gen: u32,
    pub client: u32,
    /// The client's source address, if the replay gives it one.
    pub local: Option<IpAddr>,
    /// The client's TLS configuration (ALPN `doq`, its own session store).
    pub tls: Arc<ClientConfig>,
    /// Whether the client sends 0-RTT on a resumed session.
    pub zero_rtt: bool,
    /// How long the client's connection may stay idle.
    pub idle_timeout: Duration,
    /// The whole DNS message.
    pub wire: Vec<u8>,
}

/// What the DoQ thread tells the querier.
pub(super) enum DoqEvent {
    /// A query's stream was written (`at`, realtime ns); `handshake_ns` for a query that
    /// opened its connection (the time to a connection ready for it: 0 under 0-RTT).
    Sent {
        slot: u32,
        gen: u32,
        at: i64,
        new_connection: bool,
        handshake_ns: i64,
    },
    /// A query's whole answer came at `at`.
    Answer {
        slot: u32,
        gen: u32,
        at: i64,
        msg: Vec<u8>,
    },
    /// A query failed.
    Failed {
        slot: u32,
        gen: u32,
        kind: ErrorKind,
        cause: Cause,
    },
    /// A connection was opened (`zero_rtt`: its first queries went in 0-RTT).
    Opened { zero_rtt: bool },
    /// A connection's handshake ended: whether the server accepted its 0-RTT data (`None`
    /// without 0-RTT).
    Handshake { zero_rtt_accepted: Option<bool> },
    /// A query went on an open connection.
    Reused,
}

/// The DoQ side of one querier: the thread that runs quinn.
pub(super) struct Doq {
    queries: tokio::sync::mpsc::UnboundedSender<DoqQuery>,
    pub events: crossbeam_channel::Receiver<DoqEvent>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the DoQ thread connects.
#[derive(Clone)]
pub(super) struct DoqSetup {
    pub server: SocketAddr,
    pub server_name: String,
    /// How long a query may take before its task gives up (the querier times it out first).
    pub query_timeout: Duration,
}

impl Doq {
    /// Starts the thread; `wake` wakes the querier when events are waiting.
    pub fn start(setup: DoqSetup, wake: Arc<mio::Waker>) -> std::io::Result<Doq> {
        fixed_mmap_threshold();
        let (queries, mut rx) = tokio::sync::mpsc::unbounded_channel::<DoqQuery>();
        let (events_tx, events) = crossbeam_channel::unbounded();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("ldplayer-doq".into())
            .spawn(move || {
                let local = tokio::task::LocalSet::new();
                let clients: Rc<RefCell<HashMap<u32, Rc<ClientConn>>>> = Rc::default();
                let tell = Teller {
                    tx: events_tx,
                    wake,
                };
                local.block_on(&runtime, async move {
                    while let Some(q) = rx.recv().await {
                        let client = clients
                            .borrow_mut()
                            .entry(q.client)
                            .or_insert_with(|| Rc::new(ClientConn::default()))
                            .clone();
                        let (setup, tell) = (setup.clone(), tell.clone());
                        tokio::task::spawn_local(async move {
                            let (slot, gen) = (q.slot, q.gen);
                            let limit = setup.query_timeout + Duration::from_secs(1);
                            let done =
                                tokio::time::timeout(limit, query(&setup, &client, q, &tell));
                            if done.await.is_err() {
                                // The querier has timed it out already; nothing to tell.
                                let _ = (slot, gen);
                            }
                        });
                    }
                });
                drop(local);
            })?;
        Ok(Doq {
            queries,
            events,
            thread: Some(thread),
        })
    }

    /// Hands a query to the DoQ thread; false if the thread is gone.
    pub fn send(&self, q: DoqQuery) -> bool {
        self.queries.send(q).is_ok()
    }
}

impl Drop for Doq {
    /// Ends the thread: no more queries, the tasks left are dropped with the runtime.
    fn drop(&mut self) {
        let (closed, _) = tokio::sync::mpsc::unbounded_channel();
        self.queries = closed;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Keeps large allocations in their own mappings for the life of the process.
///
/// Each quinn endpoint (one per DoQ client) allocates a zeroed receive buffer of about 3 MB, of
/// which only the pages packets land in become resident. glibc raises its mmap threshold when
/// a mapped block is freed, so once the first clients' endpoints closed, later ones came from
/// the heap, zeroed page by page: 19,000 DoQ clients reconnecting after the server's idle
/// timeout grew the replay to 23.7 GB and the kernel killed it (bench/encrypted.sh doq-idle).
/// Setting the threshold fixes it (and turns the adjustment off).
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

/// Sends events to the querier and wakes it.
#[derive(Clone)]
struct Teller {
    tx: crossbeam_channel::Sender<DoqEvent>,
    wake: Arc<mio::Waker>,
}

impl Teller {
    fn tell(&self, e: DoqEvent) {
        if self.tx.send(e).is_ok() {
            let _ = self.wake.wake();
        }
    }
}

/// One client's endpoint and connection.
#[derive(Default)]
struct ClientConn {
    /// Held while the connection is looked at or opened, so that a client's queries share it.
    state: tokio::sync::Mutex<Option<Open>>,
}

struct Open {
    endpoint: quinn::Endpoint,
    conn: quinn::Connection,
}

/// A connection ready for a query, and whether the query opened it.
struct Ready {
    conn: quinn::Connection,
    new: bool,
    handshake_ns: i64,
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
                conn: open.conn.clone(),
                new: false,
                handshake_ns: 0,
            });
        }
    }
    let started = clock::now_ns();
    let endpoint = match state.take() {
        // A connection that ended before its watcher let the socket go: reuse the socket.
        Some(open) => open.endpoint,
        None => {
            let bind = match (q.local, setup.server) {
                (Some(ip), _) => SocketAddr::new(ip, 0),
                (None, SocketAddr::V4(_)) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0),
                (None, SocketAddr::V6(_)) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 0),
            };
            quinn::Endpoint::client(bind).map_err(|e| (ErrorKind::Send, Cause::Io(e)))?
        }
    };
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(q.tls.clone())
        .map_err(|_| (ErrorKind::Tls, Cause::Quic("quic-tls-config")))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(q.idle_timeout.try_into().ok());
    // A DoQ server opens no streams (RFC 9250 §4.2): allowing none keeps quinn from setting
    // up state for 100 of each kind per connection, 8.6 KB of an idle session's 50 KB
    // (heaptrack, bench/encrypted.sh doq-idle).
    transport
        .max_concurrent_bidi_streams(0u8.into())
        .max_concurrent_uni_streams(0u8.into());
    config.transport_config(Arc::new(transport));
    let connecting = endpoint
        .connect_with(config, setup.server, &setup.server_name)
        .map_err(|e| (ErrorKind::Send, Cause::Quic(connect_key(&e))))?;
    let handshake_done = |conn| {
        tell.tell(DoqEvent::Handshake {
            zero_rtt_accepted: None,
        });
        conn
    };
    let (conn, zero_rtt) = if q.zero_rtt {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => {
                let tell = tell.clone();
                tokio::task::spawn_local(async move {
                    let accepted = accepted.await;
                    tell.tell(DoqEvent::Handshake {
                        zero_rtt_accepted: Some(accepted),
                    });
                });
                (conn, true)
            }
            Err(connecting) => {
                let conn = connecting.await.map_err(|e| connection_failure(&e))?;
                (handshake_done(conn), false)
            }
        }
    } else {
        let conn = connecting.await.map_err(|e| connection_failure(&e))?;
        (handshake_done(conn), false)
    };
    tell.tell(DoqEvent::Opened { zero_rtt });
    let handshake_ns = if zero_rtt {
        0
    } else {
        (clock::now_ns() - started).max(1)
    };
    *state = Some(Open {
        endpoint,
        conn: conn.clone(),
    });
    // When the connection ends (an idle timeout, most often), its socket goes with it: open
    // sockets stay bounded by live connections, whatever the number of clients in the trace.
    let (watched, owner) = (conn.clone(), client.clone());
    tokio::task::spawn_local(async move {
        watched.closed().await;
        let mut state = owner.state.lock().await;
        if state
            .as_ref()
            .is_some_and(|open| open.conn.stable_id() == watched.stable_id())
        {
            *state = None;
        }
    });
    Ok(Ready {
        conn,
        new: true,
        handshake_ns,
    })
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
    let mut framed = Vec::with_capacity(2 + q.wire.len());
    framed.extend_from_slice(&(q.wire.len() as u16).to_be_bytes());
    framed.extend_from_slice(&q.wire);
    // RFC 9250 §4.2.1: the DNS ID is 0 on DoQ.
    framed[2..4].copy_from_slice(&[0, 0]);
    // A query whose 0-RTT data the server rejected is sent again, once, in 1-RTT.
    for attempt in 0..2 {
        match exchange(&ready, &framed, slot, gen, tell, attempt == 0).await {
            Ok(()) => return,
            Err(Exchange::ZeroRttRejected) if attempt == 0 => continue,
            Err(Exchange::ZeroRttRejected) => {
                return fail((ErrorKind::Quic, Cause::Quic("quic-0rtt-rejected")))
            }
            Err(Exchange::Failed(kind, cause)) => return fail((kind, cause)),
        }
    }
}

enum Exchange {
    ZeroRttRejected,
    Failed(ErrorKind, Cause),
}

/// Opens a stream, writes the query, reads the answer.
async fn exchange(
    ready: &Ready,
    framed: &[u8],
    slot: u32,
    gen: u32,
    tell: &Teller,
    first: bool,
) -> Result<(), Exchange> {
    let (mut send, mut recv) = ready
        .conn
        .open_bi()
        .await
        .map_err(|e| failed_connection(&e))?;
    let at = clock::now_ns();
    match send.write_all(framed).await {
        Ok(()) => {}
        Err(quinn::WriteError::ZeroRttRejected) => return Err(Exchange::ZeroRttRejected),
        Err(quinn::WriteError::ConnectionLost(e)) => return Err(failed_connection(&e)),
        Err(_) => {
            return Err(Exchange::Failed(
                ErrorKind::Quic,
                Cause::Quic("quic-stream-stopped"),
            ))
        }
    }
    let _ = send.finish();
    if first {
        tell.tell(DoqEvent::Sent {
            slot,
            gen,
            at,
            new_connection: ready.new,
            handshake_ns: ready.handshake_ns,
        });
    }
    let answer = match recv.read_to_end(MAX_RESPONSE).await {
        Ok(a) => a,
        Err(quinn::ReadToEndError::TooLong) => {
            return Err(Exchange::Failed(
                ErrorKind::Quic,
                Cause::Quic("quic-response-too-long"),
            ))
        }
        Err(quinn::ReadToEndError::Read(e)) => {
            return Err(match e {
                quinn::ReadError::ZeroRttRejected => Exchange::ZeroRttRejected,
                quinn::ReadError::Reset(_) => {
                    Exchange::Failed(ErrorKind::Quic, Cause::Quic("quic-stream-reset"))
                }
                quinn::ReadError::ConnectionLost(e) => failed_connection(&e),
                _ => Exchange::Failed(ErrorKind::Quic, Cause::Quic("quic-stream-error")),
            })
        }
    };
    let at = clock::now_ns();
    // One message: its length, then the message, and nothing after.
    match answer.as_slice() {
        [a, b, msg @ ..] if usize::from(u16::from_be_bytes([*a, *b])) == msg.len() => {
            tell.tell(DoqEvent::Answer {
                slot,
                gen,
                at,
                msg: msg.to_vec(),
            });
            Ok(())
        }
        _ => Err(Exchange::Failed(
            ErrorKind::Quic,
            Cause::Quic("quic-bad-response"),
        )),
    }
}

fn failed_connection(e: &quinn::ConnectionError) -> Exchange {
    let (kind, cause) = connection_failure(e);
    Exchange::Failed(kind, cause)
}

/// The kind and cause of a query on a connection that failed.
fn connection_failure(e: &quinn::ConnectionError) -> (ErrorKind, Cause) {
    use quinn::ConnectionError as E;
    match e {
        // A TLS alert (certificate refused, no common ALPN...) is a TLS failure.
        E::TransportError(t) if is_crypto(t.code) => {
            (ErrorKind::Tls, Cause::Quic("quic-tls-alert"))
        }
        E::TransportError(_) => (ErrorKind::Quic, Cause::Quic("quic-transport-error")),
        E::VersionMismatch => (ErrorKind::Quic, Cause::Quic("quic-version-mismatch")),
        E::ConnectionClosed(_) => (ErrorKind::Quic, Cause::Quic("quic-closed-by-server")),
        E::ApplicationClosed(_) => (ErrorKind::Quic, Cause::Quic("quic-closed-by-server")),
        E::Reset => (ErrorKind::Quic, Cause::Quic("quic-reset")),
        E::TimedOut => (ErrorKind::Quic, Cause::Quic("quic-timed-out")),
        E::LocallyClosed => (ErrorKind::Quic, Cause::Quic("quic-closed-by-replay")),
        E::CidsExhausted => (ErrorKind::Quic, Cause::Quic("quic-cids-exhausted")),
    }
}

/// Whether a transport error carries a TLS alert (codes 0x0100–0x01ff, RFC 9001 §4.8).
fn is_crypto(code: quinn::TransportErrorCode) -> bool {
    (0x100..0x200).contains(&u64::from(code))
}

fn connect_key(e: &quinn::ConnectError) -> &'static str {
    match e {
        quinn::ConnectError::InvalidServerName(_) => "quic-invalid-server-name",
        quinn::ConnectError::InvalidRemoteAddress(_) => "quic-invalid-address",
        quinn::ConnectError::EndpointStopping => "quic-endpoint-stopping",
        _ => "quic-connect-error",
    }
}
