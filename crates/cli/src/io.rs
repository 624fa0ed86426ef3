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
    let name = ["gz", "xz", "zst"]
        .iter()
        .find_map(|c| name.strip_suffix(&format!(".{c}")))
        .unwrap_or(&name)
        .to_string();
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
    let out = Output::create(path)?;
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
    stream: Option<FramedEncoder<BufWriter<Box<dyn Write + Send>>>>,
    destination: Option<Destination>,
}

impl Output {
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
            stream: Some(stream),
            destination,
        })
    }

    /// Completes the compressed stream, flushes, and puts the file in place.
    pub fn close(mut self) -> Result<()> {
        if let Some(stream) = self.stream.take() {
            finish(stream).context("finishing the output")?;
        }
        match self.destination.take() {
            Some(d) => Ok(d.commit()?),
            None => Ok(()),
        }
    }

    fn writer(&mut self) -> io::Result<&mut dyn Write> {
        match &mut self.stream {
            Some(w) => Ok(w),
            None => Err(io::Error::other("the output is closed")),
        }
    }
}

/// Writes the end of the compressed stream and flushes everything.
fn finish(stream: FramedEncoder<BufWriter<Box<dyn Write + Send>>>) -> io::Result<()> {
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
            if let Err(e) = finish(stream) {
                eprintln!("ldplayer: finishing the output failed: {e}");
            }
        }
    }
}
