//! Throughput check, ignored by default: run it with
//! `cargo test --release -p ldplayer-mutate --test perf -- --ignored --nocapture`.

use ldplayer_mutate::{MutateConfig, Mutation, Mutator};
use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_trace::{Proto, Record, Sink, SinkError, Source};
use std::time::Instant;

#[derive(Default)]
struct Count(u64);

impl Sink for Count {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.0 += r.wire.len() as u64;
        Ok(())
    }
}

#[test]
#[ignore]
fn mutate_throughput() {
    let n = 3_000_000;
    let cases: Vec<(&str, Vec<Mutation>)> = vec![
        ("none", vec![]),
        (
            "record-level",
            vec![
                Mutation::Transport {
                    proto: Proto::Tcp,
                    client_share: 0.5,
                },
                Mutation::TimeScale(0.5),
                Mutation::Anonymize { key: None },
            ],
        ),
        (
            "message edits",
            vec![
                Mutation::QnameSuffixes(vec!["com".into()]),
                Mutation::SetDo { share: 0.5 },
                Mutation::QnamePrefix("ldp".into()),
            ],
        ),
    ];
    for (name, mutations) in cases {
        let mut synth = Synth::new(SynthConfig {
            count: Some(n),
            ..SynthConfig::root_like(1e5)
        })
        .unwrap();
        let mut m = Mutator::new(MutateConfig { seed: 1, mutations }, Count::default()).unwrap();
        let t = Instant::now();
        synth.run(&mut m).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{name}: {n} records (synth included) in {s:.2} s: {:.2} M records/s, {} out",
            n as f64 / s / 1e6,
            m.stats().records_out
        );
    }
}
