//! Progress display and Ctrl-C handling for long-running commands.

use indicatif::{ProgressBar, ProgressStyle};
use ldplayer_trace::{Record, Sink, SinkError, SkipReason};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A progress bar over input bytes (a spinner when the size is unknown), hidden when quiet or
/// when standard error is not a terminal.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
}

impl Progress {
    /// A new progress display.
    pub fn new(quiet: bool) -> Progress {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        };
        Progress {
            bar,
            started: Instant::now(),
        }
    }

    /// Shows a bar of `len` input bytes.
    pub fn set_input_len(&self, len: u64) {
        self.bar.set_length(len);
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta}) {msg}",
        ) {
            self.bar.set_style(style.progress_chars("=> "));
        }
    }

    /// Wraps a reader so that the bar follows what it reads.
    pub fn wrap_read<R: Read>(&self, r: R) -> impl Read + use<R> {
        self.bar.wrap_read(r)
    }

    /// Opens input files through the bar, so that it follows what every reader reads (for
    /// inputs read on several threads).
    pub fn opener(&self) -> ldplayer_trace::many::Opener {
        let bar = self.bar.clone();
        std::sync::Arc::new(move |path: &std::path::Path| {
            let file = std::fs::File::open(path)?;
            Ok(Box::new(bar.wrap_read(file)) as Box<dyn Read + Send>)
        })
    }

    /// Sets the message shown beside the bar.
    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Prints a line above the bar (on standard error, as is, when the bar is hidden).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Seconds since the display was created.
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Set once the user presses Ctrl-C or the process gets SIGTERM or SIGHUP (`kill`, `timeout`, a
/// closed terminal): long-running commands stop scheduling, flush and summarize, the same for
/// all three.
pub fn interrupted() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let set = flag.clone();
        // Failing to install the handler only means the signals kill the process as usual.
        let _ = ctrlc::set_handler(move || set.store(true, Ordering::SeqCst));
        flag
    })
    .clone()
}

/// Counts what passes, updates the progress message now and then, and stops the source on Ctrl-C.
pub struct Watch<'p, S> {
    inner: S,
    progress: &'p Progress,
    stop: Arc<AtomicBool>,
    /// Records passed on.
    pub records: u64,
    /// Items the source skipped.
    pub skipped: ldplayer_trace::SkipCounts,
    /// Records passed on although their message is malformed, by reason.
    pub malformed: ldplayer_trace::SkipCounts,
    /// True when the run was cut short by Ctrl-C.
    pub interrupted: bool,
}

impl<'p, S: Sink> Watch<'p, S> {
    /// Wraps `inner`.
    pub fn new(inner: S, progress: &'p Progress) -> Self {
        Watch {
            inner,
            progress,
            stop: interrupted(),
            records: 0,
            skipped: Default::default(),
            malformed: Default::default(),
            interrupted: false,
        }
    }
}

impl<S> Watch<'_, S> {
    /// The wrapped sink.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: Sink> Sink for Watch<'_, S> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.records += 1;
        if self.records.is_multiple_of(65536) {
            if self.stop.load(Ordering::Relaxed) {
                self.interrupted = true;
                return Err(SinkError::Stopped);
            }
            self.progress.message(format!("{} messages", self.records));
        }
        self.inner.record(r)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.skipped.add(reason);
        self.inner.skipped(reason, location)
    }
    fn malformed(&mut self, error: ldplayer_dns::DnsError, location: u64) {
        self.malformed.add(SkipReason::Dns(error));
        self.inner.malformed(error, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}
