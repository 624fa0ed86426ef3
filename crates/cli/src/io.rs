//! Opening inputs (any trace format, any compression) and outputs (any format, compression by
//! file name suffix).

use crate::args::{OutFormat, ReadArgs};
use crate::port_hint::PortHint;
use crate::progress::Progress;
use anyhow::{Context, Result};
use ldplayer_dns::DnsError;
use ldplayer_pcap::{CaptureOptions, CaptureReader, PcapWriter};
use ldplayer_trace::binary::{BinaryReader, BinaryWriter};
use ldplayer_trace::input::{self, Format};
use ldplayer_trace::text::{LineError, TextReader, TextWriter};
use ldplayer_trace::{Checked, Record, Sink, SinkError, SkipReason, Source, TraceError};
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

/// Opens a trace of any format, with a progress bar over the bytes read.
pub fn open_input(path: &Path, read: &ReadArgs, progress: &Progress) -> Result<Input> {
    let raw: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        if let Ok(meta) = file.metadata() {
            progress.set_input_len(meta.len());
        }
        Box::new(progress.wrap_read(file))
    };
    let opened =
        input::open_reader(raw).with_context(|| format!("cannot read {}", path.display()))?;
    let source: Box<dyn Source> = match opened.format {
        Format::Capture => {
            let options = CaptureOptions {
                dns_ports: read.dns_ports.clone(),
                keep_malformed: !read.drop_malformed,
                ..CaptureOptions::default()
            };
            Box::new(PortHint::new(
                CaptureReader::new(opened.reader, options)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
                &read.dns_ports,
            ))
        }
        // Captures decide about malformed messages as they frame them; traces are checked.
        Format::Text => Box::new(Checked::new(
            ReportingText(
                TextReader::new(opened.reader)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            ),
            read.drop_malformed,
        )),
        Format::Binary => Box::new(Checked::new(
            BinaryReader::new(opened.reader)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            read.drop_malformed,
        )),
    };
    Ok(Input {
        source,
        format: opened.format,
    })
}

/// A text reader that, once done, prints the first lines it could not read.
struct ReportingText<R: io::BufRead>(TextReader<R>);

impl<R: io::BufRead> Source for ReportingText<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let result = self.0.run(sink);
        let errors: &[(u64, LineError)] = self.0.errors();
        for (line, e) in errors {
            eprintln!("ldplayer: line {line} skipped: {e}");
        }
        result
    }
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

/// The output format implied by a file name: `.txt`/`.tsv`/`.text` text, `.pcap` pcap, else
/// binary (a compression suffix is looked through).
pub fn format_from_name(path: &Path) -> OutFormat {
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
        OutFormat::Text
    } else if name.ends_with(".pcap") {
        OutFormat::Pcap
    } else {
        OutFormat::Binary
    }
}

/// Creates a writer sink for `path` in `format`.
pub fn create_output(path: &Path, format: OutFormat) -> Result<Box<dyn Sink>> {
    let out = Output::create(path)?;
    let sink: Box<dyn Sink> = match format {
        OutFormat::Text => Box::new(TextWriter::new(out)?),
        OutFormat::Binary => Box::new(BinaryWriter::new(out)?),
        OutFormat::Pcap => Box::new(PcapWriter::new(out)?),
    };
    Ok(sink)
}

/// A buffered output file or standard output, compressed when its name ends in `.gz`, `.xz` or
/// `.zst`. The compressed stream is completed when the output is dropped.
pub enum Output {
    /// Uncompressed.
    Plain(BufWriter<Box<dyn Write + Send>>),
    /// gzip.
    Gzip(flate2::write::GzEncoder<BufWriter<Box<dyn Write + Send>>>),
    /// xz.
    Xz(xz2::write::XzEncoder<BufWriter<Box<dyn Write + Send>>>),
    /// Zstandard.
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<Box<dyn Write + Send>>>),
}

impl Output {
    /// Creates `path` (`-`: standard output).
    pub fn create(path: &Path) -> Result<Output> {
        let raw: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(io::stdout())
        } else {
            Box::new(
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
            )
        };
        let buf = BufWriter::with_capacity(1 << 20, raw);
        let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
        Ok(match ext.as_deref() {
            Some("gz") => Output::Gzip(flate2::write::GzEncoder::new(
                buf,
                flate2::Compression::default(),
            )),
            Some("xz") => Output::Xz(xz2::write::XzEncoder::new(buf, 6)),
            Some("zst") => Output::Zstd(zstd::stream::write::Encoder::new(buf, 3)?),
            _ => Output::Plain(buf),
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Output::Plain(w) => w,
            Output::Gzip(w) => w,
            Output::Xz(w) => w,
            Output::Zstd(w) => w,
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        let done = match self {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.try_finish().and_then(|_| w.get_mut().flush()),
            Output::Xz(w) => w.try_finish().and_then(|_| w.get_mut().flush()),
            Output::Zstd(w) => w.do_finish().and_then(|_| w.get_mut().flush()),
        };
        if let Err(e) = done {
            eprintln!("ldplayer: finishing the output failed: {e}");
        }
    }
}
