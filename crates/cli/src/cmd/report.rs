//! `ldplayer report`: the figures of replays and experiments in one self-contained HTML file.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use ldplayer_report::input::{self, Labelled};

use crate::args::ReportArgs;

pub fn run(args: ReportArgs) -> Result<()> {
    let started = Instant::now();
    let made = write(&args.inputs, &args.output, args.title.as_deref())?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "report": args.output,
                "bytes": made.bytes,
                "figures": made.figures,
                "files": made.files,
                "png_skipped": made.png_skipped,
                "notes": made.notes,
                "seconds": started.elapsed().as_secs_f64(),
            })
        );
    } else if !args.quiet {
        for note in &made.notes {
            eprintln!("report: {note}");
        }
        if let Some(why) = &made.png_skipped {
            eprintln!("report: figures written as SVG only: {why}");
        }
        println!(
            "report: {} ({} figures, {} KiB, {:.1} s); figures in {}",
            args.output.display(),
            made.figures,
            made.bytes.div_ceil(1024),
            started.elapsed().as_secs_f64(),
            figures_dir(&args.output).display()
        );
    }
    Ok(())
}

/// What writing a report made.
pub struct Made {
    /// The HTML file's size in bytes.
    pub bytes: u64,
    /// How many figures it has.
    pub figures: usize,
    /// Every file written (the HTML file first).
    pub files: Vec<PathBuf>,
    /// Why no PNG was written, when none was.
    pub png_skipped: Option<String>,
    /// What could not be read, by input.
    pub notes: Vec<String>,
}

/// Reads `paths` and writes their report to `output` (figures beside it), titled `title` or
/// after the inputs.
pub fn write(paths: &[PathBuf], output: &Path, title: Option<&str>) -> Result<Made> {
    let inputs = input::read_all(paths)?;
    let title = title.map_or_else(|| default_title(&inputs), str::to_string);
    let report = input::report(&title, &inputs);
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let written = report.write(output)?;
    let bytes = std::fs::metadata(output).map_or(0, |m| m.len());
    Ok(Made {
        bytes,
        figures: report.sections.iter().map(|s| s.figures.len()).sum(),
        files: std::iter::once(written.html)
            .chain(written.svgs)
            .chain(written.pngs)
            .collect(),
        png_skipped: written.pngs_skipped,
        notes: input::notes(&inputs),
    })
}

fn default_title(inputs: &[Labelled]) -> String {
    let names: Vec<&str> = inputs.iter().map(|i| i.label.as_str()).collect();
    format!("ldplayer report: {}", names.join(", "))
}

/// The folder the figures of the report at `output` go to (`report.html`:
/// `report-figures/` beside it).
pub fn figures_dir(output: &Path) -> PathBuf {
    ldplayer_report::html::figures_dir(output)
}
