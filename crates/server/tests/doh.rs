//! DNS over HTTPS over loopback, with h2 over tokio-rustls as the client: GET and POST answers
//! byte for byte the same as over UDP, bad requests answered 400/404/405/413/415 and counted
//! while the connection keeps serving, split views by the address connected to, a client
//! without HTTP/2, the connection cap and the idle timeout.

mod encrypted;

use encrypted::{certificate, zone};

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request, StatusCode};
use ldplayer_dns::{build, name_from_presentation, Class, Fields, Message, Question, Rcode, Rtype};
use ldplayer_server::{DohConfig, RunningServer, Server, ServerConfig, ServerStats, DNS_MESSAGE};
use ldplayer_zone::{Views, Zone, ZoneSet};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const CLIENT_TIMEOUT: Duration = Duration::from_secs(3);

/// A client trusting `anchor` and offering `alpn`.
fn client_config(anchor: &CertificateDer<'static>, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(anchor.clone()).expect("trust anchor");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A server with UDP on 127.0.0.1 and DoH on `doh`, changed by `tune`, and the anchor to trust.
fn start(
    views: impl Into<Views>,
    doh: &[SocketAddr],
    tune: impl FnOnce(&mut DohConfig),
) -> (RunningServer, CertificateDer<'static>) {
    let (identity, anchor) = certificate();
    let mut config = ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()]);
    let mut d = DohConfig::new(doh.to_vec(), identity);
    tune(&mut d);
    config.doh = Some(d);
    let server = Server::start(config, views).expect("server starts");
    (server, anchor)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// An A query for `name` (unframed).
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

/// An HTTP/2 connection to `addr` (checked as `name`), its driver running on the runtime.
async fn connect(
    anchor: &CertificateDer<'static>,
    addr: SocketAddr,
    name: ServerName<'static>,
) -> SendRequest<Bytes> {
    connect_driven(anchor, addr, name).await.0
}

/// [`connect`], with the task driving the connection: it ends when the server closes it.
async fn connect_driven(
    anchor: &CertificateDer<'static>,
    addr: SocketAddr,
    name: ServerName<'static>,
) -> (SendRequest<Bytes>, tokio::task::JoinHandle<()>) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let tls = TlsConnector::from(client_config(anchor, &[b"h2"]))
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    let (send, conn) = h2::client::handshake(tls).await.expect("HTTP/2 handshake");
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    (send, driver)
}

/// Sends one request; its status, content type and body.
async fn send(
    client: &mut SendRequest<Bytes>,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: Option<Vec<u8>>,
) -> (StatusCode, Option<String>, Vec<u8>) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(t) = content_type {
        request = request.header("content-type", t);
    }
    let request = request.body(()).unwrap();
    let exchange = async {
        let ready = client.clone().ready().await.expect("connection ready");
        *client = ready;
        let (response, mut stream) = client
            .send_request(request, body.is_none())
            .expect("request sent");
        if let Some(body) = body {
            stream.send_data(body.into(), true).expect("body sent");
        }
        let response = response.await.expect("response");
        let status = response.status();
        let ctype = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string());
        let mut body = response.into_body();
        let mut all = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("body");
            let _ = body.flow_control().release_capacity(chunk.len());
            all.extend_from_slice(&chunk);
        }
        (status, ctype, all)
    };
    tokio::time::timeout(CLIENT_TIMEOUT, exchange)
        .await
        .expect("answered in time")
}

fn b64(m: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(m)
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
fn get_and_post_answer_as_udp_does() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0".parse().unwrap()], |_| {});
    let addr = server.doh_local_addrs()[0];
    assert_ne!(addr.port(), 0);
    let rt = runtime();
    let (stats, answers) = rt.block_on(async {
        let name = ServerName::IpAddress(addr.ip().into());
        let mut client = connect(&anchor, addr, name).await;
        let mut answers = Vec::new();
        // RFC 8484 §4.1: clients use ID 0 so that GET answers cache well.
        for (i, name) in ["www.example.", "nope.example.", "www.elsewhere."]
            .iter()
            .enumerate()
        {
            let q = query(0, name);
            let uri = format!("https://{addr}/dns-query?dns={}", b64(&q));
            let get = send(&mut client, Method::GET, &uri, None, None).await;
            assert_eq!(get.0, StatusCode::OK, "{name}");
            assert_eq!(get.1.as_deref(), Some(DNS_MESSAGE));
            let uri = format!("https://{addr}/dns-query");
            let q = query(i as u16 + 1, name);
            let post = send(
                &mut client,
                Method::POST,
                &uri,
                Some(DNS_MESSAGE),
                Some(q.clone()),
            )
            .await;
            assert_eq!(post.0, StatusCode::OK, "{name}");
            answers.push((query(0, name), get.2, q, post.2));
        }
        (server.stats(), answers)
    });
    let mut codes = Vec::new();
    for (get_q, get_a, post_q, post_a) in answers {
        assert_eq!(get_a, over_udp(&server, &get_q), "GET answer as over UDP");
        assert_eq!(
            post_a,
            over_udp(&server, &post_q),
            "POST answer as over UDP"
        );
        codes.push(rcode_and_answers(&post_a));
    }
    assert_eq!(
        codes,
        [
            (Rcode::NOERROR, 1),
            (Rcode::NXDOMAIN, 0),
            (Rcode::REFUSED, 0)
        ]
    );
    assert_eq!(stats.doh_queries, 6, "{stats:?}");
    assert_eq!(stats.doh_responses, 6, "{stats:?}");
    assert_eq!(stats.doh_accepted, 1, "{stats:?}");
    assert_eq!(stats.doh_handshakes, 1, "{stats:?}");
    assert_eq!(stats.doh_errors.requests(), 0, "{stats:?}");
    let s = server.stop();
    assert_eq!(s.responses, 12, "six over DoH, six over UDP: {s:?}");
    assert_eq!(s.kinds.nxdomain, 4, "{s:?}");
}

/// A request (method, URI, content type, body) and the status it must get.
type Case<'a> = (Method, String, Option<&'a str>, Option<Vec<u8>>, StatusCode);

#[test]
fn bad_requests_are_refused_counted_and_the_connection_serves_on() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0".parse().unwrap()], |d| {
        d.path = "/q".into()
    });
    let addr = server.doh_local_addrs()[0];
    let rt = runtime();
    rt.block_on(async {
        let name = ServerName::try_from("localhost").unwrap();
        let mut client = connect(&anchor, addr, name).await;
        let at = |rest: &str| format!("https://{addr}{rest}");
        let good = query(7, "www.example.");
        let cases: Vec<Case> = vec![
            (
                Method::POST,
                at("/q"),
                Some("text/plain"),
                Some(good.clone()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (
                Method::POST,
                at("/q"),
                None,
                Some(good.clone()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            (
                Method::GET,
                at("/q?dns=***"),
                None,
                None,
                StatusCode::BAD_REQUEST,
            ),
            (
                Method::GET,
                at("/q?other=1"),
                None,
                None,
                StatusCode::BAD_REQUEST,
            ),
            (
                Method::GET,
                at(&format!("/q?dns={}", b64(b"short"))),
                None,
                None,
                StatusCode::BAD_REQUEST,
            ),
            (
                Method::POST,
                at("/q"),
                Some(DNS_MESSAGE),
                Some(vec![0u8; 70_000]),
                StatusCode::PAYLOAD_TOO_LARGE,
            ),
            (
                Method::GET,
                at(&format!("/dns-query?dns={}", b64(&good))),
                None,
                None,
                StatusCode::NOT_FOUND,
            ),
            (
                Method::PUT,
                at("/q"),
                Some(DNS_MESSAGE),
                Some(good.clone()),
                { StatusCode::METHOD_NOT_ALLOWED },
            ),
        ];
        for (method, uri, ctype, body, want) in cases {
            let (status, _, _) = send(&mut client, method.clone(), &uri, ctype, body).await;
            assert_eq!(status, want, "{method} {uri} {ctype:?}");
        }
        // A response (QR set) is no query: 400.
        let mut response = good.clone();
        response[2] |= 0x80;
        let (status, _, _) = send(
            &mut client,
            Method::POST,
            &at("/q"),
            Some(DNS_MESSAGE),
            Some(response),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // Parameters may come in any order, the media type with parameters.
        let uri = at(&format!("/q?ct=1&dns={}", b64(&good)));
        let (status, _, body) = send(&mut client, Method::GET, &uri, None, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(rcode_and_answers(&body), (Rcode::NOERROR, 1));
        let ctype = Some("Application/DNS-Message; charset=binary");
        let (status, _, body) = send(&mut client, Method::POST, &at("/q"), ctype, Some(good)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(rcode_and_answers(&body), (Rcode::NOERROR, 1));
    });
    let s = server.stop();
    let e = s.doh_errors;
    assert_eq!(e.unsupported_media_type, 2, "{s:?}");
    assert_eq!(e.bad_request, 4, "{s:?}");
    assert_eq!(e.too_large, 1, "{s:?}");
    assert_eq!(e.not_found, 1, "{s:?}");
    assert_eq!(e.method_not_allowed, 1, "{s:?}");
    assert_eq!(e.requests(), 9, "{s:?}");
    assert_eq!(s.doh_accepted, 1, "one connection throughout: {s:?}");
    assert_eq!(s.doh_responses, 2, "{s:?}");
    assert_eq!(
        s.doh_queries, 3,
        "the response sent as a query counts: {s:?}"
    );
}

#[test]
fn split_views_by_the_address_connected_to() {
    let port = ldplayer_testbed::free_port();
    let at = |ip: &str| -> SocketAddr { format!("{ip}:{port}").parse().unwrap() };
    let views = Views::by_address([
        ("127.0.0.1".parse().unwrap(), zone("one.")),
        ("127.0.0.2".parse().unwrap(), zone("two.")),
    ]);
    let (server, anchor) = start(views, &["127.0.0.1", "127.0.0.2"].map(at), |_| {});
    let rt = runtime();
    rt.block_on(async {
        for (ip, mine, other) in [
            ("127.0.0.1", "www.one.", "www.two."),
            ("127.0.0.2", "www.two.", "www.one."),
        ] {
            let addr = at(ip);
            let mut client = connect(&anchor, addr, ServerName::IpAddress(addr.ip().into())).await;
            let uri = format!("https://{addr}/dns-query");
            for (name, want) in [(mine, (Rcode::NOERROR, 1)), (other, (Rcode::REFUSED, 0))] {
                let (status, _, body) = send(
                    &mut client,
                    Method::POST,
                    &uri,
                    Some(DNS_MESSAGE),
                    Some(query(0, name)),
                )
                .await;
                assert_eq!(status, StatusCode::OK);
                assert_eq!(rcode_and_answers(&body), want, "{name} at {ip}");
            }
        }
    });
    let s = server.stop();
    assert_eq!(s.doh_responses, 4, "{s:?}");
    assert_eq!(s.kinds.refused, 2, "{s:?}");
}

/// Reads until the server closes the connection (or the client timeout); how long it took.
async fn closed_after<S: tokio::io::AsyncRead + Unpin>(mut s: S) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    let read_all = async {
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    tokio::time::timeout(CLIENT_TIMEOUT, read_all)
        .await
        .expect("closed in time");
    started.elapsed()
}

#[test]
fn clients_without_http2_the_connection_cap_and_idle_connections() {
    let idle = Duration::from_millis(600);
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0".parse().unwrap()], |d| {
        d.idle_timeout = idle;
        d.max_connections = 1;
    });
    let addr = server.doh_local_addrs()[0];
    let name = || ServerName::IpAddress(addr.ip().into());
    let rt = runtime();
    rt.block_on(async {
        // Offering only HTTP/1.1 in ALPN: refused in the TLS handshake.
        let tcp = TcpStream::connect(addr).await.unwrap();
        let refused = TlsConnector::from(client_config(&anchor, &[b"http/1.1"]))
            .connect(name(), tcp)
            .await;
        assert!(refused.is_err(), "no common application protocol");
        // No ALPN, then HTTP/1.1 in place of the HTTP/2 preface: closed.
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut tls = TlsConnector::from(client_config(&anchor, &[]))
            .connect(name(), tcp)
            .await
            .expect("TLS without ALPN");
        tls.write_all(b"GET /dns-query HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let took = closed_after(tls).await;
        assert!(
            took < idle,
            "closed for the bad preface, not idle: {took:?}"
        );

        // One connection allowed: a second one is closed at once, the first still serves.
        let (mut first, driver) = connect_driven(&anchor, addr, name()).await;
        let second = TcpStream::connect(addr).await.unwrap();
        let took = closed_after(second).await;
        assert!(took < idle, "refused, not idle: {took:?}");
        let uri = format!("https://{addr}/dns-query");
        let (status, _, _) = send(
            &mut first,
            Method::POST,
            &uri,
            Some(DNS_MESSAGE),
            Some(query(0, "www.example.")),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        // Left idle, the first is closed (GOAWAY) after the idle timeout.
        let started = Instant::now();
        tokio::time::timeout(CLIENT_TIMEOUT, driver)
            .await
            .expect("closed in time")
            .expect("driver ends");
        let waited = started.elapsed();
        assert!(
            waited >= idle.mul_f64(0.8),
            "closed after {waited:?}, idle timeout {idle:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let s: ServerStats = server.stats();
        assert_eq!(s.doh_idle_closed, 1, "{s:?} after {waited:?}");
        assert_eq!(s.doh_open, 0, "{s:?}");
    });
    let s = server.stop();
    let e = s.doh_errors;
    assert_eq!(e.tls, 1, "{s:?}");
    assert_eq!(e.http, 1, "{s:?}");
    assert_eq!(e.refused_connections, 1, "{s:?}");
    assert_eq!(s.doh_accepted, 4, "{s:?}");
    assert_eq!(s.doh_peak_open, 1, "{s:?}");
    assert_eq!(s.doh_responses, 1, "{s:?}");
}

#[test]
fn answers_say_how_long_caches_may_keep_them() {
    // www for 60 s; the negative caching time is the SOA's MINIMUM, 120 s, below its TTL.
    let text = "$ORIGIN example.\n$TTL 300\n@ 3600 SOA ns1 hostmaster 1 7200 3600 1209600 120\n\
                @ NS ns1\nns1 A 192.0.2.1\nwww 60 A 192.0.2.10\nsub NS ns.sub\nns.sub 500 A 192.0.2.3\n";
    let zone = Zone::from_text(text, "test.zone", None).expect("zone loads");
    let zones: Arc<ZoneSet> = Arc::new(std::iter::once(zone).collect());
    let (server, anchor) = start(zones, &["127.0.0.1:0".parse().unwrap()], |_| {});
    let addr = server.doh_local_addrs()[0];
    let rt = runtime();
    let ages = rt.block_on(async {
        let name = ServerName::IpAddress(addr.ip().into());
        let mut client = connect(&anchor, addr, name).await;
        let mut ages = Vec::new();
        for qname in [
            "www.example.",
            "nope.example.",
            "a.sub.example.",
            "www.elsewhere.",
        ] {
            let request = Request::builder()
                .method(Method::POST)
                .uri(format!("https://{addr}/dns-query"))
                .header("content-type", DNS_MESSAGE)
                .body(())
                .unwrap();
            let ready = client.clone().ready().await.expect("connection ready");
            client = ready;
            let (response, mut stream) = client.send_request(request, false).expect("sent");
            stream
                .send_data(query(0, qname).into(), true)
                .expect("body sent");
            let response = tokio::time::timeout(CLIENT_TIMEOUT, response)
                .await
                .expect("in time")
                .expect("response");
            assert_eq!(response.status(), StatusCode::OK, "{qname}");
            ages.push(
                response
                    .headers()
                    .get("cache-control")
                    .map(|v| v.to_str().unwrap().to_string()),
            );
        }
        ages
    });
    let ages: Vec<Option<&str>> = ages.iter().map(Option::as_deref).collect();
    assert_eq!(
        ages,
        [
            Some("max-age=60"),
            Some("max-age=120"),
            Some("max-age=300"),
            Some("max-age=0")
        ]
    );
}
