//! Opening inputs (any trace format, any compression) and outputs (any format, compression by
//! file name suffix), safely: every output goes through the output guard ([`ldplayer_output`]:
//! never one of the inputs, see [`crate::guard`]) and is written under a temporary name until it
//! is complete ([`Output`], [`end_run`]).

use ldplayer_output::Destination;
use ldplayer_trace::compress::FramedEncoder;
use ldplayer_trace::input::Compression;

use crate::args::{OutFormat, ReadArgs};
use crate::progress::Progress;
use anyhow::{Context, Result};
use ldplayer_dns::DnsError;
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::capture::PcapWriter;
use ldplayer_trace::dnstap::DnstapWriter;
use ldplayer_trace::input::Format;
use ldplayer_trace::many::{Many, ManyReport};
use ldplayer_trace::open::{self, ReadOptions};
use ldplayer_trace::text::TextWriter;
use ldplayer_trace::{Record, Sink, SinkError, SkipReason, Source, TraceError};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

/// An opened input trace.
pub struct Input {
    /// The reader, ready to run.
    pub source: Box<dyn Source>,
    /// What the file turned out to be.
    pub format: Format,
}

/// Opens a trace of any format, with a progress bar over the bytes read; what the reader
/// notices besides its records goes to standard error once it has run.
pub fn open_input(path: &Path, read: &ReadArgs, progress: &Progress) -> Result<Input> {
    open_input_noting(path, read, progress, ldplayer_trace::open::Notes::stderr())
}

/// [`open_input`], with what the reader notices told to `notes`.
pub fn open_input_noting(
    path: &Path,
    read: &ReadArgs,
    progress: &Progress,
    notes: ldplayer_trace::open::Notes,
) -> Result<Input> {
    let raw: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        if let Ok(meta) = file.metadata() {
            progress.set_input_len(meta.len());
        }
        Box::new(progress.wrap_read(file))
    };
    let options = ReadOptions {
        notes,
        ..ReadOptions::from(read)
    };
    let opened = open::open_reader(raw, path, &options)?;
    Ok(Input {
        source: opened.source,
        format: opened.format,
    })
}

/// Inputs opened to be read as one: a single one as it is, several through
/// [`ldplayer_trace::many`] (merged in time order, decoded on several cores).
pub enum Inputs {
    /// One input.
    One(Input, std::path::PathBuf),
    /// Several.
    Many(Box<Many>),
}

impl Inputs {
    /// The reader of all of them.
    pub fn source(&mut self) -> &mut dyn Source {
        match self {
            Inputs::One(input, _) => &mut *input.source,
            Inputs::Many(many) => &mut **many,
        }
    }

    /// What they hold, if they all hold the same (`None`: a mix of formats).
    pub fn format(&self) -> Option<Format> {
        match self {
            Inputs::One(input, _) => Some(input.format),
            Inputs::Many(many) => {
                let mut formats = many.inputs().map(|(_, f)| f);
                let first = formats.next()?;
                formats.all(|f| f == first).then_some(first)
            }
        }
    }

    /// Their name in messages: the file, or `N files (FIRST ... LAST)` in time order.
    pub fn describe(&self) -> String {
        match self {
            Inputs::One(_, path) => path.display().to_string(),
            Inputs::Many(many) => {
                let paths: Vec<&Path> = many.inputs().map(|(p, _)| p).collect();
                match paths.as_slice() {
                    [first, .., last] => format!(
                        "{} files ({} ... {})",
                        paths.len(),
                        first.display(),
                        last.display()
                    ),
                    [one] => one.display().to_string(),
                    [] => "no file".into(),
                }
            }
        }
    }

    /// The file that stopped at an error, once read (several inputs: the first in time order).
    pub fn failed(&self) -> Option<String> {
        match self {
            Inputs::One(_, path) => Some(path.display().to_string()),
            Inputs::Many(many) => many
                .report()?
                .inputs
                .iter()
                .find(|i| i.error.is_some())
                .map(|i| i.path.display().to_string()),
        }
    }

    /// What reading several files found (their times, gaps and overlaps), once read.
    pub fn report(&self) -> Option<&ManyReport> {
        match self {
            Inputs::One(..) => None,
            Inputs::Many(many) => many.report(),
        }
    }

    /// Tells the gaps and overlaps between the files, and the files that stopped at an error
    /// but the first (which the command's error names), on standard error.
    pub fn tell(&self) {
        let Some(report) = self.report() else {
            return;
        };
        for seam in &report.seams {
            eprintln!("ldplayer: note: {seam}");
        }
        for input in report.inputs.iter().filter(|i| i.error.is_some()).skip(1) {
            eprintln!(
                "ldplayer: {}: stopped at an error, what came before it is read: {}",
                input.path.display(),
                input.error.as_deref().unwrap_or("")
            );
        }
    }

    /// The inputs in `--json`: each file in time order with its format, first and last time
    /// (seconds since the Unix epoch) and error; then the gaps and overlaps. `None` for one.
    pub fn json(&self) -> Option<serde_json::Value> {
        let report = self.report()?;
        let seconds = |ns: Option<i64>| ns.map(|n| n as f64 / 1e9);
        let files: Vec<serde_json::Value> = report
            .inputs
            .iter()
            .map(|i| {
                serde_json::json!({
                    "file": i.path.display().to_string(),
                    "format": crate::cmd::format_name(i.format),
                    "first": seconds(i.span.first_ns),
                    "last": seconds(i.span.last_ns),
                    "error": i.error,
                })
            })
            .collect();
        let seams: Vec<serde_json::Value> = report
            .seams
            .iter()
            .map(|s| {
                serde_json::json!({
                    "kind": if s.is_overlap() { "overlap" } else { "gap" },
                    "before": s.before.display().to_string(),
                    "after": s.after.display().to_string(),
                    "seconds": s.length_ns() as f64 / 1e9,
                })
            })
            .collect();
        Some(serde_json::json!({ "files": files, "seams": seams }))
    }
}

/// Opens `paths` to be read as one, `jobs` files decoded at once, with a progress bar over the
/// bytes read; what the readers notice goes to `notes`.
pub fn open_inputs(
    paths: &[std::path::PathBuf],
    read: &ReadArgs,
    jobs: usize,
    progress: &Progress,
    notes: ldplayer_trace::open::Notes,
) -> Result<Inputs> {
    if let [path] = paths {
        let input = open_input_noting(path, read, progress, notes)?;
        return Ok(Inputs::One(input, path.clone()));
    }
    let options = ReadOptions {
        notes,
        ..ReadOptions::from(read)
    };
    let total: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let many = Many::open(paths, &options, jobs, progress.opener())?;
    progress.set_input_len(total);
    Ok(Inputs::Many(Box::new(many)))
}

/// Keeps only queries or only responses, as asked.
pub struct QrFilter<S> {
    inner: S,
    keep_qr: Option<bool>,
    /// The last record was passed on (so a note about it is too).
    passed: bool,
}

impl<S: Sink> QrFilter<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, read: &ReadArgs) -> Self {
        let keep_qr = if read.queries_only {
            Some(false)
        } else if read.responses_only {
            Some(true)
        } else {
            None
        };
        QrFilter {
            inner,
            keep_qr,
            passed: false,
        }
    }
}

impl<S: Sink> Sink for QrFilter<S> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.passed = false;
        if let Some(want) = self.keep_qr {
            // Byte 2 bit 7 is QR; records too short to be DNS are dropped by either filter.
            match r.wire.get(2) {
                Some(b) if (b & 0x80 != 0) == want => {}
                _ => return Ok(()),
            }
        }
        self.passed = true;
        self.inner.record(r)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.inner.skipped(reason, location)
    }
    fn malformed(&mut self, error: DnsError, location: u64) {
        if self.passed {
            self.inner.malformed(error, location)
        }
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}

/// The output format implied by a file name: `.txt`/`.tsv`/`.text` text, `.pcap` pcap,
/// `.dnstap`/`.fstrm` dnstap, else binary (a compression suffix is looked through).
pub fn format_from_name(path: &Path) -> OutFormat {
    named_format(path).unwrap_or(OutFormat::Binary)
}

/// The output format a file name states (`.txt`/`.tsv`/`.text`, `.pcap`, `.dnstap`/`.fstrm`
/// or `.bin`, a compression suffix looked through), or an error asking for `--to` when it
/// states none
/// (standard output, another suffix).
pub fn strict_format_from_name(path: &Path) -> Result<OutFormat> {
    named_format(path).with_context(|| {
        format!(
            "cannot tell the output format from the name {}: say --to text, binary, pcap or \
             dnstap (or name it .txt, .bin, .pcap or .dnstap)",
            path.display()
        )
    })
}

/// The format a file name's suffix names, if any.
fn named_format(path: &Path) -> Option<OutFormat> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let (name, _) = Compression::split_suffix(&name);
    if [".txt", ".tsv", ".text"].iter().any(|s| name.ends_with(s)) {
        Some(OutFormat::Text)
    } else if name.ends_with(".pcap") {
        Some(OutFormat::Pcap)
    } else if name.ends_with(".dnstap") || name.ends_with(".fstrm") {
        Some(OutFormat::Dnstap)
    } else if name.ends_with(".bin") {
        Some(OutFormat::Binary)
    } else {
        None
    }
}

/// A trace writer of any format over an [`Output`], counting the records it wrote.
pub struct TraceWriter {
    writer: FormatWriter,
    written: u64,
}

enum FormatWriter {
    Text(TextWriter<Output>),
    Binary(BinaryWriter<Output>),
    Pcap(PcapWriter<Output>),
    Dnstap(DnstapWriter<Output>),
}

/// Creates a writer sink for `path` in `format` (written under a temporary name until
/// [`TraceWriter::close`]; see [`Output`]).
pub fn create_output(path: &Path, format: OutFormat) -> Result<TraceWriter> {
    writer_over(Output::create(path)?, format)
}

/// [`create_output`], written by a thread of its own ([`Output::create_background`]).
pub fn create_output_background(path: &Path, format: OutFormat) -> Result<TraceWriter> {
    writer_over(Output::create_background(path)?, format)
}

fn writer_over(out: Output, format: OutFormat) -> Result<TraceWriter> {
    let writer = match format {
        OutFormat::Text => FormatWriter::Text(TextWriter::new(out)?),
        OutFormat::Binary => FormatWriter::Binary(BinaryWriter::new(out)?),
        OutFormat::Pcap => FormatWriter::Pcap(PcapWriter::new(out)?),
        OutFormat::Dnstap => FormatWriter::Dnstap(DnstapWriter::new(out)?),
    };
    Ok(TraceWriter { writer, written: 0 })
}

impl TraceWriter {
    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes everything and puts the output in place.
    pub fn close(self) -> Result<()> {
        let out = match self.writer {
            FormatWriter::Text(w) => w.into_inner(),
            FormatWriter::Binary(w) => w.into_inner(),
            FormatWriter::Pcap(w) => w.into_inner(),
            FormatWriter::Dnstap(w) => w.into_inner(),
        }?;
        out.close()
    }

    fn sink(&mut self) -> &mut dyn Sink {
        match &mut self.writer {
            FormatWriter::Text(w) => w,
            FormatWriter::Binary(w) => w,
            FormatWriter::Pcap(w) => w,
            FormatWriter::Dnstap(w) => w,
        }
    }
}

impl Sink for TraceWriter {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.sink().record(r)?;
        self.written += 1;
        Ok(())
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.sink().skipped(reason, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.sink().finish()
    }
}

/// Ends a run that read `input` into `writer` (the output file `output`), as its `result`
/// says, so that a failure never loses data and never leaves a wrong file:
///
/// - success (or Ctrl-C): the output is completed and put in place;
/// - a read error (a damaged input) after some records were written: what was written is kept
///   (put in place) and the error says so;
/// - a write error, or a record the sink refused (say, a time out of range), or a read error
///   before anything was written: the temporary file is removed and a file of that name is
///   left as it was.
///
/// `doing` names the run in error messages (`converting trace.pcap`).
pub fn end_run(
    writer: TraceWriter,
    output: &Path,
    doing: &str,
    result: Result<(), TraceError>,
) -> Result<()> {
    let e = match result {
        Ok(()) | Err(TraceError::Sink(SinkError::Stopped)) => return writer.close(),
        Err(e) => e,
    };
    let kept = writer.written();
    let read_error = !matches!(e, TraceError::Sink(_));
    if !read_error || kept == 0 || output == Path::new("-") {
        drop(writer);
        let note = if output == Path::new("-") {
            String::new()
        } else {
            format!(" ({} left as it was)", output.display())
        };
        return Err(anyhow::Error::new(e).context(format!("{doing}{note}")));
    }
    writer.close()?;
    Err(anyhow::Error::new(e).context(format!(
        "{doing}: reading stopped at an error; the {kept} records written before it are kept in {}",
        output.display()
    )))
}

/// A buffered output file or standard output, compressed when its name ends in `.gz`, `.xz` or
/// `.zst` (in checked frames: [`ldplayer_trace::compress`]).
///
/// A file is written under a temporary name beside it and renamed into place by
/// [`Output::close`]; dropped without `close`, it leaves no trace (a file of that name keeps
/// its old content). Standard output is completed on drop as well.
pub struct Output {
    stream: Option<Stream>,
    destination: Option<Destination>,
}

/// The compressed, buffered stream of an [`Output`].
type Encoder = FramedEncoder<BufWriter<Box<dyn Write + Send>>>;

/// Where an [`Output`] writes: the encoder itself, or a thread of its own that runs it.
enum Stream {
    Direct(Encoder),
    Background(Background),
}

/// An encoder run by a thread of its own: the compression and the system calls of writing
/// leave the thread that produces the bytes (the merge of many inputs). Bytes go over in
/// buffers of [`BACKGROUND_BUFFER`]; a write error shows at the next write or at the end.
struct Background {
    buf: Vec<u8>,
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    /// Buffers written, to fill again.
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    /// Buffers made so far (at most [`BACKGROUND_BUFFERS`]: fresh memory costs page faults).
    made: usize,
    thread: Option<std::thread::JoinHandle<io::Result<Encoder>>>,
}

/// The buffers an [`Output`] written by a thread of its own hands over.
const BACKGROUND_BUFFER: usize = 1 << 20;
/// How many such buffers it uses, in turn.
const BACKGROUND_BUFFERS: usize = 6;

impl Background {
    fn new(mut encoder: Encoder) -> io::Result<Background> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        let (back, spare) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("ldplayer-write".into())
            .spawn(move || {
                for mut buf in rx {
                    encoder.write_all(&buf)?;
                    buf.clear();
                    let _ = back.send(buf);
                }
                Ok(encoder)
            })?;
        Ok(Background {
            buf: Vec::with_capacity(BACKGROUND_BUFFER),
            tx: Some(tx),
            spare,
            made: 1,
            thread: Some(thread),
        })
    }

    /// Hands the buffer to the thread; its error if it stopped at one.
    fn hand(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = match self.spare.try_recv() {
            Ok(buf) => buf,
            Err(_) if self.made < BACKGROUND_BUFFERS => {
                self.made += 1;
                Vec::with_capacity(BACKGROUND_BUFFER)
            }
            // The thread gives one back once it has written it (or has stopped at an error).
            Err(_) => match self.spare.recv() {
                Ok(buf) => buf,
                Err(_) => return self.end().map(drop),
            },
        };
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.tx.as_ref().map(|tx| tx.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => self.end().map(drop),
        }
    }

    /// Waits for the thread to write everything; the encoder back.
    fn end(&mut self) -> io::Result<Encoder> {
        self.tx = None;
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the output's writing thread failed")),
            None => Err(io::Error::other("the output is closed")),
        }
    }

    fn finish(mut self) -> io::Result<Encoder> {
        self.hand()?;
        self.end()
    }
}

impl Write for Background {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= BACKGROUND_BUFFER {
            self.hand()?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.hand()
    }
}

impl Output {
    /// [`Output::create`], with the output written (and compressed) by a thread of its own:
    /// for a command whose own thread is the bottleneck. Standard output is written in place.
    pub fn create_background(path: &Path) -> Result<Output> {
        let mut out = Output::create(path)?;
        if path != Path::new("-") {
            if let Some(Stream::Direct(encoder)) = out.stream.take() {
                out.stream = Some(Stream::Background(Background::new(encoder)?));
            }
        }
        Ok(out)
    }

    /// Creates `path` (`-`: standard output).
    pub fn create(path: &Path) -> Result<Output> {
        let (raw, destination): (Box<dyn Write + Send>, _) = if path == Path::new("-") {
            (Box::new(io::stdout()), None)
        } else {
            let destination = ldplayer_output::create(path)?;
            (Box::new(destination.writer()?), Some(destination))
        };
        let buf = BufWriter::with_capacity(1 << 20, raw);
        let stream = FramedEncoder::new(Compression::from_name(path), buf)?;
        Ok(Output {
            stream: Some(Stream::Direct(stream)),
            destination,
        })
    }

    /// Completes the compressed stream, flushes, and puts the file in place.
    pub fn close(mut self) -> Result<()> {
        if let Some(stream) = self.stream.take() {
            let encoder = match stream {
                Stream::Direct(encoder) => encoder,
                Stream::Background(b) => b.finish().context("writing the output")?,
            };
            finish(encoder).context("finishing the output")?;
        }
        match self.destination.take() {
            Some(d) => Ok(d.commit()?),
            None => Ok(()),
        }
    }

    fn writer(&mut self) -> io::Result<&mut dyn Write> {
        match &mut self.stream {
            Some(Stream::Direct(w)) => Ok(w),
            Some(Stream::Background(w)) => Ok(w),
            None => Err(io::Error::other("the output is closed")),
        }
    }
}

/// Writes the end of the compressed stream and flushes everything.
fn finish(stream: Encoder) -> io::Result<()> {
    stream.finish()?.flush()
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer()?.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer()?.write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer()?.flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // A file that was not closed is dropped with its temporary file; standard output (or a
        // device) gets the end of its stream.
        if matches!(self.destination, Some(Destination::Atomic(_))) {
            return;
        }
        if let Some(stream) = self.stream.take() {
            let encoder = match stream {
                Stream::Direct(encoder) => Ok(encoder),
                Stream::Background(b) => b.finish(),
            };
            if let Err(e) = encoder.and_then(finish) {
                eprintln!("ldplayer: finishing the output failed: {e}");
            }
        }
    }
}
