//! DNS over HTTPS replays against ldplayer's own DoH front on loopback (h2 over tokio-rustls,
//! a separate implementation from the replay's h2 in its event loop): GET and POST answered as
//! over UDP, one connection per client, resumption per client, and every way an exchange can
//! fail counted by kind while the run completes.

mod engine;

use engine::*;
use ldplayer_dns::{Rcode, Rtype};
use ldplayer_replay::{DohMethod, ReplayConfig, TlsConfig};
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_server::DohConfig;
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const MS: i64 = 1_000_000;

/// ldplayer's server with DoH on a free port whose connections close after `idle`
/// idle, and that front's address.
struct DohServer {
    own: OwnServer,
    doh: SocketAddr,
}

fn doh_server(idle: Duration) -> DohServer {
    let server = own_server(|config, identity| {
        let mut front = DohConfig::new(vec!["127.0.0.1:0".parse().unwrap()], identity);
        front.idle_timeout = idle;
        config.doh = Some(front);
    });
    let doh = server.server.doh_local_addrs()[0];
    DohServer { own: server, doh }
}

fn doh_config(server: &DohServer, method: DohMethod) -> ReplayConfig {
    let mut cfg = ReplayConfig::new(server.doh);
    cfg.queriers = 1;
    cfg.timeout = Duration::from_secs(2);
    cfg.proto_override = Some(Proto::Https);
    cfg.doh.method = method;
    cfg.tls = TlsConfig {
        ca_file: Some(server.own.ca.clone()),
        ..TlsConfig::default()
    };
    cfg
}

#[test]
fn doh_post_and_get_are_answered_as_over_udp_one_connection_per_client() {
    let server = doh_server(Duration::from_secs(10));
    for method in [DohMethod::Post, DohMethod::Get] {
        let (stats, results) = replay_records(
            doh_config(&server, method),
            alternating_trace(30, 3, 2, Proto::Udp),
        );
        let rs = results.sorted();
        assert_one_each(&rs, 30);
        for (i, r) in rs.iter().enumerate() {
            assert_eq!(r.outcome, Outcome::Answered, "{method:?} {r:?} {stats:?}");
            assert_eq!(r.proto, Proto::Https);
            let expected = if i % 2 == 0 {
                Rcode::NOERROR
            } else {
                Rcode::NXDOMAIN
            };
            assert_eq!(r.rcode, expected, "{method:?} query {i}");
            assert!(
                r.sent_ns > 0,
                "{method:?}: every query has its send time: {r:?}"
            );
            assert!(
                r.latency_ns().is_some_and(|l| l > 0 && l < 1_000_000_000),
                "{r:?}"
            );
        }
        assert_eq!(stats.connections_opened, 3, "{method:?} {stats:?}");
        assert_eq!(stats.connections_reused, 27, "{method:?} {stats:?}");
        let handshakes = rs.iter().filter(|r| r.new_connection).count();
        assert_eq!(handshakes, 3, "one handshake per client");
        assert!(rs
            .iter()
            .filter(|r| r.new_connection)
            .all(|r| r.handshake_ns > 0));
    }
    let served = server.own.server.stop();
    assert!(served.doh_queries >= 60, "{served:?}");
}

/// Queries sent at one instant by one client all wait for the handshake and go out as
/// concurrent streams of one connection.
#[test]
fn doh_queries_queued_during_the_handshake_share_one_connection() {
    let server = doh_server(Duration::from_secs(10));
    let recs: Vec<_> = (0..50)
        .map(|i| record(0, 1, Proto::Udp, query(i, "www.example.", Rtype::A, None)))
        .collect();
    let (stats, results) = replay_records(doh_config(&server, DohMethod::Post), recs);
    assert_eq!(stats.answered, 50, "{stats:?} {:?}", results.sorted());
    assert_eq!(stats.connections_opened, 1, "{stats:?}");
}

/// Each client's second connection resumes its first TLS session, unless resumption is off.
#[test]
fn doh_sessions_resume_per_client() {
    let server = doh_server(Duration::from_secs(10));
    for resume in [true, false] {
        let mut cfg = doh_config(&server, DohMethod::Post);
        cfg.tls.resume = resume;
        cfg.tcp_idle_timeout = Duration::from_millis(100);
        // Two clients, each asking twice 400 ms apart: the idle timeout closes the first
        // connection in between.
        let recs: Vec<_> = (0..4)
            .map(|i| {
                record(
                    (i / 2) * 400 * MS,
                    (i % 2) as u8 + 1,
                    Proto::Udp,
                    query(i as u16, "www.example.", Rtype::A, None),
                )
            })
            .collect();
        let (stats, _) = replay_records(cfg, recs);
        assert_eq!(stats.answered, 4, "{stats:?}");
        assert_eq!(stats.connections_opened, 4, "{stats:?}");
        assert_eq!(stats.tls_resumed, if resume { 2 } else { 0 }, "{stats:?}");
    }
}

/// A path the server does not serve: every query fails as an HTTP 404, named, and the run
/// completes; the connection stays up for the next queries.
#[test]
fn a_wrong_path_fails_every_query_as_http_404() {
    let server = doh_server(Duration::from_secs(10));
    let mut cfg = doh_config(&server, DohMethod::Get);
    cfg.doh.path = "/not-dns".into();
    let (stats, results) = replay_records(cfg, alternating_trace(10, 2, 1, Proto::Udp));
    let rs = results.sorted();
    assert_one_each(&rs, 10);
    assert!(rs
        .iter()
        .all(|r| r.outcome == Outcome::Error(ErrorKind::Http)));
    assert_eq!(
        causes(&stats, ErrorKind::Http),
        [("http-404".to_string(), 10)]
    );
    assert_eq!(stats.connections_opened, 2, "{stats:?}");
}

/// A DoT server (no HTTP/2 by ALPN) and a certificate for another name: counted by kind.
#[test]
fn no_http2_and_a_certificate_mismatch_are_counted_by_kind() {
    let (nsd, ca) = nsd_tls();
    let mut cfg = ReplayConfig::new(nsd.tls_addr.unwrap());
    cfg.queriers = 1;
    cfg.proto_override = Some(Proto::Https);
    cfg.tls.ca_file = Some(ca);
    let (stats, results) = replay_records(cfg, alternating_trace(4, 2, 1, Proto::Udp));
    assert_one_each(&results.sorted(), 4);
    assert_eq!(
        causes(&stats, ErrorKind::Http),
        [("no-http2".to_string(), 4)],
        "{stats:?}"
    );

    let server = doh_server(Duration::from_secs(10));
    let mut cfg = doh_config(&server, DohMethod::Post);
    cfg.tls.server_name = Some("not-the-server.example".into());
    let (stats, _) = replay_records(cfg, alternating_trace(4, 2, 1, Proto::Udp));
    assert_eq!(
        causes(&stats, ErrorKind::Tls),
        [("name-mismatch".to_string(), 4)],
        "{stats:?}"
    );
}

/// A DoH server that misbehaves by path, with h2 over tokio-rustls: `/500` answers 500,
/// `/html` answers 200 with `text/html`, `/short` a DNS body shorter than a header, `/echo`
/// the POSTed query itself, `/other` a response to another name, `/reset` resets the stream.
/// Returns its address and CA; it serves until the test process ends.
fn misbehaving_doh_server(dir: &std::path::Path) -> (SocketAddr, PathBuf) {
    let (tls, ca) = rustls_server(dir, b"h2", false);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut conn) = h2::server::handshake(tls).await else {
                        return;
                    };
                    while let Some(Ok((request, mut respond))) = conn.accept().await {
                        let path = request.uri().path().to_string();
                        if path == "/echo" || path == "/other" {
                            tokio::spawn(send_back(request, respond, path == "/other"));
                            continue;
                        }
                        let reply = |status: u16, kind: &str| {
                            http::Response::builder()
                                .status(status)
                                .header("content-type", kind)
                                .body(())
                                .unwrap()
                        };
                        match path.as_str() {
                            "/500" => {
                                let _ = respond.send_response(reply(500, "text/plain"), true);
                            }
                            "/html" => {
                                if let Ok(mut body) =
                                    respond.send_response(reply(200, "text/html"), false)
                                {
                                    let _ = body.send_data(bytes::Bytes::from_static(b"<p>"), true);
                                }
                            }
                            "/short" => {
                                if let Ok(mut body) = respond
                                    .send_response(reply(200, "application/dns-message"), false)
                                {
                                    let _ = body.send_data(bytes::Bytes::from_static(b"abc"), true);
                                }
                            }
                            _ => respond.send_reset(h2::Reason::REFUSED_STREAM),
                        }
                    }
                });
            }
        });
    });
    (addr, ca)
}

/// Answers a POSTed query with itself (`respond_to_other` false: QR clear) or with a response
/// (QR set) to another name.
async fn send_back(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    respond_to_other: bool,
) {
    let mut body = request.into_body();
    let mut query = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        query.extend_from_slice(&chunk);
    }
    if respond_to_other && query.len() > 14 {
        query[2] |= 0x80;
        query[14] ^= 0x01;
    }
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/dns-message")
        .body(())
        .unwrap();
    if let Ok(mut out) = respond.send_response(head, false) {
        let _ = out.send_data(bytes::Bytes::from(query), true);
    }
}

/// A DoH body that is a DNS message but not the stream's answer (the query itself, a response
/// to another name) fails the query at once as a bad response with its cause; the connection
/// goes on.
#[test]
fn doh_bodies_that_do_not_answer_the_query_fail_it_as_bad_responses() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca) = misbehaving_doh_server(dir.path());
    for (path, cause) in [("/echo", "not-a-response"), ("/other", "question-mismatch")] {
        let mut cfg = ReplayConfig::new(addr);
        cfg.queriers = 1;
        cfg.proto_override = Some(Proto::Https);
        cfg.tls.ca_file = Some(ca.clone());
        cfg.doh.path = path.into();
        // Far longer than the run may take: the queries fail when the body comes.
        cfg.timeout = Duration::from_secs(30);
        let started = std::time::Instant::now();
        let (stats, results) = replay_records(cfg, alternating_trace(6, 2, 1, Proto::Udp));
        let rs = results.sorted();
        assert_one_each(&rs, 6);
        assert!(
            rs.iter().all(|r| r.outcome.name() == "bad-response"),
            "{path}: {rs:?}"
        );
        let got: Vec<_> = stats
            .causes
            .iter()
            .map(|c| (c.kind.name(), c.cause, c.count))
            .collect();
        assert_eq!(got, [("bad-response", cause, 6)], "{path}: {stats:?}");
        assert_eq!(stats.connections_opened, 2, "{path}: {stats:?}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{path}: {:?}",
            started.elapsed()
        );
    }
}

/// A DoH server answering 5xx, a content type that is not DNS, a body that is not a DNS
/// message, or resetting streams: each query fails as `http` with its cause, and the run ends.
#[test]
fn misbehaving_doh_servers_fail_queries_by_kind_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca) = misbehaving_doh_server(dir.path());
    for (path, cause) in [
        ("/500", "http-500"),
        ("/html", "not-dns-content"),
        ("/short", "not-dns-content"),
        ("/reset", "h2-refused-stream"),
    ] {
        let mut cfg = ReplayConfig::new(addr);
        cfg.queriers = 1;
        cfg.proto_override = Some(Proto::Https);
        cfg.tls.ca_file = Some(ca.clone());
        cfg.doh.path = path.into();
        let (stats, results) = replay_records(cfg, alternating_trace(6, 2, 1, Proto::Udp));
        let rs = results.sorted();
        assert_one_each(&rs, 6);
        assert!(
            rs.iter()
                .all(|r| r.outcome == Outcome::Error(ErrorKind::Http)),
            "{path}: {rs:?}"
        );
        assert_eq!(
            causes(&stats, ErrorKind::Http),
            [(cause.to_string(), 6)],
            "{path}: {stats:?}"
        );
        assert_eq!(stats.connections_opened, 2, "{path}: {stats:?}");
    }
}
