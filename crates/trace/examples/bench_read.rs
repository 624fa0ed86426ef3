//! Measures the reader on small UDP queries: `cargo run --release -p ldplayer-trace --example
//! bench_read [packets] [tcp]`.

use ldplayer_trace::capture::{read_capture_bytes, CaptureOptions, PcapWriter};
use ldplayer_trace::{Proto, Record, Sink, SinkError};
use std::time::Instant;

/// Counts records and bytes, like the cheapest possible consumer.
#[derive(Default)]
struct Count {
    n: u64,
    bytes: u64,
}

impl Sink for Count {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.n += 1;
        self.bytes += r.wire.len() as u64 + r.src.port() as u64;
        Ok(())
    }
}

fn query(id: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    m.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    m.extend_from_slice(&[0, 0, 0x29, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
    m
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    let tcp = std::env::args().nth(2).is_some_and(|a| a == "tcp");
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let q = query(1);
    for i in 0..n {
        let src = if tcp {
            format!(
                "10.0.{}.{}:{}",
                (i % 1000) >> 8,
                (i % 1000) & 255,
                1024 + i % 1000
            )
        } else {
            format!(
                "10.{}.{}.{}:{}",
                (i >> 16) & 255,
                (i >> 8) & 255,
                i & 255,
                1024 + i % 60000
            )
        };
        w.record(&Record {
            time_ns: 1_700_000_000_000_000_000 + i as i64 * 1000,
            src: src.parse().unwrap(),
            dst: "192.0.2.53:53".parse().unwrap(),
            proto: if tcp { Proto::Tcp } else { Proto::Udp },
            conn: if tcp { 1 + (i % 1000) as u64 } else { 0 },
            wire: &q,
        })
        .unwrap();
    }
    w.finish().unwrap();
    let file = w.into_inner().unwrap();
    for _ in 0..3 {
        let mut c = Count::default();
        let t = Instant::now();
        read_capture_bytes(&file, &CaptureOptions::default(), &mut c).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{} messages ({} MB) in {:.3} s: {:.2} M messages/s",
            c.n,
            file.len() / 1_000_000,
            s,
            c.n as f64 / s / 1e6
        );
        assert_eq!(c.n as usize, n);
        std::hint::black_box(c.bytes);
    }
}
