//! The driver every front end uses ([`ldplayer_replay::drive`]): several targets fed from one
//! source, stops and progress through hooks, each target's sink handed back.

mod engine;

use engine::*;
use ldplayer_replay::{drive, Hooks, LiveCounts, Replay, ReplayConfig};
use ldplayer_trace::{Proto, Source};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

fn replay(server: std::net::SocketAddr) -> Replay {
    Replay::new(ReplayConfig {
        queriers: 1,
        timeout: Duration::from_secs(2),
        preload: Duration::from_secs(10),
        ..ReplayConfig::new(server)
    })
    .expect("a valid configuration")
}

/// Hooks that record what they hear and ask for a stop once `stop_after` queries were sent.
#[derive(Default)]
struct Recorder {
    progress_calls: AtomicUsize,
    last: Mutex<LiveCounts>,
    stop_after: Option<u64>,
}

impl Hooks for Recorder {
    fn stop_requested(&self) -> bool {
        let sent = self.last.lock().expect("lock").sent;
        self.stop_after.is_some_and(|n| sent >= n)
    }

    fn progress(&self, live: LiveCounts) {
        self.progress_calls.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().expect("lock") = live;
    }
}

#[test]
fn every_target_gets_every_query_and_its_own_sink_back() {
    let a = own_server(|_, _| {});
    let b = own_server(|_, _| {});
    let addrs = [a.server.local_addrs()[0], b.server.local_addrs()[0]];
    let replays: Vec<Replay> = addrs.iter().map(|&s| replay(s)).collect();
    let sinks = vec![Results::default(), Results::default()];
    let hooks = Recorder::default();
    let mut source = VecSource(alternating_trace(60, 3, 1, Proto::Udp));
    let driven =
        drive(&replays, sinks.clone(), &hooks, |sink| source.run(sink)).expect("the replay runs");
    assert!(driven.read_error.is_none());
    assert!(!driven.interrupted);
    assert_eq!(driven.targets.len(), 2);
    for (target, sink) in driven.targets.iter().zip(&sinks) {
        assert_eq!(target.stats.answered, 60);
        assert!(sink.finished(), "each target's sink was finished");
        assert_one_each(&sink.sorted(), 60);
    }
    assert_eq!(a.server.stop().udp_queries, 60);
    assert_eq!(b.server.stop().udp_queries, 60);
    assert!(hooks.progress_calls.load(Ordering::Relaxed) >= 1);
}

#[test]
fn a_stop_from_the_hooks_ends_the_replay_with_one_result_per_query_read() {
    let s = own_server(|_, _| {});
    let replays = vec![replay(s.server.local_addrs()[0])];
    let sink = Results::default();
    // 200 queries 50 ms apart (10 s); stopped once some were sent.
    let hooks = Recorder {
        stop_after: Some(1),
        ..Recorder::default()
    };
    let mut source = VecSource(alternating_trace(200, 4, 50, Proto::Udp));
    let driven = drive(&replays, vec![sink.clone()], &hooks, |sink| {
        source.run(sink)
    })
    .expect("the replay runs");
    assert!(driven.interrupted);
    let results = sink.sorted();
    assert!(sink.finished());
    // Every query read got its one result (the unsent ones as stopped).
    assert_one_each(&results, results.len());
    let sent = driven.targets[0].stats.sent;
    assert!(sent < 200, "{sent} sent");
}

#[test]
fn a_stop_flag_is_hooks_and_one_sink_per_replay_is_required() {
    let s = own_server(|_, _| {});
    let replays = vec![replay(s.server.local_addrs()[0])];
    let stop = AtomicBool::new(true);
    let mut source = VecSource(alternating_trace(50, 2, 50, Proto::Udp));
    let Ok(driven) = drive(&replays, vec![Results::default()], &stop, |sink| {
        source.run(sink)
    }) else {
        panic!("the replay did not run");
    };
    assert!(driven.interrupted);
    let Err(err) = drive(&replays, Vec::<Results>::new(), &(), |sink| {
        source.run(sink)
    }) else {
        panic!("a replay without a sink ran");
    };
    assert!(
        err.to_string().contains("0 result sinks for 1 replays"),
        "{err}"
    );
}

/// Hooks that stop a replay once the source has read nothing more for a while (the reader is
/// held back) or has read everything.
struct StopWhenStill<'a> {
    read: &'a AtomicUsize,
    total: usize,
    /// The count last seen and when it last changed.
    seen: Mutex<(usize, std::time::Instant)>,
}

impl Hooks for StopWhenStill<'_> {
    fn stop_requested(&self) -> bool {
        let now = self.read.load(Ordering::Relaxed);
        let mut seen = self.seen.lock().expect("lock");
        if now != seen.0 {
            *seen = (now, std::time::Instant::now());
        }
        now >= self.total || (now > 0 && seen.1.elapsed() > Duration::from_millis(500))
    }
}

/// A source of `total` copies of one UDP query, counting how many it has handed over.
struct Counted<'a> {
    read: &'a AtomicUsize,
    total: usize,
}

impl Source for Counted<'_> {
    fn run(
        &mut self,
        sink: &mut dyn ldplayer_trace::Sink,
    ) -> Result<(), ldplayer_trace::TraceError> {
        let wire = ldplayer_testbed::query(7, "www.example.", ldplayer_dns::Rtype::A, None);
        let mut r = record(0, 1, Proto::Udp, wire);
        ldplayer_trace::drive(sink, |sink| {
            for i in 0..self.total {
                r.time_ns = i as i64 * 1_000;
                sink.record(&r.as_record())?;
                self.read.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
    }
}

/// With `--fast` the reader stays a bounded way ahead of the sends: against a server that never
/// answers, the window stays full and the trace is not read into memory behind it (it was: the
/// querier took every batch as it came, and a trace of 5M queries was read within seconds, 0.8
/// GB of it held).
#[test]
fn a_fast_replay_reads_only_a_bounded_way_ahead_of_its_sends() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let replays = vec![Replay::new(ReplayConfig {
        queriers: 1,
        timing: ldplayer_replay::Timing::Fast { max_in_flight: 10 },
        timeout: Duration::from_secs(2),
        ..ReplayConfig::new(silent.local_addr().expect("its address"))
    })
    .expect("a valid configuration")];
    let total = 1_000_000;
    let read = AtomicUsize::new(0);
    let hooks = StopWhenStill {
        read: &read,
        total,
        seen: Mutex::new((0, std::time::Instant::now())),
    };
    let mut source = Counted { read: &read, total };
    let driven = drive(&replays, vec![Results::default()], &hooks, |sink| {
        source.run(sink)
    })
    .expect("the replay runs");
    assert!(driven.interrupted, "stopped by the hooks");
    let read = read.load(Ordering::Relaxed);
    // The querier's channel (2,048 batches of 64) and its own queue (4,096) hold ≈ 135k.
    assert!(read > 0 && read < total / 4, "{read} of {total} read ahead");
}

/// With `--fast`, the queries a refill hands to several clients' sockets go out one
/// `sendmmsg` per socket: a server sees each client's queries in runs, not one query per client
/// in turn (which took a system call per query with 4 clients).
#[test]
fn a_fast_window_goes_out_in_runs_per_socket() {
    let responder = std::net::UdpSocket::bind("127.0.0.1:0").expect("a socket");
    responder
        .set_read_timeout(Some(Duration::from_millis(500)))
        .expect("a timeout");
    let server = responder.local_addr().expect("its address");
    let total = 400;
    let answering = std::thread::spawn(move || {
        let mut sources = Vec::new();
        let mut buf = [0u8; 512];
        while sources.len() < total {
            let Ok((n, from)) = responder.recv_from(&mut buf) else {
                break;
            };
            sources.push(from.port());
            // The query itself with QR set answers it.
            buf[2] |= 0x80;
            let _ = responder.send_to(&buf[..n], from);
        }
        sources
    });
    let replays = vec![Replay::new(ReplayConfig {
        queriers: 1,
        timing: ldplayer_replay::Timing::Fast { max_in_flight: 100 },
        timeout: Duration::from_secs(2),
        ..ReplayConfig::new(server)
    })
    .expect("a valid configuration")];
    let sink = Results::default();
    // Four clients in turn, as `synth --clients 4` writes them.
    let mut source = VecSource(alternating_trace(total, 4, 0, Proto::Udp));
    let driven =
        drive(&replays, vec![sink.clone()], &(), |sink| source.run(sink)).expect("the replay runs");
    assert_eq!(driven.targets[0].stats.answered, total as u64);
    let sources = answering.join().expect("the responder");
    assert_eq!(sources.len(), total);
    let runs = 1 + sources.windows(2).filter(|w| w[0] != w[1]).count();
    // One query per client in turn made 400 runs; a socket's batch of a refill is one run (the
    // first window of 100 is 4 runs, each refill of 12–13 queries at most 4 more).
    assert!(
        runs <= total / 2,
        "{runs} runs of one client's queries in {total}"
    );
}
