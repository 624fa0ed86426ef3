//! What the engine refuses before it sends anything: a rate or speed too slow to schedule (it
//! used to send one query and then wait for ever, without a word), and destinations in the
//! deprecated IPv4-compatible range `::/96` (a slip for `[::1]:PORT` that sent a replay off
//! this host). And a trace too long for its speed ends with an error rather than a wait.

mod engine;

use engine::*;
use ldplayer_dns::Rtype;
use ldplayer_replay::{Replay, ReplayConfig, Timing};
use ldplayer_testbed::*;
use ldplayer_trace::Proto;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// Why `Replay::new` refuses `config`, or `None` when it takes it.
fn refusal(config: ReplayConfig) -> Option<String> {
    Replay::new(config).err().map(|e| e.to_string())
}

fn with_timing(timing: Timing) -> ReplayConfig {
    ReplayConfig {
        timing,
        ..ReplayConfig::new("127.0.0.1:53".parse().expect("address"))
    }
}

#[test]
fn rates_and_speeds_too_slow_to_schedule_are_refused_up_front() {
    for qps in [1e-300, f64::MIN_POSITIVE, 1e-6] {
        let why = refusal(with_timing(Timing::Rate { qps })).unwrap_or_default();
        assert!(
            why.contains("one query a day") && why.contains("years") == (qps < 1e-8),
            "--rate {qps}: {why:?}"
        );
    }
    let why = refusal(with_timing(Timing::Rate { qps: 1e-300 })).unwrap_or_default();
    assert!(why.contains("3.169e292 years"), "{why}");
    let why = refusal(with_timing(Timing::Original { speed: 1e-300 })).unwrap_or_default();
    assert!(
        why.contains("one second of the trace a day"),
        "--speed 1e-300: {why:?}"
    );
    // The slowest of each is taken.
    for timing in [
        Timing::Rate {
            qps: ldplayer_replay::MIN_RATE,
        },
        Timing::Original {
            speed: ldplayer_replay::MIN_SPEED,
        },
    ] {
        assert_eq!(refusal(with_timing(timing)), None, "{timing:?}");
    }
}

/// The slowest speed with a trace that spans 30 days: its second query is due past what the
/// clock can tell. The replay ends with that said, at once, instead of waiting for it.
#[test]
fn a_trace_too_long_for_its_speed_ends_with_an_error_not_a_wait() {
    let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut cfg = ReplayConfig::new(silent.local_addr().expect("address"));
    cfg.queriers = 1;
    cfg.timeout = Duration::from_millis(100);
    cfg.timing = Timing::Original {
        speed: ldplayer_replay::MIN_SPEED,
    };
    let day = 86_400 * 1_000_000_000i64;
    let recs = vec![
        record(0, 1, Proto::Udp, query(1, "www.example.", Rtype::A, None)),
        record(
            30 * day,
            1,
            Proto::Udp,
            query(2, "www.example.", Rtype::A, None),
        ),
    ];
    let results = Results::default();
    let started = Instant::now();
    let outcome = Replay::new(cfg)
        .expect("a valid configuration")
        .run(&mut VecSource(recs), results.clone());
    let err = outcome.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("past the end of the clock"), "{err:?}");
    // Far less than the replay would have waited (centuries); the first query timed out.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(results.sorted().len(), 1);
    assert!(results.finished());
}

#[test]
fn ipv4_compatible_destinations_are_refused_with_the_address_meant() {
    let at = |s: &str| s.parse::<SocketAddr>().expect("address");
    // `--server '[::1:5300]'`, meant as `[::1]:5300`.
    let why = refusal(ReplayConfig::new(at("[::0.1.83.0]:53"))).unwrap_or_default();
    assert!(
        why.contains("::/96") && why.contains("did you mean [::1]:5300?"),
        "{why:?}"
    );
    for (field, set) in [
        (
            "TLS",
            (|c, a| c.tls_server = Some(a)) as fn(&mut ReplayConfig, SocketAddr),
        ),
        ("HTTPS", |c, a| c.https_server = Some(a)),
        ("QUIC", |c, a| c.quic_server = Some(a)),
    ] {
        let mut cfg = ReplayConfig::new(at("[::1]:53"));
        set(&mut cfg, at("[::0.1.83.83]:853"));
        let why = refusal(cfg).unwrap_or_default();
        assert!(why.contains(&format!("the {field} server")), "{why:?}");
    }
    for fine in [
        "[::1]:5300",
        "[::]:53",
        "[::ffff:127.0.0.1]:53",
        "127.0.0.1:53",
    ] {
        assert_eq!(refusal(ReplayConfig::new(at(fine))), None, "{fine}");
    }
}

/// A timeout past the end of the clock (`--timeout 1e12`, 31,700 years) is waited as asked:
/// the answers come and the replay ends, where the deadline's sum overflowed and a querier
/// thread panicked.
#[test]
fn a_timeout_past_the_clocks_end_is_waited_as_asked() {
    let long = Duration::from_secs(1_000_000_000_000);
    let knot = knot();
    for proto in [Proto::Udp, Proto::Tcp] {
        let mut cfg = ReplayConfig::new(knot.addr);
        cfg.queriers = 1;
        cfg.timeout = long;
        let (stats, _) = replay_records(cfg, alternating_trace(6, 2, 1, proto));
        assert_eq!(stats.answered, 6, "{proto:?}: {stats:?}");
    }
    let own = own_server(|config, identity| {
        config.doq = Some(ldplayer_server::DoqConfig::new(
            vec!["127.0.0.1:0".parse().expect("address")],
            identity,
        ));
    });
    let mut cfg = ReplayConfig::new(own.server.doq_local_addrs()[0]);
    cfg.queriers = 1;
    cfg.timeout = long;
    cfg.proto_override = Some(Proto::Quic);
    cfg.tls.ca_file = Some(own.ca.clone());
    let (stats, _) = replay_records(cfg, alternating_trace(6, 2, 1, Proto::Udp));
    assert_eq!(stats.answered, 6, "DoQ: {stats:?}");
}
