//! The server over loopback: answers over UDP and TCP (pipelining, partial writes, truncation),
//! robustness against garbage, TCP idle timeout, connection cap and malformed framing, several
//! UDP workers on one port, kdig as an independent client, and IPv6.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ldplayer_dns::{
    build, flag, name_from_presentation, Class, EdnsFields, Fields, Message, Question, Rcode, Rtype,
};
use ldplayer_server::{RunningServer, Server, ServerConfig};
use ldplayer_testbed::prerequisite;
use ldplayer_zone::{Zone, ZoneSet};

const ZONE: &str = "\
$ORIGIN example.
$TTL 300
@       SOA ns1 hostmaster 1 7200 3600 1209600 300
@       NS  ns1
ns1     A   192.0.2.1
www     A   192.0.2.10
www     A   192.0.2.11
sub     NS  ns.sub
ns.sub  A   192.0.2.53
";

const CLIENT_TIMEOUT: Duration = Duration::from_secs(3);

fn zones() -> Arc<ZoneSet> {
    let mut text = ZONE.to_string();
    // Too many records for 512 bytes: truncated over UDP without EDNS, whole over TCP.
    for i in 0..60 {
        text.push_str(&format!("many A 10.0.0.{i}\n"));
    }
    let zone = Zone::from_text(&text, "example.zone", None).expect("zone loads");
    Arc::new(std::iter::once(zone).collect())
}

fn start(config: ServerConfig) -> RunningServer {
    Server::start(config, zones()).expect("server starts")
}

fn start_on(addr: &str) -> (RunningServer, SocketAddr) {
    let server = start(ServerConfig::new(vec![addr.parse().unwrap()]));
    let addr = server.local_addrs()[0];
    assert_ne!(addr.port(), 0);
    (server, addr)
}

fn query(id: u16, name: &str, qtype: Rtype, edns: Option<u16>) -> Vec<u8> {
    build(&Fields {
        id,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation(name).unwrap(),
            qtype,
            qclass: Class::IN,
        }),
        edns: edns.map(|udp_size| EdnsFields {
            version: 0,
            udp_size,
            dnssec_ok: false,
            options: Vec::new(),
        }),
    })
    .unwrap()
}

/// What the tests look at in a response.
#[derive(Debug, PartialEq, Eq)]
struct Resp {
    id: u16,
    qr: bool,
    aa: bool,
    tc: bool,
    rcode: Rcode,
    ancount: u16,
}

fn parse(wire: &[u8]) -> Resp {
    let m = Message::parse(wire).expect("well-formed response");
    let h = m.header();
    Resp {
        id: h.id,
        qr: h.qr(),
        aa: h.flags & flag::AA != 0,
        tc: h.flags & flag::TC != 0,
        rcode: m.rcode(),
        ancount: h.ancount,
    }
}

fn udp_client(server: SocketAddr) -> UdpSocket {
    let bind = if server.is_ipv4() {
        "127.0.0.1:0"
    } else {
        "[::1]:0"
    };
    let s = UdpSocket::bind(bind).unwrap();
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s.connect(server).unwrap();
    s
}

fn udp_ask(sock: &UdpSocket, q: &[u8]) -> Resp {
    sock.send(q).unwrap();
    let mut buf = [0u8; 65535];
    let n = sock.recv(&mut buf).expect("UDP response");
    parse(&buf[..n])
}

fn tcp_client(server: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(server).unwrap();
    s.set_read_timeout(Some(CLIENT_TIMEOUT)).unwrap();
    s
}

fn framed(q: &[u8]) -> Vec<u8> {
    let mut v = (q.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(q);
    v
}

fn tcp_read(s: &mut TcpStream) -> Resp {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).expect("length prefix");
    let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).expect("TCP response");
    parse(&buf)
}

/// True when the server closed the connection (EOF or reset) before the client timeout.
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
    }
}

#[test]
fn udp_answers() {
    let (server, addr) = start_on("127.0.0.1:0");
    let c = udp_client(addr);
    let r = udp_ask(&c, &query(1, "www.example.", Rtype::A, None));
    assert_eq!(
        r,
        Resp {
            id: 1,
            qr: true,
            aa: true,
            tc: false,
            rcode: Rcode::NOERROR,
            ancount: 2
        }
    );
    let r = udp_ask(&c, &query(2, "nope.example.", Rtype::A, Some(1232)));
    assert!(r.aa && r.rcode == Rcode::NXDOMAIN && r.ancount == 0 && r.id == 2);
    let r = udp_ask(&c, &query(3, "www.example.", Rtype::MX, None));
    assert!(r.aa && r.rcode == Rcode::NOERROR && r.ancount == 0);
    let r = udp_ask(&c, &query(4, "host.sub.example.", Rtype::A, None));
    assert!(!r.aa && r.rcode == Rcode::NOERROR && r.ancount == 0);
    let r = udp_ask(&c, &query(5, "www.other.", Rtype::A, None));
    assert_eq!(r.rcode, Rcode::REFUSED);
    // Truncation follows the client's EDNS size.
    let r = udp_ask(&c, &query(6, "many.example.", Rtype::A, None));
    assert!(r.tc && r.ancount == 0);
    let r = udp_ask(&c, &query(7, "many.example.", Rtype::A, Some(4096)));
    assert!(!r.tc && r.ancount == 60);

    let s = server.stop();
    assert_eq!((s.udp_queries, s.udp_responses, s.responses), (7, 7, 7));
    assert_eq!(s.kinds.answer, 3);
    assert_eq!(s.kinds.nxdomain, 1);
    assert_eq!(s.kinds.nodata, 1);
    assert_eq!(s.kinds.referral, 1);
    assert_eq!(s.kinds.refused, 1);
    assert_eq!(s.kinds.total(), 7);
    assert_eq!(s.truncated, 1);
    assert_eq!((s.dropped, s.tcp_queries), (0, 0));
}

#[test]
fn tcp_answers_pipelined_and_in_pieces() {
    let (server, addr) = start_on("127.0.0.1:0");
    let mut c = tcp_client(addr);
    // Two queries in one write, answered in order.
    let mut both = framed(&query(10, "www.example.", Rtype::A, None));
    both.extend(framed(&query(11, "nope.example.", Rtype::A, None)));
    c.write_all(&both).unwrap();
    let r = tcp_read(&mut c);
    assert!(r.id == 10 && r.qr && r.aa && r.rcode == Rcode::NOERROR && r.ancount == 2);
    let r = tcp_read(&mut c);
    assert!(r.id == 11 && r.aa && r.rcode == Rcode::NXDOMAIN);
    // No truncation over TCP.
    c.write_all(&framed(&query(12, "many.example.", Rtype::A, None)))
        .unwrap();
    let r = tcp_read(&mut c);
    assert!(r.id == 12 && !r.tc && r.ancount == 60);
    // A query sent a few bytes at a time on the same connection.
    let q = framed(&query(13, "ns1.example.", Rtype::A, None));
    c.set_nodelay(true).unwrap();
    for piece in q.chunks(5) {
        c.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = tcp_read(&mut c);
    assert!(r.id == 13 && r.aa && r.ancount == 1);
    // A burst of many pipelined queries (more than one turn's budget).
    let mut burst = Vec::new();
    for id in 100..300u16 {
        burst.extend(framed(&query(id, "www.example.", Rtype::A, None)));
    }
    c.write_all(&burst).unwrap();
    for id in 100..300u16 {
        let r = tcp_read(&mut c);
        assert!(r.id == id && r.ancount == 2);
    }
    // A message that is not DNS but has a valid length gets FORMERR, and the connection
    // stays usable.
    let mut junk = vec![0x12, 0x34, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0];
    junk.extend([0xAB; 8]);
    c.write_all(&framed(&junk)).unwrap();
    let r = tcp_read(&mut c);
    assert!(r.id == 0x1234 && r.rcode == Rcode::FORMERR);
    // A response (QR set) gets no answer; the next query does.
    let mut resp = query(15, "www.example.", Rtype::A, None);
    resp[2] |= 0x80;
    c.write_all(&framed(&resp)).unwrap();
    c.write_all(&framed(&query(14, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut c).id, 14);
    drop(c);

    let s = server.stop();
    assert_eq!((s.tcp_queries, s.tcp_responses, s.dropped), (207, 206, 1));
    assert_eq!((s.udp_queries, s.truncated, s.tcp_accepted), (0, 0, 1));
    assert_eq!(s.kinds.formerr, 1);
}

#[test]
fn tcp_malformed_length_and_eof_mid_message_close() {
    let (server, addr) = start_on("127.0.0.1:0");
    // A length prefix shorter than a DNS header.
    let mut c = tcp_client(addr);
    c.write_all(&[0, 3, 1, 2, 3]).unwrap();
    assert!(closed_by_server(&mut c));
    // Zero length after a good query: the good one is still answered first.
    let mut c = tcp_client(addr);
    let mut bytes = framed(&query(1, "www.example.", Rtype::A, None));
    bytes.extend([0, 0]);
    c.write_all(&bytes).unwrap();
    assert_eq!(tcp_read(&mut c).id, 1);
    assert!(closed_by_server(&mut c));
    // Half a message, then the client's half-close.
    let mut c = tcp_client(addr);
    c.write_all(&[0, 40, 1, 2, 3]).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(closed_by_server(&mut c));
    // The server still serves.
    let mut c = tcp_client(addr);
    c.write_all(&framed(&query(2, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut c).id, 2);
    let s = server.stop();
    assert_eq!(s.tcp_malformed, 3);
}

#[test]
fn tcp_idle_connection_closed() {
    let server = start(ServerConfig {
        tcp_idle_timeout: Duration::from_millis(300),
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()])
    });
    let addr = server.local_addrs()[0];
    let mut c = tcp_client(addr);
    c.write_all(&framed(&query(1, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut c).id, 1);
    let t = Instant::now();
    assert!(closed_by_server(&mut c));
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_millis(2000),
        "{waited:?}"
    );
    assert_eq!(server.stop().tcp_idle_closed, 1);
}

#[test]
fn tcp_connection_cap_closes_least_recently_active() {
    let server = start(ServerConfig {
        max_tcp_connections: 2,
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()])
    });
    let addr = server.local_addrs()[0];
    let mut a = tcp_client(addr);
    a.write_all(&framed(&query(1, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut a).id, 1);
    std::thread::sleep(Duration::from_millis(20));
    let mut b = tcp_client(addr);
    b.write_all(&framed(&query(2, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut b).id, 2);
    std::thread::sleep(Duration::from_millis(20));
    // A third connection: `a` (least recently active) makes room.
    let mut c = tcp_client(addr);
    c.write_all(&framed(&query(3, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut c).id, 3);
    assert!(closed_by_server(&mut a));
    b.write_all(&framed(&query(4, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut b).id, 4);
    let s = server.stop();
    assert_eq!((s.tcp_accepted, s.tcp_evicted), (3, 1));
}

/// A small deterministic generator for garbage.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn garbage_datagrams_do_not_kill_the_server() {
    let server = start(ServerConfig {
        udp_workers: 2,
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()])
    });
    let addr = server.local_addrs()[0];
    let c = udp_client(addr);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let good = query(1, "www.example.", Rtype::A, Some(1232));
    let mut sent = 0u64;
    for i in 0..2000 {
        let d: Vec<u8> = match i % 5 {
            // Random bytes of random length (0..600).
            0 | 1 => {
                let len = (rng.next() % 600) as usize;
                (0..len).map(|_| rng.next() as u8).collect()
            }
            // A good query cut short or with bytes flipped.
            2 => good[..(rng.next() as usize % good.len())].to_vec(),
            3 => {
                let mut q = good.clone();
                let at = rng.next() as usize % q.len();
                q[at] ^= rng.next() as u8 | 1;
                q
            }
            // A response (QR set): never answered.
            _ => {
                let mut q = good.clone();
                q[2] |= 0x80;
                q
            }
        };
        c.send(&d).unwrap();
        sent += 1;
        if i % 100 == 0 {
            // Do not overflow the socket buffers.
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    // An oversized datagram (cut by the receive buffer) is dropped.
    c.send(&vec![0u8; 5000]).unwrap();
    sent += 1;
    // The server still answers, on every worker (new client ports spread over the workers).
    for id in 0..8 {
        let c2 = udp_client(addr);
        let r = udp_ask(&c2, &query(id, "www.example.", Rtype::A, None));
        assert!(r.id == id && r.aa && r.ancount == 2);
    }
    sent += 8;
    // Count the responses to the garbage that got one, bounded by the client timeout.
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 65535];
    while c.recv(&mut buf).is_ok() {}
    let s = server.stop();
    assert!(s.udp_queries <= sent && s.udp_queries > sent / 2, "{s:?}");
    assert!(s.dropped >= 400, "{s:?}");
    assert_eq!(s.udp_responses + s.dropped, s.udp_queries, "{s:?}");
}

#[test]
fn workers_share_the_port_without_tcp() {
    let server = start(ServerConfig {
        udp_workers: 3,
        tcp: false,
        ..ServerConfig::new(vec!["127.0.0.1:0".parse().unwrap()])
    });
    let addr = server.local_addrs()[0];
    for id in 0..30 {
        let c = udp_client(addr);
        assert_eq!(
            udp_ask(&c, &query(id, "www.example.", Rtype::A, None)).id,
            id
        );
    }
    assert!(TcpStream::connect_timeout(&addr, CLIENT_TIMEOUT).is_err());
    let s = server.stop();
    assert_eq!((s.udp_responses, s.tcp_accepted), (30, 0));
}

#[test]
fn bind_errors_are_reported() {
    assert!(matches!(
        Server::start(ServerConfig::default(), zones()),
        Err(ldplayer_server::ServerError::NoListenAddress)
    ));
    // The port is taken by a socket without SO_REUSEPORT.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = Server::start(ServerConfig::new(vec![addr]), zones()).unwrap_err();
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

#[test]
fn stop_is_prompt() {
    let (server, _) = start_on("127.0.0.1:0");
    let flag = server.stop_flag();
    let t = Instant::now();
    flag.store(true, std::sync::atomic::Ordering::Relaxed);
    let s = server.wait();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(s.responses, 0);
}

/// kdig's output; `None` only when kdig is missing and LDPLAYER_ALLOW_SKIP=1 (else the test
/// fails saying so).
fn kdig(args: &[&str]) -> Option<String> {
    let kdig = prerequisite::tool("kdig", "knot-dnsutils")?;
    let out = std::process::Command::new(kdig)
        .args(args)
        .output()
        .expect("kdig runs");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn kdig_gets_answers() {
    let (server, addr) = start_on("127.0.0.1:0");
    let port = addr.port().to_string();
    for transport in ["+tcp", "+notcp"] {
        let args = [
            "@127.0.0.1",
            "-p",
            &port,
            "www.example.",
            "A",
            transport,
            "+time=3",
            "+retry=0",
        ];
        let Some(out) = kdig(&args) else {
            return;
        };
        assert!(out.contains("status: NOERROR"), "{out}");
        assert!(out.contains("Flags: qr aa"), "{out}");
        assert!(
            out.contains("192.0.2.10") && out.contains("192.0.2.11"),
            "{out}"
        );
        let proto = if transport == "+tcp" { "TCP" } else { "UDP" };
        assert!(out.contains(&format!("({proto})")), "{out}");
    }
    let s = server.stop();
    assert_eq!((s.tcp_responses, s.udp_responses), (1, 1));
}

#[test]
fn ipv6_loopback() {
    if !prerequisite::ipv6_loopback() {
        return;
    }
    let server = Server::start(ServerConfig::new(vec!["[::1]:0".parse().unwrap()]), zones())
        .expect("a server on [::1]");
    let addr = server.local_addrs()[0];
    assert!(addr.is_ipv6() && addr.port() != 0);
    let r = udp_ask(&udp_client(addr), &query(1, "www.example.", Rtype::A, None));
    assert!(r.aa && r.ancount == 2);
    let mut t = tcp_client(addr);
    t.write_all(&framed(&query(2, "ns1.example.", Rtype::A, None)))
        .unwrap();
    let r = tcp_read(&mut t);
    assert!(r.id == 2 && r.aa && r.ancount == 1);
    let Some(out) = kdig(&[
        "@::1",
        "-p",
        &addr.port().to_string(),
        "www.example.",
        "+tcp",
    ]) else {
        return;
    };
    assert!(out.contains("192.0.2.10"), "{out}");
    server.stop();
}

#[test]
fn two_listen_addresses() {
    if !prerequisite::ipv6_loopback() {
        return;
    }
    let server = Server::start(
        ServerConfig::new(vec![
            "127.0.0.1:0".parse().unwrap(),
            "[::1]:0".parse().unwrap(),
        ]),
        zones(),
    )
    .expect("a server on 127.0.0.1 and [::1]");
    let addrs = server.local_addrs();
    assert_eq!(addrs.len(), 2);
    for (i, &a) in addrs.iter().enumerate() {
        let mut t = tcp_client(a);
        t.write_all(&framed(&query(i as u16, "www.example.", Rtype::A, None)))
            .unwrap();
        assert_eq!(tcp_read(&mut t).id, i as u16);
        let r = udp_ask(&udp_client(a), &query(9, "www.example.", Rtype::A, None));
        assert_eq!(r.ancount, 2);
    }
    let s = server.stop();
    assert_eq!((s.tcp_responses, s.udp_responses), (2, 2));
}

#[test]
fn tcp_large_pipeline_with_slow_reader() {
    let (server, addr) = start_on("127.0.0.1:0");
    let mut c = tcp_client(addr);
    let mut w = c.try_clone().unwrap();
    const N: u16 = 5000;
    // Far more answer bytes than the server buffers per connection: it must stop reading while
    // the client is not reading, and resume.
    let writer = std::thread::spawn(move || {
        let mut all = Vec::new();
        for id in 0..N {
            all.extend(framed(&query(id, "www.example.", Rtype::A, None)));
        }
        w.write_all(&all).unwrap();
    });
    std::thread::sleep(Duration::from_millis(200));
    for id in 0..N {
        let r = tcp_read(&mut c);
        assert!(r.id == id && r.ancount == 2);
    }
    writer.join().unwrap();
    assert_eq!(server.stop().tcp_responses, N as u64);
}

#[test]
fn tcp_garbage_streams_do_not_kill_the_server() {
    let (server, addr) = start_on("127.0.0.1:0");
    let mut rng = XorShift(0x0123_4567_89AB_CDEF);
    for _ in 0..50 {
        let mut c = tcp_client(addr);
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let len = (rng.next() % 3000) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // The server may close while we write; either way it must survive.
        let _ = c.write_all(&bytes);
        // Half-close: the server answers what was complete and closes.
        let _ = c.shutdown(std::net::Shutdown::Write);
        let mut sink = [0u8; 4096];
        while matches!(c.read(&mut sink), Ok(n) if n > 0) {}
    }
    let mut c = tcp_client(addr);
    c.write_all(&framed(&query(1, "www.example.", Rtype::A, None)))
        .unwrap();
    assert_eq!(tcp_read(&mut c).id, 1);
    let s = server.stop();
    assert_eq!(s.tcp_accepted, 51);
}

/// Waits (at most 10 s, polling) until `check` holds for the server's counters.
fn wait_for(server: &RunningServer, check: impl Fn(&ldplayer_server::ServerStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check(&server.stats()) {
        assert!(Instant::now() < deadline, "{:?}", server.stats());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Responses by response code, bytes in and out as the clients count them, and the TCP
/// connections open now and at the peak.
#[test]
fn counts_rcodes_bytes_and_open_connections() {
    let (server, addr) = start_on("127.0.0.1:0");
    let udp = udp_client(addr);
    let (mut bytes_in, mut bytes_out) = (0u64, 0u64);
    let mut buf = [0u8; 65535];
    let mut ask_udp = |q: &[u8]| {
        udp.send(q).unwrap();
        let n = udp.recv(&mut buf).expect("UDP response");
        (q.len() as u64, n as u64, parse(&buf[..n]))
    };
    let asks = [
        ("www.example.", Rtype::A, Rcode::NOERROR, false),
        ("www.example.", Rtype::A, Rcode::NOERROR, false),
        ("www.example.", Rtype::A, Rcode::NOERROR, false),
        ("nope.example.", Rtype::A, Rcode::NXDOMAIN, false),
        ("nope.example.", Rtype::AAAA, Rcode::NXDOMAIN, false),
        ("www.other.", Rtype::A, Rcode::REFUSED, false),
        ("many.example.", Rtype::A, Rcode::NOERROR, true),
    ];
    for (i, (name, qtype, rcode, tc)) in asks.into_iter().enumerate() {
        let (q, r, resp) = ask_udp(&query(i as u16, name, qtype, None));
        assert_eq!((resp.rcode, resp.tc), (rcode, tc), "{name}");
        bytes_in += q;
        bytes_out += r;
    }
    // Five bytes that are no query: counted in, dropped.
    udp.send(&[1, 2, 3, 4, 5]).unwrap();
    bytes_in += 5;
    let mut conns: Vec<TcpStream> = (0..3).map(|_| tcp_client(addr)).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        let q = query(100 + i as u16, "www.example.", Rtype::A, None);
        c.write_all(&framed(&q)).unwrap();
        let mut len = [0u8; 2];
        c.read_exact(&mut len).unwrap();
        let mut r = vec![0u8; u16::from_be_bytes(len) as usize];
        c.read_exact(&mut r).unwrap();
        assert_eq!(parse(&r).rcode, Rcode::NOERROR);
        bytes_in += q.len() as u64;
        bytes_out += r.len() as u64;
    }
    wait_for(&server, |s| s.tcp_open == 3 && s.dropped == 1);
    conns.truncate(1);
    wait_for(&server, |s| s.tcp_open == 1);
    let s = server.stop();
    let mut rcodes = [0u64; ldplayer_server::RCODE_SLOTS];
    (rcodes[0], rcodes[3], rcodes[5]) = (7, 2, 1);
    assert_eq!(s.rcodes.counts, rcodes, "{s:?}");
    assert_eq!(s.rcodes.total(), s.responses);
    assert_eq!((s.udp_queries, s.tcp_queries, s.dropped), (8, 3, 1));
    assert_eq!((s.bytes_in, s.bytes_out), (bytes_in, bytes_out));
    assert_eq!((s.tcp_accepted, s.tcp_peak_open, s.truncated), (3, 3, 1));
}
