//! A collector of a server's dnstap that writes it as a binary trace: what the lab and
//! experiments use to keep a resolver's own log of its upstream traffic (`upstream.bin`).

use super::{DnstapTypes, FrameRecords};
use crate::binary::BinaryWriter;
use crate::{Record, Sink, SinkError, SkipCounts, SkipReason};
use ldplayer_dnstap::collector::{Collector, Ending, Event, Listen};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the collector took.
#[derive(Debug, Clone, Default)]
pub struct UpstreamLog {
    /// The trace written.
    pub file: PathBuf,
    /// Data frames received.
    pub frames: u64,
    /// Records written (upstream queries and responses).
    pub records: u64,
    /// Queries (`RESOLVER_QUERY`).
    pub queries: u64,
    /// Responses (`RESOLVER_RESPONSE`).
    pub responses: u64,
    /// Frames skipped, by reason.
    pub skipped: SkipCounts,
}

/// A running collector of the resolver's dnstap, writing its upstream messages to a trace.
pub struct UpstreamCollector {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<io::Result<UpstreamLog>>>,
}

impl std::fmt::Debug for UpstreamCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpstreamCollector")
    }
}

/// Counts what goes into the writer.
struct Counting<'a> {
    writer: &'a mut BinaryWriter<BufWriter<std::fs::File>>,
    log: &'a mut UpstreamLog,
}

impl Sink for Counting<'_> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.log.records += 1;
        if r.wire.get(2).is_some_and(|b| b & 0x80 != 0) {
            self.log.responses += 1;
        } else {
            self.log.queries += 1;
        }
        self.writer.record(r)
    }
    fn skipped(&mut self, reason: SkipReason, _location: u64) {
        self.log.skipped.add(reason);
    }
}

impl UpstreamCollector {
    /// Listens on the Unix socket `socket` and writes the messages of `types` to the binary
    /// trace `file` (through the output guard) until [`UpstreamCollector::finish`].
    pub fn start(socket: &Path, file: &Path, types: DnstapTypes) -> io::Result<UpstreamCollector> {
        let collector =
            Collector::bind(&Listen::Unix(socket.to_path_buf())).map_err(io::Error::other)?;
        let destination = ldplayer_output::create(file).map_err(io::Error::other)?;
        let out = destination.writer().map_err(io::Error::other)?;
        let mut writer = BinaryWriter::new(BufWriter::with_capacity(1 << 20, out))?;
        let stop = Arc::new(AtomicBool::new(false));
        let events = collector.run(stop.clone());
        let file = file.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut frames = FrameRecords::new(types);
            let mut log = UpstreamLog {
                file,
                ..UpstreamLog::default()
            };
            for event in events {
                match event {
                    Event::Frame { data, .. } => {
                        log.frames += 1;
                        let mut sink = Counting {
                            writer: &mut writer,
                            log: &mut log,
                        };
                        frames
                            .frame(data, &mut sink)
                            .map_err(|e| io::Error::other(e.to_string()))?;
                    }
                    Event::Closed {
                        ending: Ending::CutFrame { .. },
                        ..
                    } => log.skipped.add(SkipReason::DnstapCutFrame),
                    _ => {}
                }
            }
            writer
                .into_inner()
                .and_then(|mut w| std::io::Write::flush(&mut w))?;
            destination.commit().map_err(io::Error::other)?;
            Ok(log)
        });
        Ok(UpstreamCollector {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops collecting (once the resolver has stopped), completes the trace and says what it
    /// holds.
    pub fn finish(mut self) -> io::Result<UpstreamLog> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(io::Error::other("the dnstap collector failed")),
        }
    }
}

impl Drop for UpstreamCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
