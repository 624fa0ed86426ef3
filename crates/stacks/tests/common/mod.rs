//! What the tests against other QUIC stacks share: the lean client's TLS configuration and
//! connection, and a small driver that moves the sans-IO connection's datagrams over a real
//! loopback UDP socket until the DoQ queries it was given are answered.

use ldplayer_stacks::doq;
use ldplayer_stacks::quic::conn::{Config, Connection, Event};
use rustls::pki_types::ServerName;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one [`drive`] may take before the test fails: far more than loopback needs.
const DRIVE_LIMIT: Duration = Duration::from_secs(10);

/// The client's TLS configuration: TLS 1.3 with ring, trusting `roots`, ALPN `doq`, early data
/// enabled (0-RTT on a resumed session). Every connection made with this `Arc` shares its
/// session store, so a second one resumes the first one's session.
pub fn client_tls(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"doq".to_vec()];
    tls.enable_early_data = true;
    Arc::new(tls)
}

/// A lean DoQ connection to `localhost`, opened at `now` ns: its queries in 0-RTT when
/// `zero_rtt` and the session store allows it, its own key update every `key_update_packets`
/// packets.
pub fn lean(
    tls: &Arc<rustls::ClientConfig>,
    zero_rtt: bool,
    key_update_packets: u64,
    now: i64,
) -> Connection {
    Connection::new(
        Config {
            tls: tls.clone(),
            server_name: ServerName::try_from("localhost").expect("a name"),
            idle_timeout_ns: 10_000_000_000,
            zero_rtt,
            max_stream_recv: doq::MAX_STREAM_RECV,
            peer_uni_streams: 0,
            key_update_packets,
        },
        now,
    )
    .expect("a connection")
}

/// A UDP socket on 127.0.0.1 connected to `server`: one client port.
pub fn socket_to(server: SocketAddr) -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    socket.connect(server).expect("connect");
    socket
}

/// Nanoseconds since `start`: the connection's clock.
pub fn ns_since(start: Instant) -> i64 {
    i64::try_from(start.elapsed().as_nanos()).expect("a test shorter than 292 years")
}

/// The client's events until `done` holds, moving datagrams over `socket`; fails the test if
/// that takes more than 10 s. Returns early if the connection closes (the caller's checks then
/// fail naming what is missing).
pub fn drive(
    conn: &mut Connection,
    socket: &UdpSocket,
    start: Instant,
    events: &mut Vec<Event>,
    done: impl Fn(&[Event]) -> bool,
) {
    let began = Instant::now();
    let now = || ns_since(start);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65_536];
    while began.elapsed() < DRIVE_LIMIT {
        while conn.poll_transmit(now(), &mut out) {
            socket.send(&out).expect("send on loopback");
        }
        while let Some(e) = conn.poll_event() {
            events.push(e);
        }
        if done(events) || conn.closed().is_some() {
            return;
        }
        let wait = conn
            .next_timeout()
            .map_or(50_000_000, |t| (t - now()).clamp(1_000_000, 50_000_000));
        socket
            .set_read_timeout(Some(Duration::from_nanos(wait as u64)))
            .expect("a timeout");
        match socket.recv(&mut buf) {
            Ok(n) => conn.handle(now(), &mut buf[..n]),
            Err(_) => {
                if conn.next_timeout().is_some_and(|t| t <= now()) {
                    conn.on_timeout(now());
                }
            }
        }
    }
    panic!(
        "no end in {DRIVE_LIMIT:?}: {events:?}, closed {:?}",
        conn.closed()
    );
}

/// Sends each of `queries` (DNS messages) on a stream of its own, all at once, and drives the
/// connection until every one is answered: the DNS answers, in the queries' order, unframed.
/// Fails the test if one is not answered.
pub fn ask(
    conn: &mut Connection,
    socket: &UdpSocket,
    start: Instant,
    events: &mut Vec<Event>,
    queries: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let streams: Vec<u64> = queries
        .iter()
        .map(|wire| conn.open_stream(doq::query(wire).expect("a query short enough to frame")))
        .collect();
    let answer = |events: &[Event], stream: u64| {
        events.iter().find_map(|e| match e {
            Event::Answer { stream: s, data } if *s == stream => Some(data.clone()),
            _ => None,
        })
    };
    drive(conn, socket, start, events, |e| {
        streams.iter().all(|&s| answer(e, s).is_some())
    });
    streams
        .iter()
        .map(|&s| {
            let data = answer(events, s).unwrap_or_else(|| {
                panic!(
                    "stream {s} unanswered: {events:?}, closed {:?}",
                    conn.closed()
                )
            });
            doq::answer(&data).expect("a framed answer").to_vec()
        })
        .collect()
}

/// The handshakes the events tell of: (resumed, 0-RTT accepted), one per `Connected`.
pub fn handshakes(events: &[Event]) -> Vec<(bool, Option<bool>)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Connected {
                resumed,
                zero_rtt_accepted,
            } => Some((*resumed, *zero_rtt_accepted)),
            _ => None,
        })
        .collect()
}

/// Closes the connection (DoQ's NO_ERROR) and sends the CONNECTION_CLOSE.
pub fn close(conn: &mut Connection, socket: &UdpSocket, start: Instant) {
    conn.close(doq::NO_ERROR);
    let mut out = Vec::new();
    while conn.poll_transmit(ns_since(start), &mut out) {
        let _ = socket.send(&out);
    }
}
