//! `--stack reference`: DoT on rustls' ClientConnection against nsd (OpenSSL), DoH on h2 and
//! DoQ on quinn against ldplayer's own server, and DoT against a rustls server that updates
//! its traffic keys: every query answered, one connection per client, sessions resumed (and
//! DoQ's 0-RTT) as the servers count them, the summary naming the stack and its clocks.

mod engine;

use engine::*;
use ldplayer_dns::Rtype;
use ldplayer_replay::{DohMethod, ReplayConfig, Stack, TlsConfig};
use ldplayer_results::Outcome;
use ldplayer_server::{DohConfig, DoqConfig};
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MS: i64 = 1_000_000;

/// Two clients asking twice, `gap_ms` apart: with the server's idle timeout shorter than the
/// gap, each client's second query opens a second connection, which resumes the first's
/// session.
fn two_rounds(proto: Proto, gap_ms: i64) -> Vec<ldplayer_trace::RecordBuf> {
    (0..4)
        .map(|i| {
            record(
                (i / 2) * gap_ms * MS,
                (i % 2) as u8 + 1,
                proto,
                query(i as u16, "www.example.", Rtype::A, None),
            )
        })
        .collect()
}

fn reference(mut cfg: ReplayConfig, proto: Proto) -> ReplayConfig {
    cfg.queriers = 1;
    cfg.timeout = Duration::from_secs(2);
    cfg.proto_override = Some(proto);
    cfg.stack = Stack::Reference;
    cfg
}

/// Every query answered, with send and answer times, and the summary naming the stack.
fn assert_answered(stats: &ldplayer_replay::ReplayStats, results: &Results, n: usize) {
    let rs = results.sorted();
    assert_one_each(&rs, n);
    for r in &rs {
        assert_eq!(r.outcome, Outcome::Answered, "{r:?} {stats:?}");
        assert!(
            r.latency_ns().is_some_and(|l| l > 0 && l < 1_000_000_000),
            "{r:?}"
        );
    }
    assert_eq!(stats.stacks, ["reference"], "{stats:?}");
}

#[test]
fn reference_dot_against_nsd_answers_and_resumes_per_client() {
    let (server, ca) = nsd_tls();
    let mut cfg = reference(ReplayConfig::new(server.tls_addr.unwrap()), Proto::Tls);
    cfg.tls.ca_file = Some(ca);
    cfg.tcp_idle_timeout = Duration::from_millis(100);
    let (stats, results) = replay_records(cfg, two_rounds(Proto::Tls, 400));
    assert_answered(&stats, &results, 4);
    assert_eq!(stats.connections_opened, 4, "{stats:?}");
    assert_eq!(stats.tls_resumed, 2, "{stats:?}");
    let tls = stats.timestamps["tls"];
    assert_eq!((tls.send, tls.receive), ("kernel", "kernel"), "{stats:?}");
}

#[test]
fn reference_doh_against_ldplayer_serve_post_and_get() {
    for method in [DohMethod::Post, DohMethod::Get] {
        let server = own_server(|config, identity| {
            let mut front = DohConfig::new(vec!["127.0.0.1:0".parse().unwrap()], identity);
            front.idle_timeout = Duration::from_millis(150);
            config.doh = Some(front);
        });
        let mut cfg = reference(
            ReplayConfig::new(server.server.doh_local_addrs()[0]),
            Proto::Https,
        );
        cfg.doh.method = method;
        cfg.tls = TlsConfig {
            ca_file: Some(server.ca.clone()),
            ..TlsConfig::default()
        };
        let (stats, results) = replay_records(cfg, two_rounds(Proto::Https, 500));
        assert_answered(&stats, &results, 4);
        assert_eq!(stats.connections_opened, 4, "{method:?}: {stats:?}");
        assert_eq!(stats.tls_resumed, 2, "{method:?}: {stats:?}");
        let served = server.server.stop();
        assert_eq!(served.doh_queries, 4, "{served:?}");
    }
}

/// Each client's second connection resumes its session and, unless 0-RTT is off, sends its
/// query in 0-RTT, which the server (quinn) accepts as it counts them.
#[test]
fn reference_doq_resumes_in_0rtt_as_the_server_counts() {
    for zero_rtt in [true, false] {
        let server = own_server(|config, identity| {
            let mut front = DoqConfig::new(vec!["127.0.0.1:0".parse().unwrap()], identity);
            front.idle_timeout = Duration::from_millis(150);
            config.doq = Some(front);
        });
        let mut cfg = reference(
            ReplayConfig::new(server.server.doq_local_addrs()[0]),
            Proto::Quic,
        );
        cfg.tls = TlsConfig {
            ca_file: Some(server.ca.clone()),
            zero_rtt,
            ..TlsConfig::default()
        };
        let (stats, results) = replay_records(cfg, two_rounds(Proto::Quic, 500));
        assert_answered(&stats, &results, 4);
        assert_eq!(stats.connections_opened, 4, "{stats:?}");
        assert_eq!(stats.tls_resumed, 2, "{stats:?}");
        let quic = stats.timestamps["quic"];
        assert_eq!((quic.send, quic.receive), ("user", "user"), "{stats:?}");
        let served = server.server.stop();
        assert_eq!(served.doq_queries, 4, "{served:?}");
        assert_eq!(served.doq_resumed, 2, "{served:?}");
        if zero_rtt {
            assert_eq!(stats.quic_zero_rtt, 2, "{stats:?}");
            assert_eq!(stats.quic_zero_rtt_accepted, 2, "{stats:?}");
            assert_eq!(served.doq_zero_rtt, 2, "{served:?}");
        } else {
            assert_eq!(stats.quic_zero_rtt, 0, "{stats:?}");
            assert_eq!(served.doq_zero_rtt, 0, "{served:?}");
        }
    }
}

/// A DoT server on rustls that answers each query (the query back with QR set) and, after
/// every answer but a connection's first, updates its traffic keys (a TLS 1.3 KeyUpdate asking
/// the client to update too). Its address, the CA to trust, and the key updates it sent.
///
/// Not after the first: the lean stack lets rustls go at its first answer, and rustls holds
/// its answer to an update request until its next application data, which never comes; an
/// update that early is for rustls to follow, and a lean session then fails (see
/// `ldplayer_stacks::tls`).
fn key_updating_dot_server(
    dir: &std::path::Path,
) -> (SocketAddr, std::path::PathBuf, Arc<AtomicU64>) {
    let (config, ca) = rustls_server(dir, b"dot", true);
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let updates = Arc::new(AtomicU64::new(0));
    let counted = updates.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let (config, updates) = (config.clone(), counted.clone());
            std::thread::spawn(move || {
                let mut conn = rustls::ServerConnection::new(config).unwrap();
                let mut plain = Vec::new();
                let mut answered = 0;
                loop {
                    while conn.wants_write() {
                        if conn.write_tls(&mut sock).is_err() {
                            return;
                        }
                    }
                    match conn.read_tls(&mut sock) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if conn.process_new_packets().is_err() {
                        return;
                    }
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = conn.reader().read(&mut buf) {
                        if n == 0 {
                            return;
                        }
                        plain.extend_from_slice(&buf[..n]);
                    }
                    while plain.len() >= 2 {
                        let len = usize::from(u16::from_be_bytes([plain[0], plain[1]]));
                        if plain.len() < 2 + len {
                            break;
                        }
                        let mut answer: Vec<u8> = plain.drain(..2 + len).collect();
                        answer[4] |= 0x80;
                        conn.writer().write_all(&answer).unwrap();
                        answered += 1;
                        if answered > 1 && conn.refresh_traffic_keys().is_ok() {
                            updates.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    (addr, ca, updates)
}

/// The server updates its keys after every answer but the first; each client's session follows
/// them (and answers with its own update), on the lean stack as on rustls' own connection:
/// every query answered on one connection per client.
#[test]
fn dot_sessions_survive_the_servers_key_updates() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca, updates) = key_updating_dot_server(dir.path());
    for stack in [Stack::Lean, Stack::Reference] {
        let mut cfg = reference(ReplayConfig::new(addr), Proto::Tls);
        cfg.stack = stack;
        cfg.tls.ca_file = Some(ca.clone());
        let before = updates.load(Ordering::Relaxed);
        let (stats, results) = replay_records(cfg, alternating_trace(12, 2, 20, Proto::Tls));
        let rs = results.sorted();
        assert_one_each(&rs, 12);
        assert!(
            rs.iter().all(|r| r.outcome == Outcome::Answered),
            "{stack}: {rs:?} {stats:?}"
        );
        assert_eq!(stats.connections_opened, 2, "{stack}: {stats:?}");
        assert!(
            updates.load(Ordering::Relaxed) - before >= 8,
            "{stack}: the server updated its keys"
        );
    }
}
