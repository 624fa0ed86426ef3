//! The server's memory and established connections over each run, one line per run, with
//! the end of the warm-up and of the trace marked.

use ldplayer_study::Sample;

use super::layout::{first_seen, num, Inputs};
use crate::figure::{Figure, LineChart, Plot, Scale, Series, SeriesStyle};
use crate::html::Section;

/// A sampled quantity drawn over time.
struct TimeMetric {
    id: &'static str,
    title: &'static str,
    y_label: &'static str,
    /// Its metric in `summary.csv` (for the table's median).
    metric: &'static str,
    value: fn(&Sample) -> f64,
    /// Why the figure is left out when every value is 0.
    all_zero: &'static str,
}

const TIME_METRICS: [TimeMetric; 2] = [
    TimeMetric {
        id: "exp-memory-over-time",
        title: "Server memory over time",
        y_label: "resident memory (MiB)",
        metric: "server_rss_mib",
        value: |s| s.rss_kib as f64 / 1024.0,
        all_zero: "No sample measured the server's memory",
    },
    TimeMetric {
        id: "exp-connections-over-time",
        title: "Established TCP connections over time",
        y_label: "connections",
        metric: "tcp_established",
        value: |s| s.tcp_established as f64,
        all_zero: "No run held an established TCP connection (they are all over UDP?)",
    },
];

/// The section of time series.
pub(super) fn section(inputs: &Inputs<'_>) -> Section {
    let mut section = Section {
        title: "Over time".into(),
        ..Section::default()
    };
    for m in &TIME_METRICS {
        match figure(inputs, m) {
            Ok(f) => section.figures.push(f),
            Err(why) => section
                .paragraphs
                .push(format!("{why}, so the figure \"{}\" is left out.", m.title)),
        }
    }
    section
}

fn figure(inputs: &Inputs<'_>, m: &TimeMetric) -> Result<Figure, String> {
    let mut series = Vec::new();
    let mut table = inputs.run_table(&["samples", "p50 after warm-up (summary.csv)", "max"]);
    let mut top = 0.0f64;
    for (input, run) in inputs.runs() {
        if run.samples.is_empty() {
            continue;
        }
        let points: Vec<(f64, f64)> = run.samples.iter().map(|s| (s.t_s, (m.value)(s))).collect();
        let max = points.iter().map(|p| p.1).fold(0.0, f64::max);
        top = top.max(max);
        let mut cells = inputs.run_cells(input, run);
        cells.extend([
            points.len().to_string(),
            run.metric(m.metric)
                .map_or_else(String::new, |d| num(d.p50)),
            num(max),
        ]);
        table.push(cells);
        series.push(Series {
            name: input.run_name(run),
            points,
            style: SeriesStyle::Line,
        });
    }
    if series.is_empty() {
        return Err("No run has samples".into());
    }
    if top <= 0.0 {
        return Err(m.all_zero.into());
    }
    // The marks: vertical dashed segments at each distinct end of warm-up and of the trace.
    let runs = || inputs.runs().map(|(_, r)| r);
    let warmups = first_seen(runs().map(|r| tenths(r.warmup_s())));
    let ends = first_seen(runs().map(|r| tenths(r.duration_s())));
    for (name, at) in warmups
        .iter()
        .map(|&w| ("warm-up end", w))
        .chain(ends.iter().map(|&e| ("trace end", e)))
    {
        let x = at as f64 / 10.0;
        series.push(Series {
            name: format!("{name} ({} s)", num(x)),
            points: vec![(x, 0.0), (x, top)],
            style: SeriesStyle::Dashed,
        });
    }
    Ok(Figure {
        id: m.id.into(),
        title: m.title.into(),
        caption: format!(
            "{}, sampled each second of each run (one line per run), x in seconds since the \
             replay started. Dashed: the end of the warm-up and the trace's end; only the \
             seconds between them count in summary.csv (the rest is warm-up and cool-down).",
            m.title
        ),
        plot: Plot::Lines(LineChart {
            x_label: "time since the replay started (s)".into(),
            y_label: m.y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series,
        }),
        table,
    })
}

/// Seconds in tenths, to tell marks apart without comparing floats.
fn tenths(s: f64) -> i64 {
    (s * 10.0).round() as i64
}
