//! `ldplayer results export FILE --csv|--jsonl`

use crate::args::{ExportArgs, ResultsCommand};
use anyhow::{bail, Context, Result};
use ldplayer_results::{export_csv, export_jsonl, ResultsReader};
use std::io::{BufWriter, Write};

pub fn run(command: ResultsCommand) -> Result<()> {
    match command {
        ResultsCommand::Export(args) => export(args),
    }
}

fn export(args: ExportArgs) -> Result<()> {
    if !args.csv && !args.jsonl {
        bail!("say --csv or --jsonl");
    }
    let mut reader = ResultsReader::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let n = if args.csv {
        export_csv(&mut reader, &mut out)
    } else {
        export_jsonl(&mut reader, &mut out)
    }
    .with_context(|| format!("exporting {}", args.file.display()))?;
    out.flush()?;
    if reader.ignored_bytes() > 0 {
        eprintln!(
            "ldplayer: {n} results exported; the last {} bytes of {} were cut short or damaged and are left out",
            reader.ignored_bytes(),
            args.file.display()
        );
    }
    Ok(())
}
