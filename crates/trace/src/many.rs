//! Many trace files read as one, in time order, each decoded on a core of its own.
//!
//! A day of captures is thousands of files rotated every few minutes (dnscap, tcpdump `-G`),
//! billions of messages. [`Many`] is one [`Source`] over all of them:
//!
//! - **Time order.** The files are put in the order of their first packet (or record), then
//!   merged packet by packet by time, the earliest first, as `mergecap` merges: files that follow
//!   one another are simply read one after the other, and files that overlap (two capture points
//!   of one period) are interleaved.
//! - **Many cores.** Each file is read and decoded on a thread of its own, up to `jobs` files
//!   ahead of the merge. A capture is read in split mode ([`crate::capture::CaptureReader::split`]): the reader
//!   decodes what a packet holds by itself (DNS over UDP, tunnels) and hands TCP segments and IP
//!   fragments over undecoded, with a mark where each packet begins; the merge feeds them, in
//!   the merged order, to the one [`PacketDecoder`] that holds the state of the whole capture.
//!   So TCP streams and fragmented datagrams that cross a file boundary are reassembled as if
//!   the files were one, and the records come out exactly as from the files joined into one
//!   capture (`mergecap`) and read by [`crate::open`].
//! - **Seams.** Each file's first and last times are kept; a gap between consecutive files
//!   (longer than a second and than any pause inside either) or an overlap is reported
//!   ([`ManyReport::seams`]).
//!
//! Memory is bounded: each file being read holds at most [`AHEAD_BYTES`] of decoded events that
//! the merge has not taken yet, so a read of many files holds at most `jobs` (plus the files that
//! overlap at one instant) times that.
//!
//! A file that cannot be opened is an error before anything is read. A file damaged further on
//! gives what it holds up to the damage, the other files are read in full, and the run ends with
//! that file's error ([`ManyReport::inputs`] says which file it was).

mod chunk;

pub use chunk::Span;

use crate::capture::{CaptureOptions, Deferred, PacketDecoder};
use crate::input::Format;
use crate::open::{self, Notes, OpenError, ReadOptions};
use crate::record::Record;
use crate::sink::{drive, Sink, SinkError, Source, TraceError};
use chunk::{Chunk, ChunkSink, Event, Message, Pool};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Decoded events a file being read may hold ahead of the merge (256 MiB): a few minutes of a
/// root server's traffic, so that `jobs` files decode at once while the merge takes the earliest.
pub const AHEAD_BYTES: usize = 256 << 20;

/// A gap between consecutive files shorter than this is not reported (1 s).
pub const MIN_GAP_NS: i64 = 1_000_000_000;

/// Opens an input's bytes (a file, through a progress counter...).
pub type Opener = Arc<dyn Fn(&Path) -> io::Result<Box<dyn Read + Send>> + Send + Sync>;

/// The plain opener: the file itself.
pub fn open_file() -> Opener {
    Arc::new(|path: &Path| std::fs::File::open(path).map(|f| Box::new(f) as Box<dyn Read + Send>))
}

/// One input, as the merge orders them.
#[derive(Debug, Clone)]
struct Part {
    path: PathBuf,
    /// Its position among the inputs as given (files that start at the same instant keep it).
    position: usize,
    format: Format,
    /// Its first packet's (or record's) time; `None` when it holds none.
    first_ns: Option<i64>,
}

/// Many trace files as one [`Source`] (see the module's documentation).
pub struct Many {
    parts: Vec<Part>,
    options: ReadOptions,
    capture: CaptureOptions,
    jobs: usize,
    opener: Opener,
    report: Option<ManyReport>,
}

/// What a read of many files found, once it has run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManyReport {
    /// Every input, in time order.
    pub inputs: Vec<InputReport>,
    /// The gaps and overlaps between consecutive inputs.
    pub seams: Vec<Seam>,
}

/// One input of a read of many files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputReport {
    /// The file.
    pub path: PathBuf,
    /// What it holds.
    pub format: Format,
    /// The times of its packets (or records).
    pub span: Span,
    /// Why reading it stopped early, if it did (it gave what came before).
    pub error: Option<String>,
}

/// Where two files in time order do not follow one another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seam {
    /// The file that ends last among those before `after`.
    pub before: PathBuf,
    /// The file that starts.
    pub after: PathBuf,
    /// When `before` ends (its latest packet), ns since the Unix epoch.
    pub before_end_ns: i64,
    /// When `after` starts (its first packet).
    pub after_start_ns: i64,
}

impl Seam {
    /// True when `after` starts before `before` ends: their packets are interleaved.
    pub fn is_overlap(&self) -> bool {
        self.after_start_ns < self.before_end_ns
    }

    /// How long the gap or the overlap is, ns.
    pub fn length_ns(&self) -> i64 {
        self.after_start_ns.abs_diff(self.before_end_ns) as i64
    }
}

impl fmt::Display for Seam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.length_ns() as f64 / 1e9;
        let (end, start) = (utc(self.before_end_ns), utc(self.after_start_ns));
        if self.is_overlap() {
            write!(
                f,
                "{} and {} overlap by {secs:.3} s ({} starts at {start}, before {} ends at \
                 {end}): their packets are merged in time order",
                self.before.display(),
                self.after.display(),
                self.after.display(),
                self.before.display()
            )
        } else {
            write!(
                f,
                "a gap of {secs:.3} s between {} (ends at {end}) and {} (starts at {start}): \
                 the capture holds nothing of it",
                self.before.display(),
                self.after.display()
            )
        }
    }
}

/// A time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn utc(time_ns: i64) -> String {
    let seconds = time_ns.div_euclid(1_000_000_000);
    let millis = time_ns.rem_euclid(1_000_000_000) / 1_000_000;
    let c = crate::civil_time(seconds);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// The sink of the first look at a file: its first packet's or record's time, then stop.
#[derive(Default)]
struct FirstTime(Option<i64>);

impl Sink for FirstTime {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.0 = Some(record.time_ns);
        Err(SinkError::Stopped)
    }
    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        match part {
            Deferred::Packet { time_ns, .. } => {
                self.0 = Some(time_ns);
                Err(SinkError::Stopped)
            }
            _ => Ok(()),
        }
    }
}

/// Runs `work(i)` for every `i` below `n` on `jobs` threads.
fn each_on<T: Send>(n: usize, jobs: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = work(i);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every index ran"))
        .collect()
}

impl Many {
    /// Opens `paths` (files; standard input cannot be one of several) as `options` say, to be
    /// read on `jobs` threads, their bytes read through `opener`. Looks at each file's start to
    /// put them in time order (on `jobs` threads too): a file that cannot be opened, or holds no
    /// trace, is an error here, before anything is read.
    pub fn open(
        paths: &[PathBuf],
        options: &ReadOptions,
        jobs: usize,
        opener: Opener,
    ) -> Result<Many, OpenError> {
        if let Some(stdin) = paths.iter().find(|p| p.as_path() == Path::new("-")) {
            return Err(OpenError::Open {
                input: stdin.clone(),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "standard input cannot be one of several inputs",
                ),
            });
        }
        for path in paths {
            ldplayer_output::protect_input(path);
        }
        let quiet = ReadOptions {
            notes: Notes::ignore(),
            ..options.clone()
        };
        let looked = each_on(paths.len(), jobs, |i| {
            let path = &paths[i];
            let raw = opener(path).map_err(|source| OpenError::Open {
                input: path.clone(),
                source,
            })?;
            let mut input = open::open_reader_as(raw, path, &quiet, true)?;
            let mut first = FirstTime::default();
            // Any error past the first packet shows again when the file is read.
            let _ = input.source.run(&mut first);
            Ok(Part {
                path: path.clone(),
                position: i,
                format: input.format,
                first_ns: first.0,
            })
        });
        let mut parts = looked
            .into_iter()
            .collect::<Result<Vec<Part>, OpenError>>()?;
        parts.sort_by_key(|p| (p.first_ns.unwrap_or(i64::MIN), p.position));
        Ok(Many {
            parts,
            capture: CaptureOptions {
                dns_ports: options.dns_ports.clone(),
                keep_malformed: !options.drop_malformed,
                ..CaptureOptions::default()
            },
            options: options.clone(),
            jobs: jobs.max(1),
            opener,
            report: None,
        })
    }

    /// The inputs in time order, with what each holds.
    pub fn inputs(&self) -> impl Iterator<Item = (&Path, Format)> {
        self.parts.iter().map(|p| (p.path.as_path(), p.format))
    }

    /// What the read found, once it has run (also when it stopped at an error).
    pub fn report(&self) -> Option<&ManyReport> {
        self.report.as_ref()
    }

    /// Starts reading part `k` on a thread of its own.
    fn start(&self, k: usize, pool: &Pool, active: &Arc<AtomicUsize>) -> Reading {
        let (tx, rx) = sync_channel(AHEAD_BYTES / chunk::CHUNK_BYTES);
        let path = self.parts[k].path.clone();
        let options = self.options.clone();
        let opener = self.opener.clone();
        let worker_pool = pool.clone();
        active.fetch_add(1, Ordering::SeqCst);
        let decoding = active.clone();
        let thread = std::thread::Builder::new()
            .name(format!("ldplayer-read{k}"))
            .spawn(move || {
                let mut sink = ChunkSink::new(tx.clone(), worker_pool);
                let result = opener(&path)
                    .map_err(TraceError::Io)
                    .and_then(|raw| {
                        open::open_reader_as(raw, &path, &options, true)
                            .map_err(|e| TraceError::Format(chained(&e)))
                    })
                    .and_then(|mut input| input.source.run(&mut sink));
                decoding.fetch_sub(1, Ordering::SeqCst);
                let _ = tx.send(Message::End(result, sink.span));
            });
        if thread.is_err() {
            active.fetch_sub(1, Ordering::SeqCst);
        }
        Reading {
            rx,
            pool: pool.clone(),
            thread: thread.ok(),
            chunk: Chunk::default(),
            pos: 0,
        }
    }
}

/// An error with its sources, in one line.
fn chained(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A file being read: its events as they come.
struct Reading {
    rx: Receiver<Message>,
    /// Where merged chunks go back.
    pool: Pool,
    thread: Option<JoinHandle<()>>,
    chunk: Chunk,
    /// The next event of `chunk` to merge: a group's first (or the file's first events, before
    /// its first group).
    pos: usize,
}

/// How a file's reading ended.
type Ended = (Result<(), TraceError>, Span);

impl Reading {
    /// The time of the next group, waiting for the reader if need be; `Err` with how the
    /// reading ended when it has no more. Events before a file's first group (skips) count as
    /// a group at the earliest time.
    fn next_key(&mut self) -> Result<i64, Ended> {
        loop {
            if let Some(event) = self.chunk.events.get(self.pos) {
                return Ok(chunk::leads(&self.chunk, event).unwrap_or(i64::MIN));
            }
            match self.rx.recv() {
                Ok(Message::Chunk(chunk)) => {
                    let done = std::mem::replace(&mut self.chunk, chunk);
                    self.pool.give(done);
                    self.pos = 0;
                }
                Ok(Message::End(result, span)) => return Err((result, span)),
                Err(_) => {
                    return Err((
                        Err(TraceError::Format(
                            "the thread reading it ended without a word".into(),
                        )),
                        Span::default(),
                    ))
                }
            }
        }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        // The reader stops at its next hand-over once nobody listens.
        let (_, rx) = sync_channel(0);
        drop(std::mem::replace(&mut self.rx, rx));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The merge's state: the files being read and the decoder of the whole capture.
struct Join<'a> {
    many: &'a Many,
    pool: Pool,
    readings: Vec<Option<Reading>>,
    started: Vec<bool>,
    /// Readers still decoding (not those done whose events wait for the merge).
    active: Arc<AtomicUsize>,
    /// The next part to start reading ahead of the merge.
    ahead: usize,
    ended: Vec<Option<Ended>>,
    /// The earliest part (in time order) not yet read to its end.
    lowest: usize,
    decoder: PacketDecoder,
    /// The number of the last packet, for the skips of the decoder's end.
    packet: u64,
}

impl Join<'_> {
    fn ensure_started(&mut self, k: usize) {
        if !self.started[k] {
            self.started[k] = true;
            self.readings[k] = Some(self.many.start(k, &self.pool, &self.active));
        }
    }

    /// Starts reading the next parts while fewer than `jobs` readers are decoding, up to
    /// `2 × jobs` parts ahead of the earliest one not merged (which bounds the memory).
    fn read_ahead(&mut self) {
        let jobs = self.many.jobs;
        let n = self.many.parts.len();
        while self.ahead < n
            && self.ahead < self.lowest + 2 * jobs
            && self.active.load(Ordering::SeqCst) < jobs
        {
            self.ensure_started(self.ahead);
            self.ahead += 1;
        }
    }

    /// The next group's time of part `k`; `None` once it has ended (then recorded).
    fn next_key(&mut self, k: usize) -> Option<i64> {
        let reading = self.readings[k].as_mut()?;
        match reading.next_key() {
            Ok(key) => Some(key),
            Err(ended) => {
                self.ended[k] = Some(ended);
                self.readings[k] = None;
                while self.lowest < self.ended.len() && self.ended[self.lowest].is_some() {
                    self.lowest += 1;
                }
                None
            }
        }
    }

    /// Passes the groups of part `k` on, the first whatever its time, the next ones while they
    /// come before `bound` (a time and a part: ties go to the earlier part). Returns the time
    /// of the group it stopped at, `None` once the part has ended.
    fn replay(
        &mut self,
        k: usize,
        bound: Option<(i64, usize)>,
        sink: &mut dyn Sink,
    ) -> Result<Option<i64>, SinkError> {
        let mut first = true;
        loop {
            let Some(key) = self.next_key(k) else {
                return Ok(None);
            };
            if self.readings[k].as_ref().is_some_and(|r| r.pos == 0) {
                // A new chunk: a reader may have finished meanwhile.
                self.read_ahead();
            }
            if !first && bound.is_some_and(|b| (key, k) >= b) {
                return Ok(Some(key));
            }
            first = false;
            let Some(reading) = self.readings[k].as_mut() else {
                return Ok(None);
            };
            let chunk = &reading.chunk;
            let events = &chunk.events;
            let mut i = reading.pos;
            loop {
                match events[i] {
                    Event::Packet { time_ns, number } => {
                        self.packet = number;
                        self.decoder
                            .resume(Deferred::Packet { time_ns, number }, sink)?;
                    }
                    Event::Record { at, .. } => sink.record(&chunk.record(at))?,
                    Event::Skipped(reason, location) => sink.skipped(reason, location),
                    Event::Malformed(error, location) => sink.malformed(error, location),
                    Event::Deferred { at } => self.decoder.resume(chunk.deferred(at), sink)?,
                }
                i += 1;
                if i == events.len() || chunk::leads(chunk, &events[i]).is_some() {
                    break;
                }
            }
            reading.pos = i;
        }
    }

    /// Merges every part into `sink`.
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), SinkError> {
        let n = self.many.parts.len();
        let firsts: Vec<i64> = (self.many.parts.iter())
            .map(|p| p.first_ns.unwrap_or(i64::MIN))
            .collect();
        // Ties in time go to the earlier part: files that follow one another keep their order
        // where the one ends and the next begins within the same instant (mergecap gives them
        // to the later file).
        let mut heap: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
        let mut next = 0;
        loop {
            self.read_ahead();
            // A part joins the merge once the merge reaches its first time.
            while next < n
                && heap
                    .peek()
                    .is_none_or(|Reverse((key, _))| firsts[next] <= *key)
            {
                self.ensure_started(next);
                if let Some(key) = self.next_key(next) {
                    heap.push(Reverse((key, next)));
                }
                next += 1;
            }
            let Some(Reverse((_, k))) = heap.pop() else {
                break;
            };
            // Part k goes on until another part's next group, or the next part's start, comes
            // first: most often to its end, files following one another.
            let others = heap.peek().map(|Reverse(b)| *b);
            let joining = (next < n).then(|| (firsts[next], next));
            let bound = match (others, joining) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(key) = self.replay(k, bound, sink)? {
                heap.push(Reverse((key, k)));
            }
        }
        self.decoder.finish(self.packet, sink)
    }
}

impl Source for Many {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let n = self.parts.len();
        let mut join = Join {
            many: self,
            pool: Pool::default(),
            readings: (0..n).map(|_| None).collect(),
            started: vec![false; n],
            active: Arc::new(AtomicUsize::new(0)),
            ahead: 0,
            ended: (0..n).map(|_| None).collect(),
            lowest: 0,
            decoder: PacketDecoder::new(&self.capture),
            packet: 0,
        };
        let merged = drive(sink, |sink| join.run(sink).map_err(TraceError::Sink));
        // Stops the readers still running (after a sink error).
        join.readings.clear();
        let mut first_error = None;
        let mut inputs = Vec::with_capacity(n);
        for (part, ended) in self.parts.iter().zip(join.ended) {
            let (result, span) = ended.unwrap_or((Ok(()), Span::default()));
            let error = match result {
                Err(TraceError::Sink(SinkError::Stopped)) | Ok(()) => None,
                Err(e) => {
                    let text = chained(&e);
                    first_error.get_or_insert(e);
                    Some(text)
                }
            };
            inputs.push(InputReport {
                path: part.path.clone(),
                format: part.format,
                span,
                error,
            });
        }
        let seams = seams(&inputs);
        self.report = Some(ManyReport { inputs, seams });
        merged?;
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The gaps and overlaps between inputs in time order: each input against the latest end of
/// those before it.
fn seams(inputs: &[InputReport]) -> Vec<Seam> {
    let mut seams = Vec::new();
    let mut latest: Option<(&InputReport, i64, i64)> = None;
    for input in inputs {
        let (Some(first), Some(last)) = (input.span.first_ns, input.span.last_ns) else {
            continue;
        };
        if let Some((before, end, pause)) = latest {
            let gap = first.saturating_sub(end);
            let usual = MIN_GAP_NS.max(pause).max(input.span.max_pause_ns);
            if first < end || gap > usual {
                seams.push(Seam {
                    before: before.path.clone(),
                    after: input.path.clone(),
                    before_end_ns: end,
                    after_start_ns: first,
                });
            }
        }
        let pause = input.span.max_pause_ns;
        latest = match latest {
            Some((b, end, _)) if end >= last => Some((b, end, pause)),
            _ => Some((input, last, pause)),
        };
    }
    seams
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, first: i64, last: i64, pause: i64) -> InputReport {
        InputReport {
            path: PathBuf::from(name),
            format: Format::Capture,
            span: Span {
                first_ns: Some(first),
                last_ns: Some(last),
                max_pause_ns: pause,
            },
            error: None,
        }
    }

    #[test]
    fn gaps_longer_than_usual_and_overlaps_are_seams() {
        const S: i64 = 1_000_000_000;
        let inputs = [
            input("a", 0, 60 * S, S / 10),
            // Follows at once.
            input("b", 60 * S + S / 10, 120 * S, S / 10),
            // 30 s later: a gap.
            input("c", 150 * S, 180 * S, S / 10),
            // Starts 10 s before c ends: an overlap.
            input("d", 170 * S, 240 * S, S / 10),
            // A sparse file: 5 s pauses inside it, a 4 s gap before it is usual.
            input("e", 244 * S, 300 * S, 5 * S),
        ];
        let seams = seams(&inputs);
        assert_eq!(seams.len(), 2, "{seams:?}");
        assert!(!seams[0].is_overlap());
        assert_eq!(
            (seams[0].before.to_str(), seams[0].after.to_str()),
            (Some("b"), Some("c"))
        );
        assert_eq!(seams[0].length_ns(), 30 * S);
        assert!(seams[1].is_overlap());
        assert_eq!(seams[1].length_ns(), 10 * S);
        let text = seams[1].to_string();
        assert!(text.contains("c and d overlap by 10.000 s"), "{text}");
        assert!(
            seams[0]
                .to_string()
                .contains("ends at 1970-01-01T00:02:00.000Z"),
            "{}",
            seams[0]
        );
    }
}
