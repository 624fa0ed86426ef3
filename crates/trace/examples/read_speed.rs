//! Measures how fast binary traces are read: records per second through the streaming reader
//! and through the memory map, each touching every message byte once (a checksum), so the
//! figure is what a replay reader can sustain. Used by bench/trace-pipeline.sh.
//!
//! Usage: `cargo run --release -p ldplayer-trace --example read_speed -- TRACE.bin`

use ldplayer_trace::binary::{BinaryReader, MappedTrace};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: read_speed TRACE.bin")?;
    let path = std::path::Path::new(&path);

    let start = Instant::now();
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut reader = BinaryReader::new(file)?;
    let (mut n, mut sum) = (0u64, 0u64);
    while let Some(item) = reader.next_record()? {
        if let Ok(r) = item {
            n += 1;
            sum =
                sum.wrapping_add(r.wire.iter().map(|&b| b as u64).sum::<u64>() ^ r.time_ns as u64);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "stream\t{n}\trecords\t{secs:.3}\ts\t{:.2}\tM records/s\t(checksum {sum:x})",
        n as f64 / secs / 1e6
    );

    let start = Instant::now();
    let mapped = MappedTrace::open(path)?;
    let (mut n, mut sum) = (0u64, 0u64);
    for r in mapped.records().flatten() {
        n += 1;
        sum = sum.wrapping_add(r.wire.iter().map(|&b| b as u64).sum::<u64>() ^ r.time_ns as u64);
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "mmap\t{n}\trecords\t{secs:.3}\ts\t{:.2}\tM records/s\t(checksum {sum:x})",
        n as f64 / secs / 1e6
    );
    Ok(())
}
