//! End-to-end replays against real servers on loopback.

mod engine;

use engine::*;
use ldplayer_dns::{Rcode, Rtype};
use ldplayer_replay::{Replay, ReplayConfig, Timing, TlsConfig};
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A one-querier configuration for TLS to `server`, certificates not checked (test servers).
fn tls_config(server: SocketAddr) -> ReplayConfig {
    let mut cfg = config(server);
    cfg.queriers = 1;
    cfg.tls = TlsConfig {
        insecure: true,
        ..TlsConfig::default()
    };
    cfg
}

#[test]
fn udp_replay_against_knot() {
    let server = knot();
    let results = Results::default();
    let replay = Replay::new(config(server.addr)).unwrap();
    let stats = replay
        .run(&mut VecSource(trace(60, 5, Proto::Udp)), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 60);
    assert!(results.finished());
    for r in &rs {
        assert_eq!(r.outcome, Outcome::Answered, "{r:?}");
        assert_eq!(r.proto, Proto::Udp);
        let want = if r.index % 2 == 0 {
            Rcode::NOERROR
        } else {
            Rcode::NXDOMAIN
        };
        assert_eq!(r.rcode, want, "{r:?}");
        assert!(r.received_ns >= r.sent_ns && r.sent_ns > 0);
        assert!(!r.new_connection);
    }
    assert_eq!(stats.answered, 60);
    assert_eq!(
        stats.udp_sockets_opened, 5,
        "one socket per original source"
    );
    assert_eq!(stats.clients, 5);
    // The live counters a progress display reads end where the replay's counts end.
    let live = replay.live().counts();
    assert_eq!(
        (
            live.queued,
            live.sent,
            live.answered,
            live.timeouts,
            live.errors
        ),
        (60, 60, 60, 0, 0)
    );
}

#[test]
fn duplicate_ids_in_flight_are_rewritten() {
    let server = knot();
    let results = Results::default();
    // All queries from one client, same ID, at the same instant.
    let recs = (0..20)
        .map(|_| record(0, 1, Proto::Udp, query(7, "www.example.", Rtype::A, None)))
        .collect();
    let stats = Replay::new(config(server.addr))
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    assert_eq!(stats.answered, 20, "{stats:?}");
    assert_one_each(&results.sorted(), 20);
}

#[test]
fn tcp_reuses_one_connection_per_source_and_pipelines() {
    let server = knot();
    let results = Results::default();
    // Ten queries per client at the same time: pipelined on one connection.
    let recs = (0..40)
        .map(|i| {
            record(
                (i / 10) as i64 * MS,
                (i % 4) as u8 + 1,
                Proto::Tcp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stats = Replay::new(config(server.addr))
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 40);
    assert!(rs
        .iter()
        .all(|r| r.outcome == Outcome::Answered && r.proto == Proto::Tcp));
    let new = rs.iter().filter(|r| r.new_connection).count();
    assert_eq!(new, 4, "one connection per source");
    assert_eq!(stats.connections_opened, 4);
    assert_eq!(stats.connections_reused, 36);
}

#[test]
fn proto_override_and_idle_timeout_reconnects() {
    let server = knot();
    let results = Results::default();
    let mut cfg = config(server.addr);
    cfg.proto_override = Some(Proto::Tcp);
    cfg.tcp_idle_timeout = Duration::from_millis(50);
    cfg.queriers = 1;
    // One client, queries 300 ms apart: each finds its connection closed for idleness.
    let recs = (0..3)
        .map(|i| {
            record(
                i * 300 * MS,
                1,
                Proto::Udp,
                query(1, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert!(
        rs.iter()
            .all(|r| r.outcome == Outcome::Answered && r.new_connection),
        "{rs:?}"
    );
    assert_eq!(stats.connections_opened, 3);
}

#[test]
fn server_closing_the_connection_resets_in_flight_queries() {
    // A TCP server that reads a little and closes without answering.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        for _ in 0..2 {
            if let Ok((mut s, _)) = listener.accept() {
                use std::io::Read;
                let mut b = [0u8; 64];
                let _ = s.read(&mut b);
            }
        }
    });
    let results = Results::default();
    let mut cfg = config(addr);
    cfg.queriers = 1;
    let recs = vec![
        record(0, 1, Proto::Tcp, query(1, "www.example.", Rtype::A, None)),
        record(
            300 * MS,
            1,
            Proto::Tcp,
            query(2, "www.example.", Rtype::A, None),
        ),
    ];
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    t.join().unwrap();
    let rs = results.sorted();
    assert_one_each(&rs, 2);
    for r in &rs {
        assert_eq!(r.outcome, Outcome::Error(ErrorKind::Reset), "{r:?}");
        assert!(r.new_connection, "the second query reconnects");
    }
    assert_eq!(stats.connections_opened, 2);
}

#[test]
fn tcp_refused_on_closed_port() {
    let port = free_port(); // nothing listens there
    let results = Results::default();
    let recs = trace(5, 2, Proto::Tcp);
    let stats = Replay::new(config(([127, 0, 0, 1], port).into()))
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 5);
    assert!(
        rs.iter()
            .all(|r| r.outcome == Outcome::Error(ErrorKind::Refused)),
        "{rs:?}"
    );
    assert_eq!(stats.error_count(ErrorKind::Refused), 5);
}

#[test]
fn udp_port_unreachable_is_reported_not_answered() {
    for kernel_send_times in [true, false] {
        let port = free_port(); // nothing listens there: the kernel answers with ICMP
        let results = Results::default();
        let mut cfg = config(([127, 0, 0, 1], port).into());
        // Far longer than the run may take: ICMP fails the queries at once, not at the timeout.
        cfg.timeout = Duration::from_secs(30);
        cfg.kernel_send_times = kernel_send_times;
        let started = std::time::Instant::now();
        let stats = Replay::new(cfg)
            .unwrap()
            .run(&mut VecSource(trace(10, 2, Proto::Udp)), results.clone())
            .unwrap()
            .stats;
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "waited for the timeout"
        );
        let rs = results.sorted();
        assert_one_each(&rs, 10);
        assert!(
            rs.iter()
                .all(|r| r.outcome == Outcome::Error(ErrorKind::Refused)),
            "kernel send times {kernel_send_times}: {:?}",
            rs.iter().map(|r| r.outcome).collect::<Vec<_>>()
        );
        assert!(stats.udp_unreachable >= 2, "{stats:?}");
        let causes: Vec<_> = stats
            .causes
            .iter()
            .map(|c| (c.kind, c.cause, c.count))
            .collect();
        assert_eq!(causes, [(ErrorKind::Refused, "port-unreachable", 10)]);
        assert!(stats.causes[0].first.contains("nothing listens"));
    }
}

#[test]
fn udp_timeouts_and_retries_against_a_silent_server() {
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let results = Results::default();
    let mut cfg = config(silent.local_addr().unwrap());
    cfg.timeout = Duration::from_millis(200);
    cfg.udp_retries = 1;
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(trace(10, 3, Proto::Udp)), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 10);
    assert!(rs
        .iter()
        .all(|r| r.outcome == Outcome::Timeout && r.sent_ns > 0));
    assert_eq!(stats.timeouts, 10);
    assert_eq!(stats.udp_retries, 10);
    drop(silent);
}

#[test]
fn truncated_udp_answers_are_retried_over_tcp() {
    let server = knot();
    let results = Results::default();
    let recs = vec![
        record(0, 1, Proto::Udp, query(1, "big.example.", Rtype::TXT, None)),
        record(MS, 2, Proto::Udp, query(2, "www.example.", Rtype::A, None)),
    ];
    let stats = Replay::new(config(server.addr))
        .unwrap()
        .run(&mut VecSource(recs.clone()), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 2);
    assert_eq!(rs[0].outcome, Outcome::Answered);
    assert_eq!(rs[0].proto, Proto::Tcp);
    assert!(!rs[0].truncated && rs[0].response_len > 512, "{:?}", rs[0]);
    assert_eq!(rs[1].proto, Proto::Udp);
    assert_eq!(stats.tc_retries, 1);

    // Without the retry, the truncated answer is the result.
    let results = Results::default();
    let mut cfg = config(server.addr);
    cfg.retry_truncated_over_tcp = false;
    Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap();
    let rs = results.sorted();
    assert!(rs[0].truncated && rs[0].proto == Proto::Udp, "{:?}", rs[0]);
}

fn tls_replay(tls: TlsConfig, expect: Outcome) {
    let (server, _ca) = nsd_tls();
    let results = Results::default();
    let mut cfg = config(server.tls_addr.unwrap());
    cfg.tls = tls;
    cfg.queriers = 1;
    let recs: Vec<_> = (0..12)
        .map(|i| {
            record(
                i / 4 * 100 * MS,
                (i % 3) as u8 + 1,
                Proto::Tls,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, 12);
    for r in &rs {
        assert_eq!(r.outcome, expect, "{r:?}");
        assert_eq!(r.proto, Proto::Tls);
    }
    if expect == Outcome::Answered {
        assert_eq!(rs.iter().filter(|r| r.new_connection).count(), 3);
        assert_eq!(stats.connections_opened, 3);
    }
}

#[test]
fn tls_against_nsd_insecure() {
    tls_replay(
        TlsConfig {
            insecure: true,
            ..TlsConfig::default()
        },
        Outcome::Answered,
    );
}

#[test]
fn tls_against_nsd_with_ca_file() {
    let (server, ca) = nsd_tls();
    let results = Results::default();
    let mut cfg = config(server.tls_addr.unwrap());
    cfg.tls.ca_file = Some(ca);
    let recs = trace(6, 2, Proto::Tls);
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    assert_eq!(stats.answered, 6, "{stats:?} {:?}", results.sorted());
}

#[test]
fn tls_untrusted_certificate_fails_the_handshake() {
    tls_replay(TlsConfig::default(), Outcome::Error(ErrorKind::Tls));
}

#[test]
fn original_timing_tracks_the_schedule_with_speed() {
    let server = knot();
    let results = Results::default();
    let mut cfg = config(server.addr);
    cfg.timing = Timing::Original { speed: 2.0 };
    // 200 queries 4 ms apart in the trace: 2 ms apart at speed 2 (0.4 s).
    let recs = (0..200)
        .map(|i| {
            record(
                1_000 * MS + i * 4 * MS,
                (i % 7) as u8 + 1,
                Proto::Udp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap();
    let rs = results.sorted();
    assert_one_each(&rs, 200);
    let t0 = rs[0].intended_ns;
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.intended_ns - t0, i as i64 * 2 * MS, "schedule at speed 2");
    }
    let mut err: Vec<i64> = rs
        .iter()
        .map(|r| (r.sent_ns - r.intended_ns).abs())
        .collect();
    err.sort_unstable();
    let median = err[err.len() / 2];
    let mut signed: Vec<i64> = rs.iter().map(|r| r.sent_ns - r.intended_ns).collect();
    signed.sort_unstable();
    let q = |p: usize| signed[(signed.len() - 1) * p / 100];
    eprintln!(
        "timing error ns: p25 {} p50 {} p75 {} p99 {}",
        q(25),
        q(50),
        q(75),
        q(99)
    );
    assert!(median < 2 * MS, "median timing error {median} ns");
    assert!(
        rs.iter().all(|r| r.sent_ns >= r.intended_ns - MS),
        "never early by much"
    );
}

#[test]
fn rate_and_fast_timing() {
    let server = knot();
    for timing in [
        Timing::Rate { qps: 2000.0 },
        Timing::Fast { max_in_flight: 8 },
    ] {
        let results = Results::default();
        let mut cfg = config(server.addr);
        cfg.timing = timing;
        let stats = Replay::new(cfg)
            .unwrap()
            .run(&mut VecSource(trace(300, 10, Proto::Udp)), results.clone())
            .unwrap()
            .stats;
        assert_eq!(stats.answered, 300, "{timing:?}: {stats:?}");
        let rs = results.sorted();
        if let Timing::Rate { .. } = timing {
            assert_eq!(rs[299].intended_ns - rs[0].intended_ns, 299 * 500_000);
        }
    }
}

#[test]
fn a_socket_never_holds_more_ids_in_flight_than_the_id_space_allows() {
    // One client, a silent server and a timeout longer than the run: every ID stays taken, so
    // beyond the cap (60,000 of 65,536) queries fail at once instead of probing a full space.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let n = 62_000;
    let recs = (0..n)
        .map(|i| {
            record(
                i as i64,
                1,
                Proto::Udp,
                query(7, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let results = Results::default();
    let mut cfg = config(silent.local_addr().unwrap());
    cfg.queriers = 1;
    // Long enough for every send to happen before the first timeout frees an ID.
    cfg.timeout = Duration::from_secs(4);
    cfg.timing = Timing::Fast {
        max_in_flight: 100_000,
    };
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    let rs = results.sorted();
    assert_one_each(&rs, n);
    assert_eq!(stats.sent, 60_000, "{stats:?}");
    assert_eq!(stats.error_count(ErrorKind::Send), 2_000, "{stats:?}");
    drop(silent);
}

#[test]
fn stop_flag_mid_run_gives_one_result_per_query() {
    let server = knot();
    let results = Results::default();
    let mut cfg = config(server.addr);
    cfg.preload = Duration::from_secs(10);
    let replay = Replay::new(cfg).unwrap();
    let stop = replay.stop_flag();
    // 100 queries over 5 s; stop after 0.5 s.
    let recs = (0..100)
        .map(|i| {
            record(
                i * 50 * MS,
                (i % 4) as u8 + 1,
                Proto::Udp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let started = std::time::Instant::now();
    let stats = replay
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    stopper.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(4));
    let rs = results.sorted();
    assert_one_each(&rs, 100);
    assert!(results.finished());
    let stopped = stats.error_count(ErrorKind::Stopped);
    assert!(stats.answered >= 5 && stopped >= 50, "{stats:?}");
    assert_eq!(stats.answered + stopped + stats.timeouts, 100);
}

/// Rough throughput figure (run with `--release --ignored --nocapture`); asserts nothing about
/// speed.
#[test]
#[ignore]
fn measure_fast_udp() {
    let server = knot();
    let results = Results::default();
    let mut cfg = config(server.addr);
    cfg.queriers = 1;
    cfg.timing = Timing::Fast { max_in_flight: 256 };
    let n = 200_000;
    let recs = (0..n)
        .map(|i| {
            record(
                0,
                (i % 50) as u8 + 1,
                Proto::Udp,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    eprintln!(
        "fast UDP: {} answered of {n} in {:?}: {:.0} qps",
        stats.answered,
        stats.duration,
        stats.answered as f64 / stats.duration.as_secs_f64()
    );
}

/// Each client's second connection resumes its first TLS session (its own ticket), unless
/// resumption is off.
#[test]
fn tls_sessions_resume_per_client() {
    let (server, _ca) = nsd_tls();
    let run = |resume: bool| {
        let results = Results::default();
        let mut cfg = tls_config(server.tls_addr.unwrap());
        cfg.tls.resume = resume;
        cfg.tcp_idle_timeout = std::time::Duration::from_millis(100);
        // Two clients, each asking twice 400 ms apart: the idle timeout closes the first
        // connection in between.
        let recs: Vec<_> = (0..4)
            .map(|i| {
                record(
                    (i / 2) * 400 * MS,
                    (i % 2) as u8 + 1,
                    Proto::Tls,
                    query(i as u16, "www.example.", Rtype::A, None),
                )
            })
            .collect();
        let stats = Replay::new(cfg)
            .unwrap()
            .run(&mut VecSource(recs), results.clone())
            .unwrap()
            .stats;
        assert_eq!(stats.answered, 4, "{stats:?} {:?}", results.sorted());
        assert_eq!(stats.connections_opened, 4, "{stats:?}");
        stats.tls_resumed
    };
    assert_eq!(run(true), 2, "each client's second connection resumes");
    assert_eq!(run(false), 0, "resumption off");
}

/// A "TLS server" that answers the ClientHello with garbage, and one that resets the
/// connection after the handshake has begun: every query fails as a TLS error, nothing hangs.
#[test]
fn broken_tls_servers_fail_queries_as_tls_errors() {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        for i in 0..2 {
            if let Ok((mut s, _)) = listener.accept() {
                let mut b = [0u8; 512];
                let _ = s.read(&mut b);
                if i == 0 {
                    // Not a TLS record: a DNS-over-TCP length and junk.
                    let _ = s.write_all(&[0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
                    std::thread::sleep(Duration::from_millis(200));
                }
                // Dropped: the second client sees the connection close mid-handshake.
            }
        }
    });
    let results = Results::default();
    let cfg = tls_config(addr);
    let recs = vec![
        record(0, 1, Proto::Tls, query(1, "www.example.", Rtype::A, None)),
        record(
            300 * MS,
            2,
            Proto::Tls,
            query(2, "www.example.", Rtype::A, None),
        ),
    ];
    Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap();
    t.join().unwrap();
    let rs = results.sorted();
    assert_one_each(&rs, 2);
    for r in &rs {
        assert_eq!(r.outcome, Outcome::Error(ErrorKind::Tls), "{r:?}");
    }
}

/// Queries queued while the handshake runs are all answered: each goes out in its own TLS
/// record (nsd answers only the first query of a record holding several).
#[test]
fn tls_queries_queued_during_the_handshake_are_all_answered() {
    let (server, _ca) = nsd_tls();
    let results = Results::default();
    let cfg = tls_config(server.tls_addr.unwrap());
    // Ten queries of one client at the same instant: all wait for the handshake.
    let recs: Vec<_> = (0..10)
        .map(|i| {
            record(
                0,
                1,
                Proto::Tls,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect();
    let stats = Replay::new(cfg)
        .unwrap()
        .run(&mut VecSource(recs), results.clone())
        .unwrap()
        .stats;
    assert_eq!(stats.answered, 10, "{stats:?}");
    assert_eq!(stats.connections_opened, 1, "{stats:?}");
}

/// `query` as the server's response (QR set): a record the replay skips but counts.
fn response(id: u16, name: &str) -> Vec<u8> {
    let mut w = query(id, name, Rtype::A, None);
    w[2] |= 0x80;
    w
}

#[test]
fn result_indexes_are_record_positions_and_join_two_runs() {
    let server = knot();
    // Responses at positions 1, 4 and 5 of the trace; queries elsewhere.
    let recs: Vec<_> = (0..10u16)
        .map(|i| {
            let name = if i % 3 == 0 {
                "www.example."
            } else {
                "nope.example."
            };
            let wire = if matches!(i, 1 | 4 | 5) {
                response(i, name)
            } else {
                query(i, name, Rtype::A, None)
            };
            record(i as i64 * MS, (i % 2) as u8 + 1, Proto::Udp, wire)
        })
        .collect();
    let run = |proto: Proto| {
        let mut cfg = config(server.addr);
        cfg.proto_override = Some(proto);
        let results = Results::default();
        let done = Replay::new(cfg)
            .unwrap()
            .run(&mut VecSource(recs.clone()), results.clone())
            .unwrap();
        assert_eq!(done.stats.records, 10);
        assert_eq!(done.stats.skipped_responses, 3);
        results.sorted()
    };
    let udp = run(Proto::Udp);
    let tcp = run(Proto::Tcp);
    let positions: Vec<u64> = udp.iter().map(|r| r.index).collect();
    assert_eq!(positions, [0, 2, 3, 6, 7, 8, 9], "indexes count responses");
    // The two runs join on the index: the same query got the same answer both ways.
    assert_eq!(tcp.len(), udp.len());
    for (u, t) in udp.iter().zip(&tcp) {
        assert_eq!(u.index, t.index);
        assert_eq!(
            (u.outcome, t.outcome),
            (Outcome::Answered, Outcome::Answered)
        );
        let want = if u.index % 3 == 0 {
            Rcode::NOERROR
        } else {
            Rcode::NXDOMAIN
        };
        assert_eq!((u.rcode, t.rcode), (want, want), "{u:?} {t:?}");
        assert_eq!((u.proto, t.proto), (Proto::Udp, Proto::Tcp));
        assert_eq!(u.trace_ns, t.trace_ns);
    }
}

#[test]
fn replays_given_one_start_and_origin_schedule_each_query_alike() {
    let server = knot();
    let start = realtime_now_ns() + 500 * MS;
    // The origin lies 20 ms before the first query: that query is due 20 ms after the start.
    let origin = -20 * MS;
    let recs = trace(20, 4, Proto::Udp);
    let run = || {
        let mut cfg = config(server.addr);
        cfg.start_ns = Some(start);
        cfg.trace_origin_ns = Some(origin);
        let recs = recs.clone();
        std::thread::spawn(move || {
            let results = Results::default();
            let done = Replay::new(cfg)
                .unwrap()
                .run(&mut VecSource(recs), results.clone())
                .unwrap();
            assert_eq!(done.stats.answered, 20, "{:?}", done.stats);
            results.sorted()
        })
    };
    // Two replays at once, as two processes sharing a start would run.
    let (a, b) = (run(), run());
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert_one_each(&a, 20);
    assert_one_each(&b, 20);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.intended_ns, y.intended_ns, "{x:?} {y:?}");
        assert_eq!(x.intended_ns, start + (x.trace_ns - origin), "{x:?}");
        assert!(x.sent_ns >= start && y.sent_ns >= start);
    }
}

#[test]
fn a_start_in_the_past_is_refused() {
    let server = knot();
    let mut cfg = config(server.addr);
    cfg.start_ns = Some(realtime_now_ns() - 1_000 * MS);
    let e = Replay::new(cfg)
        .unwrap()
        .start(Results::default())
        .unwrap_err();
    assert!(e.to_string().contains("in the past"), "{e}");
}
