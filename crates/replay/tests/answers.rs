//! What counts as an answer: a message with QR set, the query's opcode and the query's question
//! (its name in any case). Small hostile servers, run by the tests on loopback, send back what
//! is not: the query echoed (UDP, TCP, TLS), a response to another question, a response with an
//! ID no query has, random bytes. Each is counted apart with its cause, never as an answer, and
//! on TCP and TLS the connection that carried it is closed, its queries failed, the next ones
//! reconnected. Real servers' answers (knotd, nsd) still count.
//!
//! Outcomes and causes are compared by name, as the results file and the summaries show them.

mod engine;

use engine::*;
use ldplayer_dns::{Rcode, Rtype};
use ldplayer_replay::{ReplayConfig, ReplayStats, Timing};
use ldplayer_results::{Outcome, QueryResult};
use ldplayer_testbed::*;
use ldplayer_trace::{Proto, RecordBuf};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MS: i64 = 1_000_000;

fn config(server: SocketAddr, timeout_ms: u64) -> ReplayConfig {
    let mut cfg = ReplayConfig::new(server);
    cfg.queriers = 1;
    cfg.timeout = Duration::from_millis(timeout_ms);
    cfg
}

/// The failures counted by cause, for the error kind named `kind`, as (cause, count).
fn causes_named(stats: &ReplayStats, kind: &str) -> Vec<(String, u64)> {
    stats
        .causes
        .iter()
        .filter(|c| c.kind.name() == kind)
        .map(|c| (c.cause.to_string(), c.count))
        .collect()
}

/// The outcomes' names, counted, in order of first appearance.
fn outcomes(rs: &[QueryResult]) -> Vec<(&'static str, usize)> {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for r in rs {
        match counts.iter_mut().find(|(n, _)| *n == r.outcome.name()) {
            Some((_, c)) => *c += 1,
            None => counts.push((r.outcome.name(), 1)),
        }
    }
    counts
}

/// A UDP server on loopback that sends back, for each datagram, what `reply` makes of it
/// (nothing for `None`), until the returned flag is set.
fn udp_server(
    reply: impl Fn(&[u8]) -> Option<Vec<u8>> + Send + 'static,
) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let sock = UdpSocket::bind("127.0.0.1:0").expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let addr = sock.local_addr().expect("address");
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let handle = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while !stopped.load(Ordering::Relaxed) {
            if let Ok((n, from)) = sock.recv_from(&mut buf) {
                if let Some(out) = reply(&buf[..n]) {
                    let _ = sock.send_to(&out, from);
                }
            }
        }
    });
    (addr, stop, handle)
}

/// `n` queries for `www.example. A` from `clients` clients, `gap_us` µs apart, query `i` with
/// ID `i`.
fn queries(n: usize, clients: u8, gap_us: i64, proto: Proto) -> Vec<RecordBuf> {
    (0..n)
        .map(|i| {
            record(
                i as i64 * gap_us * 1_000,
                (i % clients as usize) as u8 + 1,
                proto,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect()
}

/// A UDP "server" that echoes every query back (QR clear): none of 1,000 queries is answered;
/// each fails as a bad response, `not-a-response`, at once.
#[test]
fn a_udp_server_echoing_the_queries_answers_none() {
    let (addr, stop, handle) = udp_server(|q| Some(q.to_vec()));
    let mut cfg = config(addr, 2_000);
    cfg.timing = Timing::Fast { max_in_flight: 100 };
    let (stats, results) = replay_records(cfg, queries(1000, 10, 0, Proto::Udp));
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("server");
    let rs = results.sorted();
    assert_one_each(&rs, 1000);
    assert_eq!(outcomes(&rs), [("bad-response", 1000)], "{stats:?}");
    assert_eq!(stats.answered, 0, "{stats:?}");
    assert_eq!(stats.timeouts, 0, "failed at once: {stats:?}");
    assert_eq!(
        causes_named(&stats, "bad-response"),
        [("not-a-response".to_string(), 1000)]
    );
    assert!(stats.causes[0].first.contains("echo"), "{:?}", stats.causes);
}

/// Builds a response to `q` (QR set) with its question's name changed by `rename` (the
/// bytes of the question after the header, its type and class left as they are).
fn respond(q: &[u8], rename: impl Fn(&mut [u8])) -> Vec<u8> {
    let mut r = q.to_vec();
    r[2] |= 0x80;
    let end = r.len() - 4;
    rename(&mut r[12..end]);
    r
}

/// A server that answers `www` with the name in capitals (0x20: an answer all the same),
/// `nope` for another name (not an answer: the query waits, then fails as a bad response,
/// `question-mismatch`), and `broken` with FORMERR and no question (an answer: a server may
/// leave out a question it could not parse).
#[test]
fn a_response_must_be_for_the_querys_question_in_any_case() {
    let (addr, stop, handle) = udp_server(|q| {
        let name = String::from_utf8_lossy(&q[13..16]).into_owned();
        Some(match name.as_str() {
            "www" => respond(q, |n| n.make_ascii_uppercase()),
            "nop" => respond(q, |n| n[2] = b'x'),
            _ => {
                let mut r = q[..12].to_vec();
                r[2] |= 0x80;
                r[3] = 1; // FORMERR
                r[5] = 0; // no question
                r
            }
        })
    });
    let names = ["www.example.", "nope.example.", "broken.example."];
    let recs: Vec<_> = (0..9)
        .map(|i| {
            record(
                i as i64 * 2 * MS,
                (i % 3) as u8 + 1,
                Proto::Udp,
                query(i as u16, names[i % 3], Rtype::A, None),
            )
        })
        .collect();
    let (stats, results) = replay_records(config(addr, 300), recs);
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("server");
    let rs = results.sorted();
    assert_one_each(&rs, 9);
    for r in &rs {
        let (outcome, rcode) = match r.index % 3 {
            0 => ("answered", Rcode::NOERROR),
            1 => ("bad-response", Rcode::NOERROR),
            _ => ("answered", Rcode::FORMERR),
        };
        assert_eq!((r.outcome.name(), r.rcode), (outcome, rcode), "{r:?}");
    }
    assert_eq!(
        causes_named(&stats, "bad-response"),
        [("question-mismatch".to_string(), 3)],
        "{stats:?}"
    );
}

/// How a hostile TCP server replies to what it reads.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Random bytes, 64 per read, from a generator seeded by the connection's number.
    Random,
    /// The query echoed back (QR clear).
    Echo,
    /// A well-formed response whose ID no query has (the query's with its top bit flipped;
    /// the trace's IDs are all below 0x8000).
    WrongId,
}

/// xorshift64*: the hostile server's random bytes, the same for a seed on every run.
fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Whether the first frame of `bytes` is garbage by its length and header alone, for any
/// query in flight whose ID is below `ids` (what the engine finds out as soon as they come).
fn garbage_at_once(bytes: &[u8], ids: u16) -> bool {
    let len = u16::from_be_bytes([bytes[0], bytes[1]]) as usize;
    let header = &bytes[2..14];
    len < 12 || header[2] & 0x80 == 0 || u16::from_be_bytes([header[0], header[1]]) >= ids
}

/// Replies to every message read on `s` as `how` says, until the peer goes.
fn hostile_connection(mut s: TcpStream, how: Hostile, seed: u64) {
    let mut buf = vec![0u8; 65536];
    let mut have = 0;
    let mut reads = 0;
    loop {
        let n = match s.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        have += n;
        let out = match how {
            Hostile::Random => {
                reads += 1;
                have = 0;
                random_bytes(seed * 1000 + reads, 64)
            }
            Hostile::Echo | Hostile::WrongId => {
                // Whole frames only.
                let mut out = Vec::new();
                let mut at = 0;
                while have - at >= 2 {
                    let len = u16::from_be_bytes([buf[at], buf[at + 1]]) as usize;
                    if have - at < 2 + len {
                        break;
                    }
                    let mut frame = buf[at..at + 2 + len].to_vec();
                    if let Hostile::WrongId = how {
                        frame[2] ^= 0x80;
                        frame[4] |= 0x80;
                    }
                    out.extend_from_slice(&frame);
                    at += 2 + len;
                }
                buf.copy_within(at..have, 0);
                have -= at;
                out
            }
        };
        if s.write_all(&out).is_err() {
            return;
        }
    }
}

/// A hostile TCP server on loopback, each connection served by [`hostile_connection`].
fn hostile_tcp_server(how: Hostile) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for (seed, conn) in (1..).zip(listener.incoming()) {
            let Ok(s) = conn else { return };
            std::thread::spawn(move || hostile_connection(s, how, seed));
        }
    });
    addr
}

/// TCP servers that send random bytes, echo the queries or answer with IDs no query has: no
/// query is answered or left to time out. Each connection is closed as soon as it carries
/// what is not a response to a query in flight, its queries failing as bad responses with the
/// cause `stream-garbage`, and the next queries reconnect.
#[test]
fn tcp_servers_sending_what_is_not_a_response_lose_their_connection_with_a_cause() {
    const N: usize = 200;
    // The random bytes of the first N connections are garbage by their first header whatever
    // is in flight: the outcome does not depend on timing.
    for seed in 1..=N as u64 {
        assert!(
            garbage_at_once(&random_bytes(seed * 1000 + 1, 64), N as u16),
            "seed {seed}"
        );
    }
    for how in [Hostile::Random, Hostile::Echo, Hostile::WrongId] {
        let addr = hostile_tcp_server(how);
        let (stats, results) =
            replay_records(config(addr, 2_000), queries(N, 1, 2_000, Proto::Tcp));
        let rs = results.sorted();
        assert_one_each(&rs, N);
        assert_eq!(outcomes(&rs), [("bad-response", N)], "{how:?}: {stats:?}");
        assert_eq!(
            causes_named(&stats, "bad-response"),
            [("stream-garbage".to_string(), N as u64)],
            "{how:?}"
        );
        assert!(
            stats.connections_opened > 1,
            "{how:?}: the next queries reconnect: {stats:?}"
        );
        let first = &stats.causes[0].first;
        assert!(first.contains("closed the connection"), "{how:?}: {first}");
    }
}

/// The same over TLS: a DoT server that echoes the queries loses its connections the same way.
#[test]
fn a_dot_server_echoing_the_queries_loses_its_connections_with_a_cause() {
    let dir = tempfile::tempdir().expect("scratch");
    let (tls, ca) = rustls_server(dir.path(), b"dot", false);
    let tls = Arc::new(tls);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(tcp) = conn else { return };
            let tls = tls.clone();
            std::thread::spawn(move || {
                let Ok(session) = rustls::ServerConnection::new(tls) else {
                    return;
                };
                let mut s = rustls::StreamOwned::new(session, tcp);
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(&buf[..n]).and_then(|()| s.flush()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let mut cfg = config(addr, 2_000);
    cfg.proto_override = Some(Proto::Tls);
    cfg.tls.ca_file = Some(ca);
    let (stats, results) = replay_records(cfg, queries(20, 2, 5_000, Proto::Udp));
    let rs = results.sorted();
    assert_one_each(&rs, 20);
    assert_eq!(outcomes(&rs), [("bad-response", 20)], "{stats:?}");
    assert_eq!(
        causes_named(&stats, "bad-response"),
        [("stream-garbage".to_string(), 20)]
    );
    assert!(stats.connections_opened > 2, "{stats:?}");
}

/// A server that answers too late is not a hostile one: its late answers (the ID of a query
/// that timed out a moment ago) are counted as unmatched and the connection stays up for the
/// next query, which it answers in time.
#[test]
fn late_answers_on_tcp_do_not_close_the_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut buf = [0u8; 2];
        loop {
            if s.read_exact(&mut buf).is_err() {
                return;
            }
            let mut q = vec![0u8; u16::from_be_bytes(buf) as usize];
            if s.read_exact(&mut q).is_err() {
                return;
            }
            let id = u16::from_be_bytes([q[0], q[1]]);
            if id < 100 {
                // Longer than the replay waits.
                std::thread::sleep(Duration::from_millis(300));
            }
            let mut frame = buf.to_vec();
            frame.extend_from_slice(&respond(&q, |_| {}));
            if s.write_all(&frame).is_err() {
                return;
            }
        }
    });
    let mut recs = queries(3, 1, 10_000, Proto::Tcp);
    recs.push(record(
        1500 * MS,
        1,
        Proto::Tcp,
        query(100, "www.example.", Rtype::A, None),
    ));
    let (stats, results) = replay_records(config(addr, 100), recs);
    let rs = results.sorted();
    assert_one_each(&rs, 4);
    let got: Vec<_> = rs.iter().map(|r| r.outcome).collect();
    assert_eq!(
        got,
        [
            Outcome::Timeout,
            Outcome::Timeout,
            Outcome::Timeout,
            Outcome::Answered
        ],
        "{stats:?}"
    );
    assert_eq!(stats.connections_opened, 1, "{stats:?}");
    assert_eq!(stats.unmatched_responses, 3, "{stats:?}");
}

/// Under overload more queries time out than the querier remembers by ID: a late answer then
/// comes with an ID it no longer knows. On a connection where a query timed out, such a
/// response is taken for a late answer (counted as unmatched), not for garbage: the connection
/// stays up for the next query, as it would with a remembered ID.
#[test]
fn a_stray_answer_after_a_timeout_on_tcp_is_taken_for_a_late_one() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        // One connection only: a second one would never be answered.
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut buf = [0u8; 2];
        loop {
            if s.read_exact(&mut buf).is_err() {
                return;
            }
            let mut q = vec![0u8; u16::from_be_bytes(buf) as usize];
            if s.read_exact(&mut q).is_err() {
                return;
            }
            let id = u16::from_be_bytes([q[0], q[1]]);
            let mut answer = respond(&q, |_| {});
            if id < 100 {
                // Late, and with an ID no query had (as if forgotten).
                std::thread::sleep(Duration::from_millis(300));
                answer[..2].copy_from_slice(&(id ^ 0x8000).to_be_bytes());
            }
            let mut frame = buf.to_vec();
            frame.extend_from_slice(&answer);
            if s.write_all(&frame).is_err() {
                return;
            }
        }
    });
    let mut recs = queries(3, 1, 10_000, Proto::Tcp);
    recs.push(record(
        1500 * MS,
        1,
        Proto::Tcp,
        query(100, "www.example.", Rtype::A, None),
    ));
    let (stats, results) = replay_records(config(addr, 100), recs);
    let rs = results.sorted();
    assert_one_each(&rs, 4);
    let got: Vec<_> = rs.iter().map(|r| r.outcome).collect();
    assert_eq!(
        got,
        [
            Outcome::Timeout,
            Outcome::Timeout,
            Outcome::Timeout,
            Outcome::Answered
        ],
        "{stats:?}"
    );
    assert_eq!(stats.connections_opened, 1, "{stats:?}");
    assert_eq!(stats.unmatched_responses, 3, "{stats:?}");
}

/// A real server's answers count on every transport, names in mixed case (0x20) included.
#[test]
fn real_servers_answers_count_whatever_the_case_of_the_name() {
    let server = knot();
    let names = ["wWw.ExAmPlE.", "NoPe.example."];
    for proto in [Proto::Udp, Proto::Tcp] {
        let recs: Vec<_> = (0..20)
            .map(|i| {
                record(
                    i as i64 * MS,
                    (i % 4) as u8 + 1,
                    proto,
                    query(i as u16, names[i % 2], Rtype::A, Some((1232, false))),
                )
            })
            .collect();
        let (stats, results) = replay_records(config(server.addr, 2_000), recs);
        let rs = results.sorted();
        assert_one_each(&rs, 20);
        for r in &rs {
            let rcode = if r.index % 2 == 0 {
                Rcode::NOERROR
            } else {
                Rcode::NXDOMAIN
            };
            assert_eq!(
                (r.outcome, r.rcode),
                (Outcome::Answered, rcode),
                "{proto:?} {r:?}"
            );
        }
        assert_eq!(stats.unmatched_responses, 0, "{proto:?} {stats:?}");
    }
    let (nsd, ca) = nsd_tls();
    let mut cfg = config(nsd.tls_addr.expect("tls"), 2_000);
    cfg.proto_override = Some(Proto::Tls);
    cfg.tls.ca_file = Some(ca);
    let (stats, _) = replay_records(cfg, alternating_trace(10, 2, 1, Proto::Udp));
    assert_eq!(stats.answered, 10, "{stats:?}");
}
