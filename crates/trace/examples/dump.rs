//! Prints the DNS messages of a capture, one line each, and what was skipped:
//! `cargo run -p ldplayer-trace --example dump FILE`.

use ldplayer_trace::capture::{CaptureOptions, CaptureReader};
use ldplayer_trace::{Collect, Source};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: dump FILE")?;
    let mut sink = Collect::default();
    CaptureReader::new(std::fs::File::open(&path)?, CaptureOptions::default())?.run(&mut sink)?;
    for r in &sink.records {
        let id = u16::from_be_bytes([r.wire[0], r.wire[1]]);
        let qr = if r.wire[2] & 0x80 != 0 { "R" } else { "Q" };
        println!(
            "{}\t{}\t{}\t{}\t{}\t{qr} {id:#06x}\t{} bytes",
            r.time_ns,
            r.src,
            r.dst,
            r.proto,
            r.conn,
            r.wire.len()
        );
    }
    for (reason, n) in sink.skipped.iter() {
        println!("skipped\t{reason}\t{n}");
    }
    Ok(())
}
