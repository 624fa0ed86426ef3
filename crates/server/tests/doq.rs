//! DNS over QUIC over loopback, with quinn as the client: answers byte for byte as over UDP
//! (but for the ID 0 the client sends), many streams on one connection, split views by the
//! address sent to, a nonzero message ID closing the connection with DOQ_PROTOCOL_ERROR, a
//! stream that is not one message reset, a second connection that resumes its session and
//! sends its query in 0-RTT, and the cap on connections: refused beyond it, but not while the
//! connections of clients that just timed them out are about to time out on the server too.

mod encrypted;

use encrypted::{certificate, zone};

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use ldplayer_dns::{build, name_from_presentation, Class, Fields, Message, Question, Rcode, Rtype};
use ldplayer_server::{DoqConfig, RunningServer, Server, ServerConfig, DOQ_ALPN};
use ldplayer_zone::Views;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(3);

/// A server with UDP on 127.0.0.1 and DoQ on `doq`, and the anchor to trust.
fn start(views: impl Into<Views>, doq: &[SocketAddr]) -> (RunningServer, CertificateDer<'static>) {
    let (identity, anchor) = certificate();
    let mut config = ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()]);
    config.doq = Some(DoqConfig::new(doq.to_vec(), identity));
    let server = Server::start(config, views).expect("server starts");
    (server, anchor)
}

/// A QUIC client endpoint trusting `anchor`, ALPN `doq`, resuming sessions with 0-RTT.
fn client(anchor: &CertificateDer<'static>) -> quinn::Endpoint {
    let mut roots = RootCertStore::empty();
    roots.add(anchor.clone()).expect("trust anchor");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![DOQ_ALPN.to_vec()];
    tls.enable_early_data = true;
    let crypto = QuicClientConfig::try_from(tls).expect("QUIC client config");
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).expect("endpoint");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// An A query for `name` with `id`, framed with its 2-byte length as DoQ sends it.
fn framed_query(id: u16, name: &str) -> Vec<u8> {
    let m = query(id, name);
    let mut out = (m.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(&m);
    out
}

fn query(id: u16, name: &str) -> Vec<u8> {
    build(&Fields {
        id,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation(name).unwrap(),
            qtype: Rtype::A,
            qclass: Class::IN,
        }),
        edns: None,
    })
    .unwrap()
}

/// Sends `stream` on a new stream of `conn`, finishes it, and reads the whole answer stream.
async fn exchange(conn: &quinn::Connection, stream: &[u8]) -> Result<Vec<u8>, String> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(stream).await.map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    tokio::time::timeout(CLIENT_TIMEOUT, recv.read_to_end(70_000))
        .await
        .map_err(|_| "no answer in time".to_string())?
        .map_err(|e| e.to_string())
}

/// The message of an answer stream (its length prefix checked).
fn unframe(stream: &[u8]) -> &[u8] {
    let len = u16::from_be_bytes([stream[0], stream[1]]) as usize;
    assert_eq!(len, stream.len() - 2, "one whole message per stream");
    &stream[2..]
}

/// The answer over UDP to `query`.
fn over_udp(server: &RunningServer, query: &[u8]) -> Vec<u8> {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    sock.send_to(query, server.local_addrs()[0]).unwrap();
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).expect("UDP answer");
    buf[..n].to_vec()
}

fn rcode_and_answers(m: &[u8]) -> (Rcode, u16) {
    let m = Message::parse(m).expect("answer parses");
    (m.rcode(), m.header().ancount)
}

#[test]
fn streams_are_answered_as_udp_answers_and_sessions_resume_in_0rtt() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0".parse().unwrap()]);
    let addr = server.doq_local_addrs()[0];
    assert_ne!(addr.port(), 0);
    let rt = runtime();
    rt.block_on(async {
        let endpoint = client(&anchor);
        let conn = endpoint
            .connect(addr, "127.0.0.1")
            .unwrap()
            .await
            .expect("QUIC handshake");
        // Many streams at once on one connection.
        let names = ["www.example.", "nope.example.", "www.elsewhere."];
        let answers = futures_join(&conn, &names).await;
        let mut codes = Vec::new();
        for (name, answer) in names.iter().zip(&answers) {
            let answer = unframe(answer);
            assert_eq!(answer, over_udp(&server, &query(0, name)), "{name}");
            codes.push(rcode_and_answers(answer));
        }
        assert_eq!(
            codes,
            [
                (Rcode::NOERROR, 1),
                (Rcode::NXDOMAIN, 0),
                (Rcode::REFUSED, 0)
            ]
        );
        conn.close(0u32.into(), b"");
        // The ticket of the first session lets the second resume and send in 0-RTT.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let connecting = endpoint.connect(addr, "127.0.0.1").unwrap();
        let (conn, accepted) = connecting
            .into_0rtt()
            .unwrap_or_else(|_| panic!("the resumed session offers 0-RTT"));
        let answer = exchange(&conn, &framed_query(0, "www.example."))
            .await
            .expect("a 0-RTT answer");
        assert_eq!(rcode_and_answers(unframe(&answer)), (Rcode::NOERROR, 1));
        assert!(accepted.await, "the server accepts 0-RTT");
        conn.close(0u32.into(), b"");
        endpoint.wait_idle().await;
    });
    let s = server.stop();
    assert_eq!(s.doq_queries, 4, "{s:?}");
    assert_eq!(s.doq_responses, 4, "{s:?}");
    assert_eq!(s.doq_accepted, 2, "{s:?}");
    assert_eq!(s.doq_handshakes, 2, "{s:?}");
    assert_eq!(s.doq_resumed, 1, "{s:?}");
    assert_eq!(s.doq_zero_rtt, 1, "{s:?}");
    assert_eq!(s.doq_errors, Default::default(), "{s:?}");
}

/// Sends one query per name on streams of `conn`, all at once; the answer streams in order.
async fn futures_join(conn: &quinn::Connection, names: &[&str]) -> Vec<Vec<u8>> {
    let mut tasks = Vec::new();
    for name in names {
        let (conn, stream) = (conn.clone(), framed_query(0, name));
        tasks.push(tokio::spawn(async move { exchange(&conn, &stream).await }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("task").expect("answer"));
    }
    out
}

#[test]
fn a_nonzero_id_closes_the_connection_and_a_bad_stream_is_reset() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0".parse().unwrap()]);
    let addr = server.doq_local_addrs()[0];
    let rt = runtime();
    rt.block_on(async {
        let endpoint = client(&anchor);
        let conn = endpoint
            .connect(addr, "127.0.0.1")
            .unwrap()
            .await
            .expect("QUIC handshake");
        // A length that does not match the message: that stream is reset, the connection
        // serves on.
        let mut bad = framed_query(0, "www.example.");
        bad.push(0);
        let err = exchange(&conn, &bad).await.expect_err("reset");
        assert!(err.contains("reset"), "{err}");
        let ok = exchange(&conn, &framed_query(0, "www.example."))
            .await
            .expect("still served");
        assert_eq!(rcode_and_answers(unframe(&ok)), (Rcode::NOERROR, 1));
        // ID 7: the whole connection is closed with DOQ_PROTOCOL_ERROR (0x2).
        let _ = exchange(&conn, &framed_query(7, "www.example.")).await;
        let reason = tokio::time::timeout(CLIENT_TIMEOUT, conn.closed())
            .await
            .expect("closed in time");
        match reason {
            quinn::ConnectionError::ApplicationClosed(c) => {
                assert_eq!(c.error_code, 2u32.into(), "{c:?}")
            }
            other => panic!("closed for {other:?}"),
        }
    });
    let s = server.stop();
    assert_eq!(s.doq_errors.bad_stream, 1, "{s:?}");
    assert_eq!(s.doq_errors.nonzero_id, 1, "{s:?}");
    assert_eq!(s.doq_handshakes, 1, "{s:?}");
    assert_eq!(s.doq_responses, 1, "{s:?}");
}

#[test]
fn split_views_by_the_address_sent_to() {
    let port = ldplayer_testbed::free_port();
    let at = |ip: &str| -> SocketAddr { format!("{ip}:{port}").parse().unwrap() };
    let views = Views::by_address([
        ("127.0.0.1".parse().unwrap(), zone("one.")),
        ("127.0.0.2".parse().unwrap(), zone("two.")),
    ]);
    let (server, anchor) = start(views, &["127.0.0.1", "127.0.0.2"].map(at));
    let rt = runtime();
    rt.block_on(async {
        let endpoint = client(&anchor);
        for (ip, mine, other) in [
            ("127.0.0.1", "www.one.", "www.two."),
            ("127.0.0.2", "www.two.", "www.one."),
        ] {
            let conn = endpoint
                .connect(at(ip), ip)
                .unwrap()
                .await
                .expect("QUIC handshake");
            for (name, want) in [(mine, (Rcode::NOERROR, 1)), (other, (Rcode::REFUSED, 0))] {
                let answer = exchange(&conn, &framed_query(0, name))
                    .await
                    .expect("answer");
                assert_eq!(rcode_and_answers(unframe(&answer)), want, "{name} at {ip}");
            }
            conn.close(0u32.into(), b"");
        }
    });
    let s = server.stop();
    assert_eq!(s.doq_responses, 4, "{s:?}");
    assert_eq!(s.kinds.refused, 2, "{s:?}");
}

/// A server with DoQ on 127.0.0.1 capped at `max` connections closed after `idle`.
fn start_capped(max: usize, idle: Duration) -> (RunningServer, CertificateDer<'static>) {
    let (identity, anchor) = certificate();
    let mut config = ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()]);
    let mut doq = DoqConfig::new(vec!["127.0.0.1:0".parse().unwrap()], identity);
    doq.max_connections = max;
    doq.idle_timeout = idle;
    config.doq = Some(doq);
    let server = Server::start(config, zone("example.")).expect("server starts");
    (server, anchor)
}

/// A connection from `endpoint` and one answered query on it, or why not.
async fn connect_and_ask(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
) -> Result<quinn::Connection, quinn::ConnectionError> {
    let conn = tokio::time::timeout(CLIENT_TIMEOUT, endpoint.connect(addr, "127.0.0.1").unwrap())
        .await
        .expect("handshake in time")?;
    let answer = exchange(&conn, &framed_query(0, "www.example."))
        .await
        .expect("an answer");
    assert_eq!(rcode_and_answers(unframe(&answer)), (Rcode::NOERROR, 1));
    Ok(conn)
}

fn is_refusal(e: &quinn::ConnectionError) -> bool {
    matches!(e, quinn::ConnectionError::ConnectionClosed(c)
        if c.error_code == quinn::TransportErrorCode::CONNECTION_REFUSED)
}

/// 50 clients (a socket each) fill a cap of 50, go idle until QUIC's idle timeout closes their
/// connections, and all reconnect as soon as they see it. The client's idle timer runs out a
/// few milliseconds before the server's (the server's restarted on the client's last ACK), so
/// refused at once, some reconnections found the old connections still counted (11 of 50 were
/// refused before the server waited for a place at the cap).
#[test]
fn reconnections_right_after_the_idle_timeout_are_not_refused_at_the_cap() {
    const CLIENTS: usize = 50;
    let idle = Duration::from_secs(1);
    let (server, anchor) = start_capped(CLIENTS, idle);
    let addr = server.doq_local_addrs()[0];
    let rt = runtime();
    let (first, second) = rt.block_on(async {
        let endpoints: Vec<_> = (0..CLIENTS).map(|_| client(&anchor)).collect();
        let mut tasks = Vec::new();
        for endpoint in &endpoints {
            let endpoint = endpoint.clone();
            tasks.push(tokio::spawn(async move {
                let first = connect_and_ask(&endpoint, addr).await;
                let Ok(conn) = &first else {
                    return (first.map(drop), None);
                };
                let closed = tokio::time::timeout(idle + CLIENT_TIMEOUT, conn.closed())
                    .await
                    .expect("closed by the idle timeout in time");
                assert_eq!(closed, quinn::ConnectionError::TimedOut);
                let second = connect_and_ask(&endpoint, addr).await.map(drop);
                (first.map(drop), Some(second))
            }));
        }
        let (mut first, mut second) = (Vec::new(), Vec::new());
        for t in tasks {
            let (a, b) = t.await.expect("client task");
            first.push(a);
            second.extend(b);
        }
        for e in &endpoints {
            e.close(0u32.into(), b"");
        }
        (first, second)
    });
    let s = server.stop();
    assert!(first.iter().all(Result::is_ok), "{first:?}");
    let refused = second.iter().filter(|r| r.as_ref().is_err_and(is_refusal));
    assert_eq!(refused.count(), 0, "reconnections refused: {s:?}");
    assert!(second.iter().all(Result::is_ok), "{second:?}");
    assert_eq!(s.doq_errors.refused_connections, 0, "{s:?}");
    assert_eq!(s.doq_accepted, 2 * CLIENTS as u64, "{s:?}");
    assert_eq!(s.doq_idle_closed, CLIENTS as u64, "{s:?}");
    assert!(s.doq_peak_open <= CLIENTS as u64, "the cap holds: {s:?}");
}

/// With the cap's connections open and in use, one more is refused (after waiting for a place
/// that does not come); one offered while an open one closes takes its place.
#[test]
fn connections_beyond_the_cap_are_refused() {
    const CAP: usize = 3;
    let (server, anchor) = start_capped(CAP, Duration::from_secs(20));
    let addr = server.doq_local_addrs()[0];
    let rt = runtime();
    rt.block_on(async {
        let endpoint = client(&anchor);
        let mut open = Vec::new();
        for _ in 0..CAP {
            open.push(
                connect_and_ask(&endpoint, addr)
                    .await
                    .expect("under the cap"),
            );
        }
        let started = std::time::Instant::now();
        let refused = connect_and_ask(&endpoint, addr)
            .await
            .expect_err("refused beyond the cap");
        assert!(is_refusal(&refused), "{refused:?}");
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "refused after waiting for a place: {:?}",
            started.elapsed()
        );
        // The open ones are still served.
        for conn in &open {
            exchange(conn, &framed_query(0, "www.example."))
                .await
                .expect("still served");
        }
        // A connection closing while another waits gives it its place.
        let leaving = open.pop().unwrap();
        let waiting = tokio::spawn({
            let endpoint = endpoint.clone();
            async move { connect_and_ask(&endpoint, addr).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        leaving.close(0u32.into(), b"");
        open.push(
            waiting
                .await
                .expect("task")
                .expect("accepted once a place is free"),
        );
        for conn in &open {
            conn.close(0u32.into(), b"");
        }
        tokio::time::timeout(CLIENT_TIMEOUT, endpoint.wait_idle())
            .await
            .expect("closed in time");
    });
    let s = server.stop();
    assert_eq!(s.doq_errors.refused_connections, 1, "{s:?}");
    assert_eq!(s.doq_accepted, CAP as u64 + 2, "{s:?}");
    assert_eq!(s.doq_peak_open, CAP as u64, "{s:?}");
}
