//! DNS over TLS over loopback, with rustls as the client: answers and their counters, TLS 1.2,
//! session resumption, split views by the address connected to, the idle timeout, garbage in
//! place of a handshake, and that the first answer on a fresh connection is not held back
//! (TCP_NODELAY on the server's accepted socket, read back with getsockopt, and the time from
//! the client's Finished to the answer).

mod encrypted;

use encrypted::{certificate, zone};

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldplayer_dns::{build, name_from_presentation, Class, Fields, Message, Question, Rcode, Rtype};
use ldplayer_server::{RunningServer, Server, ServerConfig, ServerStats, TlsConfig, TlsIdentity};
use ldplayer_zone::Views;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(3);
const LONG_IDLE: Duration = Duration::from_secs(20);

fn client_config(
    anchor: &CertificateDer<'static>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(anchor.clone()).expect("trust anchor");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A server with UDP/TCP on 127.0.0.1 and TLS on `tls_listen`, and the certificate to trust.
fn start(
    views: impl Into<Views>,
    tls_listen: &[&str],
    idle: Duration,
) -> (RunningServer, CertificateDer<'static>) {
    let (identity, anchor) = certificate();
    let mut config = ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()]);
    config.tcp_idle_timeout = idle;
    config.tls = Some(TlsConfig {
        listen: tls_listen.iter().map(|a| a.parse().unwrap()).collect(),
        identity,
    });
    let server = Server::start(config, views).expect("server starts");
    (server, anchor)
}

/// A framed A query for `name`.
fn query(id: u16, name: &str) -> Vec<u8> {
    let q = build(&Fields {
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
    .unwrap();
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    framed
}

type Dot = StreamOwned<ClientConnection, TcpStream>;

fn connect(config: &Arc<ClientConfig>, addr: SocketAddr) -> Dot {
    let sock = TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let name = ServerName::IpAddress(addr.ip().into());
    let session = ClientConnection::new(config.clone(), name).expect("client session");
    StreamOwned::new(session, sock)
}

/// One framed answer: its ID, response code and answer count.
fn read_answer(s: &mut impl Read) -> (u16, Rcode, u16) {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).expect("answer length");
    let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("answer");
    let m = Message::parse(&body).expect("answer parses");
    (m.header().id, m.rcode(), m.header().ancount)
}

/// Asks for `name`; the response code and answer count.
fn ask(s: &mut Dot, id: u16, name: &str) -> (Rcode, u16) {
    s.write_all(&query(id, name)).expect("query");
    s.flush().expect("flush");
    let (got, rcode, ancount) = read_answer(s);
    assert_eq!(got, id);
    (rcode, ancount)
}

/// Waits (at most 10 s, polling) until `check` holds for the server's counters.
fn wait_for(server: &RunningServer, check: impl Fn(&ServerStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check(&server.stats()) {
        assert!(Instant::now() < deadline, "{:?}", server.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True when the server closed the connection (EOF, a close_notify or a reset) before the
/// client timeout.
fn closed_by_server(s: &mut impl Read) -> bool {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
        ),
    }
}

/// True when the server closes the socket (after whatever it still sends, such as an alert)
/// before the client timeout.
fn ends(s: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

#[test]
fn answers_over_tls_pipelined_resumed_and_over_tls_1_2() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0"], LONG_IDLE);
    let addr = server.tls_local_addrs()[0];
    assert_ne!(addr.port(), 0);
    assert_ne!(addr, server.local_addrs()[0], "TLS has a port of its own");
    let tls13 = client_config(&anchor, &[&rustls::version::TLS13]);

    let mut c = connect(&tls13, addr);
    assert_eq!(ask(&mut c, 7, "www.example."), (Rcode::NOERROR, 1));
    assert_eq!(
        c.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    // Three pipelined queries in one write, answered in order.
    let three: Vec<u8> = (10..13).flat_map(|id| query(id, "www.example.")).collect();
    c.write_all(&three).unwrap();
    for id in 10..13 {
        assert_eq!(read_answer(&mut c).0, id);
    }
    c.conn.send_close_notify();
    c.flush().unwrap();
    assert!(
        closed_by_server(&mut c),
        "the server ends after close_notify"
    );
    drop(c);

    // The same client configuration keeps the server's ticket: the next connection resumes.
    let mut again = connect(&tls13, addr);
    assert_eq!(ask(&mut again, 20, "www.example."), (Rcode::NOERROR, 1));
    assert_eq!(
        again.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Resumed)
    );
    drop(again);

    let tls12 = client_config(&anchor, &[&rustls::version::TLS12]);
    let mut old = connect(&tls12, addr);
    assert_eq!(ask(&mut old, 30, "nothing.example."), (Rcode::NXDOMAIN, 0));
    assert_eq!(
        old.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    drop(old);

    wait_for(&server, |s| s.tcp_open == 0);
    let s = server.stop();
    assert_eq!(s.tls_queries, 6, "{s:?}");
    assert_eq!(s.tls_responses, 6, "{s:?}");
    assert_eq!(s.responses, 6, "{s:?}");
    assert_eq!((s.tcp_queries, s.tcp_responses), (0, 0), "{s:?}");
    assert_eq!(s.kinds.nxdomain, 1, "{s:?}");
    assert_eq!(s.tls_accepted, 3, "{s:?}");
    assert_eq!(
        s.tcp_accepted, 3,
        "TLS connections are TCP connections too: {s:?}"
    );
    assert_eq!(s.tls_handshakes, 3, "{s:?}");
    assert_eq!(s.tls_resumed, 1, "{s:?}");
    assert_eq!(s.tls_errors, 0, "{s:?}");
}

#[test]
fn tls_only_server_and_certificate_errors() {
    let (identity, _) = certificate();
    let mut config = ServerConfig::new(Vec::new());
    config.tls = Some(TlsConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        identity,
    });
    let server = Server::start(config, zone("example.")).expect("TLS alone is enough");
    assert!(server.local_addrs().is_empty());
    assert_eq!(server.tls_local_addrs().len(), 1);
    drop(server);

    // A key that is not the certificate's.
    let one = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let mismatched = TlsIdentity::from_pem(
        one.cert.pem().as_bytes(),
        other.signing_key.serialize_pem().as_bytes(),
    )
    .expect("both parse");
    let mut config = ServerConfig::new(Vec::new());
    config.tls = Some(TlsConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        identity: mismatched,
    });
    let err = Server::start(config, zone("example.")).expect_err("mismatched key");
    assert!(matches!(err, ldplayer_server::ServerError::Tls(_)), "{err}");

    // No certificate in the PEM; a missing file.
    let key = one.signing_key.serialize_pem();
    assert!(TlsIdentity::from_pem(b"", key.as_bytes()).is_err());
    let dir = tempfile::tempdir().unwrap();
    let err = TlsIdentity::from_pem_files(&dir.path().join("no.pem"), &dir.path().join("no.key"))
        .expect_err("missing file");
    assert!(err.to_string().contains("no.pem"), "{err}");
}

#[test]
fn split_views_by_the_address_connected_to() {
    // One port on three addresses: two nameservers and one in no view.
    let port = ldplayer_testbed::free_port();
    let at = |ip: &str| -> SocketAddr { format!("{ip}:{port}").parse().unwrap() };
    let views = Views::by_address([
        ("127.0.0.1".parse().unwrap(), zone("one.")),
        ("127.0.0.2".parse().unwrap(), zone("two.")),
    ]);
    let (identity, anchor) = certificate();
    let mut config = ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()]);
    config.tls = Some(TlsConfig {
        listen: ["127.0.0.1", "127.0.0.2", "127.0.0.3"].map(at).to_vec(),
        identity,
    });
    let server = Server::start(config, views).expect("server starts");
    let client = client_config(&anchor, &[&rustls::version::TLS13]);

    let mut one = connect(&client, at("127.0.0.1"));
    assert_eq!(ask(&mut one, 1, "www.one."), (Rcode::NOERROR, 1));
    assert_eq!(ask(&mut one, 2, "www.two."), (Rcode::REFUSED, 0));
    let mut two = connect(&client, at("127.0.0.2"));
    assert_eq!(ask(&mut two, 3, "www.two."), (Rcode::NOERROR, 1));
    assert_eq!(ask(&mut two, 4, "www.one."), (Rcode::REFUSED, 0));
    // 127.0.0.3 is not in the certificate: the client checks it by name instead.
    let sock = TcpStream::connect(at("127.0.0.3")).unwrap();
    sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut nobody = StreamOwned::new(ClientConnection::new(client.clone(), name).unwrap(), sock);
    assert_eq!(ask(&mut nobody, 5, "www.one."), (Rcode::REFUSED, 0));

    let s = server.stop();
    assert_eq!(s.no_view, 1, "{s:?}");
    assert_eq!(s.kinds.refused, 3, "{s:?}");
    assert_eq!(s.tls_responses, 5, "{s:?}");
}

#[test]
fn idle_tls_connections_are_closed() {
    let idle = Duration::from_millis(500);
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0"], idle);
    let addr = server.tls_local_addrs()[0];
    let client = client_config(&anchor, &[&rustls::version::TLS13]);

    // One that queried, then fell silent; one that never finished its handshake.
    let mut quiet = connect(&client, addr);
    assert_eq!(ask(&mut quiet, 1, "www.example."), (Rcode::NOERROR, 1));
    let mut mute = TcpStream::connect(addr).unwrap();
    mute.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    let started = Instant::now();
    assert!(closed_by_server(&mut quiet), "the idle session is closed");
    assert!(closed_by_server(&mut mute), "the silent socket is closed");
    let waited = started.elapsed();
    assert!(
        waited >= idle / 2 && waited < idle + Duration::from_secs(1),
        "closed after {waited:?}"
    );
    let s = server.stop();
    assert_eq!(s.tcp_idle_closed, 2, "{s:?}");
    assert_eq!(s.tls_handshakes, 1, "{s:?}");
}

#[test]
fn garbage_instead_of_tls_is_counted_and_harms_no_one() {
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0"], LONG_IDLE);
    let addr = server.tls_local_addrs()[0];
    let client = client_config(&anchor, &[&rustls::version::TLS13]);

    // A client in the middle of its session while others misbehave.
    let mut good = connect(&client, addr);
    assert_eq!(ask(&mut good, 1, "www.example."), (Rcode::NOERROR, 1));

    // Plain DNS over TCP sent to the TLS port; random bytes; an HTTP request.
    let junk: [&[u8]; 3] = [
        &query(9, "www.example."),
        &[0x5a; 300],
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    for bytes in junk {
        let mut bad = TcpStream::connect(addr).unwrap();
        bad.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        bad.write_all(bytes).unwrap();
        // The server answers with at most a TLS alert, then closes.
        let mut got = Vec::new();
        match bad.read_to_end(&mut got) {
            Ok(_) => {}
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        }
        assert!(got.len() <= 7, "at most an alert: {got:?}");
        if let Some(&content_type) = got.first() {
            assert_eq!(content_type, 21, "a TLS alert record");
        }
        // The good client is served all along.
        assert_eq!(ask(&mut good, 2, "www.example."), (Rcode::NOERROR, 1));
    }
    // A client certificate-less garbage after a good handshake: a record that fails to decrypt.
    let mut broken = connect(&client, addr);
    assert_eq!(ask(&mut broken, 3, "www.example."), (Rcode::NOERROR, 1));
    broken
        .sock
        .write_all(
            &[23, 3, 3, 0, 40]
                .iter()
                .copied()
                .chain([7; 40])
                .collect::<Vec<u8>>(),
        )
        .unwrap();
    assert!(ends(&mut broken.sock), "a bad record ends the session");
    assert_eq!(ask(&mut good, 4, "www.example."), (Rcode::NOERROR, 1));

    let s = server.stop();
    assert_eq!(s.tls_errors, 4, "{s:?}");
    assert_eq!(s.tls_handshakes, 2, "{s:?}");
    assert_eq!(s.tls_queries, 6, "{s:?}");
    assert_eq!(s.tls_responses, 6, "{s:?}");
}

/// Whether the server's end of the connection from `client` has TCP_NODELAY: the server runs in
/// this process, so its socket is one of the open descriptors, found by its addresses.
fn server_nodelay(server: SocketAddr, client: SocketAddr) -> Option<bool> {
    for entry in std::fs::read_dir("/proc/self/fd").ok()? {
        let Some(fd) = entry
            .ok()
            .and_then(|e| e.file_name().to_str()?.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: only options of the descriptor are read, here and now; one that closed in
        // the meantime fails those reads (or names another socket, which the addresses rule
        // out).
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let sock = socket2::SockRef::from(&fd);
        let (Ok(local), Ok(peer)) = (sock.local_addr(), sock.peer_addr()) else {
            continue;
        };
        if local.as_socket() == Some(server) && peer.as_socket() == Some(client) {
            return sock.tcp_nodelay().ok();
        }
    }
    None
}

/// A full TLS 1.3 handshake, stopped with the client's Finished written into the session but
/// not yet sent.
fn handshake_up_to_finished(conn: &mut ClientConnection, sock: &mut TcpStream) {
    while conn.is_handshaking() {
        while conn.wants_write() && conn.is_handshaking() {
            conn.write_tls(sock).expect("handshake write");
        }
        if !conn.is_handshaking() {
            break;
        }
        conn.read_tls(sock).expect("handshake read");
        conn.process_new_packets().expect("handshake");
    }
}

/// Reads until one framed answer came out of the session.
fn read_plain_answer(conn: &mut ClientConnection, sock: &mut TcpStream) -> u16 {
    let mut plain = Vec::new();
    loop {
        let mut buf = [0u8; 4096];
        match conn.reader().read(&mut buf) {
            Ok(n) => plain.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the answer: {e}"),
        }
        if plain.len() >= 2 && plain.len() >= 2 + u16::from_be_bytes([plain[0], plain[1]]) as usize
        {
            let m = Message::parse(&plain[2..]).expect("answer parses");
            return m.header().id;
        }
        assert!(conn.read_tls(sock).expect("answer read") > 0, "closed");
        conn.process_new_packets().expect("records");
    }
}

#[test]
fn the_first_answer_on_a_fresh_connection_is_not_held_back() {
    const CONNECTIONS: usize = 50;
    let (server, anchor) = start(zone("example."), &["127.0.0.1:0"], LONG_IDLE);
    let addr = server.tls_local_addrs()[0];
    let mut together = Vec::new();
    let mut after = Vec::new();
    for i in 0..CONNECTIONS {
        // A client of its own each time: a full handshake, and the server sends its session
        // tickets right after it, just before the first answer.
        let mut config = (*client_config(&anchor, &[&rustls::version::TLS13])).clone();
        config.resumption = rustls::client::Resumption::in_memory_sessions(4);
        let name = ServerName::IpAddress(addr.ip().into());
        let mut conn = ClientConnection::new(Arc::new(config), name).unwrap();
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
        // The client sends without delay itself, so that what is measured is the server.
        sock.set_nodelay(true).unwrap();
        handshake_up_to_finished(&mut conn, &mut sock);

        if i == 0 {
            let nodelay = server_nodelay(addr, sock.local_addr().unwrap())
                .expect("the server's socket of the connection");
            assert!(nodelay, "TCP_NODELAY on the server's TLS socket");
        }
        let id = i as u16;
        if i % 2 == 0 {
            // The client's Finished and the query in one write, as a TLS 1.3 client can.
            conn.writer().write_all(&query(id, "www.example.")).unwrap();
            let sent = Instant::now();
            while conn.wants_write() {
                conn.write_tls(&mut sock).unwrap();
            }
            assert_eq!(read_plain_answer(&mut conn, &mut sock), id);
            together.push(sent.elapsed());
        } else {
            // The Finished first, then the query once the tickets have arrived (kdig's way).
            while conn.wants_write() {
                conn.write_tls(&mut sock).unwrap();
            }
            conn.read_tls(&mut sock).expect("the session tickets");
            conn.process_new_packets().unwrap();
            conn.writer().write_all(&query(id, "www.example.")).unwrap();
            let sent = Instant::now();
            while conn.wants_write() {
                conn.write_tls(&mut sock).unwrap();
            }
            assert_eq!(read_plain_answer(&mut conn, &mut sock), id);
            after.push(sent.elapsed());
        }
    }
    for (how, mut times) in [
        ("with the Finished", together),
        ("after the tickets", after),
    ] {
        times.sort();
        let p50 = times[times.len() / 2];
        assert!(
            p50 < Duration::from_millis(5),
            "first answer {how}: median {p50:?} (all: {times:?})"
        );
    }
    let s = server.stop();
    assert_eq!(s.tls_handshakes, CONNECTIONS as u64, "{s:?}");
    assert_eq!(s.tls_resumed, 0, "{s:?}");
}

#[test]
fn plain_tcp_sockets_have_nodelay_too() {
    let (server, _) = start(zone("example."), &["127.0.0.1:0"], LONG_IDLE);
    let addr = server.local_addrs()[0];
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    // Once it has answered, the server has set up the socket.
    sock.write_all(&query(1, "www.example.")).unwrap();
    assert_eq!(read_answer(&mut sock).0, 1);
    let nodelay = server_nodelay(addr, sock.local_addr().unwrap())
        .expect("the server's socket of the connection");
    assert!(nodelay, "TCP_NODELAY on the server's TCP socket");
}
