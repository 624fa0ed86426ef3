//! The figures of a ramp (`replay --ramp-to`): answers against the offered rate, latency
//! quantiles against the offered rate, each with the knee and the capacity marked.

use super::figures::num;
use super::ReplayData;
use crate::figure::{Figure, LineChart, Plot, Scale, Series, SeriesStyle, Table};
use ldplayer_results::{CapacityReport, RampSecond};

/// The ramp figures of the inputs that are ramps (none when no input is), and a sentence per
/// ramp saying its capacity.
pub(super) fn figures(inputs: &[(&str, &ReplayData)], several: bool) -> (Vec<Figure>, Vec<String>) {
    let ramps: Vec<(&str, CapacityReport)> = inputs
        .iter()
        .filter_map(|(label, d)| Some((*label, d.capacity()?)))
        .collect();
    if ramps.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let name = |label: &str, what: &str| {
        if several {
            format!("{label} {what}")
        } else {
            what.to_string()
        }
    };
    let words = ramps
        .iter()
        .map(|(label, c)| format!("{label}: {}", c.to_string().trim_end().replace('\n', "; ")))
        .collect();
    let figures = vec![answered(&ramps, &name), latency(&ramps, &name, &QUANTILES)];
    (figures, words)
}

/// The knee and the capacity in a caption's words.
fn marks_sentence(ramps: &[(&str, CapacityReport)]) -> String {
    let each: Vec<String> = ramps
        .iter()
        .map(|(label, c)| {
            let knee = match (c.knee_offered_qps, c.limited_by) {
                (Some(k), "latency") => format!(
                    "the knee at {} q/s offered (latency p{} over {} ms)",
                    num(k),
                    num(c.spec.latency_percentile),
                    num(c.spec.max_latency_ms.unwrap_or(f64::NAN))
                ),
                (Some(k), _) => format!(
                    "the knee at {} q/s offered (over {}% lost)",
                    num(k),
                    num(c.spec.max_loss_pct)
                ),
                _ => "no knee: the server kept up with the whole ramp".to_string(),
            };
            format!(
                "{label}: capacity {} answers/s at {} q/s offered, {knee}",
                num(c.capacity_qps),
                num(c.offered_qps)
            )
        })
        .collect();
    format!(" {}.", each.join("; "))
}

/// The seconds of a ramp as a table: what each figure draws.
fn seconds_table(ramps: &[(&str, CapacityReport)], several: bool) -> Table {
    let mut columns = vec![];
    if several {
        columns.push("replay");
    }
    columns.extend([
        "t (s)",
        "offered/s",
        "answered/s",
        "lost %",
        "p50 (ms)",
        "p95 (ms)",
        "p99 (ms)",
    ]);
    let mut table = Table::new(columns);
    let ms = |v: Option<f64>| v.map_or("–".to_string(), num);
    for (label, c) in ramps {
        for s in &c.seconds {
            let mut row = Vec::new();
            if several {
                row.push(label.to_string());
            }
            row.extend([
                num(s.t_s),
                num(s.offered_qps),
                num(s.answered_qps),
                format!("{:.2}", s.loss_pct),
                ms(s.latency_p50_ms),
                ms(s.latency_p95_ms),
                ms(s.latency_p99_ms),
            ]);
            table.push(row);
        }
    }
    table
}

/// A vertical dashed line at `x` from `y0` to `y1`: the knee.
fn vertical(name: String, x: f64, y0: f64, y1: f64) -> Series {
    Series {
        name,
        points: vec![(x, y0), (x, y1)],
        style: SeriesStyle::Dashed,
    }
}

/// The latency quantiles a ramp's latency figure draws: its name and its value in a second.
pub(crate) type Quantile = (&'static str, fn(&RampSecond) -> Option<f64>);

/// The median, 95th and 99th percentiles.
const QUANTILES: [Quantile; 3] = [
    ("p50", |s| s.latency_p50_ms),
    ("p95", |s| s.latency_p95_ms),
    ("p99", |s| s.latency_p99_ms),
];

/// Answers against the offered rate, second by second, of each ramp (`name` makes a series'
/// name of a ramp's label and what it is), with each one's capacity and knee.
pub(crate) fn answered(
    ramps: &[(&str, CapacityReport)],
    name: &dyn Fn(&str, &str) -> String,
) -> Figure {
    let mut series = Vec::new();
    let top = ramps
        .iter()
        .flat_map(|(_, c)| c.seconds.iter().map(|s| s.offered_qps))
        .fold(0.0, f64::max);
    series.push(Series {
        name: "offered (all answered)".to_string(),
        points: vec![(0.0, 0.0), (top, top)],
        style: SeriesStyle::Dashed,
    });
    for (label, c) in ramps {
        series.push(Series {
            name: name(label, "answered"),
            points: c
                .seconds
                .iter()
                .map(|s| (s.offered_qps, s.answered_qps))
                .collect(),
            style: SeriesStyle::Line,
        });
        if c.at_s.is_some() {
            series.push(Series {
                name: name(label, "capacity"),
                points: vec![(c.offered_qps, c.capacity_qps)],
                style: SeriesStyle::Points,
            });
        }
        if let Some(k) = c.knee_offered_qps {
            series.push(vertical(name(label, "knee"), k, 0.0, top));
        }
    }
    let several = ramps.len() > 1;
    Figure {
        id: "replay-ramp-answered".to_string(),
        title: "Answers against the offered rate (ramp)".to_string(),
        caption: format!(
            "Each second of the ramp: queries answered per second against queries offered (due) \
             per second, counted by the second each query was due in, whenever its answer came \
             (resperf's attribution). The dashed diagonal is every query answered; where the \
             answers leave it the server stopped keeping up. The capacity (a point) is the \
             highest answer rate of the seconds before the first one over the bounds (the knee, \
             dashed vertical), as resperf computes its maximum throughput.{}",
            marks_sentence(ramps)
        ),
        plot: Plot::Lines(LineChart {
            x_label: "offered (queries/s)".to_string(),
            y_label: "answered (queries/s)".to_string(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series,
        }),
        table: seconds_table(ramps, several),
    }
}

/// The `quantiles` of latency against the offered rate, second by second, of each ramp, with
/// each one's knee.
pub(crate) fn latency(
    ramps: &[(&str, CapacityReport)],
    name: &dyn Fn(&str, &str) -> String,
    quantiles: &[Quantile],
) -> Figure {
    let mut series = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for (label, c) in ramps {
        for &(q, value) in quantiles {
            let points: Vec<(f64, f64)> = c
                .seconds
                .iter()
                .filter_map(|s| Some((s.offered_qps, value(s)?)))
                .filter(|p| p.1 > 0.0)
                .collect();
            for p in &points {
                lo = lo.min(p.1);
                hi = hi.max(p.1);
            }
            series.push(Series {
                name: name(label, &format!("latency {q}")),
                points,
                style: SeriesStyle::Line,
            });
        }
    }
    for (label, c) in ramps {
        if let (Some(k), true) = (c.knee_offered_qps, lo <= hi) {
            series.push(vertical(name(label, "knee"), k, lo, hi));
        }
    }
    let mut figure = Figure {
        id: "replay-ramp-latency".to_string(),
        title: "Latency against the offered rate (ramp)".to_string(),
        caption: format!(
            "Each second of the ramp: the latency ({}) of the answers to the queries due in it \
             (from sending to the answer, 1% precision), against the rate offered in that \
             second, on a log scale. Queueing in front of a saturated server shows as the \
             curves turning up; the knee is dashed.{}",
            quantiles.iter().map(|q| q.0).collect::<Vec<_>>().join(", "),
            marks_sentence(ramps)
        ),
        plot: Plot::Lines(LineChart {
            x_label: "offered (queries/s)".to_string(),
            y_label: "latency (ms)".to_string(),
            x_scale: Scale::Linear,
            y_scale: Scale::Log,
            series,
        }),
        table: seconds_table(ramps, ramps.len() > 1),
    };
    if lo > hi {
        figure.plot = Plot::Note {
            text: "No query of the ramp was answered: there is no latency to draw.".to_string(),
        };
    }
    figure
}
