//! The section of a report that draws one or several replays, every figure overlaying them.

use super::distribution::{
    cdf_points, percentiles, CdfPoint, MAX_CDF_POINTS, TABLE_HEADERS, TABLE_TENTHS,
};
use super::seconds::{Ending, Second, TimeSeries};
use super::ReplayData;
use crate::figure::{Figure, LineChart, Plot, Scale, Series, SeriesStyle, Table};
use crate::html::Section;
use ldplayer_trace::Proto;

const NS_PER_MS: f64 = 1e-6;
const NS_PER_US: f64 = 1e-3;

/// Share of the timing errors left out of its plot at each end, so that a few outliers do not
/// squeeze the body into a pixel (the table gives the extremes).
const TIMING_CLIP: f64 = 0.005;

/// A distribution of fewer values than this is drawn as points, one per value, rather than as a
/// curve, which would invent the values between them.
const MIN_CURVE_VALUES: u64 = 20;

/// A distribution figure whose every series has fewer values than this is not drawn: a dot or
/// two say nothing a table does not say better.
const MIN_DRAWN_VALUES: u64 = 3;

/// How a distribution of `n` values is drawn: as `curve`, or as points when it has too few
/// values for a curve.
fn distribution_style(n: u64, curve: SeriesStyle) -> SeriesStyle {
    if n < MIN_CURVE_VALUES {
        SeriesStyle::Points
    } else {
        curve
    }
}

/// The sample of one series of a distribution figure: its name, how many values it has, and
/// how many distinct values (buckets).
type Sample = (String, u64, usize);

/// What a distribution figure says about its samples (one per series, of `what`: the noun, one
/// and many): the sentence for its caption when some series are drawn as points, and the note shown
/// instead of the drawing when no series is worth drawing (fewer than [`MIN_DRAWN_VALUES`]
/// values, or all of one value: a lone dot).
fn sample_size(samples: &[Sample], (one, many): (&str, &str)) -> (String, Option<String>) {
    let described = |(name, n, distinct): &Sample| {
        let same = if *distinct == 1 && *n > 1 {
            ", all equal"
        } else {
            ""
        };
        let noun = if *n == 1 { one } else { many };
        format!("{name}: {n} {noun}{same}")
    };
    let lone = |s: &&Sample| s.1 < MIN_DRAWN_VALUES || s.2 == 1;
    if !samples.is_empty() && samples.iter().all(|s| lone(&s)) {
        let list: Vec<String> = samples.iter().map(described).collect();
        let note = format!(
            "Too few values to draw a distribution ({}): the table gives them.",
            list.join("; ")
        );
        return (String::new(), Some(note));
    }
    let few: Vec<String> = samples
        .iter()
        .filter(|s| s.1 < MIN_CURVE_VALUES)
        .map(described)
        .collect();
    if few.is_empty() {
        return (String::new(), None);
    }
    let caption = format!(
        " Distributions of fewer than {MIN_CURVE_VALUES} {many} are drawn as points, one per \
         value, not as a curve ({}).",
        few.join("; ")
    );
    (caption, None)
}

/// `figure` with the caption sentence and note of [`sample_size`] for `samples`.
fn with_sample_size(mut figure: Figure, samples: &[Sample], what: (&str, &str)) -> Figure {
    let (caption, note) = sample_size(samples, what);
    figure.caption.push_str(&caption);
    if let Some(text) = note {
        figure.plot = Plot::Note { text };
    }
    figure
}

/// A figure of the distributions `rows` (name, buckets): `plot` drawn from them, their
/// [`percentile_table`] counted in `what`'s plural, and the caption sentence and note of
/// [`sample_size`].
fn distribution_figure(
    id: &str,
    title: &str,
    caption: String,
    plot: Plot,
    rows: &[(String, Vec<(f64, u64)>)],
    what: (&str, &str),
) -> Figure {
    let figure = Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption,
        plot,
        table: percentile_table(what.1, rows),
    };
    with_sample_size(figure, &counts(rows), what)
}

/// The sample of each distribution in `rows` (name, buckets).
fn counts(rows: &[(String, Vec<(f64, u64)>)]) -> Vec<Sample> {
    rows.iter()
        .map(|(name, buckets)| {
            let n = buckets.iter().map(|b| b.1).sum();
            (name.clone(), n, buckets.len())
        })
        .collect()
}

/// The figures of the replays `inputs` (each with its label), overlaid, with a paragraph per
/// replay summarising it in words and saying what could not be read.
///
/// Series are named by transport (`udp`) for one replay, and by label and transport
/// (`base udp`) for several. Figure ids start with `replay-`.
pub fn section(inputs: &[(&str, &ReplayData)]) -> Section {
    let names = Names {
        several: inputs.len() > 1,
    };
    let mut section = Section {
        title: if inputs.len() > 1 {
            "Replays".to_string()
        } else {
            "Replay".to_string()
        },
        ..Section::default()
    };
    for (label, data) in inputs {
        section.paragraphs.push(summary_paragraph(label, data));
        if !data.notes().is_empty() {
            section
                .paragraphs
                .push(format!("{label}: {}", data.notes().join(" ")));
        }
    }
    let (ramp_figures, ramp_words) = super::ramp::figures(inputs, names.several);
    section.paragraphs.extend(ramp_words);
    let figures = ramp_figures.into_iter().chain([
        latency_cdf(inputs, &names),
        latency_ccdf(inputs, &names),
        answers_per_second(inputs, &names),
        timing_error_cdf(inputs, &names),
        connections_per_second(inputs, &names),
        endings_per_second(inputs, &names),
        rate_error_cdf(inputs, &names),
        interarrival_cdf(inputs, &names),
    ]);
    let mut empty = Vec::new();
    for figure in figures {
        let drawn = match &figure.plot {
            Plot::Lines(chart) => chart.series.iter().any(|s| !s.points.is_empty()),
            Plot::Boxes(chart) => !chart.groups.is_empty(),
            Plot::Note { .. } => true,
        };
        if drawn {
            section.figures.push(figure);
        } else {
            empty.push(figure.title);
        }
    }
    if !empty.is_empty() {
        section.paragraphs.push(format!(
            "Not drawn, for want of data: {}.",
            empty.join("; ")
        ));
    }
    section
}

/// How series are named: by what they show alone, or prefixed with their replay's label.
struct Names {
    several: bool,
}

impl Names {
    fn of(&self, label: &str, what: &str) -> String {
        if self.several {
            format!("{label} {what}")
        } else {
            what.to_string()
        }
    }
}

/// A number with four significant digits (at least), no exponent.
pub(crate) fn num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 9) as usize;
    format!("{v:.decimals$}")
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".to_string()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

fn summary_paragraph(label: &str, data: &ReplayData) -> String {
    let s = data.summary();
    let errors: u64 = s.errors.values().sum();
    let mut text = format!(
        "{label}: {} queries, {} sent, {} answered ({}), {} timeouts, {} errors, over {} s.",
        s.results,
        s.sent,
        s.answered,
        pct(s.answered, s.results),
        s.timeouts,
        errors,
        num(s.duration_s),
    );
    if !s.latency_ms.is_empty() {
        let medians: Vec<String> = s
            .latency_ms
            .iter()
            .map(|(proto, l)| format!("{proto} {} ms", num(l.p50)))
            .collect();
        text.push_str(&format!(" Median latency: {}.", medians.join(", ")));
    }
    if let Some(t) = &s.timing_error_us {
        text.push_str(&format!(
            " Timing error (sent − intended): p50 {} µs, p99 {} µs.",
            num(t.p50),
            num(t.p99)
        ));
    }
    let r = &s.rate_error;
    if let (Some(p50), Some(within)) = (r.p50_pct, r.within_1pct) {
        text.push_str(&format!(
            " Over {} full seconds, the replayed rate is within ±1% of the trace's in {:.1}% \
             of them (median error {}%).",
            r.seconds,
            within * 100.0,
            num(p50)
        ));
    }
    text
}

/// A table of percentiles, one row per distribution: its name, its count, its extremes and
/// [`TABLE_TENTHS`].
fn percentile_table(count_header: &str, rows: &[(String, Vec<(f64, u64)>)]) -> Table {
    let mut columns = vec![
        "series".to_string(),
        count_header.to_string(),
        "min".to_string(),
    ];
    columns.extend(TABLE_HEADERS.iter().map(|h| h.to_string()));
    let mut table = Table::new(columns);
    let mut tenths = vec![0];
    tenths.extend(TABLE_TENTHS);
    for (name, buckets) in rows {
        let n: u64 = buckets.iter().map(|b| b.1).sum();
        let mut row = vec![name.clone(), n.to_string()];
        row.extend(percentiles(buckets, &tenths).into_iter().map(num));
        table.push(row);
    }
    table
}

/// Every transport with answers of every input, with its latency buckets in ms.
fn latency_buckets(
    inputs: &[(&str, &ReplayData)],
    names: &Names,
) -> Vec<(String, Vec<(f64, u64)>)> {
    let mut out = Vec::new();
    for (label, data) in inputs {
        for proto in Proto::ALL {
            let d = &data.latency[proto as usize];
            if d.len() > 0 {
                out.push((names.of(label, proto.as_str()), d.buckets(NS_PER_MS)));
            }
        }
    }
    out
}

fn line_chart(
    x_label: &str,
    y_label: &str,
    x_scale: Scale,
    y_scale: Scale,
    series: Vec<Series>,
) -> Plot {
    Plot::Lines(LineChart {
        x_label: x_label.to_string(),
        y_label: y_label.to_string(),
        x_scale,
        y_scale,
        series,
    })
}

fn cdf_series(
    name: String,
    points: &[CdfPoint],
    y: fn(&CdfPoint) -> f64,
    style: SeriesStyle,
) -> Series {
    Series {
        name,
        points: points.iter().map(|p| (p.x, y(p))).collect(),
        style,
    }
}

fn latency_cdf(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    latency_figure(
        inputs,
        names,
        LatencyView {
            id: "replay-latency-cdf",
            title: "Latency by transport (CDF)",
            caption: format!(
                "Share of answers received within a latency (from sending the query to \
                 receiving its answer; connection set-up excluded), per transport, on a log \
                 scale. Curves are drawn through at most {MAX_CDF_POINTS} points; the table \
                 gives percentiles (ms, nearest rank, to 0.1%)."
            ),
            y_label: "share of answers ≤ x",
            y: |p| p.at_most,
            y_scale: Scale::Linear,
        },
    )
}

fn latency_ccdf(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    latency_figure(
        inputs,
        names,
        LatencyView {
            id: "replay-latency-ccdf",
            title: "Latency tail by transport (CCDF)",
            caption: "Share of answers that took at least a latency, per transport, both axes \
                      on a log scale: the tail (slow answers, retransmissions, handshakes) \
                      shows as the curves' right ends. The table gives percentiles (ms)."
                .to_string(),
            y_label: "share of answers ≥ x",
            y: |p| p.at_least,
            y_scale: Scale::Log,
        },
    )
}

/// What tells the latency CDF and CCDF figures apart: their words, which share a point
/// gives, and the scale of that share.
struct LatencyView {
    id: &'static str,
    title: &'static str,
    caption: String,
    y_label: &'static str,
    y: fn(&CdfPoint) -> f64,
    y_scale: Scale,
}

/// A latency distribution per transport (log latency axis), drawn as `view` says, with the
/// percentile table and the sample sizes: the one figure both the CDF and the CCDF are.
fn latency_figure(inputs: &[(&str, &ReplayData)], names: &Names, view: LatencyView) -> Figure {
    let rows = latency_buckets(inputs, names);
    let counts = counts(&rows);
    let series = rows
        .iter()
        .zip(&counts)
        .map(|((name, b), (_, n, _))| {
            cdf_series(
                name.clone(),
                &cdf_points(b),
                view.y,
                distribution_style(*n, SeriesStyle::Line),
            )
        })
        .collect();
    let plot = line_chart(
        "latency (ms)",
        view.y_label,
        Scale::Log,
        view.y_scale,
        series,
    );
    let (id, title) = (view.id, view.title);
    distribution_figure(id, title, view.caption, plot, &rows, ("answer", "answers"))
}

/// The summary table of time series: total, and min, mean and max per second.
fn series_table(rows: &[(String, TimeSeries)]) -> Table {
    let mut table = Table::new(["series", "total", "seconds", "min/s", "mean/s", "max/s"]);
    for (name, ts) in rows {
        table.push([
            name.clone(),
            ts.total.to_string(),
            ts.seconds.to_string(),
            ts.min.to_string(),
            num(ts.mean()),
            ts.max.to_string(),
        ]);
    }
    table
}

/// What a caption says about the bins of time series.
fn bins_sentence(rows: &[(String, TimeSeries)]) -> String {
    let bin = rows.iter().map(|r| r.1.bin).max().unwrap_or(1);
    let aligned = " Seconds are counted from the run's start (when its first query was due),                    not from the clock's whole seconds, so that replays of one trace share their                    seconds and their curves can be laid over each other.";
    if bin > 1 {
        format!(
            "{aligned} Runs longer than {} s are drawn as means per second over bins of \
             several seconds (up to {bin} s here); the table is over single seconds.",
            super::seconds::MAX_TIME_POINTS
        )
    } else {
        aligned.to_string()
    }
}

/// A time-series figure: `series` gives, per input, the named per-second values to draw.
fn time_figure(
    inputs: &[(&str, &ReplayData)],
    id: &str,
    title: &str,
    caption: &str,
    y_label: &str,
    series: impl Fn(&ReplayData) -> Vec<(String, SeriesStyle, TimeSeries)>,
    names: &Names,
) -> Figure {
    let mut drawn = Vec::new();
    let mut rows = Vec::new();
    for (label, data) in inputs {
        for (what, style, ts) in series(data) {
            let name = names.of(label, &what);
            drawn.push(Series {
                name: name.clone(),
                points: ts.points.clone(),
                style,
            });
            rows.push((name, ts));
        }
    }
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption: format!("{caption}{}", bins_sentence(&rows)),
        plot: line_chart(
            "time since the run's start (s)",
            y_label,
            Scale::Linear,
            Scale::Linear,
            drawn,
        ),
        table: series_table(&rows),
    }
}

/// A named per-second count of a replay.
type Count = (&'static str, fn(&Second) -> u64);

/// Two per-second series of `d`: `solid` drawn as a line, `dashed` dashed (a figure's main
/// count and the one it is set against).
fn solid_and_dashed(
    d: &ReplayData,
    solid: Count,
    dashed: Count,
) -> Vec<(String, SeriesStyle, TimeSeries)> {
    vec![
        (
            solid.0.to_string(),
            SeriesStyle::Line,
            d.seconds.series(solid.1),
        ),
        (
            dashed.0.to_string(),
            SeriesStyle::Dashed,
            d.seconds.series(dashed.1),
        ),
    ]
}

fn answers_per_second(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    time_figure(
        inputs,
        "replay-answers-per-second",
        "Answers per second against the trace's rate",
        "Answers received per second (solid) and queries the trace asked to send in that \
         second (dashed: the trace's rate mapped onto the run). The last second is partial.",
        "queries per second",
        |d| {
            solid_and_dashed(
                d,
                ("answers", |s| s.answered),
                ("trace rate", |s| s.intended),
            )
        },
        names,
    )
}

fn connections_per_second(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    let mut figure = time_figure(
        inputs,
        "replay-connections-per-second",
        "Connections opened and reused per second",
        "Queries sent per second that opened a new connection (solid) and that were sent over \
         a connection already open (dashed), over every connection-oriented transport; UDP \
         queries count in neither.",
        "queries per second",
        |d| solid_and_dashed(d, ("opened", |s| s.opened), ("reused", |s| s.reused)),
        names,
    );
    if figure.plot.all_zero() {
        figure.plot = Plot::Note {
            text: "No query opened or reused a connection: every query went over UDP (the \
                   table gives the zeros)."
                .to_string(),
        };
    }
    figure
}

fn endings_per_second(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    time_figure(
        inputs,
        "replay-rcodes-per-second",
        "Response codes, timeouts and errors per second",
        "Answers per second by response code (in the second they were received), and queries \
         that timed out or failed (in the second they were sent, or should have been): every \
         query counts once.",
        "queries per second",
        |d| {
            d.seconds
                .endings()
                .into_iter()
                .map(|ending: Ending| {
                    let count = move |s: &Second| {
                        s.endings.iter().find(|e| e.0 == ending).map_or(0, |e| e.1)
                    };
                    (ending.name(), SeriesStyle::Line, d.seconds.series(count))
                })
                .collect()
        },
        names,
    )
}

fn timing_error_cdf(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    let rows: Vec<(String, Vec<(f64, u64)>)> = inputs
        .iter()
        .filter(|(_, d)| d.timing.len() > 0)
        .map(|(label, d)| (names.of(label, "timing error"), d.timing.buckets(NS_PER_US)))
        .collect();
    let counts = counts(&rows);
    let series = rows
        .iter()
        .zip(&counts)
        .map(|((name, b), (_, n, _))| {
            let points: Vec<CdfPoint> = cdf_points(b)
                .into_iter()
                .filter(|p| p.at_most >= TIMING_CLIP && 1.0 - p.at_least <= 1.0 - TIMING_CLIP)
                .collect();
            let style = distribution_style(*n, SeriesStyle::Line);
            cdf_series(name.clone(), &points, |p| p.at_most, style)
        })
        .collect();
    let caption = format!(
        "Share of queries sent at most x µs after the time the trace's schedule gave them \
         (negative: early). The axis is linear because errors have both signs, which a log \
         axis cannot show, and it spans the {}th to the {}th percentile so that rare outliers \
         do not squeeze the rest; the table gives the extremes.",
        num(TIMING_CLIP * 100.0),
        num(100.0 - TIMING_CLIP * 100.0)
    );
    let plot = line_chart(
        "sent − intended (µs)",
        "share of queries ≤ x",
        Scale::Linear,
        Scale::Linear,
        series,
    );
    let (id, title) = ("replay-timing-error-cdf", "Send timing error (CDF)");
    distribution_figure(id, title, caption, plot, &rows, ("query", "queries"))
}

/// Sorted values as histogram buckets (equal values together).
fn buckets_of_sorted(values: &[f64]) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = Vec::new();
    for &v in values {
        match out.last_mut() {
            Some(last) if last.0 == v => last.1 += 1,
            _ => out.push((v, 1)),
        }
    }
    out
}

fn rate_error_cdf(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    let mut series = Vec::new();
    let mut table = Table::new(
        ["series", "seconds", "within ±0.1%", "within ±1%", "min"]
            .into_iter()
            .chain(TABLE_HEADERS),
    );
    let mut tenths = vec![0];
    tenths.extend(TABLE_TENTHS);
    let mut counts = Vec::new();
    for (label, data) in inputs {
        let errors = data.rate_errors();
        if errors.is_empty() {
            continue;
        }
        let name = names.of(label, "rate error");
        let buckets = buckets_of_sorted(&errors);
        counts.push((name.clone(), errors.len() as u64, buckets.len()));
        series.push(cdf_series(
            name.clone(),
            &cdf_points(&buckets),
            |p| p.at_most,
            distribution_style(errors.len() as u64, SeriesStyle::Line),
        ));
        let within = |bound: f64| {
            let n = errors.iter().filter(|e| e.abs() <= bound).count() as u64;
            pct(n, errors.len() as u64)
        };
        let mut row = vec![name, errors.len().to_string(), within(0.1), within(1.0)];
        row.extend(percentiles(&buckets, &tenths).into_iter().map(num));
        table.push(row);
    }
    let figure = Figure {
        id: "replay-rate-error-cdf".to_string(),
        title: "Per-second rate error (CDF)".to_string(),
        caption: "For each full second of the run, (queries sent in it − queries the trace \
                  asked for in it) / queries the trace asked for, in %: the LDplayer paper's \
                  Figure 8, with the definition of the replay's summary (the first and last \
                  seconds, partial, are left out)."
            .to_string(),
        plot: line_chart(
            "rate error (%)",
            "share of seconds ≤ x",
            Scale::Linear,
            Scale::Linear,
            series,
        ),
        table,
    };
    with_sample_size(figure, &counts, ("second", "seconds"))
}

fn interarrival_cdf(inputs: &[(&str, &ReplayData)], names: &Names) -> Figure {
    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut negative = Vec::new();
    for (label, data) in inputs {
        let ia = &data.interarrival;
        if ia.original.len() == 0 {
            continue;
        }
        for (what, d, style) in [
            ("original", &ia.original, SeriesStyle::Dashed),
            ("replayed", &ia.replayed, SeriesStyle::Line),
        ] {
            let name = names.of(label, what);
            let buckets = d.buckets(NS_PER_MS);
            series.push(cdf_series(
                name.clone(),
                &cdf_points(&buckets),
                |p| p.at_most,
                distribution_style(d.len(), style),
            ));
            rows.push((name, buckets));
        }
        if ia.negative_replayed > 0 || ia.negative_original > 0 {
            negative.push(format!(
                "{}{} replayed and {} trace gaps were negative (sent, or recorded, out of \
                 trace order) and count as 0",
                if names.several {
                    format!("{label}: ")
                } else {
                    String::new()
                },
                ia.negative_replayed,
                ia.negative_original
            ));
        }
    }
    let mut caption = "Gaps between consecutive queries in trace order: in the trace (dashed) \
                       and between their sends in the replay (solid), on a log scale: the \
                       LDplayer paper's Figure 7. Gaps of 0 are left out of the plot, not of \
                       the table (ms)."
        .to_string();
    if !negative.is_empty() {
        caption.push_str(&format!(" {}.", negative.join("; ")));
    }
    let plot = line_chart(
        "inter-arrival time (ms)",
        "share of gaps ≤ x",
        Scale::Log,
        Scale::Linear,
        series,
    );
    let (id, title) = (
        "replay-interarrival-cdf",
        "Inter-arrival times, original and replayed (CDF)",
    );
    distribution_figure(id, title, caption, plot, &rows, ("gap", "gaps"))
}
