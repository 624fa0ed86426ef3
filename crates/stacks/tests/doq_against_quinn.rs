//! The lean QUIC client and its DoQ framing over a real loopback socket against quinn's server
//! (another QUIC stack, on tokio): a small driver moves the sans-IO connection's datagrams, and
//! the server answers each query stream with the query, QR set. Queries go one after another
//! on one connection, with the client updating its keys every few packets. The driver is
//! `common`, shared with the tests against aioquic (doq_against_aioquic.rs).

mod common;

use ldplayer_dns::Rtype;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
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

#[test]
fn doq_queries_are_answered_by_quinns_server_over_loopback() {
    let (cert, key) = identity();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).expect("the cert");
    let server = quinn_server(cert, key);
    let tls = common::client_tls(roots);
    let start = Instant::now();
    let mut conn = common::lean(&tls, false, 3, 0);
    let socket = common::socket_to(server);
    let mut events = Vec::new();
    for i in 0..8u16 {
        let wire = ldplayer_testbed::recursive_query(0x100 + i, "www.example.", Rtype::A);
        let msg = common::ask(
            &mut conn,
            &socket,
            start,
            &mut events,
            std::slice::from_ref(&wire),
        );
        let mut want = wire;
        want[..2].copy_from_slice(&[0, 0]); // DNS ID 0 on DoQ.
        want[2] |= 0x80;
        assert_eq!(msg, [want], "query {i}");
    }
    assert_eq!(conn.closed(), None);
    assert_eq!(
        common::handshakes(&events),
        [(false, None)],
        "one handshake, not resumed: {events:?}"
    );
    assert!(
        conn.key_updates_started() >= 1,
        "the client updated its keys"
    );
    common::close(&mut conn, &socket, start);
}
