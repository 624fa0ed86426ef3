//! Throughput check, ignored by default: run it with
//! `cargo test --release -p ldplayer-synth --test perf -- --ignored --nocapture`.

use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_trace::{Record, Sink, SinkError, Source};
use std::time::Instant;

/// Counts records and bytes so the work cannot be optimized away.
#[derive(Default)]
struct Count(u64, u64);

impl Sink for Count {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.0 += 1;
        self.1 += r.wire.len() as u64 + r.conn;
        Ok(())
    }
}

#[test]
#[ignore]
fn ten_million_queries() {
    for (name, config) in [
        ("syn-4", SynthConfig::syn(4)),
        ("poisson", SynthConfig::poisson(100_000.0)),
        ("root-like", SynthConfig::root_like(100_000.0)),
    ] {
        let config = SynthConfig {
            count: Some(10_000_000),
            tcp_share: 0.1,
            ..config
        };
        let mut synth = Synth::new(config).unwrap();
        let mut sink = Count::default();
        let t = Instant::now();
        synth.run(&mut sink).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name}: {} records in {s:.2} s: {:.2} M records/s",
            sink.0,
            sink.0 as f64 / s / 1e6
        );
        assert_eq!(sink.0, 10_000_000);
    }
}
