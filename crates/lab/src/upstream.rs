//! The resolver's own account of its upstream traffic: its dnstap (`RESOLVER_QUERY` and
//! `RESOLVER_RESPONSE` messages), collected on a Unix socket in the work directory and
//! written as a binary trace, a second witness of the queries beside the capture and the
//! meta-server's counts.

use crate::LabError;
use ldplayer_dnstap::collector::{Collector, Event, Listen};
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::dnstap::{DnstapTypes, FrameRecords};
use ldplayer_trace::{Record, Sink, SinkError, SkipCounts, SkipReason};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The socket the resolver sends its dnstap to, in the work directory.
pub fn socket_path(work_dir: &Path) -> PathBuf {
    work_dir.join("dnstap.sock")
}

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
    thread: Option<JoinHandle<Result<UpstreamLog, LabError>>>,
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
    /// Listens on [`socket_path`] of `work_dir` and writes `file` (through the output guard)
    /// until [`UpstreamCollector::finish`].
    pub fn start(work_dir: &Path, file: &Path) -> Result<UpstreamCollector, LabError> {
        let collector = Collector::bind(&Listen::Unix(socket_path(work_dir)))
            .map_err(|e| LabError::Input(e.to_string()))?;
        let destination = ldplayer_output::create(file).map_err(|e| LabError::Io(e.into()))?;
        let out = destination
            .writer()
            .map_err(|e| LabError::Io(std::io::Error::other(e)))?;
        let mut writer =
            BinaryWriter::new(BufWriter::with_capacity(1 << 20, out)).map_err(LabError::Io)?;
        let stop = Arc::new(AtomicBool::new(false));
        let events = collector.run(stop.clone());
        let file = file.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut frames = FrameRecords::new(DnstapTypes::RESOLVER);
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
                            .map_err(|e| LabError::Io(std::io::Error::other(e.to_string())))?;
                    }
                    Event::Closed {
                        ending: ldplayer_dnstap::collector::Ending::CutFrame { .. },
                        ..
                    } => log.skipped.add(SkipReason::DnstapCutFrame),
                    _ => {}
                }
            }
            writer
                .into_inner()
                .and_then(|mut w| std::io::Write::flush(&mut w))
                .map_err(LabError::Io)?;
            destination
                .commit()
                .map_err(|e| LabError::Io(std::io::Error::other(e)))?;
            Ok(log)
        });
        Ok(UpstreamCollector {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops collecting (once the resolver has stopped), completes the trace and says what it
    /// holds.
    pub fn finish(mut self) -> Result<UpstreamLog, LabError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(LabError::Input("the dnstap collector failed".into())),
        }
    }
}

impl Drop for UpstreamCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The responses of an upstream trace (`RESOLVER_RESPONSE` records, from a nameserver) by the
/// level of the zone that answered them, as the meta-server counts its own
/// ([`ldplayer_server::LevelCounts`]): for each response, the zone the manifest serves at the
/// responding address that holds its question (the deepest, as the meta-server picks it);
/// responses no zone there holds are not counted, as the meta-server does not count its
/// REFUSED ones.
pub fn levels(manifest: &Path, trace: &Path) -> Result<ldplayer_server::LevelCounts, LabError> {
    use ldplayer_dns::{Message, Rcode};
    use ldplayer_trace::Source;
    let views = ldplayer_zone::Manifest::from_file(manifest)
        .and_then(|m| m.load())
        .map_err(|e| LabError::Input(e.to_string()))?;
    let file = std::fs::File::open(trace).map_err(LabError::Io)?;
    let mut reader = ldplayer_trace::binary::BinaryReader::new(std::io::BufReader::new(file))
        .map_err(|e| LabError::Input(format!("{}: {e}", trace.display())))?;
    struct Levels<'a> {
        views: &'a ldplayer_zone::manifest::Views,
        counts: ldplayer_server::LevelCounts,
        name: Vec<u8>,
    }
    impl Sink for Levels<'_> {
        fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
            let Ok(m) = Message::parse(r.wire) else {
                return Ok(());
            };
            self.name.clear();
            if !m.header().qr() || !m.qname_wire(&mut self.name) {
                return Ok(());
            }
            self.name.make_ascii_lowercase();
            let (Some(set), Some(qtype)) =
                (self.views.for_destination(Some(r.src.ip())), m.qtype())
            else {
                return Ok(());
            };
            let Some(zone) = set.find(&self.name, qtype) else {
                return Ok(());
            };
            let level = ldplayer_zone::name::label_count(&zone.origin).min(2);
            let class = match m.rcode() {
                Rcode::NOERROR => 0,
                Rcode::NXDOMAIN => 1,
                _ => 2,
            };
            self.counts.counts[level][class] += 1;
            Ok(())
        }
    }
    let mut sink = Levels {
        views: &views,
        counts: ldplayer_server::LevelCounts::default(),
        name: Vec::new(),
    };
    reader
        .run(&mut sink)
        .map_err(|e| LabError::Input(format!("{}: {e}", trace.display())))?;
    Ok(sink.counts)
}
