//! Writes a results file of synthetic but realistic replay results, for benchmarks and demos of
//! reports: several transports, response codes, latencies with a long tail, timeouts and
//! errors, new and reused connections, in completion order, from a seeded RNG.
//!
//! Usage: `fake_results N FILE [QPS [SEED]]` (QPS defaults to 20000, SEED to 1).

use chacha20::ChaCha8Rng;
use ldplayer_dns::Rcode;
use ldplayer_results::{ErrorKind, Outcome, QueryResult, ResultsWriter};
use ldplayer_trace::Proto;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::process::ExitCode;

/// When the run starts (2023-11-14), ns since the epoch.
const RUN_START_NS: i64 = 1_700_000_000_000_000_000;
/// When the trace starts, ns since the epoch.
const TRACE_START_NS: i64 = 1_600_000_000_000_000_000;
/// How long a query waits for its answer.
const TIMEOUT_NS: i64 = 2_000_000_000;

/// A result waiting for the time it completes.
struct Pending {
    completes_ns: i64,
    result: QueryResult,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.completes_ns, self.result.index).cmp(&(other.completes_ns, other.result.index))
    }
}

/// The random parts of a replay.
struct Model {
    rng: ChaCha8Rng,
    gap: Exp<f64>,
    latency: [LogNormal<f64>; 3],
    tail: Exp<f64>,
    timing: Normal<f64>,
}

impl Model {
    fn new(qps: f64, seed: u64) -> Model {
        let lognormal =
            |median_ms: f64| LogNormal::new((median_ms * 1e6).ln(), 0.4).expect("valid");
        Model {
            rng: ChaCha8Rng::seed_from_u64(seed),
            gap: Exp::new(qps / 1e9).expect("positive rate"),
            latency: [lognormal(0.3), lognormal(0.35), lognormal(0.5)],
            tail: Exp::new(1.0 / 20e6).expect("positive rate"),
            timing: Normal::new(6_000.0, 3_000.0).expect("valid"),
        }
    }

    /// The result of the query at `index`, scheduled for `trace_ns` in the trace.
    fn result(&mut self, index: u64, trace_ns: i64) -> Pending {
        let rng = &mut self.rng;
        let intended_ns = RUN_START_NS + (trace_ns - TRACE_START_NS);
        let p: f64 = rng.random();
        let proto = if p < 0.7 {
            Proto::Udp
        } else if p < 0.9 {
            Proto::Tcp
        } else {
            Proto::Tls
        };
        let mut timing = self.timing.sample(rng) as i64;
        if rng.random::<f64>() < 0.001 {
            timing += (self.tail.sample(rng) / 10.0) as i64;
        }
        let sent_ns = intended_ns + timing;
        let new_connection = proto != Proto::Udp && rng.random::<f64>() < 0.03;
        let handshake_ns = match (new_connection, proto) {
            (true, Proto::Tcp) => 100_000 + rng.random_range(0..50_000),
            (true, _) => 400_000 + rng.random_range(0..200_000),
            _ => 0,
        };
        let mut latency = self.latency[proto as usize].sample(rng) as i64;
        if rng.random::<f64>() < 0.01 {
            latency += self.tail.sample(rng) as i64;
        }
        let fate: f64 = rng.random();
        let (outcome, received_ns, completes_ns) = if fate < 0.003 {
            (Outcome::Timeout, 0, sent_ns + TIMEOUT_NS)
        } else if fate < 0.0035 {
            let kind = if proto == Proto::Udp {
                ErrorKind::Refused
            } else {
                ErrorKind::Reset
            };
            (Outcome::Error(kind), 0, sent_ns + latency)
        } else {
            (Outcome::Answered, sent_ns + latency, sent_ns + latency)
        };
        let r: f64 = rng.random();
        let rcode = if outcome != Outcome::Answered || r < 0.78 {
            Rcode::NOERROR
        } else if r < 0.97 {
            Rcode::NXDOMAIN
        } else if r < 0.99 {
            Rcode::SERVFAIL
        } else {
            Rcode::REFUSED
        };
        let answered = outcome == Outcome::Answered;
        Pending {
            completes_ns,
            result: QueryResult {
                index,
                trace_ns,
                intended_ns,
                sent_ns,
                received_ns,
                proto,
                new_connection,
                handshake_ns,
                rcode,
                response_len: if answered {
                    rng.random_range(40..600)
                } else {
                    0
                },
                truncated: answered && proto == Proto::Udp && rng.random::<f64>() < 0.002,
                outcome,
                target: 0,
            },
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(path)) = (
        args.first().and_then(|a| a.parse::<u64>().ok()),
        args.get(1).map(PathBuf::from),
    ) else {
        eprintln!("usage: fake_results N FILE [QPS [SEED]]");
        return ExitCode::from(2);
    };
    let qps: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20_000.0);
    let seed: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut writer = match ResultsWriter::create(&path) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut model = Model::new(qps, seed);
    let mut pending = BinaryHeap::new();
    let mut trace_ns = TRACE_START_NS;
    let mut index = 0u64;
    let mut write = |p: Pending| writer.write(&p.result);
    for _ in 0..n {
        // One record in ten of the trace is not replayed (a response, say).
        index += 1 + (model.rng.random::<f64>() < 0.1) as u64;
        trace_ns += model.gap.sample(&mut model.rng) as i64;
        let next = model.result(index, trace_ns);
        let now = next.result.intended_ns;
        pending.push(Reverse(next));
        while pending.peek().is_some_and(|p| p.0.completes_ns <= now) {
            if let Some(Reverse(done)) = pending.pop() {
                if let Err(e) = write(done) {
                    eprintln!("{}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    while let Some(Reverse(done)) = pending.pop() {
        if let Err(e) = write(done) {
            eprintln!("{}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = writer.into_inner() {
        eprintln!("{}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("wrote {n} results to {}", path.display());
    ExitCode::SUCCESS
}
