//! `ldplayer results export FILE --csv|--jsonl [--with-trace TRACE] [-o OUTPUT] [--json | -q]`
//! , `ldplayer results summary FILE [--json]` and `ldplayer results merge FILE... -o FILE`

use crate::args::{ExportArgs, MergeArgs, ReadArgs, ResultsCommand, ResultsSummaryArgs};
use crate::io::{open_input, Output};
use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use ldplayer_results::fidelity::Fidelity;
use ldplayer_results::shard_checks::{input_name, missing_shards, shard_warnings};
use ldplayer_results::{
    export_csv, export_jsonl, mark_complete, merge, merged_run_info, Capacity, CsvWriter,
    InputReport, JsonlWriter, ResultsReader, ResultsWriter, Summary, TraceJoin, MERGE_WINDOW,
};
use std::fs::File;
use std::io::Write;
use std::path::Path;

pub fn run(command: ResultsCommand) -> Result<()> {
    match command {
        ResultsCommand::Export(args) => export(args),
        ResultsCommand::Summary(args) => summary(args),
        ResultsCommand::Merge(args) => merge_files(args),
    }
}

/// `results merge`: shards' results files into one, in trace order. The output appears only
/// when the merge is complete (written under a temporary name, then renamed).
fn merge_files(args: MergeArgs) -> Result<()> {
    if args.output == Path::new("-") {
        bail!("results merge writes a results file: give -o FILE");
    }
    let readers = args
        .files
        .iter()
        .map(|f| ResultsReader::open(f).with_context(|| format!("cannot read {}", f.display())))
        .collect::<Result<Vec<_>>>()?;
    // The merged run is complete only when every input's was: marked so at the end.
    let unfinished_run = merged_run_info(&readers);
    let mut out = ResultsWriter::with_run_info(Output::create(&args.output)?, &unfinished_run)?;
    let report = merge(readers, &mut out, MERGE_WINDOW)
        .with_context(|| format!("merging into {}", args.output.display()))?;
    out.into_inner()
        .with_context(|| format!("writing {}", args.output.display()))?
        .close()?;
    if !report.inputs.iter().any(InputReport::unfinished) {
        mark_complete(&args.output)
            .with_context(|| format!("marking {} complete", args.output.display()))?;
    }
    for (file, input) in args.files.iter().zip(&report.inputs) {
        if input.unfinished() {
            eprintln!(
                "ldplayer: {} did not finish (its replay was killed or is still running): \
                 merged the {} results it holds; {} is INCOMPLETE too",
                file.display(),
                input.results,
                args.output.display()
            );
        } else if !input.damage.is_clean() {
            eprintln!("ldplayer: {}: {}", file.display(), input.damage);
        }
    }
    for w in shard_warnings(&args.files, &report) {
        eprintln!("ldplayer: {w}");
    }
    if report.duplicates > 0 {
        eprintln!(
            "ldplayer: {} results repeat a query another input already had (overlapping \
             shards?): kept the first",
            report.duplicates
        );
    }
    if args.json {
        let inputs: Vec<_> = args
            .files
            .iter()
            .zip(&report.inputs)
            .map(|(f, i)| {
                serde_json::json!({
                    "file": f.display().to_string(),
                    "results": i.results,
                    "cut_short": i.cut_short,
                    "complete": i.run_info.as_ref().and_then(|r| r.complete),
                    "file_damage": i.damage,
                    "shard": i.run_info.as_ref().and_then(|r| r.shard).map(|s| s.to_string()),
                    "clock": i.run_info.as_ref().and_then(|r| r.clock),
                    "host": i.run_info.as_ref().and_then(|r| r.host.clone()),
                    "timing_error_p50_us": i.timing_error_p50_us,
                    "timing_error_p99_us": i.timing_error_p99_us,
                    "late_start": i.late_start,
                    "began_late_s": i.began_late_ns.map(|ns| ns as f64 / 1e9),
                    "late": i.late(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "output": args.output.display().to_string(),
                "merged": report.merged,
                "duplicates": report.duplicates,
                "late": report.late,
                "missing_shards": missing_shards(&report).iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "late_shards": args.files.iter().zip(&report.inputs).filter(|(_, i)| i.late()).map(|(f, i)| input_name(f, i)).collect::<Vec<_>>(),
                "inputs": inputs,
            })
        );
    } else if !args.quiet {
        eprintln!(
            "merged {} results from {} files into {}",
            report.merged,
            args.files.len(),
            args.output.display()
        );
    }
    Ok(())
}

fn export(args: ExportArgs) -> Result<()> {
    if !args.csv && !args.jsonl {
        bail!("say --csv or --jsonl");
    }
    let output = args.output.as_deref().unwrap_or(Path::new("-"));
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
    let incomplete = reader.incomplete_warning(args.file.display());
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "results": reader.results_read(),
                "output": output.display().to_string(),
                "ignored_bytes": reader.ignored_bytes(),
                "file_damage": reader.damage(),
                "complete": reader.complete(),
                "warnings": incomplete.iter().collect::<Vec<_>>(),
            })
        );
    } else if !args.quiet {
        if let Some(w) = &incomplete {
            eprintln!("ldplayer: warning: {w}");
        }
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
    let read = ReadArgs::every_message(args.dns_ports.clone());
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
    // The whole file, and each target of a replay to several servers on its own; a ramp's file
    // also gives its capacity and its seconds (the run info keeps the ramp).
    let mut capacity = Capacity::for_run(reader.run_info());
    let mut all = Summary::new();
    let mut per_target: std::collections::BTreeMap<u16, Summary> = Default::default();
    for r in &mut reader {
        let r = r.with_context(|| format!("reading {}", args.file.display()))?;
        all.add(&r);
        per_target.entry(r.target).or_default().add(&r);
        if let Some(c) = &mut capacity {
            c.add(&r);
        }
    }
    let report = all.report();
    let capacity = capacity.map(|c| c.report());
    let info = reader.run_info().cloned().unwrap_or_default();
    let several = info.targets.as_ref().is_some_and(|t| t.len() > 1) || per_target.len() > 1;
    // A run that did not finish is said first, where the summary is read.
    let incomplete = reader.incomplete_warning(args.file.display());
    // Whether the replay kept its trace's timing, judged as the replay judged it (only where
    // the file says whether it had a schedule to keep), for each target.
    let judged = info.closed_loop == Some(false);
    let fidelity = |r: &ldplayer_results::SummaryReport| judged.then(|| Fidelity::of(r, false));
    let targets: Vec<_> = per_target
        .iter()
        .map(|(&t, s)| {
            let r = s.report();
            (t, info.target_name(t), fidelity(&r), r)
        })
        .collect();
    if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("file_damage".into(), serde_json::to_value(reader.damage())?);
            obj.insert("complete".into(), serde_json::to_value(reader.complete())?);
            if !several {
                if let Some(fidelity) = fidelity(&report) {
                    obj.insert("fidelity".into(), serde_json::to_value(fidelity)?);
                }
            } else {
                let list = targets
                    .iter()
                    .map(|(t, name, fidelity, r)| {
                        let mut json = serde_json::to_value(r)?;
                        if let Some(obj) = json.as_object_mut() {
                            obj.insert("target".into(), (*t).into());
                            obj.insert("server".into(), name.clone().into());
                            if let Some(f) = fidelity {
                                obj.insert("fidelity".into(), serde_json::to_value(f)?);
                            }
                        }
                        Ok(json)
                    })
                    .collect::<Result<Vec<_>>>()?;
                obj.insert("targets".into(), list.into());
            }
            if let Some(c) = &capacity {
                obj.insert("ramp".into(), serde_json::to_value(c)?);
            }
            obj.insert(
                "warnings".into(),
                serde_json::to_value(incomplete.iter().collect::<Vec<_>>())?,
            );
        }
        println!("{json}");
        if let Some(w) = &incomplete {
            eprintln!("ldplayer: warning: {w}");
        }
    } else {
        if let Some(w) = &incomplete {
            println!("WARNING: {w}");
        }
        if several {
            for (t, name, fidelity, r) in &targets {
                println!("target {t}: {name}");
                print!("{r}");
                if let Some(fidelity) = fidelity {
                    println!("{fidelity}");
                }
            }
        } else {
            print!("{report}");
            if let Some(fidelity) = fidelity(&report) {
                println!("{fidelity}");
            }
        }
        if let Some(c) = &capacity {
            print!("{c}");
            if args.seconds {
                print!("{}", seconds_table(c));
            }
        }
    }
    report_damage(&args.file, &reader);
    Ok(())
}

/// A ramp's seconds as a table: offered, sent, answered, lost and latency per second.
fn seconds_table(c: &ldplayer_results::CapacityReport) -> String {
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut out = format!(
        "{:>8} {:>10} {:>10} {:>10} {:>7} {:>9} {:>9} {:>9}\n",
        "t_s", "offered/s", "sent/s", "answered/s", "lost%", "p50_ms", "p95_ms", "p99_ms"
    );
    for s in &c.seconds {
        out.push_str(&format!(
            "{:>8} {:>10.1} {:>10.1} {:>10.1} {:>7.2} {:>9} {:>9} {:>9}\n",
            s.t_s,
            s.offered_qps,
            s.sent_qps,
            s.answered_qps,
            s.loss_pct,
            ms(s.latency_p50_ms),
            ms(s.latency_p95_ms),
            ms(s.latency_p99_ms)
        ));
    }
    out
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
