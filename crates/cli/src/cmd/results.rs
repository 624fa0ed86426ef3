//! `ldplayer results export FILE --csv|--jsonl [-o OUTPUT] [--json | -q]`

use crate::args::{ExportArgs, ResultsCommand};
use crate::io::{refuse_same_file, Output};
use anyhow::{bail, Context, Result};
use ldplayer_results::{export_csv, export_jsonl, ResultsReader};
use std::io::Write;
use std::path::Path;

pub fn run(command: ResultsCommand) -> Result<()> {
    match command {
        ResultsCommand::Export(args) => export(args),
    }
}

fn export(args: ExportArgs) -> Result<()> {
    if !args.csv && !args.jsonl {
        bail!("say --csv or --jsonl");
    }
    let output = args.output.as_deref().unwrap_or(Path::new("-"));
    refuse_same_file(output, [args.file.as_path()])?;
    let mut reader = ResultsReader::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut out = WatchedOutput {
        out: Output::create(output)?,
        failed: false,
    };
    let exported = if args.csv {
        export_csv(&mut reader, &mut out)
    } else {
        export_jsonl(&mut reader, &mut out)
    };
    let n = match exported {
        Ok(n) => n,
        // A write error: the temporary file goes, a file of that name stays as it was.
        Err(e) if out.failed => {
            drop(out);
            return Err(e).with_context(|| format!("writing {}", output.display()));
        }
        // A read error: keep what was exported before it.
        Err(e) => {
            let kept = reader.results_read();
            out.out.close()?;
            return Err(e).with_context(|| {
                format!(
                    "exporting {}: reading stopped at an error; the {kept} results before it are kept in {}",
                    args.file.display(),
                    output.display()
                )
            });
        }
    };
    out.out.close()?;
    let ignored = reader.ignored_bytes();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "results": n,
                "output": output.display().to_string(),
                "ignored_bytes": ignored,
            })
        );
    } else if ignored > 0 && !args.quiet {
        eprintln!(
            "ldplayer: {n} results exported; the last {ignored} bytes of {} were cut short or damaged and are left out",
            args.file.display()
        );
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
