//! `ldplayer results export FILE --csv|--jsonl [--with-trace TRACE] [-o OUTPUT] [--json | -q]`
//! and `ldplayer results summary FILE [--json]`

use crate::args::{ExportArgs, ReadArgs, ResultsCommand, ResultsSummaryArgs};
use crate::io::{open_input, refuse_same_file, Output};
use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use ldplayer_results::{
    export_csv, export_jsonl, CsvWriter, JsonlWriter, ResultsReader, Summary, TraceJoin,
};
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub fn run(command: ResultsCommand) -> Result<()> {
    match command {
        ResultsCommand::Export(args) => export(args),
        ResultsCommand::Summary(args) => summary(args),
    }
}

fn export(args: ExportArgs) -> Result<()> {
    if !args.csv && !args.jsonl {
        bail!("say --csv or --jsonl");
    }
    let output = args.output.as_deref().unwrap_or(Path::new("-"));
    let mut inputs = vec![args.file.as_path()];
    inputs.extend(args.with_trace.as_deref());
    refuse_same_file(output, inputs)?;
    let mut reader = ResultsReader::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut out = WatchedOutput {
        out: Output::create(output)?,
        failed: false,
    };
    match write_rows(&args, &mut reader, &mut out) {
        Ok(()) => {}
        // A write error: the temporary file goes, a file of that name stays as it was.
        Err(e) if out.failed => {
            drop(out);
            return Err(e).with_context(|| format!("writing {}", output.display()));
        }
        // A read error (or a trace that does not match): keep what was exported before it.
        Err(e) => {
            let kept = reader.results_read();
            out.out.close()?;
            return Err(e).with_context(|| {
                format!(
                    "exporting {}: stopped at an error; the rows of the {kept} results read before it are kept in {}",
                    args.file.display(),
                    output.display()
                )
            });
        }
    }
    out.out.close()?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "results": reader.results_read(),
                "output": output.display().to_string(),
                "ignored_bytes": reader.ignored_bytes(),
                "file_damage": reader.damage(),
            })
        );
    } else if !args.quiet {
        report_damage(&args.file, &reader);
    }
    Ok(())
}

/// Writes the rows of the export, joined with the trace when `--with-trace` asks.
fn write_rows(
    args: &ExportArgs,
    reader: &mut ResultsReader<File>,
    out: &mut impl Write,
) -> Result<()> {
    if let Some(trace) = &args.with_trace {
        return write_joined_rows(args, trace, reader, out);
    }
    if args.csv {
        export_csv(reader, out)
    } else {
        export_jsonl(reader, out)
    }
    .with_context(|| format!("exporting {}", args.file.display()))?;
    Ok(())
}

/// Streams the trace through a [`TraceJoin`] with the results, writing each row with its
/// query's fields from the trace.
fn write_joined_rows(
    args: &ExportArgs,
    trace: &Path,
    reader: &mut ResultsReader<File>,
    out: &mut impl Write,
) -> Result<()> {
    let read = ReadArgs {
        dns_ports: args.dns_ports.clone(),
        queries_only: false,
        responses_only: false,
        drop_malformed: false,
    };
    let mut input = open_input(trace, &read, &Progress::new(true))?;
    let joined = if args.csv {
        let mut w = CsvWriter::with_trace_columns(out)?;
        let mut join = TraceJoin::new(reader, |r, t| w.write_with_trace(r, t));
        let read = input.source.run(&mut join);
        read.map(|()| join.finish())
    } else {
        let mut w = JsonlWriter::new(out);
        let mut join = TraceJoin::new(reader, |r, t| w.write_with_trace(r, t));
        let read = input.source.run(&mut join);
        read.map(|()| join.finish())
    };
    let context = || format!("joining {} with {}", args.file.display(), trace.display());
    let report = joined
        .with_context(|| format!("reading {}", trace.display()))?
        .with_context(context)?;
    if !args.quiet {
        if report.missing > 0 {
            eprintln!(
                "ldplayer: {} queries of {} have no result: lost in damaged blocks",
                report.missing,
                trace.display()
            );
        }
        if report.queries_after_last_result {
            eprintln!(
                "ldplayer: {} goes on after the last result's query (a replay stopped early?); the queries after it have no result and are left out",
                trace.display()
            );
        }
    }
    Ok(())
}

/// An output that remembers whether a write failed, to tell write errors from read errors.
struct WatchedOutput {
    out: Output,
    failed: bool,
}

impl Write for WatchedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.out.write(buf);
        self.failed |= r.is_err();
        r
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.out.flush();
        self.failed |= r.is_err();
        r
    }
}

/// `results summary`: the summary `replay` printed at the end, from the results file.
fn summary(args: ResultsSummaryArgs) -> Result<()> {
    let mut reader = ResultsReader::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let report = Summary::from_results(&mut reader)
        .with_context(|| format!("reading {}", args.file.display()))?
        .report();
    if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("file_damage".into(), serde_json::to_value(reader.damage())?);
        }
        println!("{json}");
    } else {
        print!("{report}");
    }
    report_damage(&args.file, &reader);
    Ok(())
}

/// Says on standard error what a results file lost, if anything.
fn report_damage(file: &Path, reader: &ResultsReader<File>) {
    let damage = reader.damage();
    if !damage.is_clean() {
        eprintln!(
            "ldplayer: {}: {damage}; {} results read",
            file.display(),
            reader.results_read()
        );
    }
}
