//! Capture parsing in split mode (what `ldplayer_trace::many` reads each file with): any bytes
//! read in split mode, their TCP segments and IP fragments resumed by one decoder, give the
//! same records, skips and malformed notes, in the same order, as the capture read directly.
#![no_main]
use ldplayer_dns::DnsError;
use ldplayer_trace::capture::{
    read_capture_bytes, CaptureOptions, CaptureReader, Deferred, PacketDecoder,
};
use ldplayer_trace::{Collect, Record, Sink, SinkError, SkipReason, Source};
use libfuzzer_sys::fuzz_target;

/// Records and skips into `out`; the parts handed over, to one decoder.
struct Resume {
    decoder: PacketDecoder,
    packet: u64,
    out: Collect,
}

impl Sink for Resume {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.out.record(record)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.out.skipped(reason, location)
    }
    fn malformed(&mut self, error: DnsError, location: u64) {
        self.out.malformed(error, location)
    }
    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        if let Deferred::Packet { number, .. } = part {
            self.packet = number;
        }
        self.decoder.resume(part, &mut self.out)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.decoder.finish(self.packet, &mut self.out)
    }
}

fuzz_target!(|data: &[u8]| {
    let options = CaptureOptions::default();
    let mut direct = Collect::default();
    let _ = read_capture_bytes(data, &options, &mut direct);
    let Ok(reader) = CaptureReader::new(data, options.clone()) else {
        return;
    };
    let mut split = Resume {
        decoder: PacketDecoder::new(&options),
        packet: 0,
        out: Collect::default(),
    };
    let _ = reader.split().run(&mut split);
    assert_eq!(direct.records, split.out.records);
    assert_eq!(direct.skipped, split.out.skipped);
    assert_eq!(direct.malformed, split.out.malformed);
});
