//! The lean HTTP/2 client (DoH framing) over a real loopback TLS connection against the `h2`
//! crate's server on tokio-rustls: a small driver moves the sans-IO client's bytes through
//! rustls; the server answers each POST with its body, QR set. Its streams take 8 bytes at
//! first (SETTINGS_INITIAL_WINDOW_SIZE), so each query's body goes in pieces as the server's
//! WINDOW_UPDATE frames open the stream.

use ldplayer_stacks::http2::{request_headers, Http2Client, Outcome};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A certificate for `localhost` and its key.
fn identity() -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a cert");
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    (der, key)
}

/// Starts h2's server over tokio-rustls on 127.0.0.1 on a thread of its own, its streams'
/// initial window `window`: each request answered with its body, QR set. Its address.
fn h2_server(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    window: u32,
) -> SocketAddr {
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
            tls.alpn_protocols = vec![b"h2".to_vec()];
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a listener");
            tx.send(listener.local_addr().expect("its address"))
                .expect("the test waits");
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut conn) = h2::server::Builder::new()
                        .initial_window_size(window)
                        .handshake::<_, bytes::Bytes>(tls)
                        .await
                    else {
                        return;
                    };
                    while let Some(Ok((request, respond))) = conn.accept().await {
                        tokio::spawn(answer(request, respond));
                    }
                });
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the server started")
}

/// Reads a request's body (giving its window back as it comes) and answers with it, QR set.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
) {
    let mut body = request.into_body();
    let mut query = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        query.extend_from_slice(&chunk);
    }
    if let Some(flags) = query.get_mut(2) {
        *flags |= 0x80;
    }
    let response = http::Response::builder()
        .status(200)
        .header("content-type", "application/dns-message")
        .body(())
        .expect("a response");
    if let Ok(mut send) = respond.send_response(response, false) {
        let _ = send.send_data(query.into(), true);
    }
}

/// A DNS query for `www.example.` A with ID `id`.
fn dns_query(id: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
    q
}

#[test]
fn doh_queries_are_answered_by_h2s_server_through_tiny_stream_windows() {
    let (cert, key) = identity();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).expect("the cert");
    let server = h2_server(cert, key, 8);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let name = ServerName::try_from("localhost").expect("a name");
    let tls = rustls::ClientConnection::new(Arc::new(config), name).expect("a TLS client");
    let tcp = TcpStream::connect(server).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_millis(20)))
        .expect("a timeout");
    let mut stream = rustls::StreamOwned::new(tls, tcp);

    let mut h2 = Http2Client::new();
    let queries: Vec<Vec<u8>> = (0..6).map(|i| dns_query(0x200 + i)).collect();
    assert!(queries[0].len() > 8, "a body larger than the window");
    let request = |h2: &mut Http2Client, key: usize| {
        let q = &queries[key];
        let headers = request_headers(true, "localhost", "/dns-query", q.len());
        h2.request(key as u64, headers, Some(q.clone()));
    };
    // The first query goes before the server's SETTINGS came (in the default window, as the
    // protocol lets it); the others after its answer, within the server's 8 bytes.
    request(&mut h2, 0);
    let mut done = Vec::new();
    let mut buf = vec![0u8; 16_384];
    let start = Instant::now();
    while done.len() < queries.len() && start.elapsed() < Duration::from_secs(10) {
        if done.len() == 1 && !h2.busy() {
            for key in 1..queries.len() {
                request(&mut h2, key);
            }
        }
        let out = h2.output().to_vec();
        if !out.is_empty() {
            stream.write_all(&out).expect("write");
            stream.flush().expect("flush");
            h2.consume_output(out.len());
        }
        while h2.next_end().is_some_and(|(_, end)| end == 0) {
            h2.pop_end();
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h2.received(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => panic!("read: {e}"),
        }
        done.extend(h2.take_done());
        assert_eq!(h2.error(), None);
    }
    done.sort_by_key(|(key, _)| *key);
    let want: Vec<(u64, Outcome)> = queries
        .iter()
        .enumerate()
        .map(|(key, q)| {
            let mut a = q.clone();
            a[2] |= 0x80;
            (key as u64, Outcome::Answer(a))
        })
        .collect();
    assert_eq!(done, want);
}
