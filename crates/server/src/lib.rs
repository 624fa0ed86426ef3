//! The network front of ldplayer's authoritative "meta" DNS server: in plain mode every zone of
//! a [`ZoneSet`](ldplayer_zone::ZoneSet) answered on the same listen address(es); in split mode
//! ([`Views`] by nameserver address) each query answered from the zones of the address it was
//! sent to, learnt with `IP_PKTINFO`/`IPV6_PKTINFO` (UDP) or `getsockname` (TCP), the answer
//! leaving from that address, and a query to any other address refused. Bound to a wildcard
//! address inside a network namespace where every address is local (`ip route add local
//! 0.0.0.0/0 dev lo`), one server then stands in for every nameserver of a hierarchy.
//!
//! * **UDP**: per listen address, [`ServerConfig::udp_workers`] threads, each with its own socket
//!   bound with `SO_REUSEPORT` to the same address (the kernel spreads clients over them). A
//!   worker receives up to 32 datagrams with one `recvmmsg`, answers each into a reusable
//!   per-slot buffer with [`ZoneSet::answer_into`](ldplayer_zone::ZoneSet::answer_into) (which
//!   honours the client's EDNS size and truncates like nsd) and sends all answers with one
//!   `sendmmsg`. Nothing is allocated per
//!   query. Queries that get no reply (shorter than a header, QR set, longer than 4096 bytes)
//!   are counted in [`ServerStats::dropped`].
//! * **TCP** ([`ServerConfig::tcp`]): one thread with a mio event loop over all listeners: 2-byte
//!   length framing, any number of pipelined queries per connection answered in order, partial
//!   reads and writes, an idle timeout, a connection cap (the least recently active connection
//!   is closed to make room) and back-pressure when a client does not read its answers. A length
//!   prefix shorter than a DNS header closes the connection.
//! * **DNS over TLS** ([`ServerConfig::tls`], RFC 7858): TLS listeners served by the same TCP
//!   thread, each connection a sans-IO rustls session (TLS 1.3 and 1.2, session tickets so that
//!   clients resume): the same framing, views (by the address the client connected to), idle
//!   timeout, connection cap and counters as TCP, with TLS handshakes, resumptions and errors
//!   counted apart ([`ServerStats::tls_handshakes`], [`ServerStats::tls_errors`]). Accepted
//!   sockets have `TCP_NODELAY` and each batch of answers leaves in one write with its records,
//!   so the first answer on a fresh TLS 1.3 connection is not held under Nagle behind the
//!   session tickets until the client's delayed ACK (as nsd 4.6 and BIND 9.18 do, costing
//!   about 40 ms).
//! * **DNS over HTTPS** ([`ServerConfig::doh`], RFC 8484): HTTP/2 over TLS (ALPN `h2`) on
//!   listeners of its own, served by one more thread running a single-threaded tokio runtime
//!   with the `h2` crate: `GET ?dns=` and `POST application/dns-message` on one path, answered
//!   from the same views (by the address the client connected to) as every other transport;
//!   what is not a query gets a 4xx status counted by kind ([`DohErrors`]). Bounded by a
//!   connection cap, a cap on concurrent streams per connection and an idle timeout of its own
//!   ([`DohConfig`]).
//! * **DNS over QUIC** ([`ServerConfig::doq`], RFC 9250): QUIC (quinn, ALPN `doq`) on UDP
//!   listeners of its own, served by one more thread with a single-threaded tokio runtime: one
//!   query per stream, message ID 0, from the same views; sessions resume and may carry 0-RTT
//!   queries; protocol errors close the connection or reset the stream, counted by kind
//!   ([`DoqErrors`]). Bounded by a connection cap, a stream credit and QUIC's idle timeout
//!   ([`DoqConfig`]).
//! * **Stop**: every thread checks a shared flag at least every 100 ms;
//!   [`RunningServer::stop`] sets it and joins the threads.
//!
//! ```no_run
//! use std::sync::Arc;
//! use ldplayer_server::{Server, ServerConfig};
//! use ldplayer_zone::{Zone, ZoneSet};
//!
//! let zone = Zone::from_file("example.zone", None).unwrap();
//! let zones: Arc<ZoneSet> = Arc::new(std::iter::once(zone).collect());
//! let config = ServerConfig::new(vec!["127.0.0.1:5353".parse().unwrap()]);
//! let server = Server::start(config, zones).unwrap();
//! println!("listening on {:?}", server.local_addrs());
//! let stats = server.stop();
//! println!("{} queries answered", stats.responses);
//! ```
//!
//! With DNS over TLS as well, from PEM files:
//!
//! ```no_run
//! use std::path::Path;
//! use std::sync::Arc;
//! use ldplayer_server::{Server, ServerConfig, TlsConfig, TlsIdentity};
//! use ldplayer_zone::{Zone, ZoneSet};
//!
//! let zone = Zone::from_file("example.zone", None).unwrap();
//! let zones: Arc<ZoneSet> = Arc::new(std::iter::once(zone).collect());
//! let mut config = ServerConfig::new(vec!["127.0.0.1:5353".parse().unwrap()]);
//! let identity =
//!     TlsIdentity::from_pem_files(Path::new("server.pem"), Path::new("server.key")).unwrap();
//! config.tls = Some(TlsConfig {
//!     listen: vec!["127.0.0.1:8853".parse().unwrap()],
//!     identity,
//! });
//! let server = Server::start(config, zones).unwrap();
//! println!("DNS over TLS on {:?}", server.tls_local_addrs());
//! ```

#![forbid(unsafe_code)]

mod doh;
mod doq;
mod stats;
mod stats_json;
mod tcp;
mod tls;
mod tokio_front;
mod udp;

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ldplayer_zone::{AnswerOptions, Views};
use socket2::{Domain, Protocol, Socket, Type};
use thiserror::Error;

pub use doh::{DohConfig, DEFAULT_DOH_PATH, DNS_MESSAGE, DOH_PORT};
pub use doq::{DoqConfig, DOQ_ALPN, DOQ_PORT};
pub use stats::{
    DohErrors, DoqErrors, KindCounts, LevelCounts, RcodeCounts, ServerStats, RCODE_SLOTS,
};
pub use tls::{TlsConfig, TlsIdentity, DOT_PORT};

use stats::Counters;

/// How often every thread looks at the stop flag (and the TCP thread at idle connections).
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How long a TCP connection may stay idle by default: 20 s, the value the LDplayer paper
/// studied and the replay engine's default, so that a replay against this server keeps its
/// connections as long as the server does.
pub const DEFAULT_TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// How often binding is retried when port 0 was asked for and the port the kernel chose for UDP
/// is taken for TCP.
const PORT_ATTEMPTS: usize = 16;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Addresses to listen on (UDP, and TCP when [`tcp`](Self::tcp) is set). Port 0 picks a free
    /// port, the same for UDP and TCP; see [`RunningServer::local_addrs`]. May be empty when
    /// [`tls`](Self::tls) has addresses (a server of DNS over TLS only).
    pub listen: Vec<SocketAddr>,
    /// UDP worker threads (and sockets) per listen address; at least one is started.
    pub udp_workers: usize,
    /// Serve TCP too.
    pub tcp: bool,
    /// A TCP connection with no bytes moving either way for this long is closed.
    pub tcp_idle_timeout: Duration,
    /// Most TCP connections open at once; beyond it the least recently active one is closed.
    /// Zero refuses every connection.
    pub max_tcp_connections: usize,
    /// Answering options; `tcp` is set by the server per transport.
    pub answer: AnswerOptions,
    /// DNS over TLS: its listen addresses and certificate; `None` serves no TLS. TLS
    /// connections share the TCP connection cap and idle timeout.
    pub tls: Option<TlsConfig>,
    /// DNS over HTTPS: its listen addresses, certificate, path and bounds; `None` serves no
    /// DoH. Its connections have their own cap and idle timeout.
    pub doh: Option<DohConfig>,
    /// DNS over QUIC: its listen addresses, certificate and bounds; `None` serves no DoQ. Its
    /// connections have their own cap and idle timeout.
    pub doq: Option<DoqConfig>,
}

impl ServerConfig {
    /// The defaults, listening on `listen`.
    pub fn new(listen: Vec<SocketAddr>) -> ServerConfig {
        ServerConfig {
            listen,
            ..ServerConfig::default()
        }
    }
}

impl Default for ServerConfig {
    /// No listen address; one UDP worker; TCP on with a [`DEFAULT_TCP_IDLE_TIMEOUT`] idle
    /// timeout and at most 1024 connections; default answering options; no TLS, no DoH.
    fn default() -> Self {
        ServerConfig {
            listen: Vec::new(),
            udp_workers: 1,
            tcp: true,
            tcp_idle_timeout: DEFAULT_TCP_IDLE_TIMEOUT,
            max_tcp_connections: 1024,
            answer: AnswerOptions::default(),
            tls: None,
            doh: None,
            doq: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, Error)]
pub enum ServerError {
    /// The configuration lists no listen address (for UDP/TCP, TLS or DoH).
    #[error("no listen address")]
    NoListenAddress,
    /// The TLS certificate or key is unusable (no certificate, a key that does not match it, an
    /// unsupported key type).
    #[error("TLS: {0}")]
    Tls(String),
    /// A TLS certificate or key file cannot be read or holds no PEM of its kind.
    #[error("TLS: {}: {message}", path.display())]
    TlsFile {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A socket could not be created or bound.
    #[error("cannot listen on {addr} ({proto}): {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// "udp", "tcp", "tls" or "https".
        proto: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The TCP event loop could not be set up.
    #[error("cannot set up the TCP event loop: {0}")]
    Poll(io::Error),
    /// A thread could not be started.
    #[error("cannot start a server thread: {0}")]
    Spawn(io::Error),
}

/// Starts servers.
#[derive(Debug)]
pub struct Server;

/// The sockets of one listen address.
struct Bound {
    addr: SocketAddr,
    /// The UDP sockets report destination addresses.
    destinations: bool,
    udp: Vec<Socket>,
    tcp: Option<std::net::TcpListener>,
}

fn bind_err(addr: SocketAddr, proto: &'static str) -> impl FnOnce(io::Error) -> ServerError {
    move |source| ServerError::Bind {
        addr,
        proto,
        source,
    }
}

fn tcp_listener(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_reuse_address(true)?;
    sock.bind(&addr.into())?;
    sock.listen(1024)?;
    Ok(sock.into())
}

/// Binds the UDP sockets (and the TCP listener) of one address; with port 0 the TCP listener
/// gets the port the kernel chose for UDP, retrying when that one is taken for TCP.
/// With `split` (or a wildcard address) the UDP sockets report each query's destination.
fn bind_one(
    addr: SocketAddr,
    workers: usize,
    tcp: bool,
    split: bool,
) -> Result<Bound, ServerError> {
    let destinations = split || addr.ip().is_unspecified();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let first = udp::bind(addr, destinations).map_err(bind_err(addr, "udp"))?;
        let actual = first
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .unwrap_or(addr);
        let mut socks = vec![first];
        for _ in 1..workers {
            socks.push(udp::bind(actual, destinations).map_err(bind_err(actual, "udp"))?);
        }
        let listener = if tcp {
            match tcp_listener(actual) {
                Ok(l) => Some(l),
                Err(e)
                    if e.kind() == io::ErrorKind::AddrInUse
                        && addr.port() == 0
                        && attempt < PORT_ATTEMPTS =>
                {
                    continue;
                }
                Err(e) => return Err(bind_err(actual, "tcp")(e)),
            }
        } else {
            None
        };
        return Ok(Bound {
            addr: actual,
            destinations,
            udp: socks,
            tcp: listener,
        });
    }
}

impl Server {
    /// Binds every listen address and starts the threads. Fails without leaving threads behind
    /// when any socket cannot be bound. `views` is one zone set for every destination
    /// (`Arc<ZoneSet>` converts into it) or one per nameserver address (split horizon).
    pub fn start(
        config: ServerConfig,
        views: impl Into<Views>,
    ) -> Result<RunningServer, ServerError> {
        let views = Arc::new(views.into());
        let tls_listen = config.tls.as_ref().map_or(&[][..], |t| &t.listen[..]);
        let doh_listen = config.doh.as_ref().map_or(&[][..], |d| &d.listen[..]);
        let doq_listen = config.doq.as_ref().map_or(&[][..], |d| &d.listen[..]);
        if config.listen.is_empty()
            && tls_listen.is_empty()
            && doh_listen.is_empty()
            && doq_listen.is_empty()
        {
            return Err(ServerError::NoListenAddress);
        }
        let tls_config = match &config.tls {
            Some(t) if !t.listen.is_empty() => Some(tls::server_config(&t.identity)?),
            _ => None,
        };
        let doh_tls = match &config.doh {
            Some(d) if !d.listen.is_empty() => Some(doh::server_config(&d.identity)?),
            _ => None,
        };
        let doq_counters = Arc::new(Counters::default());
        let doq_quic = match &config.doq {
            Some(d) if !d.listen.is_empty() => Some(doq::server_config(
                &d.identity,
                d,
                doq_counters.doq_resumed.clone(),
            )?),
            _ => None,
        };
        let workers = config.udp_workers.max(1);
        let bound = config
            .listen
            .iter()
            .map(|&a| bind_one(a, workers, config.tcp, views.is_split()))
            .collect::<Result<Vec<_>, _>>()?;
        let local: Vec<SocketAddr> = bound.iter().map(|b| b.addr).collect();
        let mut tls_local = Vec::new();
        let mut listeners = Vec::new();
        let mut udp_socks = Vec::new();
        for b in bound {
            udp_socks.extend(b.udp.into_iter().map(|s| (s, b.destinations)));
            listeners.extend(b.tcp.map(|sock| tcp::Listener {
                sock: mio::net::TcpListener::from_std(sock),
                tls: None,
            }));
        }
        if let Some(config) = &tls_config {
            for &addr in tls_listen {
                let sock = tcp_listener(addr).map_err(bind_err(addr, "tls"))?;
                tls_local.push(sock.local_addr().unwrap_or(addr));
                listeners.push(tcp::Listener {
                    sock: mio::net::TcpListener::from_std(sock),
                    tls: Some(config.clone()),
                });
            }
        }
        let mut doh_local = Vec::new();
        let mut doh_listeners = Vec::new();
        for &addr in doh_listen {
            let sock = tcp_listener(addr).map_err(bind_err(addr, "https"))?;
            doh_local.push(sock.local_addr().unwrap_or(addr));
            doh_listeners.push(sock);
        }
        let mut doq_local = Vec::new();
        let mut doq_sockets = Vec::new();
        for &addr in doq_listen {
            let sock = std::net::UdpSocket::bind(addr).map_err(bind_err(addr, "quic"))?;
            doq_local.push(sock.local_addr().unwrap_or(addr));
            doq_sockets.push(sock);
        }
        let tcp_setup = if listeners.is_empty() {
            None
        } else {
            let poll = mio::Poll::new().map_err(ServerError::Poll)?;
            for (i, l) in listeners.iter_mut().enumerate() {
                poll.registry()
                    .register(&mut l.sock, mio::Token(i), mio::Interest::READABLE)
                    .map_err(ServerError::Poll)?;
            }
            Some((poll, listeners))
        };

        let mut server = RunningServer {
            local,
            tls_local,
            doh_local,
            doq_local,
            stop: Arc::new(AtomicBool::new(false)),
            counters: Vec::new(),
            threads: Vec::new(),
        };
        for (i, (sock, destinations)) in udp_socks.into_iter().enumerate() {
            let counters = Arc::new(Counters::default());
            server.counters.push(counters.clone());
            let (views, stop, opts) = (views.clone(), server.stop.clone(), config.answer);
            let h = std::thread::Builder::new()
                .name(format!("ldp-udp-{i}"))
                .spawn(move || udp::run(sock, destinations, views, opts, stop, counters))
                .map_err(ServerError::Spawn)?;
            server.threads.push(h);
        }
        if let Some((poll, listeners)) = tcp_setup {
            let counters = Arc::new(Counters::default());
            server.counters.push(counters.clone());
            let settings = tcp::TcpSettings {
                idle_timeout: config.tcp_idle_timeout,
                max_connections: config.max_tcp_connections,
                opts: config.answer,
            };
            let (views, stop) = (views.clone(), server.stop.clone());
            let h = std::thread::Builder::new()
                .name("ldp-tcp".into())
                .spawn(move || tcp::run(poll, listeners, views, settings, stop, counters))
                .map_err(ServerError::Spawn)?;
            server.threads.push(h);
        }
        if let (Some(tls), Some(doh)) = (doh_tls, config.doh) {
            let counters = Arc::new(Counters::default());
            server.counters.push(counters.clone());
            let (views, stop, opts) = (views.clone(), server.stop.clone(), config.answer);
            let h = std::thread::Builder::new()
                .name("ldp-doh".into())
                .spawn(move || doh::run(doh_listeners, tls, &doh, views, opts, stop, counters))
                .map_err(ServerError::Spawn)?;
            server.threads.push(h);
        }
        if let (Some(quic), Some(doq)) = (doq_quic, config.doq) {
            let counters = doq_counters;
            server.counters.push(counters.clone());
            let (stop, opts) = (server.stop.clone(), config.answer);
            let h = std::thread::Builder::new()
                .name("ldp-doq".into())
                .spawn(move || doq::run(doq_sockets, quic, &doq, views, opts, stop, counters))
                .map_err(ServerError::Spawn)?;
            server.threads.push(h);
        }
        Ok(server)
    }
}

/// A started server. Dropping it stops it too (and waits for its threads).
#[derive(Debug)]
pub struct RunningServer {
    local: Vec<SocketAddr>,
    tls_local: Vec<SocketAddr>,
    doh_local: Vec<SocketAddr>,
    doq_local: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    counters: Vec<Arc<Counters>>,
    threads: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound addresses, one per [`ServerConfig::listen`] entry in the same order, with the
    /// actual port when port 0 was asked for (UDP and TCP share it).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.local.clone()
    }

    /// The bound TLS addresses, one per [`TlsConfig::listen`] entry in the same order, with the
    /// actual port when port 0 was asked for; empty without TLS.
    pub fn tls_local_addrs(&self) -> Vec<SocketAddr> {
        self.tls_local.clone()
    }

    /// The bound DNS over HTTPS addresses, one per [`DohConfig::listen`] entry in the same
    /// order, with the actual port when port 0 was asked for; empty without DoH.
    pub fn doh_local_addrs(&self) -> Vec<SocketAddr> {
        self.doh_local.clone()
    }

    /// The bound DNS over QUIC (UDP) addresses, one per [`DoqConfig::listen`] entry in the same
    /// order, with the actual port when port 0 was asked for; empty without DoQ.
    pub fn doq_local_addrs(&self) -> Vec<SocketAddr> {
        self.doq_local.clone()
    }

    /// The counters so far, summed over all threads.
    pub fn stats(&self) -> ServerStats {
        let mut s = ServerStats::default();
        for c in &self.counters {
            s.add(&c.snapshot());
        }
        s
    }

    /// The flag that stops the server when set (e.g. from a signal handler); the threads notice
    /// it within [`POLL_INTERVAL`]. [`wait`](Self::wait) then returns.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Stops the server, waits for its threads and returns the final counters.
    pub fn stop(mut self) -> ServerStats {
        self.stop.store(true, Ordering::Relaxed);
        self.join();
        self.stats()
    }

    /// Waits until the stop flag is set by someone else (see [`stop_flag`](Self::stop_flag))
    /// and the threads have ended; returns the final counters.
    pub fn wait(mut self) -> ServerStats {
        self.join();
        self.stats()
    }

    fn join(&mut self) {
        for h in self.threads.drain(..) {
            // A thread that panicked has nothing more to give back; its counters stay valid.
            let _ = h.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.join();
    }
}
