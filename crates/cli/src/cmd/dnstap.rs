//! `ldplayer dnstap listen (--unix PATH | --tcp ADDR) -o OUTPUT [--to FORMAT] [--dnstap-types
//! TYPES] [--count N] [--seconds S] [--json | -q]`

use crate::args::{DnstapCommand, DnstapListenArgs, OutFormat};
use crate::io::{create_output, format_from_name, Output};
use crate::progress::{interrupted, Progress};
use anyhow::{Context, Result};
use ldplayer_dnstap::collector::{Collector, Ending, Event, Listen};
use ldplayer_dnstap::fstrm::{FrameWriter, DNSTAP_CONTENT_TYPE};
use ldplayer_trace::dnstap::{DnstapTypes, FrameRecords};
use ldplayer_trace::{Record, Sink, SinkError, SkipCounts, SkipReason};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(command: DnstapCommand) -> Result<()> {
    match command {
        DnstapCommand::Listen(args) => listen(args),
    }
}

/// Where the frames go: every frame as it came (a dnstap output), or records of a trace.
// One per run: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Out {
    Frames(FrameWriter<Output>),
    Records {
        writer: crate::io::TraceWriter,
        frames: FrameRecords,
    },
}

/// Counts what the records sink was given.
struct Counting<'a, S> {
    inner: &'a mut S,
    records: u64,
    skipped: &'a mut SkipCounts,
}

impl<S: Sink> Sink for Counting<'_, S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.records += 1;
        self.inner.record(record)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.skipped.add(reason);
        self.inner.skipped(reason, location)
    }
}

fn listen(args: DnstapListenArgs) -> Result<()> {
    args.write.check_json()?;
    let output = &args.write.output;
    let to = args.to.unwrap_or_else(|| format_from_name(output));
    let listen = match (&args.unix, args.tcp) {
        (Some(path), _) => Listen::Unix(path.clone()),
        (None, Some(addr)) => Listen::Tcp(addr),
        (None, None) => anyhow::bail!("give --unix PATH or --tcp ADDR"),
    };
    let types = args.dnstap_types.unwrap_or(DnstapTypes::ALL);
    let mut out = if to == OutFormat::Dnstap {
        Out::Frames(FrameWriter::new(
            Output::create(output)?,
            DNSTAP_CONTENT_TYPE,
        )?)
    } else {
        Out::Records {
            writer: create_output(output, to)?,
            frames: FrameRecords::new(types),
        }
    };
    let collector = Collector::bind(&listen)?;
    let progress = Progress::new(args.write.silent());
    // Also with --json (on standard error): whoever starts the collector waits for this line.
    if !args.write.quiet {
        progress.println(&format!(
            "ldplayer dnstap: listening on {} (Ctrl-C to stop)",
            collector.local()
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let events = collector.run(stop.clone());
    let interrupted = interrupted();
    let started = Instant::now();
    let (mut frames, mut records, mut connections, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut skipped = SkipCounts::default();
    let mut last_shown = Instant::now();
    let mut by_signal = false;
    let mut write_error = None;
    loop {
        let limit_reached = args.count.is_some_and(|n| frames >= n)
            || args
                .seconds
                .is_some_and(|s| started.elapsed().as_secs_f64() >= s);
        if !stop.load(Ordering::Relaxed) && (limit_reached || interrupted.load(Ordering::Relaxed)) {
            by_signal = !limit_reached;
            stop.store(true, Ordering::Relaxed);
        }
        let event = match events.recv_timeout(Duration::from_millis(100)) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match event {
            Event::Connected { id, peer, mode } => {
                connections += 1;
                if !args.write.quiet {
                    let from = if peer.is_empty() {
                        String::new()
                    } else {
                        format!(" from {peer}")
                    };
                    progress.println(&format!(
                        "ldplayer dnstap: connection {id}{from} ({mode:?})"
                    ));
                }
            }
            Event::Frame { data, .. } => {
                if args.count.is_some_and(|n| frames >= n) || write_error.is_some() {
                    continue;
                }
                frames += 1;
                let written = match &mut out {
                    Out::Frames(w) => w.write_frame(&data).map_err(SinkError::from),
                    Out::Records { writer, frames } => {
                        let mut counting = Counting {
                            inner: writer,
                            records: 0,
                            skipped: &mut skipped,
                        };
                        let r = frames.frame(data, &mut counting);
                        records += counting.records;
                        r
                    }
                };
                if let Err(e) = written {
                    write_error = Some(e);
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Event::Closed { id, ending } => {
                let note = match &ending {
                    Ending::Stopped | Ending::Interrupted => None,
                    Ending::Disconnected => Some("the writer went away (between frames)".into()),
                    Ending::CutFrame { bytes } => {
                        skipped.add(SkipReason::DnstapCutFrame);
                        Some(format!(
                            "the writer went away inside a frame ({bytes} bytes of it lost, \
                             counted as dnstap-cut-frame)"
                        ))
                    }
                    Ending::Refused(e) => {
                        refused += 1;
                        Some(format!("refused: {e}"))
                    }
                    Ending::Failed(e) => Some(format!("failed: {e}")),
                };
                if let Some(note) = note {
                    if !args.write.quiet {
                        progress.println(&format!("ldplayer dnstap: connection {id}: {note}"));
                    }
                }
            }
        }
        if last_shown.elapsed() > Duration::from_millis(250) {
            last_shown = Instant::now();
            progress.message(format!(
                "{frames} frames, {records} records, {connections} connections ({})",
                super::per_second(frames, started.elapsed().as_secs_f64())
            ));
        }
    }
    progress.finish();
    let secs = started.elapsed().as_secs_f64();
    let census = match &out {
        Out::Records { frames, .. } => Some(frames.census().clone()),
        Out::Frames(_) => None,
    };
    let written = match out {
        Out::Frames(w) => {
            let n = w.frames();
            w.finish()?.close().context("finishing the output")?;
            n
        }
        Out::Records { writer, .. } => {
            let n = writer.written();
            writer.close()?;
            n
        }
    };
    if let Some(e) = write_error {
        return Err(anyhow::Error::new(e).context(format!(
            "writing {}: stopped; the {written} records written before are kept",
            output.display()
        )));
    }
    if args.write.json {
        let types: std::collections::BTreeMap<_, _> = census
            .iter()
            .flat_map(|c| c.by_type())
            .map(|(t, n)| (t.name(), n))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "frames": frames,
                "written": written,
                "connections": connections,
                "refused": refused,
                "types": types,
                "output": output.display().to_string(),
                "output_format": super::out_format_name(to),
                "seconds": secs,
                "interrupted": by_signal,
                "skipped": super::skipped_json(&skipped),
            })
        );
    } else if !args.write.quiet {
        let types = census.map(|c| format!(" ({c})")).unwrap_or_default();
        eprintln!(
            "ldplayer dnstap: {frames} frames{types} from {connections} connections in {secs:.2} s \
             ({}), {written} written to {}{}; skipped: {}",
            super::per_second(frames, secs),
            output.display(),
            if by_signal { ", interrupted" } else { "" },
            super::skipped_list(&skipped)
        );
    }
    Ok(())
}
