//! The lean QUIC client and its DoQ framing over a real loopback socket against aioquic's DoQ
//! server (`ldplayer_testbed::aioquic`: another QUIC stack and another TLS, in Python, with
//! dnspython's answers): queries answered over one connection; a second connection resuming
//! the session and sending its queries in 0-RTT, as the server counts it; the server's key
//! updates every 3 answers, with and without the client's own every 2 packets. The driver is
//! `common`, shared with doq_against_quinn.rs. Needs python3 with aioquic and dnspython
//! (scripts/test.sh installs them): without, the tests fail saying so.

mod common;

use ldplayer_dns::{Class, Message, Rcode, Rtype, Section};
use ldplayer_stacks::quic::conn::DEFAULT_KEY_UPDATE_PACKETS;
use ldplayer_testbed::aioquic::{self, AioquicServer, Script};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// aioquic's DoQ server on loopback and a client TLS configuration trusting its certificate.
struct Peer {
    server: AioquicServer,
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    /// The certificates' folder, removed on drop.
    _dir: tempfile::TempDir,
}

/// Starts the DoQ server, with a key update every `key_update_every` answers on a connection
/// when given; `None` only when aioquic is missing and skipping is allowed.
fn peer(key_update_every: Option<u32>) -> Option<Peer> {
    if !aioquic::available() {
        return None;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let port = ldplayer_testbed::free_port();
    let extra: Vec<String> = key_update_every.iter().map(u32::to_string).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let server = aioquic::start(Script::Doq, port, &cert, &key, &extra);
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(&ca).expect("the CA's certificate"))
        .expect("a CA rustls takes");
    Some(Peer {
        server,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        tls: common::client_tls(roots),
        _dir: dir,
    })
}

/// The name query `i` asks: www.example. (which the server answers) for even `i`, a name it
/// does not know for odd.
fn name(i: u16) -> &'static str {
    if i.is_multiple_of(2) {
        "www.example."
    } else {
        "nope.example."
    }
}

/// Query `i`: `name(i)` A, RD set, with an ID of its own (DoQ sends 0 on the wire; the server
/// must answer it).
fn query(i: u16) -> Vec<u8> {
    ldplayer_testbed::recursive_query(0x100 + i, name(i), Rtype::A)
}

/// Checks that `answer` is the server's real answer to query `i`: ID 0 (RFC 9250 §4.2.1), QR
/// set, the question echoed; for www.example. NOERROR with the one record
/// www.example. A 192.0.2.1, for another name NXDOMAIN and no answer.
fn assert_answers(answer: &[u8], i: u16) {
    let msg = Message::parse(answer).unwrap_or_else(|e| panic!("query {i}: {e}: {answer:?}"));
    let header = msg.header();
    assert_eq!(header.id, 0, "query {i}: DoQ answers carry ID 0");
    assert!(header.qr(), "query {i}: QR set");
    let mut qname = Vec::new();
    assert!(msg.qname_wire(&mut qname), "query {i}: a question");
    let asked = ldplayer_dns::name_from_presentation(name(i)).expect("a name");
    assert_eq!(qname, asked, "query {i}: the question echoed");
    assert_eq!(msg.qtype(), Some(Rtype::A), "query {i}");
    let answers: Vec<_> = msg
        .records()
        .filter(|rr| rr.section == Section::Answer)
        .collect();
    if name(i) == "www.example." {
        assert_eq!(msg.rcode(), Rcode::NOERROR, "query {i}");
        assert_eq!(answers.len(), 1, "query {i}: {answers:?}");
        let rr = answers[0];
        let mut owner = Vec::new();
        rr.owner(&mut owner);
        assert_eq!(owner, asked, "query {i}: the record's owner");
        assert_eq!((rr.rtype, rr.class), (Rtype::A, Class::IN), "query {i}");
        assert_eq!(rr.rdata(), [192, 0, 2, 1], "query {i}: the address");
    } else {
        assert_eq!(msg.rcode(), Rcode::NXDOMAIN, "query {i}");
        assert!(answers.is_empty(), "query {i}: {answers:?}");
    }
}

#[test]
fn doq_queries_are_answered_by_aioquic_over_one_connection() {
    let Some(peer) = peer(None) else { return };
    let start = Instant::now();
    let mut conn = common::lean(&peer.tls, false, DEFAULT_KEY_UPDATE_PACKETS, 0);
    let socket = common::socket_to(peer.addr);
    let mut events = Vec::new();
    // One after another, then four at once on as many streams.
    for i in 0..6u16 {
        let answer = common::ask(&mut conn, &socket, start, &mut events, &[query(i)]);
        assert_answers(&answer[0], i);
    }
    let at_once: Vec<Vec<u8>> = (6..10u16).map(query).collect();
    let answers = common::ask(&mut conn, &socket, start, &mut events, &at_once);
    for (i, answer) in (6..10u16).zip(&answers) {
        assert_answers(answer, i);
    }
    assert_eq!(conn.closed(), None, "{events:?}");
    assert_eq!(
        common::handshakes(&events),
        [(false, None)],
        "one full handshake: {events:?}"
    );
    common::close(&mut conn, &socket, start);
    let served = peer.server.stop();
    assert_eq!(served["queries"], 10, "{served}");
    assert_eq!(served["connections"], 1, "{served}");
    assert_eq!(served["resumed"], 0, "{served}");
    assert_eq!(served["zero_rtt"], 0, "{served}");
}

#[test]
fn a_second_connection_resumes_the_session_and_asks_in_0rtt() {
    let Some(peer) = peer(None) else { return };
    let start = Instant::now();
    let mut events = Vec::new();
    let mut first = common::lean(&peer.tls, true, DEFAULT_KEY_UPDATE_PACKETS, 0);
    assert!(!first.zero_rtt(), "no session to resume yet");
    let socket = common::socket_to(peer.addr);
    let answers = common::ask(
        &mut first,
        &socket,
        start,
        &mut events,
        &[query(0), query(1)],
    );
    assert_answers(&answers[0], 0);
    assert_answers(&answers[1], 1);
    common::close(&mut first, &socket, start);
    assert_eq!(common::handshakes(&events), [(false, None)], "{events:?}");

    // A new client port, the same session store: the server's ticket lets the queries go in
    // 0-RTT, before the handshake is done.
    events.clear();
    let mut second = common::lean(
        &peer.tls,
        true,
        DEFAULT_KEY_UPDATE_PACKETS,
        common::ns_since(start),
    );
    assert!(
        second.zero_rtt(),
        "the first connection's ticket allows 0-RTT"
    );
    let socket = common::socket_to(peer.addr);
    let asked: Vec<Vec<u8>> = (2..6u16).map(query).collect();
    let answers = common::ask(&mut second, &socket, start, &mut events, &asked);
    for (i, answer) in (2..6u16).zip(&answers) {
        assert_answers(answer, i);
    }
    assert_eq!(
        common::handshakes(&events),
        [(true, Some(true))],
        "resumed, the 0-RTT data taken: {events:?}"
    );
    common::close(&mut second, &socket, start);
    let served = peer.server.stop();
    assert_eq!(served["queries"], 6, "{served}");
    assert_eq!(served["connections"], 2, "{served}");
    assert_eq!(served["resumed"], 1, "{served}");
    assert_eq!(served["zero_rtt"], 1, "{served}");
}

/// aioquic starts a key update after every third answer; the client follows each, with its
/// default update interval (none of its own in 24 queries) and with its own update every 2
/// packets besides (aioquic then updates again before it has sent in the phase the client
/// started, which the client follows too). Every query is answered on the one connection.
#[test]
fn every_query_is_answered_through_the_servers_and_the_clients_key_updates() {
    for own in [DEFAULT_KEY_UPDATE_PACKETS, 2] {
        let Some(peer) = peer(Some(3)) else { return };
        let start = Instant::now();
        let mut conn = common::lean(&peer.tls, false, own, 0);
        let socket = common::socket_to(peer.addr);
        let mut events = Vec::new();
        for i in 0..24u16 {
            let answer = common::ask(&mut conn, &socket, start, &mut events, &[query(i)]);
            assert_answers(&answer[0], i);
        }
        assert_eq!(conn.closed(), None, "client every {own}: {events:?}");
        assert_eq!(
            common::handshakes(&events).len(),
            1,
            "client every {own}: one handshake: {events:?}"
        );
        // The server's updates followed are not the client's own.
        let started = conn.key_updates_started();
        if own == 2 {
            assert!(started >= 1, "the client updated its keys itself");
        } else {
            assert_eq!(started, 0, "no update of its own in so few packets");
        }
        common::close(&mut conn, &socket, start);
        let served = peer.server.stop();
        assert_eq!(served["queries"], 24, "client every {own}: {served}");
        assert_eq!(served["connections"], 1, "client every {own}: {served}");
        assert_eq!(served["key_updates"], 8, "client every {own}: {served}");
    }
}
