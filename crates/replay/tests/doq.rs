//! DNS over QUIC replays against ldplayer's own DoQ front on loopback (quinn on the server side
//! too, but its own endpoint, session store and accounting): answers as over UDP, one
//! connection per client, 0-RTT on resumption as the server counts it, and failures counted
//! by kind while the run completes.

mod engine;

use engine::*;
use ldplayer_dns::{Rcode, Rtype};
use ldplayer_replay::{ReplayConfig, TlsConfig};
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_server::DoqConfig;
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const MS: i64 = 1_000_000;

/// ldplayer's server with DoQ on a free port whose connections close after `idle`
/// idle, and that front's address.
struct DoqServer {
    own: OwnServer,
    doq: SocketAddr,
}

fn doq_server(idle: Duration) -> DoqServer {
    let server = own_server(|config, identity| {
        let mut front = DoqConfig::new(vec!["127.0.0.1:0".parse().unwrap()], identity);
        front.idle_timeout = idle;
        config.doq = Some(front);
    });
    let doq = server.server.doq_local_addrs()[0];
    DoqServer { own: server, doq }
}

fn doq_config(server: &DoqServer) -> ReplayConfig {
    let mut cfg = ReplayConfig::new(server.doq);
    cfg.queriers = 1;
    cfg.timeout = Duration::from_secs(2);
    cfg.proto_override = Some(Proto::Quic);
    cfg.tls = TlsConfig {
        ca_file: Some(server.own.ca.clone()),
        ..TlsConfig::default()
    };
    cfg
}

#[test]
fn doq_queries_are_answered_as_over_udp_one_connection_per_client() {
    let server = doq_server(Duration::from_secs(10));
    let (stats, results) =
        replay_records(doq_config(&server), alternating_trace(30, 3, 2, Proto::Udp));
    let rs = results.sorted();
    assert_one_each(&rs, 30);
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.outcome, Outcome::Answered, "{r:?} {stats:?}");
        assert_eq!(r.proto, Proto::Quic);
        let expected = if i % 2 == 0 {
            Rcode::NOERROR
        } else {
            Rcode::NXDOMAIN
        };
        assert_eq!(r.rcode, expected, "query {i}");
        assert!(r.sent_ns > 0, "{r:?}");
        assert!(
            r.latency_ns().is_some_and(|l| l > 0 && l < 1_000_000_000),
            "{r:?}"
        );
    }
    assert_eq!(stats.connections_opened, 3, "{stats:?}");
    assert_eq!(stats.connections_reused, 27, "{stats:?}");
    assert_eq!(rs.iter().filter(|r| r.new_connection).count(), 3);
    let served = server.own.server.stop();
    assert_eq!(served.doq_queries, 30, "{served:?}");
    assert_eq!(served.doq_handshakes, 3, "{served:?}");
}

/// Each client's second connection resumes its session and sends its query in 0-RTT, which
/// the server accepts (as it counts them); with 0-RTT off, the query waits for the handshake.
#[test]
fn doq_second_connections_use_0rtt_unless_switched_off() {
    for zero_rtt in [true, false] {
        // The server closes idle connections after 150 ms; the clients ask again 500 ms later.
        let server = doq_server(Duration::from_millis(150));
        let mut cfg = doq_config(&server);
        cfg.tls.zero_rtt = zero_rtt;
        let recs: Vec<_> = (0..4)
            .map(|i| {
                record(
                    (i / 2) * 500 * MS,
                    (i % 2) as u8 + 1,
                    Proto::Udp,
                    query(i as u16, "www.example.", Rtype::A, None),
                )
            })
            .collect();
        let (stats, results) = replay_records(cfg, recs);
        assert_eq!(stats.answered, 4, "{stats:?} {:?}", results.sorted());
        assert_eq!(stats.connections_opened, 4, "{stats:?}");
        assert_eq!(stats.tls_resumed, 2, "{stats:?}");
        let served = server.own.server.stop();
        if zero_rtt {
            assert_eq!(stats.quic_zero_rtt, 2, "{stats:?}");
            assert_eq!(stats.quic_zero_rtt_accepted, 2, "{stats:?}");
            assert_eq!(served.doq_zero_rtt, 2, "the server saw them: {served:?}");
        } else {
            assert_eq!(stats.quic_zero_rtt, 0, "{stats:?}");
            assert_eq!(served.doq_zero_rtt, 0, "{served:?}");
            assert_eq!(served.doq_resumed, 2, "resumed all the same: {served:?}");
        }
    }
}

/// A certificate for another name fails the handshake as TLS; a DoT (TCP-only) port answers
/// nothing over QUIC and the queries time out; either way the run completes.
#[test]
fn a_certificate_mismatch_and_no_quic_server_are_counted() {
    let server = doq_server(Duration::from_secs(10));
    let mut cfg = doq_config(&server);
    cfg.tls.server_name = Some("not-the-server.example".into());
    let (stats, results) = replay_records(cfg, alternating_trace(4, 2, 1, Proto::Udp));
    assert_one_each(&results.sorted(), 4);
    assert_eq!(
        causes(&stats, ErrorKind::Tls),
        [("quic-tls-alert".to_string(), 4)],
        "{stats:?}"
    );

    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = ReplayConfig::new(silent.local_addr().unwrap());
    cfg.queriers = 1;
    cfg.timeout = Duration::from_millis(500);
    cfg.proto_override = Some(Proto::Quic);
    cfg.tls.insecure = true;
    let (stats, results) = replay_records(cfg, alternating_trace(4, 2, 1, Proto::Udp));
    let rs = results.sorted();
    assert_one_each(&rs, 4);
    assert!(rs.iter().all(|r| r.outcome == Outcome::Timeout), "{rs:?}");
    assert_eq!(stats.timeouts, 4, "{stats:?}");
}

/// How a misbehaving DoQ server treats each query's stream.
#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    /// Resets the stream (RESET_STREAM) instead of answering.
    Reset,
    /// Finishes the stream with three bytes that are no DNS message.
    Short,
    /// Sends the query back as it came (QR clear).
    Echo,
}

/// A DoQ server (quinn, ALPN doq) that reads each query and misbehaves; its address and CA.
fn misbehaving_doq_server(dir: &std::path::Path, how: Misbehaviour) -> (SocketAddr, PathBuf) {
    let (tls, ca) = rustls_server(dir, b"doq", true);
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let endpoint = quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )
            .unwrap();
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(async move {
                    let Ok(conn) = incoming.await else {
                        return;
                    };
                    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                        let query = recv.read_to_end(1024).await.unwrap_or_default();
                        match how {
                            Misbehaviour::Reset => {
                                let _ = send.reset(quinn::VarInt::from_u32(5));
                            }
                            Misbehaviour::Short => {
                                let _ = send.write_all(b"abc").await;
                                let _ = send.finish();
                            }
                            Misbehaviour::Echo => {
                                let _ = send.write_all(&query).await;
                                let _ = send.finish();
                            }
                        }
                    }
                });
            }
        });
    });
    (addr, ca)
}

/// A DoQ server that resets streams or finishes them with no DNS message: each query fails as
/// `quic` with its cause, and the run completes.
#[test]
fn doq_streams_closed_early_fail_by_kind_and_the_run_completes() {
    for (how, cause) in [
        (Misbehaviour::Reset, "quic-stream-reset"),
        (Misbehaviour::Short, "quic-bad-response"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (addr, ca) = misbehaving_doq_server(dir.path(), how);
        let mut cfg = ReplayConfig::new(addr);
        cfg.queriers = 1;
        cfg.proto_override = Some(Proto::Quic);
        cfg.tls.ca_file = Some(ca);
        let (stats, results) = replay_records(cfg, alternating_trace(6, 2, 1, Proto::Udp));
        let rs = results.sorted();
        assert_one_each(&rs, 6);
        assert!(
            rs.iter()
                .all(|r| r.outcome == Outcome::Error(ErrorKind::Quic)),
            "{how:?}: {rs:?}"
        );
        assert_eq!(
            causes(&stats, ErrorKind::Quic),
            [(cause.to_string(), 6)],
            "{how:?}: {stats:?}"
        );
    }
}

/// A DoQ server that sends each query back on its stream: a DNS message, but not a response.
/// Each query fails at once as a bad response, `not-a-response`, never as an answer.
#[test]
fn a_doq_server_echoing_the_queries_answers_none() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, ca) = misbehaving_doq_server(dir.path(), Misbehaviour::Echo);
    let mut cfg = ReplayConfig::new(addr);
    cfg.queriers = 1;
    cfg.proto_override = Some(Proto::Quic);
    cfg.tls.ca_file = Some(ca);
    let (stats, results) = replay_records(cfg, alternating_trace(6, 2, 1, Proto::Udp));
    let rs = results.sorted();
    assert_one_each(&rs, 6);
    assert!(
        rs.iter().all(|r| r.outcome.name() == "bad-response"),
        "{rs:?}"
    );
    let got: Vec<_> = stats
        .causes
        .iter()
        .map(|c| (c.kind.name(), c.cause, c.count))
        .collect();
    assert_eq!(got, [("bad-response", "not-a-response", 6)], "{stats:?}");
    assert_eq!(stats.answered, 0, "{stats:?}");
}

/// Largest median distance allowed between a DoQ query's send or answer time and the capture
/// time of its datagram, in µs: the kernel's stamps and tcpdump's are taken a few hundred ns
/// apart on loopback (the capture keeps whole µs); a clock read in the DoQ thread comes before
/// the packet is built and encrypted, or after the thread woke and decrypted it.
const WITNESS_US: i64 = 5;

/// The capture times (realtime ns) of the datagrams in `pcap` that tshark's `filter` keeps,
/// sorted.
fn capture_times(pcap: &std::path::Path, filter: &str) -> Vec<i64> {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter])
        .args(["-T", "fields", "-e", "frame.time_epoch"])
        .output()
        .expect("tshark runs");
    let mut times: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (secs, frac) = l.trim().split_once('.')?;
            let frac = format!("{frac:0<9}");
            Some(secs.parse::<i64>().ok()? * 1_000_000_000 + frac.get(..9)?.parse::<i64>().ok()?)
        })
        .collect();
    times.sort_unstable();
    times
}

/// How far `t` is from the nearest of the sorted `times`, in ns.
fn distance(times: &[i64], t: i64) -> i64 {
    let i = times.partition_point(|&x| x < t);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter_map(|j| times.get(j))
        .map(|x| (x - t).abs())
        .min()
        .unwrap_or(i64::MAX)
}

/// The lean DoQ client's send and answer times are the kernel's, as for UDP, TCP and TLS: each
/// query's send time is the capture time of a datagram it sent (the one that carried its
/// stream's first bytes) and each answer's the capture time of a datagram from the server (the
/// one that completed it), tcpdump the witness; the summary says so.
#[test]
fn doq_send_and_answer_times_are_the_kernels_as_a_capture_shows() {
    if !prerequisite::tools(&[("tcpdump", "tcpdump"), ("tshark", "tshark")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let server = doq_server(Duration::from_secs(10));
    let port = server.doq.port();
    let pcap = dir.path().join("doq.pcap");
    let witness = witness::Tcpdump::start(&pcap, &["udp", "and", "port", &port.to_string()]);
    let mut cfg = doq_config(&server);
    cfg.kernel_send_times = true;
    let (stats, results) = replay_records(cfg, alternating_trace(40, 4, 5, Proto::Udp));
    let statistics = witness.stop();
    let quic = stats.timestamps["quic"];
    assert_eq!((quic.send, quic.receive), ("kernel", "kernel"), "{stats:?}");
    let rs = results.sorted();
    assert_one_each(&rs, 40);
    let to_server = capture_times(&pcap, &format!("udp.dstport == {port}"));
    let from_server = capture_times(&pcap, &format!("udp.srcport == {port}"));
    assert!(
        !from_server.is_empty(),
        "the capture holds the server's datagrams ({statistics})"
    );
    let mut sent = Vec::new();
    let mut answered = Vec::new();
    for r in &rs {
        assert_eq!(r.outcome, Outcome::Answered, "{r:?}");
        sent.push(distance(&to_server, r.sent_ns));
        answered.push(distance(&from_server, r.received_ns));
    }
    sent.sort_unstable();
    answered.sort_unstable();
    let (sent_us, answered_us) = (
        sent[sent.len() / 2] / 1000,
        answered[answered.len() / 2] / 1000,
    );
    eprintln!("median distance to the capture: send {sent_us} µs, answer {answered_us} µs");
    assert!(
        sent_us <= WITNESS_US,
        "send times {sent_us} µs from the capture's at the median: {sent:?}"
    );
    assert!(
        answered_us <= WITNESS_US,
        "answer times {answered_us} µs from the capture's at the median: {answered:?}"
    );
}
