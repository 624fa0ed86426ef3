//! Reads results files and builds their report section, timing both parts: the benchmark of
//! [`ReplayData::read`] and [`section`] (`bench/report.sh`).
//!
//! Usage: `report_replay [--tables] FILE...`; prints one line per file, then one for the section
//! (with `--tables`, its paragraphs and every figure's table too).

use ldplayer_report::replay::{section, ReplayData};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    let tables = files.first().is_some_and(|a| a == "--tables");
    if tables {
        files.remove(0);
    }
    if files.is_empty() {
        eprintln!("usage: report_replay [--tables] FILE...");
        return ExitCode::from(2);
    }
    let start = Instant::now();
    let mut inputs = Vec::new();
    for file in &files {
        let t = Instant::now();
        match ReplayData::read(Path::new(file)) {
            Ok(data) => {
                println!(
                    "{file}: {} queries read in {:.2} s",
                    data.results(),
                    t.elapsed().as_secs_f64()
                );
                for note in data.notes() {
                    println!("  note: {note}");
                }
                inputs.push((file.as_str(), data));
            }
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let t = Instant::now();
    let refs: Vec<(&str, &ReplayData)> = inputs.iter().map(|(l, d)| (*l, d)).collect();
    let section = section(&refs);
    let points: usize = section
        .figures
        .iter()
        .map(|f| match &f.plot {
            ldplayer_report::Plot::Lines(c) => c.series.iter().map(|s| s.points.len()).sum(),
            ldplayer_report::Plot::Boxes(c) => c.groups.len(),
            ldplayer_report::Plot::Note { .. } => 0,
        })
        .sum();
    let json = serde_json::to_string(&section.figures).map_or(0, |s| s.len());
    println!(
        "section: {} figures, {points} points, {json} bytes as JSON, built in {:.3} s",
        section.figures.len(),
        t.elapsed().as_secs_f64()
    );
    if tables {
        for p in &section.paragraphs {
            println!("\n{p}");
        }
        for f in &section.figures {
            println!("\n{} [{}]\n{}", f.title, f.id, f.table.columns.join(" | "));
            for row in &f.table.rows {
                println!("{}", row.join(" | "));
            }
        }
    }
    let queries: u64 = inputs.iter().map(|(_, d)| d.results()).sum();
    println!(
        "total: {queries} queries in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
