//! The lean QUIC client and its DoQ framing over a real loopback socket against quinn's server
//! (another QUIC stack, on tokio): a small driver moves the sans-IO connection's datagrams, and
//! the server answers each query stream with the query, QR set. Queries go one after another
//! on one connection, with the client updating its keys every few packets.

use ldplayer_stacks::doq;
use ldplayer_stacks::quic::conn::{Config, Connection, Event};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::net::{SocketAddr, UdpSocket};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A certificate for `localhost` and its key.
fn identity() -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a cert");
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    (der, key)
}

/// Starts quinn's DoQ server on 127.0.0.1 on a thread of its own: each query stream answered
/// with its bytes, QR set. Its address.
fn quinn_server(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut tls = rustls::ServerConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .expect("TLS 1.3")
                .with_no_client_auth()
                .with_single_cert(vec![cert], key)
                .expect("the cert");
            tls.alpn_protocols = vec![b"doq".to_vec()];
            let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC");
            let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
            let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().expect("addr"))
                .expect("a server");
            tx.send(endpoint.local_addr().expect("its address"))
                .expect("the test waits");
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else { return };
                    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                        tokio::spawn(async move {
                            let Ok(mut q) = recv.read_to_end(65_537).await else {
                                return;
                            };
                            if let Some(flags) = q.get_mut(4) {
                                *flags |= 0x80;
                            }
                            let _ = send.write_all(&q).await;
                            let _ = send.finish();
                        });
                    }
                });
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the server started")
}

/// The client's events until `done` holds, moving datagrams over `socket`; at most 10 s.
fn drive(
    conn: &mut Connection,
    socket: &UdpSocket,
    start: Instant,
    events: &mut Vec<Event>,
    done: impl Fn(&[Event]) -> bool,
) {
    let now = || start.elapsed().as_nanos() as i64;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65_536];
    while start.elapsed() < Duration::from_secs(10) {
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
    panic!("no end in 10 s: {events:?}, closed {:?}", conn.closed());
}

/// A DNS query for `www.example.` A with ID `id`.
fn dns_query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
    q
}

#[test]
fn doq_queries_are_answered_by_quinns_server_over_loopback() {
    let (cert, key) = identity();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).expect("the cert");
    let server = quinn_server(cert, key);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"doq".to_vec()];
    let start = Instant::now();
    let mut conn = Connection::new(
        Config {
            tls: Arc::new(tls),
            server_name: ServerName::try_from("localhost").expect("a name"),
            idle_timeout_ns: 10_000_000_000,
            zero_rtt: false,
            max_stream_recv: doq::MAX_STREAM_RECV,
            peer_uni_streams: 0,
            key_update_packets: 3,
        },
        0,
    )
    .expect("a connection");
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    socket.connect(server).expect("connect");
    let mut events = Vec::new();
    for i in 0..8u16 {
        let wire = dns_query(0x100 + i);
        let stream = conn.open_stream(doq::query(&wire).expect("framed"));
        let answered = |e: &[Event]| {
            e.iter()
                .any(|e| matches!(e, Event::Answer { stream: s, .. } if *s == stream))
        };
        drive(&mut conn, &socket, start, &mut events, answered);
        let data = events
            .iter()
            .find_map(|e| match e {
                Event::Answer { stream: s, data } if *s == stream => Some(data.clone()),
                _ => None,
            })
            .expect("an answer");
        let msg = doq::answer(&data).expect("a framed answer");
        let mut want = wire.clone();
        want[..2].copy_from_slice(&[0, 0]); // DNS ID 0 on DoQ.
        want[2] |= 0x80;
        assert_eq!(msg, &want[..], "query {i}");
    }
    assert_eq!(conn.closed(), None);
    let connected = events
        .iter()
        .filter(|e| matches!(e, Event::Connected { .. }))
        .count();
    assert_eq!(connected, 1, "one handshake: {events:?}");
    assert!(
        conn.key_updates_started() >= 1,
        "the client updated its keys"
    );
    conn.close(doq::NO_ERROR);
    let mut out = Vec::new();
    while conn.poll_transmit(start.elapsed().as_nanos() as i64, &mut out) {
        let _ = socket.send(&out);
    }
}
