//! The lean client and quinn-proto's client (the reference stack's QUIC, the one `replay
//! --stack reference` runs) side by side on the same simulated path against the same
//! quinn-proto server: the stacks study of `bench/stacks.sh` (issue 27) without the machine.
//!
//! Each simulated client replays a Poisson schedule of queries the way the replay does: one
//! connection at a time, opened when a query comes and none is open (resuming the session, in
//! 0-RTT, once it has a ticket), closed by the idle timeouts in between. The path delays every
//! datagram by half the round trip and loses each one with the cell's probability, from a
//! seeded generator. Time is simulated, so the figures are the stacks' alone: no scheduler, no
//! load, and the same every run. What differs between the two stacks is only which datagrams a
//! loss hits, since they send different ones.
//!
//! `study` prints the grid (`bench/stacks-sim.sh` runs it); `single_losses` and
//! `opening_losses` print the latencies after one chosen loss. Knobs for looking closer:
//! `STACKS_SIM_CLIENTS` (clients a cell, 200), `STACKS_SIM_CELL=RTT,LOSS` (one cell, as
//! `80,0.1`), `STACKS_SIM_ONLY=N` (client N alone), `STACKS_SIM_DEBUG` (latency histograms,
//! packet counts, the queries left unanswered), `STACKS_SIM_TRACE` (every datagram and query),
//! `STACKS_SIM_DUMP=DIR` (with `STACKS_SIM_DEBUG`: each answer as `client id ns` in
//! `DIR/lean.txt` and `DIR/quinn.txt`).

use super::{client_tls, Server, MS};
use crate::quic::conn::{Config, Connection, Event, DEFAULT_KEY_UPDATE_PACKETS};
use bytes::BytesMut;
use quinn_proto as qp;
use rustls::pki_types::CertificateDer;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server's address as the clients see it.
fn server_addr() -> SocketAddr {
    "127.0.0.1:853".parse().unwrap()
}

/// The query with ID `id`, DoQ-framed; the test server echoes it, so the answer carries the ID.
fn query(id: u16) -> Vec<u8> {
    let mut q = vec![0, 20];
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01; 18]);
    q
}

fn id_of(answer: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*answer.get(2)?, *answer.get(3)?]))
}

/// What the simulation needs of a client stack: one connection at a time.
trait Client {
    /// Opens a new connection (resuming when it can).
    fn open(&mut self, now: i64, at: Instant);
    /// Whether a connection is open and can take a query.
    fn is_open(&self) -> bool;
    /// Sends query `id` on the open connection.
    fn submit(&mut self, id: u16);
    fn handle(&mut self, now: i64, at: Instant, datagram: Vec<u8>);
    fn transmit(&mut self, now: i64, at: Instant, out: &mut Vec<Vec<u8>>);
    /// The next time it must be woken, in simulated ns.
    fn next_timeout(&mut self, base: Instant) -> Option<i64>;
    fn on_timeout(&mut self, now: i64, at: Instant);
    /// The IDs of the queries answered since the last call.
    fn answered(&mut self, out: &mut Vec<u16>);
    /// Packets declared lost, over every connection.
    fn lost_packets(&self) -> u64;
}

/// ldplayer's own QUIC client.
struct Lean {
    tls: Arc<rustls::ClientConfig>,
    conn: Option<Connection>,
    lost_before: u64,
}

impl Client for Lean {
    fn open(&mut self, now: i64, _: Instant) {
        if let Some(old) = self.conn.take() {
            self.lost_before += old.lost_packets();
        }
        let config = Config {
            tls: self.tls.clone(),
            server_name: "localhost".try_into().unwrap(),
            idle_timeout_ns: 10_000 * MS,
            zero_rtt: true,
            max_stream_recv: crate::doq::MAX_STREAM_RECV,
            peer_uni_streams: 0,
            key_update_packets: DEFAULT_KEY_UPDATE_PACKETS,
        };
        self.conn = Some(Connection::new(config, now).unwrap());
    }

    fn is_open(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.closed().is_none())
    }

    fn submit(&mut self, id: u16) {
        if let Some(c) = &mut self.conn {
            c.open_stream(query(id));
        }
    }

    fn handle(&mut self, now: i64, _: Instant, mut datagram: Vec<u8>) {
        if let Some(c) = &mut self.conn {
            c.handle(now, &mut datagram);
        }
    }

    fn transmit(&mut self, now: i64, _: Instant, out: &mut Vec<Vec<u8>>) {
        if let Some(c) = &mut self.conn {
            let mut buf = Vec::new();
            while c.poll_transmit(now, &mut buf) {
                out.push(std::mem::take(&mut buf));
            }
        }
    }

    fn next_timeout(&mut self, _: Instant) -> Option<i64> {
        self.conn.as_ref().and_then(|c| c.next_timeout())
    }

    fn on_timeout(&mut self, now: i64, _: Instant) {
        if let Some(c) = &mut self.conn {
            if c.next_timeout().is_some_and(|t| t <= now) {
                c.on_timeout(now);
            }
        }
    }

    fn answered(&mut self, out: &mut Vec<u16>) {
        if let Some(c) = &mut self.conn {
            while let Some(e) = c.poll_event() {
                if let Event::Answer { data, .. } = e {
                    out.extend(id_of(&data));
                }
            }
        }
    }

    fn lost_packets(&self) -> u64 {
        self.lost_before + self.conn.as_ref().map_or(0, |c| c.lost_packets())
    }
}

/// quinn-proto's client, configured as the reference stack configures quinn (its default
/// transport but for the idle timeout; Cubic, pacing).
struct Quinn {
    endpoint: qp::Endpoint,
    config: qp::ClientConfig,
    conn: Option<(qp::ConnectionHandle, qp::Connection)>,
    /// Queries not yet on a stream (no stream credit before the handshake without 0-RTT).
    waiting: VecDeque<u16>,
    /// Streams being read: what came so far.
    reading: HashMap<qp::StreamId, Vec<u8>>,
    lost_before: u64,
}

impl Quinn {
    fn new(tls: Arc<rustls::ClientConfig>) -> Quinn {
        let crypto = qp::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let mut config = qp::ClientConfig::new(Arc::new(crypto));
        let mut transport = qp::TransportConfig::default();
        transport.max_idle_timeout(Some(Duration::from_secs(10).try_into().unwrap()));
        config.transport_config(Arc::new(transport));
        Quinn {
            endpoint: qp::Endpoint::new(
                Arc::new(qp::EndpointConfig::default()),
                None,
                false,
                Some([9; 32]),
            ),
            config,
            conn: None,
            waiting: VecDeque::new(),
            reading: HashMap::new(),
            lost_before: 0,
        }
    }

    /// Puts waiting queries on streams, while the connection gives streams.
    fn start_streams(&mut self) {
        let Some((_, c)) = &mut self.conn else { return };
        while let Some(&id) = self.waiting.front() {
            let Some(stream) = c.streams().open(qp::Dir::Bi) else {
                return;
            };
            let mut send = c.send_stream(stream);
            send.write(&query(id)).unwrap();
            send.finish().unwrap();
            self.reading.insert(stream, Vec::new());
            self.waiting.pop_front();
        }
    }

    fn endpoint_events(&mut self) {
        let Some((h, c)) = &mut self.conn else { return };
        while let Some(e) = c.poll_endpoint_events() {
            if let Some(back) = self.endpoint.handle_event(*h, e) {
                c.handle_event(back);
            }
        }
    }
}

impl Client for Quinn {
    fn open(&mut self, _: i64, at: Instant) {
        if let Some((_, old)) = self.conn.take() {
            self.lost_before += old.stats().path.lost_packets;
        }
        self.reading.clear();
        self.waiting.clear();
        let (h, c) = self
            .endpoint
            .connect(at, self.config.clone(), server_addr(), "localhost")
            .unwrap();
        self.conn = Some((h, c));
    }

    fn is_open(&self) -> bool {
        self.conn.as_ref().is_some_and(|(_, c)| !c.is_closed())
    }

    fn submit(&mut self, id: u16) {
        self.waiting.push_back(id);
        self.start_streams();
    }

    fn handle(&mut self, _: i64, at: Instant, datagram: Vec<u8>) {
        let mut buf = Vec::new();
        let event = self.endpoint.handle(
            at,
            server_addr(),
            None,
            None,
            BytesMut::from(&datagram[..]),
            &mut buf,
        );
        if let (Some(qp::DatagramEvent::ConnectionEvent(h, e)), Some((mine, c))) =
            (event, &mut self.conn)
        {
            if h == *mine {
                c.handle_event(e);
            }
        }
        self.endpoint_events();
    }

    fn transmit(&mut self, _: i64, at: Instant, out: &mut Vec<Vec<u8>>) {
        self.start_streams();
        let Some((_, c)) = &mut self.conn else { return };
        let mut buf = Vec::new();
        while let Some(t) = c.poll_transmit(at, 1, &mut buf) {
            out.push(buf[..t.size].to_vec());
            buf.clear();
        }
    }

    fn next_timeout(&mut self, base: Instant) -> Option<i64> {
        let (_, c) = self.conn.as_mut()?;
        c.poll_timeout()
            .map(|t| t.saturating_duration_since(base).as_nanos() as i64)
    }

    fn on_timeout(&mut self, _: i64, at: Instant) {
        if let Some((_, c)) = &mut self.conn {
            if c.poll_timeout().is_some_and(|t| t <= at) {
                c.handle_timeout(at);
            }
        }
        self.endpoint_events();
    }

    fn answered(&mut self, out: &mut Vec<u16>) {
        let Some((_, c)) = &mut self.conn else { return };
        while c.poll().is_some() {}
        let mut done = Vec::new();
        for (&stream, data) in &mut self.reading {
            let mut recv = c.recv_stream(stream);
            let Ok(mut chunks) = recv.read(true) else {
                continue;
            };
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(chunk)) => data.extend_from_slice(&chunk.bytes),
                    Ok(None) => {
                        done.push(stream);
                        break;
                    }
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
        for stream in done {
            if let Some(data) = self.reading.remove(&stream) {
                out.extend(id_of(&data));
            }
        }
    }

    fn lost_packets(&self) -> u64 {
        self.lost_before
            + self
                .conn
                .as_ref()
                .map_or(0, |(_, c)| c.stats().path.lost_packets)
    }
}

/// One cell of the study: the path, and the clients' schedules.
#[derive(Clone, Copy)]
struct Cell {
    rtt_ms: i64,
    /// Probability that a datagram is lost, each way.
    loss: f64,
    /// Simulated clients, each with a schedule of its own.
    clients: u64,
    /// Each client's queries a second, and for how long.
    rate: f64,
    seconds: i64,
}

/// What one stack did in a cell.
#[derive(Default)]
struct Outcome {
    /// Latencies of the answered queries, in ns.
    latencies: Vec<i64>,
    /// Each answered query: its client, its ID, its latency.
    each: Vec<(u64, u16, i64)>,
    /// The client being run.
    client_no: u64,
    /// The latencies of the queries that opened their connection.
    opening: Vec<i64>,
    queries: usize,
    connections: usize,
    lost_packets: u64,
    /// Datagrams the client sent.
    client_datagrams: u64,
    /// Packets the server sent, and declared lost.
    server_sent: u64,
    server_lost: u64,
}

impl Outcome {
    fn percentile(&self, p: f64) -> f64 {
        let mut xs = self.latencies.clone();
        xs.sort_unstable();
        if xs.is_empty() {
            return f64::NAN;
        }
        let i = ((p / 100.0 * xs.len() as f64) as usize).min(xs.len() - 1);
        xs[i] as f64 / MS as f64
    }
}

/// The 95% bootstrap interval (ms) of lean's `p`-th percentile minus quinn's: clients
/// resampled whole with their answers (a client's queries share its connections' losses).
fn diff_interval(lean: &Outcome, quinn: &Outcome, p: f64) -> (f64, f64) {
    let by_client = |o: &Outcome| {
        let mut m: HashMap<u64, Vec<i64>> = HashMap::new();
        for &(c, _, l) in &o.each {
            m.entry(c).or_default().push(l);
        }
        m.into_values().collect::<Vec<_>>()
    };
    let (l, q) = (by_client(lean), by_client(quinn));
    let mut rng = Rng(27);
    let mut resampled = |blocks: &[Vec<i64>]| {
        let mut o = Outcome::default();
        for _ in 0..blocks.len() {
            let i = ((rng.unit() * blocks.len() as f64) as usize).min(blocks.len() - 1);
            o.latencies.extend_from_slice(&blocks[i]);
        }
        o.percentile(p)
    };
    let rounds = 400;
    let mut diffs: Vec<f64> = (0..rounds).map(|_| resampled(&l) - resampled(&q)).collect();
    diffs.sort_by(f64::total_cmp);
    (diffs[rounds / 40], diffs[rounds - 1 - rounds / 40])
}

/// "yes" when lean's `p`-th percentile is within `share` (or 1 ms) of quinn's; "NO" when the
/// whole 95% interval of the difference lies outside that bound; "n.s." when it reaches inside.
fn verdict(lean: &Outcome, quinn: &Outcome, p: f64, share: f64) -> String {
    let (a, b) = (lean.percentile(p), quinn.percentile(p));
    let bound = (share * b).max(1.0);
    if (a - b).abs() <= bound {
        return "yes".into();
    }
    let (lo, hi) = diff_interval(lean, quinn, p);
    let word = if lo > bound || hi < -bound {
        "NO"
    } else {
        "n.s."
    };
    format!("{word} ({lo:+.1} to {hi:+.1})")
}

/// A seeded generator (xorshift64*), the same for both stacks.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The server's idle timeout (the study's embedded server's): connections of clients whose
/// queries are more than this apart close between them.
const SERVER_IDLE: Duration = Duration::from_secs(1);
/// How long the replay waits for an answer (the study's `timeout_s`).
const TIMEOUT_NS: i64 = 5_000 * MS;

/// Runs `cell` with the clients `make` builds; every client talks to a server of its own.
fn run_cell(
    cell: Cell,
    make: &mut dyn FnMut(&CertificateDer<'static>) -> Box<dyn Client>,
) -> Outcome {
    let (cert, key, _) = super::identity();
    let mut outcome = Outcome::default();
    let only: Option<u64> = std::env::var("STACKS_SIM_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    for client_no in 0..cell.clients {
        if only.is_some_and(|n| n != client_no) {
            continue;
        }
        if std::env::var_os("STACKS_SIM_DEBUG").is_some() {
            println!("client {client_no}");
        }
        let mut schedule_rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (client_no + 1));
        let mut schedule = Vec::new();
        let mut t = 1_000.0 * MS as f64;
        loop {
            t += -(1.0 - schedule_rng.unit()).ln() / cell.rate * 1e9;
            if t >= (1_000 + cell.seconds * 1_000) as f64 * MS as f64 {
                break;
            }
            schedule.push(t as i64);
        }
        let server = Server::new(cert.clone(), key.clone_key(), SERVER_IDLE);
        let mut client = make(&cert);
        outcome.client_no = client_no;
        let mut rng = Rng(0xd1b5_4a32_d192_ed03 ^ (client_no + 1));
        let mut lose = |_: i64, _: bool| rng.unit() < cell.loss;
        run_client(
            cell.rtt_ms,
            &schedule,
            server,
            &mut *client,
            &mut lose,
            &mut outcome,
        );
        outcome.lost_packets += client.lost_packets();
    }
    outcome
}

/// Replays one client's schedule over the path.
fn run_client(
    rtt_ms: i64,
    schedule: &[i64],
    mut server: Server,
    client: &mut dyn Client,
    lose: &mut dyn FnMut(i64, bool) -> bool,
    outcome: &mut Outcome,
) {
    let base = Instant::now();
    let at = |ns: i64| base + Duration::from_nanos(ns as u64);
    let one_way = rtt_ms * MS / 2;
    let mut now = schedule.first().copied().unwrap_or(0);
    let end = schedule.last().copied().unwrap_or(0) + TIMEOUT_NS;
    // Datagrams on their way: (arrival, to the client, bytes); arrivals in order.
    let mut wire: VecDeque<(i64, bool, Vec<u8>)> = VecDeque::new();
    let mut sent_at: HashMap<u16, i64> = HashMap::new();
    let mut openers = std::collections::HashSet::new();
    let mut next = 0;
    let mut answered = Vec::new();
    let mut out = Vec::new();
    let trace = std::env::var_os("STACKS_SIM_TRACE").is_some();
    let mut lose = |now: i64, to_client: bool, d: &[u8]| {
        let lost = lose(now, to_client);
        if trace {
            println!(
                "{:>9.3} {} {:>5} B {:02x}{}",
                now as f64 / MS as f64,
                if to_client { "<-" } else { "->" },
                d.len(),
                d[0],
                if lost { " LOST" } else { "" }
            );
        }
        lost
    };
    for _ in 0..10_000_000 {
        while next < schedule.len() && schedule[next] <= now {
            if !client.is_open() {
                client.open(now, at(now));
                outcome.connections += 1;
                openers.insert(next as u16);
            }
            let id = next as u16;
            if trace {
                println!("{:>9.3} query {id}", now as f64 / MS as f64);
            }
            client.submit(id);
            sent_at.insert(id, schedule[next]);
            next += 1;
        }
        client.transmit(now, at(now), &mut out);
        outcome.client_datagrams += out.len() as u64;
        for d in out.drain(..) {
            if !lose(now, false, &d) {
                wire.push_back((now + one_way, false, d));
            }
        }
        server.drive(at(now), &mut out);
        for d in out.drain(..) {
            if !lose(now, true, &d) {
                wire.push_back((now + one_way, true, d));
            }
        }
        client.answered(&mut answered);
        for id in answered.drain(..) {
            if trace {
                println!("{:>9.3} answer {id}", now as f64 / MS as f64);
            }
            if let Some(sent) = sent_at.remove(&id) {
                if now - sent <= TIMEOUT_NS {
                    outcome.latencies.push(now - sent);
                    outcome.each.push((outcome.client_no, id, now - sent));
                    if openers.contains(&id) {
                        outcome.opening.push(now - sent);
                    }
                }
            }
        }
        if now >= end || (next == schedule.len() && sent_at.is_empty()) {
            outcome.queries += schedule.len();
            let (sent, lost) = server.packets();
            outcome.server_sent += sent;
            outcome.server_lost += lost;
            if std::env::var_os("STACKS_SIM_DEBUG").is_some() && !sent_at.is_empty() {
                println!("unanswered: {:?} (openers {:?})", sent_at, openers);
            }
            return;
        }
        let mut wake = end;
        if let Some(&t) = schedule.get(next) {
            wake = wake.min(t);
        }
        if let Some((t, _, _)) = wire.front() {
            wake = wake.min(*t);
        }
        if let Some(t) = client.next_timeout(base) {
            wake = wake.min(t);
        }
        if let Some(t) = server.next_timeout() {
            wake = wake.min(t.saturating_duration_since(base).as_nanos() as i64);
        }
        now = wake.max(now);
        while wire.front().is_some_and(|(t, _, _)| *t <= now) {
            let (_, to_client, d) = wire.pop_front().unwrap();
            if to_client {
                client.handle(now, at(now), d);
            } else {
                server.receive(at(now), &d, &mut out);
                for d in out.drain(..) {
                    if !lose(now, true, &d) {
                        wire.push_back((now + one_way, true, d));
                    }
                }
            }
        }
        client.on_timeout(now, at(now));
    }
    panic!("the simulation did not settle");
}

fn lean(cert: &CertificateDer<'static>) -> Box<dyn Client> {
    Box::new(Lean {
        tls: client_tls(cert),
        conn: None,
        lost_before: 0,
    })
}

fn quinn(cert: &CertificateDer<'static>) -> Box<dyn Client> {
    Box::new(Quinn::new(client_tls(cert)))
}

/// One line of the table: the cell, then each stack's figures.
fn row(cell: Cell, name: &str, o: &Outcome) -> String {
    let slow = |xs: &[i64]| xs.iter().filter(|&&x| x > 3 * cell.rtt_ms * MS).count();
    format!(
        "| {} | {} | {name} | {}/{} | {:.1} | {:.1} | {:.1} | {} | {} | {}/{} | {}/{} |",
        cell.rtt_ms,
        cell.loss,
        o.latencies.len(),
        o.queries,
        o.percentile(50.0),
        o.percentile(95.0),
        o.percentile(99.0),
        o.connections,
        o.lost_packets,
        slow(&o.opening),
        o.opening.len(),
        slow(&o.latencies) - slow(&o.opening),
        o.latencies.len() - o.opening.len(),
    )
}

/// The whole grid of `bench/stacks.sh` (RTT 20 and 80 ms, loss 0, 2 and 10% each way), with
/// `STACKS_SIM_CLIENTS` clients a cell (default 200): a table to read, not a check.
/// `bench/stacks-sim.sh` runs it.
#[test]
#[ignore = "a study: run by bench/stacks-sim.sh"]
fn study() {
    let clients = std::env::var("STACKS_SIM_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    println!("| RTT ms | loss | stack | answers | p50 ms | p95 ms | p99 ms | connections | lost packets | slow openers | slow others | p50 ok | p95 ok (lean − quinn, 95% interval ms) | p99 ok |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for rtt_ms in [20, 80] {
        for loss in [0.0, 0.02, 0.1] {
            let cell = Cell {
                rtt_ms,
                loss,
                clients,
                rate: 2.0,
                seconds: 10,
            };
            if std::env::var("STACKS_SIM_CELL").is_ok_and(|c| c != format!("{rtt_ms},{loss}")) {
                continue;
            }
            let l = run_cell(cell, &mut lean);
            let q = run_cell(cell, &mut quinn);
            println!(
                "{} {} | {} | {} |",
                row(cell, "lean", &l),
                verdict(&l, &q, 50.0, 0.05),
                verdict(&l, &q, 95.0, 0.10),
                verdict(&l, &q, 99.0, 0.10)
            );
            println!("{} | | |", row(cell, "quinn", &q));
            if std::env::var_os("STACKS_SIM_DEBUG").is_some() {
                for (name, o) in [("lean", &l), ("quinn", &q)] {
                    let edges = [1, 3, 5, 10, 25, 50, 100];
                    let hist = |xs: &[i64]| {
                        edges
                            .windows(2)
                            .map(|w| {
                                xs.iter()
                                    .filter(|&&x| x > w[0] * rtt_ms * MS && x <= w[1] * rtt_ms * MS)
                                    .count()
                            })
                            .collect::<Vec<_>>()
                    };
                    if let Ok(dir) = std::env::var("STACKS_SIM_DUMP") {
                        let all: Vec<String> = o
                            .each
                            .iter()
                            .map(|(c, i, l)| format!("{c} {i} {l}"))
                            .collect();
                        std::fs::write(format!("{dir}/{name}.txt"), all.join("\n")).unwrap();
                    }
                    println!("{name} openers by RTTs {edges:?}: {:?}", hist(&o.opening));
                    println!("{name} all by RTTs {edges:?}: {:?}", hist(&o.latencies));
                    println!(
                        "{name}: client datagrams {}, server packets {} of which lost {}",
                        o.client_datagrams, o.server_sent, o.server_lost
                    );
                }
            }
        }
    }
}

/// One loss at a chosen moment on an established connection (queries 300 ms apart, RTT 20
/// ms): the latency of the query it hits, on each stack.
#[test]
#[ignore = "a probe of the stacks' recovery, printed"]
fn single_losses() {
    let (cert, key, _) = super::identity();
    let schedule: Vec<i64> = (0..8).map(|i| 1_000 * MS + i * 300 * MS).collect();
    let hit = schedule[4];
    let cases: [(&str, i64, bool); 4] = [
        ("the query", hit, false),
        ("the answer", hit + 10 * MS, true),
        ("the query and its answer's ack", hit, false),
        ("the ack of the answer", hit + 20 * MS, false),
    ];
    for (name, when, to_client) in cases {
        for (stack, make) in [("lean", lean as fn(&_) -> _), ("quinn", quinn)] {
            let server = Server::new(cert.clone(), key.clone_key(), Duration::from_secs(30));
            let mut client = make(&cert);
            let mut lost = 0;
            let mut lose = |now: i64, dir: bool| {
                let l = now >= when && now < when + MS && dir == to_client;
                lost += l as u32;
                l
            };
            let mut o = Outcome::default();
            run_client(20, &schedule, server, &mut *client, &mut lose, &mut o);
            let ms: Vec<f64> = o.latencies.iter().map(|&l| l as f64 / MS as f64).collect();
            println!("{name}: {stack}: {ms:?} ({lost} lost)");
        }
    }
}

/// One datagram lost while a resumed connection opens (0-RTT): the n-th datagram of one
/// direction after the connection's first query; the latencies of that query and the next two.
#[test]
#[ignore = "a probe of the stacks' recovery, printed"]
fn opening_losses() {
    let (cert, key, _) = super::identity();
    let open = 3_000 * MS;
    let schedule = vec![
        1_000 * MS,
        open,
        open + 5 * MS,
        open + 50 * MS,
        open + 300 * MS,
    ];
    for to_client in [false, true] {
        for n in 0..8 {
            for (stack, make) in [("lean", lean as fn(&_) -> _), ("quinn", quinn)] {
                let server = Server::new(cert.clone(), key.clone_key(), SERVER_IDLE);
                let mut client = make(&cert);
                let mut seen = 0;
                let mut lose = |now: i64, dir: bool| {
                    if now < open || dir != to_client {
                        return false;
                    }
                    seen += 1;
                    seen == n + 1
                };
                let mut o = Outcome::default();
                run_client(20, &schedule, server, &mut *client, &mut lose, &mut o);
                let ms: Vec<f64> = o.latencies.iter().map(|&l| l as f64 / MS as f64).collect();
                println!(
                    "{} datagram {n} lost: {stack}: {ms:?} ({} connections)",
                    if to_client { "down" } else { "up" },
                    o.connections
                );
            }
        }
    }
}

/// At 10% loss each way, the lean client answers as many queries as quinn's and at the same
/// median. (Before it took stateless resets, the lean client lost 2.6% of the queries at RTT
/// 80 ms where quinn's lost 1.1%: queries went on into connections the server had closed.)
#[test]
fn lean_and_quinn_answer_alike_through_loss() {
    for rtt_ms in [20, 80] {
        let cell = Cell {
            rtt_ms,
            loss: 0.1,
            clients: 100,
            rate: 2.0,
            seconds: 10,
        };
        let l = run_cell(cell, &mut lean);
        let q = run_cell(cell, &mut quinn);
        let unanswered = |o: &Outcome| o.queries - o.latencies.len();
        let (lu, qu) = (unanswered(&l), unanswered(&q));
        assert!(
            lu <= qu + qu / 4 + 10,
            "RTT {rtt_ms} ms: the lean client left {lu} of {} queries unanswered, quinn's {qu}",
            l.queries
        );
        let (lp, qp) = (l.percentile(50.0), q.percentile(50.0));
        assert!(
            (lp - qp).abs() <= 1.0,
            "RTT {rtt_ms} ms: p50 {lp} against {qp} ms"
        );
    }
}
