//! The client against quinn-proto's server (another QUIC implementation), in memory and on a
//! simulated clock: handshakes, answers, loss and reordering, Retry, 0-RTT, key updates, the
//! server's close, idle timeouts, and what an idle connection keeps.

mod flow_control;
mod key_updates;
mod twin;

use super::conn::{Closed, Config, Connection, Event};
use bytes::BytesMut;
use quinn_proto as qp;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MS: i64 = 1_000_000;

fn client_addr() -> SocketAddr {
    "127.0.0.1:40000".parse().unwrap()
}

/// A quinn-proto server that answers each stream with its own bytes.
struct Server {
    endpoint: qp::Endpoint,
    conns: HashMap<qp::ConnectionHandle, qp::Connection>,
    /// Streams being read: what came so far.
    reading: HashMap<(qp::ConnectionHandle, qp::StreamId), Vec<u8>>,
    /// Send a Retry to new clients.
    retry: bool,
    /// Queries answered.
    answered: usize,
    /// The packets sent and declared lost by the connections gone.
    gone_sent: u64,
    gone_lost: u64,
}

/// A certificate for `localhost`, and a client configuration that trusts it
/// ([`client_tls`]).
fn identity() -> (
    CertificateDer<'static>,
    PrivateKeyDer<'static>,
    Arc<rustls::ClientConfig>,
) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let client = client_tls(&der);
    (der, key, client)
}

/// A client configuration that trusts `cert` (ALPN doq, early data, a session store of its own).
fn client_tls(cert: &CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"doq".to_vec()];
    client.enable_early_data = true;
    Arc::new(client)
}

impl Server {
    fn new(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>, idle: Duration) -> Server {
        Server::with(cert, key, idle, |_| {})
    }

    /// A server whose transport configuration `tweak` changes.
    fn with(
        cert: CertificateDer<'static>,
        key: PrivateKeyDer<'static>,
        idle: Duration,
        tweak: impl FnOnce(&mut qp::TransportConfig),
    ) -> Server {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        tls.alpn_protocols = vec![b"doq".to_vec()];
        tls.max_early_data_size = u32::MAX;
        let crypto = qp::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let mut config = qp::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = qp::TransportConfig::default();
        transport.max_idle_timeout(Some(idle.try_into().unwrap()));
        tweak(&mut transport);
        config.transport_config(Arc::new(transport));
        Server {
            endpoint: qp::Endpoint::new(
                Arc::new(qp::EndpointConfig::default()),
                Some(Arc::new(config)),
                false,
                Some([7; 32]),
            ),
            conns: HashMap::new(),
            reading: HashMap::new(),
            retry: false,
            answered: 0,
            gone_sent: 0,
            gone_lost: 0,
        }
    }

    fn receive(&mut self, now: Instant, data: &[u8], out: &mut Vec<Vec<u8>>) {
        let mut buf = Vec::new();
        let event = self.endpoint.handle(
            now,
            client_addr(),
            None,
            None,
            BytesMut::from(data),
            &mut buf,
        );
        match event {
            Some(qp::DatagramEvent::NewConnection(incoming)) => {
                if self.retry && !incoming.remote_address_validated() {
                    let t = self.endpoint.retry(incoming, &mut buf).unwrap();
                    out.push(buf[..t.size].to_vec());
                    return;
                }
                match self.endpoint.accept(incoming, now, &mut buf, None) {
                    Ok((h, c)) => {
                        self.conns.insert(h, c);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            out.push(buf[..t.size].to_vec());
                        }
                    }
                }
            }
            Some(qp::DatagramEvent::ConnectionEvent(h, e)) => {
                if let Some(c) = self.conns.get_mut(&h) {
                    c.handle_event(e);
                }
            }
            Some(qp::DatagramEvent::Response(t)) => out.push(buf[..t.size].to_vec()),
            None => {}
        }
    }

    /// Runs timers, answers finished streams, collects datagrams to send.
    fn drive(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        let handles: Vec<_> = self.conns.keys().copied().collect();
        for h in handles {
            let c = self.conns.get_mut(&h).unwrap();
            if c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now);
            }
            while c.poll().is_some() {}
            while let Some(id) = c.streams().accept(qp::Dir::Bi) {
                self.reading.insert((h, id), Vec::new());
            }
            let streams: Vec<_> = self.reading.keys().filter(|k| k.0 == h).copied().collect();
            for key in streams {
                let mut finished = false;
                let mut recv = c.recv_stream(key.1);
                if let Ok(mut chunks) = recv.read(true) {
                    loop {
                        match chunks.next(usize::MAX) {
                            Ok(Some(chunk)) => self
                                .reading
                                .get_mut(&key)
                                .unwrap()
                                .extend_from_slice(&chunk.bytes),
                            Ok(None) => {
                                finished = true;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    let _ = chunks.finalize();
                }
                if finished {
                    let query = self.reading.remove(&key).unwrap();
                    let mut send = c.send_stream(key.1);
                    send.write(&query).unwrap();
                    send.finish().unwrap();
                    self.answered += 1;
                }
            }
            while let Some(e) = c.poll_endpoint_events() {
                if let Some(back) = self.endpoint.handle_event(h, e) {
                    c.handle_event(back);
                }
            }
            let mut buf = Vec::new();
            while let Some(t) = c.poll_transmit(now, 1, &mut buf) {
                out.push(buf[..t.size].to_vec());
                buf.clear();
            }
            if c.is_drained() {
                let path = c.stats().path;
                self.gone_sent += path.sent_packets;
                self.gone_lost += path.lost_packets;
                self.conns.remove(&h);
            }
        }
    }

    fn next_timeout(&mut self) -> Option<Instant> {
        self.conns
            .values_mut()
            .filter_map(|c| c.poll_timeout())
            .min()
    }

    /// Loses every connection's state, as a server that restarted: their packets get
    /// stateless resets from now on.
    fn forget_connections(&mut self) {
        for (h, _) in self.conns.drain() {
            self.endpoint.handle_event(h, qp::EndpointEvent::drained());
        }
        self.reading.clear();
    }

    /// The packets sent and declared lost, over every connection so far.
    fn packets(&self) -> (u64, u64) {
        self.conns
            .values()
            .fold((self.gone_sent, self.gone_lost), |(s, l), c| {
                let path = c.stats().path;
                (s + path.sent_packets, l + path.lost_packets)
            })
    }

    fn only(&mut self) -> &mut qp::Connection {
        self.conns.values_mut().next().expect("a server connection")
    }
}

/// Whether the n-th datagram (both directions counted together) is lost.
type Loss = Box<dyn FnMut(usize) -> bool>;

/// The client and the server on a simulated path.
struct Sim {
    server: Server,
    base: Instant,
    now: i64,
    one_way: i64,
    /// Datagrams on their way: (arrival, to the client, bytes).
    wire: VecDeque<(i64, bool, Vec<u8>)>,
    lose: Loss,
    /// Delivered in reverse order, in pairs, when true.
    reorder: bool,
    sent: usize,
    /// Datagrams the client sent, and when.
    client_sent: usize,
    client_times: Vec<i64>,
    /// The first datagrams the client sent, as sent.
    client_datagrams: Vec<Vec<u8>>,
    events: Vec<Event>,
    /// Hold the datagrams to the client here rather than send them, when true.
    hold: bool,
    held: Vec<Vec<u8>>,
}

impl Sim {
    fn new(server: Server) -> Sim {
        Sim {
            server,
            base: Instant::now(),
            now: 1_000 * MS,
            one_way: 10 * MS,
            wire: VecDeque::new(),
            lose: Box::new(|_| false),
            reorder: false,
            sent: 0,
            client_sent: 0,
            client_times: Vec::new(),
            client_datagrams: Vec::new(),
            events: Vec::new(),
            hold: false,
            held: Vec::new(),
        }
    }

    fn instant(&self) -> Instant {
        self.base + Duration::from_nanos(self.now as u64)
    }

    fn post(&mut self, to_client: bool, datagram: Vec<u8>) {
        self.sent += 1;
        if !to_client {
            self.client_sent += 1;
            self.client_times.push(self.now);
            if self.client_datagrams.len() < 8 {
                self.client_datagrams.push(datagram.clone());
            }
        }
        if (self.lose)(self.sent) {
            return;
        }
        if to_client && self.hold {
            self.held.push(datagram);
            return;
        }
        let at = self.now + self.one_way;
        if self.reorder && self.sent.is_multiple_of(2) {
            // Overtakes the one before it.
            let at = at - 1;
            self.wire.push_front((at, to_client, datagram));
        } else {
            self.wire.push_back((at, to_client, datagram));
        }
    }

    /// Runs until `until` (simulated ns), or until `done` holds.
    fn run(
        &mut self,
        client: &mut Connection,
        until: i64,
        done: impl Fn(&Sim, &Connection) -> bool,
    ) {
        let mut buf = Vec::new();
        for _ in 0..100_000 {
            while client.poll_transmit(self.now, &mut buf) {
                let d = buf.clone();
                self.post(false, d);
            }
            while let Some(e) = client.poll_event() {
                self.events.push(e);
            }
            let mut out = Vec::new();
            self.server.drive(self.instant(), &mut out);
            for d in out {
                self.post(true, d);
            }
            if done(self, client) || self.now >= until {
                return;
            }
            let mut next = until;
            for (at, _, _) in &self.wire {
                next = next.min(*at);
            }
            if let Some(t) = client.next_timeout() {
                next = next.min(t);
            }
            if let Some(t) = self.server.next_timeout() {
                next = next.min((t - self.base).as_nanos() as i64);
            }
            self.now = next.max(self.now);
            let due: Vec<_> = {
                let (due, later): (Vec<_>, Vec<_>) =
                    self.wire.drain(..).partition(|(at, _, _)| *at <= self.now);
                self.wire = later.into();
                due
            };
            for (_, to_client, mut d) in due {
                if to_client {
                    client.handle(self.now, &mut d);
                } else {
                    let mut out = Vec::new();
                    let now = self.instant();
                    self.server.receive(now, &d, &mut out);
                    for d in out {
                        self.post(true, d);
                    }
                }
            }
            if client.next_timeout().is_some_and(|t| t <= self.now) {
                client.on_timeout(self.now);
            }
        }
        panic!("the simulation did not settle");
    }

    fn answers(&self) -> Vec<(u64, Vec<u8>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Answer { stream, data } => Some((*stream, data.clone())),
                _ => None,
            })
            .collect()
    }
}

fn connect(tls: &Arc<rustls::ClientConfig>, now: i64, zero_rtt: bool) -> Connection {
    connect_to(tls, "localhost", 30_000 * MS, now, zero_rtt)
}

/// A DoQ connection to `name` whose own idle timeout is `idle_ns`.
fn connect_to(
    tls: &Arc<rustls::ClientConfig>,
    name: &'static str,
    idle_ns: i64,
    now: i64,
    zero_rtt: bool,
) -> Connection {
    Connection::new(
        Config {
            tls: tls.clone(),
            server_name: name.try_into().unwrap(),
            idle_timeout_ns: idle_ns,
            zero_rtt,
            max_stream_recv: crate::doq::MAX_STREAM_RECV,
            peer_uni_streams: 0,
            key_update_packets: 0,
        },
        now,
    )
    .unwrap()
}

fn query(i: u16) -> Vec<u8> {
    let mut q = vec![0, 20];
    q.extend_from_slice(&i.to_be_bytes());
    q.extend_from_slice(&[0x01; 18]);
    q
}

fn answered(n: usize) -> impl Fn(&Sim, &Connection) -> bool {
    move |sim, _| sim.answers().len() >= n
}

#[test]
fn queries_are_answered_by_quinn_over_a_clean_path() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = connect(&tls, sim.now, true);
    assert!(!client.zero_rtt(), "no ticket yet");
    let streams: Vec<u64> = (0..10).map(|i| client.open_stream(query(i))).collect();
    sim.run(&mut client, sim.now + 5_000 * MS, answered(10));
    let answers = sim.answers();
    assert_eq!(answers.len(), 10, "{:?}", sim.events);
    for (stream, data) in answers {
        let i = streams.iter().position(|&s| s == stream).unwrap();
        assert_eq!(data, query(i as u16));
    }
    assert!(sim.events.contains(&Event::Connected {
        resumed: false,
        zero_rtt_accepted: None
    }));
    // Two round trips: the handshake, then the queries.
    assert_eq!(sim.now - 1_000 * MS, 40 * MS);
    assert_eq!(client.closed(), None);
}

/// Loses `percent` of the datagrams, pseudo-randomly (seeded: the same every run).
fn random_loss(percent: u64, seed: u64) -> Loss {
    let mut x = seed | 1;
    Box::new(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 100 < percent
    })
}

/// The long-header packet types of a datagram's coalesced packets (0 Initial, 1 0-RTT,
/// 2 Handshake, 3 Retry; RFC 9000 §17.2), up to its first short-header packet.
fn long_packet_types(datagram: &[u8]) -> Vec<u8> {
    fn varint(d: &[u8], at: &mut usize) -> usize {
        let len = 1 << (d[*at] >> 6);
        let mut v = (d[*at] & 0x3f) as usize;
        for i in 1..len {
            v = (v << 8) | d[*at + i] as usize;
        }
        *at += len;
        v
    }
    let mut types = Vec::new();
    let mut at = 0;
    while at < datagram.len() && datagram[at] & 0x80 != 0 {
        let ty = (datagram[at] >> 4) & 0x3;
        types.push(ty);
        let mut p = at + 5;
        p += 1 + datagram[p] as usize; // destination connection ID
        p += 1 + datagram[p] as usize; // source connection ID
        if ty == 0 {
            let token = varint(datagram, &mut p);
            p += token;
        }
        let len = varint(datagram, &mut p);
        at = p + len;
    }
    types
}

#[test]
fn the_servers_initial_is_acknowledged_with_the_clients_finished() {
    // RFC 9001 §4.9.1: a client drops its Initial keys when it first sends a Handshake packet,
    // so its acknowledgement of the server's Initial (the server's first RTT sample) goes out
    // with its Finished, in one padded datagram. This client used to drop them as soon as a
    // Handshake packet came, and never acknowledged the server's Initial.
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = connect(&tls, sim.now, false);
    client.open_stream(query(1));
    sim.run(&mut client, sim.now + 5_000 * MS, answered(1));
    assert_eq!(sim.answers().len(), 1, "{:?}", sim.events);
    let second = &sim.client_datagrams[1];
    assert_eq!(
        long_packet_types(&sim.client_datagrams[0]),
        vec![0],
        "the ClientHello"
    );
    assert_eq!(
        long_packet_types(second),
        vec![0, 2],
        "an Initial (the ACK) and a Handshake packet (the Finished) in the second datagram"
    );
    assert!(second.len() >= 1200, "padded: {} bytes", second.len());
    let later: Vec<Vec<u8>> = sim.client_datagrams[2..]
        .iter()
        .map(|d| long_packet_types(d))
        .collect();
    assert!(
        later.iter().all(|t| !t.contains(&0)),
        "no Initial after the first Handshake packet: {later:?}"
    );
}

#[test]
fn queries_are_answered_through_loss_and_reordering() {
    let cases: [(&str, Loss, bool); 4] = [
        // Every fourth, not every third: with every third datagram of both directions lost
        // in lockstep, the server's acknowledgements of the client's probes came seconds late,
        // RFC 9002 §5.1 takes them as RTT samples (as quinn does), and the PTO outgrew the idle
        // timeout. The client's old PTO, which moved the whole flight back to its queues, never
        // saw those late samples.
        ("every fourth lost", Box::new(|n| n % 4 == 1), false),
        ("20% lost", random_loss(20, 1), false),
        ("30% lost, reordered", random_loss(30, 2), true),
        ("10% lost, reordered", random_loss(10, 3), true),
    ];
    for (name, lose, reorder) in cases {
        let (cert, key, tls) = identity();
        let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(60)));
        sim.lose = lose;
        sim.reorder = reorder;
        let mut client = connect(&tls, sim.now, true);
        for i in 0..40 {
            client.open_stream(query(i));
        }
        sim.run(&mut client, sim.now + 50_000 * MS, answered(40));
        assert_eq!(
            sim.answers().len(),
            40,
            "{name}: {:?} closed {:?}",
            sim.events,
            client.closed()
        );
        assert_eq!(sim.server.answered, 40);
    }
}

#[test]
fn a_retry_is_followed_with_its_token() {
    let (cert, key, tls) = identity();
    let mut server = Server::new(cert, key, Duration::from_secs(30));
    server.retry = true;
    let mut sim = Sim::new(server);
    let mut client = connect(&tls, sim.now, true);
    client.open_stream(query(1));
    sim.run(&mut client, sim.now + 5_000 * MS, answered(1));
    assert_eq!(sim.answers().len(), 1, "{:?}", client.closed());
}

#[test]
fn a_resumed_connection_sends_in_0rtt_and_the_server_takes_it() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut first = connect(&tls, sim.now, true);
    first.open_stream(query(1));
    sim.run(&mut first, sim.now + 1_000 * MS, |_, _| false);
    assert_eq!(sim.answers().len(), 1);
    first.close(crate::doq::NO_ERROR);
    sim.run(&mut first, sim.now + 1_000 * MS, |_, _| false);
    sim.events.clear();

    let mut second = connect(&tls, sim.now, true);
    assert!(second.zero_rtt(), "the ticket allows 0-RTT");
    second.open_stream(query(2));
    let start = sim.now;
    sim.run(&mut second, sim.now + 5_000 * MS, answered(1));
    assert_eq!(sim.answers().len(), 1);
    // One round trip: the query went with the ClientHello.
    assert_eq!(sim.now - start, 20 * MS);
    sim.run(&mut second, sim.now + 100 * MS, |_, _| false);
    assert!(sim.events.contains(&Event::Connected {
        resumed: true,
        zero_rtt_accepted: Some(true)
    }));
    assert_eq!(second.lost_packets(), 0, "nothing was lost on the way");
    second.close(crate::doq::NO_ERROR);
    sim.run(&mut second, sim.now + 1_000 * MS, |_, _| false);
    sim.events.clear();

    // With 0-RTT off the query waits for the handshake, which resumes all the same.
    let mut third = connect(&tls, sim.now, false);
    assert!(!third.zero_rtt(), "switched off");
    third.open_stream(query(3));
    let start = sim.now;
    sim.run(&mut third, sim.now + 5_000 * MS, answered(1));
    assert_eq!(sim.now - start, 40 * MS);
    assert!(sim.events.contains(&Event::Connected {
        resumed: true,
        zero_rtt_accepted: None
    }));
}

#[test]
fn key_updates_by_the_server_are_followed() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = connect(&tls, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    for round in 1..4u16 {
        sim.server.only().force_key_update();
        client.open_stream(query(round));
        sim.run(
            &mut client,
            sim.now + 2_000 * MS,
            answered(1 + round as usize),
        );
    }
    assert_eq!(sim.answers().len(), 4, "{:?}", client.closed());
}

#[test]
fn the_servers_close_and_idle_timeouts_end_the_connection() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(
        cert.clone(),
        key.clone_key(),
        Duration::from_secs(30),
    ));
    let mut client = connect(&tls, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    let now = sim.instant();
    sim.server
        .only()
        .close(now, 5u32.into(), bytes::Bytes::new());
    sim.run(&mut client, sim.now + 1_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(
        client.closed(),
        Some(Closed::ByPeer {
            code: 5,
            application: true
        })
    );

    // The server's idle timeout (200 ms) is shorter than the client's: the client ends its
    // side when it passes, without a packet.
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_millis(200)));
    let mut client = connect(&tls, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    let quiet = sim.sent;
    sim.run(&mut client, sim.now + 1_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(client.closed(), Some(Closed::TimedOut));
    assert!(
        sim.sent <= quiet + 1,
        "{} datagrams after the answer",
        sim.sent - quiet
    );
}

/// RFC 9000 §10.3: a server that has lost a connection's state answers its packets with a
/// stateless reset, a datagram of random bytes ending with the reset token. It carries none of
/// the client's connection IDs, so the client must look at the token before it drops a packet
/// for another ID. (It did not: the connection stayed open and every later query went into it
/// unanswered until the idle timeout, where quinn's client ended at the reset.)
#[test]
fn a_stateless_reset_ends_the_connection() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = connect(&tls, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    sim.run(&mut client, sim.now + 100 * MS, |_, _| false);
    sim.server.forget_connections();
    let stream = client.open_stream(query(1));
    sim.run(&mut client, sim.now + 1_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(client.closed(), Some(Closed::Reset));
    assert!(
        sim.now - 1_000 * MS < 2_000 * MS,
        "ended at the reset, not by the idle timeout"
    );
    assert!(!sim.answers().iter().any(|(s, _)| *s == stream));
}

/// RFC 9002 §6.2.4: the two probes of a PTO both carry data in flight. When the ClientHello
/// and the first of its probes are lost, the second probe carries the ClientHello too, so the
/// server's handshake starts a PTO after the first try: the answer comes one PTO (999 ms with
/// the initial RTT) and two round trips after the query. (The second probe was a bare PING:
/// the server could only acknowledge it, and the ClientHello went a third time a round trip
/// later, as quinn's client never needs.)
#[test]
fn both_probes_of_a_pto_carry_the_clienthello() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    sim.lose = Box::new(|n| n <= 2);
    let mut client = connect(&tls, sim.now, false);
    client.open_stream(query(0));
    let start = sim.now;
    sim.run(&mut client, sim.now + 5_000 * MS, answered(1));
    assert_eq!(sim.answers().len(), 1, "{:?}", client.closed());
    let types: Vec<Vec<u8>> = sim.client_datagrams[..3]
        .iter()
        .map(|d| long_packet_types(d))
        .collect();
    assert_eq!(
        types,
        vec![vec![0], vec![0], vec![0]],
        "the ClientHello, then two probes"
    );
    let took = sim.now - start;
    assert_eq!(took, 999 * MS + 40 * MS, "answered after {} ms", took / MS);
}

#[test]
fn a_server_that_never_answers_times_the_handshake_out() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    sim.lose = Box::new(|_| true);
    let mut client = connect_to(&tls, "localhost", 2_000 * MS, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 60_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(client.closed(), Some(Closed::TimedOut));
    // Probes back off: a handful of Initials in the idle timeout, not one per millisecond.
    assert!(sim.sent < 10, "{} datagrams", sim.sent);
}

#[test]
fn a_certificate_for_another_name_fails_as_tls() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = connect_to(&tls, "not-localhost", 2_000 * MS, sim.now, true);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(client.closed(), Some(Closed::Tls));
    // The alert reached the server.
    sim.run(&mut client, sim.now + 100 * MS, |_, _| false);
    assert!(sim.server.conns.values().all(|c| c.is_closed()));
}

/// Heap bytes an idle connection keeps once its handshake is over, its session ticket has come
/// and its queries are answered: keys, secrets and counters. Allocation sizes do not depend on
/// the machine's speed; the bound catches a return of per-connection buffers.
#[test]
fn an_idle_connection_keeps_a_few_kilobytes() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(60)));
    let mut clients: Vec<Box<Connection>> = Vec::new();
    for i in 0..20u16 {
        let mut c = connect(&tls, sim.now, false);
        c.open_stream(query(i));
        let want = sim.answers().len() + 1;
        sim.run(&mut c, sim.now + 3_000 * MS, answered(want));
        // The ticket and HANDSHAKE_DONE, acknowledged.
        sim.run(&mut c, sim.now + 500 * MS, |_, _| false);
        clients.push(Box::new(c));
    }
    assert!(clients
        .iter()
        .all(|c| c.closed().is_none() && !c.holds_tls()));
    let mut probe = clients.pop().unwrap();
    println!("{:?}", probe.heap_breakdown());
    // What dropping them gives back is what they held.
    let with = crate::alloc_count::thread_live();
    let count = clients.len();
    drop(clients);
    let per_conn = (with - crate::alloc_count::thread_live()) as f64 / count as f64;
    let size = std::mem::size_of::<Connection>();
    // Measured: 3,529 B (1,544 of them the connection itself, 1,912 its 1-RTT keys and key
    // update secrets); quinn held 48.7 KB per idle DoQ session.
    println!("per idle connection: {per_conn:.0} B ({size} B of it inline)");
    assert!(per_conn < 4096.0, "{per_conn} B");
}

proptest::proptest! {
    /// Arbitrary datagrams and decrypted packets: no panic, whatever the bytes.
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
        super::fuzz_client(&data);
    }

    /// Arbitrary frames after well-formed ones: ACKs, streams and limits in any order.
    #[test]
    fn arbitrary_frame_sequences_never_panic(
        frames in proptest::collection::vec((0u8..0x20, proptest::collection::vec(proptest::num::u8::ANY, 0..24)), 0..12)
    ) {
        let mut data = Vec::new();
        for (ty, body) in frames {
            data.push(2);
            data.push(ty);
            data.extend(body.iter().map(|&b| if b == 0xff { 0xfe } else { b }));
            data.push(0xff);
        }
        super::fuzz_client(&data);
    }
}

/// A server that goes silent after the handshake: the client's probes back off and its
/// retransmissions do not multiply (each frame is either in flight or queued, once), until the
/// idle timeout ends the connection.
#[test]
fn a_silent_server_gets_backed_off_probes_not_a_flood() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(60)));
    sim.one_way = MS / 2;
    let mut client = connect(&tls, sim.now, false);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    let before = sim.sent;
    sim.lose = Box::new(|_| true);
    for i in 1..20 {
        client.open_stream(query(i));
    }
    sim.run(&mut client, sim.now + 60_000 * MS, |_, c| {
        c.closed().is_some()
    });
    assert_eq!(client.closed(), Some(Closed::TimedOut));
    let probes = sim.sent - before;
    // 1 ms RTT, a 30 s idle timeout: about 15 doublings of the PTO, two probes each.
    assert!(probes < 50, "{probes} datagrams to a silent server");
}

/// A connection that has answered one query over a clean path with a 20 ms round trip.
fn established(sim: &mut Sim, tls: &Arc<rustls::ClientConfig>) -> Connection {
    let mut client = connect(tls, sim.now, false);
    for i in 0..4 {
        client.open_stream(query(i));
    }
    sim.run(&mut client, sim.now + 1_000 * MS, answered(4));
    assert_eq!(sim.answers().len(), 4);
    // Quiet: every acknowledgement in.
    sim.run(&mut client, sim.now + 200 * MS, |_, _| false);
    client
}

/// RFC 9002 §6.2.4: the server's answer (which carries its acknowledgement) is lost; the
/// client's PTO sends two probes, one with the query again, and keeps the query's packet in
/// flight, so that the server's acknowledgement of the probes, which covers it too, finds it:
/// nothing is declared lost, and the answer comes. (The client used to move the whole flight
/// back to its queues at a PTO: it counted the packet lost and sent one probe.)
#[test]
fn a_probe_timeout_sends_two_probes_and_keeps_the_flight() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = established(&mut sim, &tls);
    let lost_before = client.lost_packets();
    // The client's query goes through; the server's answer to it is lost.
    let from = sim.sent;
    sim.lose = Box::new(move |n| n == from + 2);
    client.open_stream(query(9));
    let sent_before = sim.client_sent;
    let start = sim.now;
    sim.run(&mut client, sim.now + 5_000 * MS, answered(5));
    assert_eq!(sim.answers().len(), 5, "{:?}", client.closed());
    assert_eq!(
        client.lost_packets(),
        lost_before,
        "a PTO declares nothing lost"
    );
    // The query, then two probes together at the PTO (then the answer's acknowledgement).
    let times = &sim.client_times[sent_before..];
    assert!(times.len() >= 3, "{times:?}");
    assert_eq!(times[0], start, "the query at once");
    let pto = times[1];
    assert_eq!(
        times.iter().filter(|&&t| t == pto).count(),
        2,
        "two probes at the PTO: {times:?}"
    );
    // One PTO (≈ 20 ms + 4 × rttvar + the server's 25 ms max_ack_delay), then a round trip.
    let took = sim.now - start;
    assert!(
        took > 60 * MS && took < 400 * MS,
        "answered after {} ms",
        took / MS
    );
}

/// RFC 9002 §7.6: every datagram is lost for 3 s, far longer than three PTOs; once the path
/// is back, the losses span a persistent congestion period and the congestion window collapses
/// to its minimum (two datagrams) instead of halving.
#[test]
fn persistent_congestion_collapses_the_window() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(60)));
    let mut client = established(&mut sim, &tls);
    let before = client.cwnd();
    assert!(before >= 12_000, "{before}");
    sim.lose = Box::new(|_| true);
    client.open_stream(query(9));
    sim.run(&mut client, sim.now + 3_000 * MS, |_, _| false);
    sim.lose = Box::new(|_| false);
    sim.run(&mut client, sim.now + 20_000 * MS, answered(5));
    assert_eq!(sim.answers().len(), 5, "{:?}", client.closed());
    let after = client.cwnd();
    assert!(
        after <= 2 * 2_400,
        "the window went from {before} to {after} B, not to its minimum"
    );
}
