//! End-to-end replays against real servers on loopback: what the engine counts of its
//! reader, shards of one trace merged into one replay, more clients than sockets, and each
//! client's session profile (the rest: replay.rs).

mod engine;

use engine::*;
use ldplayer_dns::{Rcode, Rtype};
use ldplayer_replay::{Replay, ReplayConfig};
use ldplayer_results::Outcome;
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[test]
fn the_engine_counts_what_the_reader_skipped_and_found_malformed() {
    use ldplayer_trace::{Sink, SkipReason};
    let server = knot();
    let mut running = Replay::new(config(server.addr))
        .unwrap()
        .start(Results::default())
        .unwrap();
    running.skipped(SkipReason::TcpGap, 1);
    running.skipped(SkipReason::TcpGap, 2);
    let rec = record(0, 1, Proto::Udp, query(1, "www.example.", Rtype::A, None));
    running.record(&rec.as_record()).unwrap();
    running.malformed(ldplayer_dns::DnsError::Truncated, 3);
    let done = running.finish().unwrap();
    assert_eq!(done.stats.trace_skipped.get(SkipReason::TcpGap), 2);
    assert_eq!(done.stats.trace_malformed.total(), 1);
    assert!(done.results.finished(), "the sink comes back finished");
    let json = serde_json::to_value(&done.stats).unwrap();
    assert_eq!(json["trace_skipped"]["tcp-gap"], 2, "{json}");
}

/// Replays the queries of client 10.0.0.`client` and passes the others, as a shard worker
/// reading the whole trace would.
fn run_shard(
    cfg: ReplayConfig,
    recs: &[ldplayer_trace::RecordBuf],
    client: u8,
) -> Vec<ldplayer_results::QueryResult> {
    use ldplayer_trace::Sink;
    let mine = std::net::IpAddr::from([10, 0, 0, client]);
    let results = Results::default();
    let mut running = Replay::new(cfg).unwrap().start(results.clone()).unwrap();
    for r in recs {
        if r.src.ip() == mine {
            running.record(&r.as_record()).unwrap();
        } else {
            running.pass();
        }
    }
    running.finish().unwrap();
    results.sorted()
}

#[test]
fn shards_of_one_trace_merge_on_the_index_into_one_replay() {
    let server = knot();
    // Two clients (10.0.0.1 and 10.0.0.2), alternating; each shard replays one.
    let recs = trace(12, 2, Proto::Udp);
    let start = realtime_now_ns() + 400 * MS;
    let cfg = || {
        let mut c = config(server.addr);
        c.start_ns = Some(start);
        c.trace_origin_ns = Some(0);
        c
    };
    let shards: Vec<_> = [1, 2]
        .map(|client| {
            let (c, recs) = (cfg(), recs.clone());
            std::thread::spawn(move || run_shard(c, &recs, client))
        })
        .into_iter()
        .collect();
    let mut merged: Vec<_> = shards.into_iter().flat_map(|t| t.join().unwrap()).collect();
    merged.sort_by_key(|r| r.index);
    // Every query once, at its position in the whole trace, each shard's at the due time a
    // single replay of the whole trace with the same start and origin gives it.
    assert_one_each(&merged, 12);
    for r in &merged {
        assert_eq!(r.trace_ns, recs[r.index as usize].time_ns);
        assert_eq!(r.intended_ns, start + r.trace_ns, "{r:?}");
        assert_eq!(r.outcome, Outcome::Answered, "{r:?}");
        assert_eq!(
            r.rcode,
            if r.index % 2 == 0 {
                Rcode::NOERROR
            } else {
                Rcode::NXDOMAIN
            },
            "{r:?}"
        );
    }
}

/// A UDP server that answers every query 20 ms late (the query echoed with QR set), as a far
/// server would; stops when `stop` is set.
fn slow_echo(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let addr = sock.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let mut due: std::collections::VecDeque<(std::time::Instant, SocketAddr, Vec<u8>)> =
            Default::default();
        let mut buf = [0u8; 4096];
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                let mut answer = buf[..n].to_vec();
                if answer.len() > 2 {
                    answer[2] |= 0x80;
                }
                due.push_back((
                    std::time::Instant::now() + Duration::from_millis(20),
                    from,
                    answer,
                ));
            }
            while due
                .front()
                .is_some_and(|(at, _, _)| *at <= std::time::Instant::now())
            {
                let (_, to, answer) = due.pop_front().unwrap();
                let _ = sock.send_to(&answer, to);
            }
        }
    });
    (addr, handle)
}

/// More clients than sockets: the least recently used socket is the one closed for a new
/// client, never one whose answer is on its way (a newly opened socket used to reset the
/// recency list, so the next new client closed the socket opened just before it).
#[test]
fn more_clients_than_udp_sockets_loses_no_answer() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (server, handle) = slow_echo(stop.clone());
    let mut cfg = config(server);
    cfg.queriers = 1;
    cfg.max_udp_sockets = 15;
    // 20 clients in turn, 5 ms apart: each query needs a new socket, and the least recently
    // used one sent 75 ms ago, its answer (20 ms) long in. (2 ms apart, 30 ms ago, left too
    // little room on a loaded CI machine: two answers came after their socket was closed.)
    let records: Vec<_> = (0..100)
        .map(|i| {
            record(
                i as i64 * 5 * MS,
                (i % 20) as u8 + 1,
                Proto::Udp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let results = Results::default();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(records), results.clone())
        .unwrap()
        .stats;
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    let rs = results.sorted();
    assert_one_each(&rs, 100);
    let lost: Vec<_> = rs
        .iter()
        .filter(|r| r.outcome != Outcome::Answered)
        .collect();
    assert!(
        lost.is_empty(),
        "{} of 100 not answered: {:?}",
        lost.len(),
        lost.first()
    );
    assert_eq!(stats.answered, 100);
    assert!(
        stats.udp_sockets_opened > 15,
        "sockets were reused: {stats:?}"
    );
}

/// Session profiles: clients of one group close their connection after 100 ms idle, the
/// others keep it; each client asks twice 400 ms apart, so only the first group's clients
/// connect twice. Their answer timeout is their group's too.
#[test]
fn session_profiles_set_each_clients_idle_timeout() {
    use ldplayer_replay::{ClientProfile, Profiles};
    let server = knot();
    let mut cfg = config(server.addr);
    cfg.queriers = 1;
    cfg.proto_override = Some(Proto::Tcp);
    cfg.tcp_idle_timeout = Duration::from_secs(10);
    cfg.profiles = Some(Profiles {
        profiles: vec![
            ClientProfile {
                idle_timeout: Some(Duration::from_millis(100)),
                ..ClientProfile::default()
            },
            ClientProfile::default(),
        ],
        // Clients 10.0.0.1 and 10.0.0.3 follow the first profile, 10.0.0.2 and 10.0.0.4 the
        // second.
        assign: std::sync::Arc::new(|addr| match addr {
            std::net::IpAddr::V4(a) => usize::from(a.octets()[3] % 2 == 0),
            _ => 1,
        }),
    });
    let recs: Vec<_> = (0..8)
        .map(|i| {
            record(
                (i / 4) * 400 * MS,
                (i % 4) as u8 + 1,
                Proto::Tcp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let results = Results::default();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    assert_eq!(stats.answered, 8, "{stats:?}");
    assert_eq!(stats.connections_opened, 6, "{stats:?}");
    let rs = results.sorted();
    for r in &rs[4..] {
        let client = r.index % 4 + 1;
        assert_eq!(r.new_connection, client % 2 == 1, "client {client}: {r:?}");
    }
}
