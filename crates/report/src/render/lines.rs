//! Line charts: CDFs, CCDFs and time series, on linear or log axes.
//!
//! What a reader could misread is marked: a curve drawn through few points carries a marker at
//! each, and a curve hidden under another (drawn later, on top, along the same path) carries
//! markers along its length and says under which in the legend.

use std::ops::Range;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::element::Circle;
use plotters::prelude::{DrawingBackend, IntoLogRange};
use plotters::series::{DashedLineSeries, LineSeries};
use plotters::style::{Color, RGBColor};

use super::style::{self, Drawn, Entry, Legend, Sample, MARKER_RADIUS};
use crate::figure::{LineChart, Scale, Series, SeriesStyle};

/// A line, step or dashed curve of fewer points than this (not a vertical mark) is also marked
/// at each point, so that the reader sees how few values it is drawn through.
const FEW_POINTS: usize = 8;
/// Markers drawn along a curve hidden under another.
const HIDDEN_MARKERS: usize = 24;
/// How close two curves must pass, as a share of the plot's width and height (about 3 pixels),
/// to be drawn over each other.
const COINCIDE: f64 = 0.008;
/// The share of a curve's path that must lie on a later curve for it to count as hidden.
const HIDDEN_SHARE: f64 = 0.9;

/// A chart's curves ready to draw, with the axes' ranges.
pub(super) struct Prepared<'a> {
    curves: Vec<Curve<'a>>,
    x: Range<f64>,
    y: Range<f64>,
}

/// A series ready to draw: its drawable points (finite, positive on log axes), colour, and
/// what marks it.
struct Curve<'a> {
    name: &'a str,
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    /// How it is drawn: the series' style, but a line whose colour repeats an earlier
    /// series' is dashed.
    style: SeriesStyle,
    /// The later curve it is hidden under, when it is.
    under: Option<usize>,
    /// Whether it gets markers (few points, or hidden).
    marked: bool,
}

impl<'a> Curve<'a> {
    fn new(series: &'a Series, x_scale: Scale, y_scale: Scale, names: &[&str]) -> Self {
        let shown = |v: f64, scale: Scale| v.is_finite() && (scale == Scale::Linear || v > 0.0);
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| shown(x, x_scale) && shown(y, y_scale))
            .collect();
        let mut style = series.style;
        if style == SeriesStyle::Line && style::colour_repeats(names, &series.name) {
            style = SeriesStyle::Dashed;
        }
        // A vertical mark (the end of a warm-up) is not a curve of few values.
        let vertical = points.windows(2).all(|w| w[0].0 == w[1].0);
        let few = points.len() > 1 && points.len() < FEW_POINTS && !vertical;
        Curve {
            name: &series.name,
            marked: few && style != SeriesStyle::Points,
            points,
            colour: style::colour(names, &series.name),
            style,
            under: None,
        }
    }

    /// Whether it is drawn as a path (not as unjoined markers).
    fn is_path(&self) -> bool {
        self.style != SeriesStyle::Points
    }

    /// True when every drawable point is the same one (and there is one).
    fn is_one_point(&self) -> bool {
        self.points
            .first()
            .is_some_and(|first| self.points.iter().all(|p| p == first))
    }

    /// The vertices of the path drawn: the points, joined across then up for a step curve.
    fn path(&self) -> Vec<(f64, f64)> {
        if self.style != SeriesStyle::Step {
            return self.points.clone();
        }
        let mut out = Vec::with_capacity(self.points.len() * 2);
        for (i, &(x, y)) in self.points.iter().enumerate() {
            if i > 0 {
                out.push((x, self.points[i - 1].1));
            }
            out.push((x, y));
        }
        out
    }
}

/// The curves of `chart`, coloured by position in `names`, with the axes' ranges and which
/// curve is hidden under which.
pub(super) fn prepare<'a>(chart: &'a LineChart, names: &[&str]) -> Prepared<'a> {
    let mut curves: Vec<Curve> = chart
        .series
        .iter()
        .map(|s| Curve::new(s, chart.x_scale, chart.y_scale, names))
        .collect();
    let x = range(
        curves.iter().flat_map(|c| c.points.iter().map(|p| p.0)),
        chart.x_scale,
    );
    let y = range(
        curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)),
        chart.y_scale,
    );
    let unit = |c: &Curve| -> Vec<(f64, f64)> {
        c.path()
            .iter()
            .map(|&(px, py)| (share(px, &x, chart.x_scale), share(py, &y, chart.y_scale)))
            .collect()
    };
    let paths: Vec<Vec<(f64, f64)>> = curves.iter().map(unit).collect();
    for i in 0..curves.len() {
        if !curves[i].is_path() || curves[i].is_one_point() {
            continue;
        }
        // The topmost curve over it: the last drawn.
        curves[i].under = (i + 1..curves.len()).rev().find(|&j| {
            curves[j].is_path() && !curves[j].is_one_point() && lies_on(&paths[i], &paths[j])
        });
        if curves[i].under.is_some() {
            curves[i].marked = true;
        }
    }
    Prepared { curves, x, y }
}

/// Where `v` lies along `range` on `scale`, from 0 (its start) to 1 (its end).
fn share(v: f64, range: &Range<f64>, scale: Scale) -> f64 {
    let (v, lo, hi) = match scale {
        Scale::Linear => (v, range.start, range.end),
        Scale::Log => (v.ln(), range.start.ln(), range.end.ln()),
    };
    if hi > lo {
        (v - lo) / (hi - lo)
    } else {
        0.5
    }
}

/// Whether the path `a` (vertices in plot shares, see [`share`]) runs along the path `b`
/// (vertices in increasing x): [`HIDDEN_SHARE`] of its vertices and of its segments' middles
/// within [`COINCIDE`] of `b`. Vertical paths (a mark at one x) are left alone.
fn lies_on(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
    let spans = |p: &[(f64, f64)]| {
        let (lo, hi) = p
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), q| {
                (lo.min(q.0), hi.max(q.0))
            });
        hi - lo > COINCIDE
    };
    if a.len() < 2 || b.len() < 2 || !spans(a) || !spans(b) {
        return false;
    }
    let middles = a
        .windows(2)
        .map(|w| ((w[0].0 + w[1].0) / 2.0, (w[0].1 + w[1].1) / 2.0));
    let samples: Vec<(f64, f64)> = a.iter().copied().chain(middles).collect();
    let on = samples
        .iter()
        .filter(|&&p| distance_to_path(p, b) <= COINCIDE)
        .count();
    on as f64 >= samples.len() as f64 * HIDDEN_SHARE
}

/// The distance from `p` to the path through `path`'s vertices (in increasing x), looking only
/// at the segments that come within [`COINCIDE`] of it across.
fn distance_to_path(p: (f64, f64), path: &[(f64, f64)]) -> f64 {
    let first = path
        .partition_point(|q| q.0 < p.0 - COINCIDE)
        .saturating_sub(1);
    let mut best = f64::INFINITY;
    for w in path[first..].windows(2) {
        if w[0].0 > p.0 + COINCIDE {
            break;
        }
        best = best.min(distance_to_segment(p, w[0], w[1]));
    }
    best
}

fn distance_to_segment(p: (f64, f64), a: (f64, f64), b: (f64, f64)) -> f64 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let length = dx * dx + dy * dy;
    let t = if length > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / length).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (cx, cy) = (a.0 + t * dx, a.1 + t * dy);
    ((p.0 - cx).powi(2) + (p.1 - cy).powi(2)).sqrt()
}

/// The series of `chart` hidden under a later one, each with the one it is under, by name.
pub(super) fn coinciding(chart: &LineChart, names: &[&str]) -> Vec<(String, String)> {
    let prepared = prepare(chart, names);
    prepared
        .curves
        .iter()
        .filter_map(|c| {
            let over = prepared.curves.get(c.under?)?;
            Some((c.name.to_string(), over.name.to_string()))
        })
        .collect()
}

/// The legend: each name once, with the style of its first series and what marks it.
pub(super) fn entries<'a>(prepared: &Prepared<'a>) -> Vec<Entry<'a>> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut empty: Vec<bool> = Vec::new();
    for curve in &prepared.curves {
        if let Some(k) = entries.iter().position(|e| e.name == curve.name) {
            empty[k] &= curve.points.is_empty();
            continue;
        }
        let mut notes = Vec::new();
        let flat_zero = !curve.points.is_empty() && curve.points.iter().all(|p| p.1 == 0.0);
        if flat_zero {
            notes.push("all 0".to_string());
        }
        if let Some(over) = curve.under.and_then(|j| prepared.curves.get(j)) {
            notes.push(format!("under {}", over.name));
        }
        entries.push(Entry {
            name: curve.name,
            sample: match curve.style {
                SeriesStyle::Line => Sample::Line,
                SeriesStyle::Step => Sample::Step,
                SeriesStyle::Points => Sample::Point,
                SeriesStyle::Dashed => Sample::Dashed,
            },
            colour: curve.colour,
            note: (!notes.is_empty()).then(|| notes.join(", ")),
            marked: curve.marked,
        });
        empty.push(curve.points.is_empty());
    }
    for (entry, empty) in entries.iter_mut().zip(empty) {
        if empty {
            entry.note = Some("no data".into());
        }
    }
    entries
}

/// Draws `chart` in `area`, coloured by position in `names`, its legend laid out as `legend`.
pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    names: &[&str],
    legend: &Legend,
) -> Drawn<DB> {
    let prepared = prepare(chart, names);
    let (width, _) = area.dim_in_pixel();
    let (plot_area, legend_area) = area.split_horizontally(width.saturating_sub(legend.width));
    let (x, y) = (prepared.x.clone(), prepared.y.clone());
    let curves = &prepared.curves;
    let top = match (chart.x_scale, chart.y_scale) {
        (Scale::Linear, Scale::Linear) => plot(&plot_area, chart, curves, x, y),
        (Scale::Log, Scale::Linear) => plot(&plot_area, chart, curves, x.log_scale(), y),
        (Scale::Linear, Scale::Log) => plot(&plot_area, chart, curves, x, y.log_scale()),
        (Scale::Log, Scale::Log) => plot(&plot_area, chart, curves, x.log_scale(), y.log_scale()),
    }?;
    style::legend(&legend_area, legend, &entries(&prepared), top)
}

/// The axis range covering `values`: whole decades on a log axis, the values' span with a
/// little room on a linear one; a unit range when there is nothing to cover. A linear axis of
/// values that are never negative (counts, shares) starts no lower than 0.
pub(super) fn range(values: impl Iterator<Item = f64>, scale: Scale) -> Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    match scale {
        _ if lo > hi => match scale {
            Scale::Linear => 0.0..1.0,
            Scale::Log => 1.0..10.0,
        },
        Scale::Linear if lo == 0.0 && hi == 0.0 => 0.0..1.0,
        Scale::Linear => {
            let pad = if hi > lo {
                (hi - lo) * 0.03
            } else {
                lo.abs().max(1.0) * 0.5
            };
            let start = if lo >= 0.0 {
                (lo - pad).max(0.0)
            } else {
                lo - pad
            };
            start..(hi + pad)
        }
        Scale::Log => {
            let lo = 10f64.powf(lo.log10().floor());
            let hi = 10f64.powf(hi.log10().ceil());
            let hi = if hi > lo { hi } else { lo * 10.0 };
            // A hair wider, so that rounding in plotters' decade ticks keeps both ends labelled.
            lo * (1.0 - 1e-9)..hi * (1.0 + 1e-9)
        }
    }
}

/// Draws the axes and the curves, then the markers of curves with few points or hidden under
/// another; returns the top of the plot's frame, where the legend starts.
fn plot<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    curves: &[Curve],
    x: X,
    y: Y,
) -> Result<i32, plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = style::plot_builder(area).build_cartesian_2d(x, y)?;
    style::axes(&mut ctx.configure_mesh(), &chart.x_label, &chart.y_label)
        .x_label_formatter(&style::tick)
        .draw()?;
    for curve in curves {
        let stroke = style::stroke(curve.colour);
        let points = curve.points.iter().copied();
        match curve.style {
            SeriesStyle::Line => ctx.draw_series(LineSeries::new(points, stroke))?,
            SeriesStyle::Step => ctx.draw_series(LineSeries::new(curve.path(), stroke))?,
            SeriesStyle::Dashed => ctx.draw_series(DashedLineSeries::new(points, 8, 5, stroke))?,
            SeriesStyle::Points => {
                ctx.draw_series(points.map(|p| Circle::new(p, 3, curve.colour.filled())))?
            }
        };
        // A curve that is one point (every second's rate error 0, a distribution of one
        // value) draws no line: it is marked instead, or it would vanish.
        if curve.is_path() && curve.is_one_point() {
            let p = curve.points[0];
            ctx.draw_series(std::iter::once(Circle::new(p, 4, curve.colour.filled())))?;
        }
    }
    // Markers last, over every line: those of a hidden curve would be covered otherwise. Two
    // curves hidden under one are marked at different places along it.
    let mut hidden = 0;
    for curve in curves.iter().filter(|c| c.marked) {
        let at: Vec<(f64, f64)> = if curve.under.is_some() {
            hidden += 1;
            spread(&curve.points, HIDDEN_MARKERS, hidden)
        } else {
            curve.points.clone()
        };
        let filled = curve.colour.filled();
        ctx.draw_series(
            at.into_iter()
                .map(|p| Circle::new(p, MARKER_RADIUS, filled)),
        )?;
    }
    let frame = ctx.plotting_area();
    if curves.iter().all(|c| c.points.is_empty()) {
        style::no_data(&frame.strip_coord_spec())?;
    }
    let (_, top) = frame.get_base_pixel();
    let (_, area_top) = area.get_base_pixel();
    Ok(top - area_top)
}

/// About `count` of `points`, evenly spaced by position, shifted by a different fraction of a
/// step for each `nth` curve so that markers of curves hidden under one curve do not cover
/// each other.
fn spread(points: &[(f64, f64)], count: usize, nth: usize) -> Vec<(f64, f64)> {
    if points.len() <= count {
        return points.to_vec();
    }
    let step = points.len() as f64 / count as f64;
    let offset = (nth as f64 * 0.381_966).fract() * step;
    (0..count)
        .filter_map(|k| points.get((offset + k as f64 * step) as usize).copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ranges_are_whole_decades_and_linear_ones_have_room() {
        let close = |r: Range<f64>, lo: f64, hi: f64| {
            assert!(
                (r.start / lo - 1.0).abs() < 1e-6 && (r.end / hi - 1.0).abs() < 1e-6,
                "{r:?}"
            );
        };
        close(range([0.3, 42.0].into_iter(), Scale::Log), 0.1, 100.0);
        close(range([5.0].into_iter(), Scale::Log), 1.0, 10.0);
        close(range([10.0].into_iter(), Scale::Log), 10.0, 100.0);
        assert_eq!(range(std::iter::empty(), Scale::Log), 1.0..10.0);
        assert_eq!(range(std::iter::empty(), Scale::Linear), 0.0..1.0);
        let r = range([-1.0, 1.0].into_iter(), Scale::Linear);
        assert!(r.start < -1.0 && r.end > 1.0, "{r:?}");
        let r = range([3.0].into_iter(), Scale::Linear);
        assert!(r.start < 3.0 && r.end > 3.0, "{r:?}");
    }

    #[test]
    fn an_axis_of_values_never_negative_starts_no_lower_than_zero() {
        assert_eq!(range([0.0, 0.0].into_iter(), Scale::Linear), 0.0..1.0);
        let r = range([0.0, 1.0].into_iter(), Scale::Linear);
        assert!(r.start == 0.0 && r.end > 1.0, "{r:?}");
        let r = range([2.0, 1000.0].into_iter(), Scale::Linear);
        assert!(r.start == 0.0 && r.end > 1000.0, "{r:?}");
        let r = range([900.0, 1000.0].into_iter(), Scale::Linear);
        assert!(r.start > 0.0 && r.start < 900.0, "{r:?}");
    }

    #[test]
    fn a_path_along_another_lies_on_it_and_one_apart_does_not() {
        let line: Vec<(f64, f64)> = (0..=100).map(|i| (i as f64 / 100.0, 0.5)).collect();
        let near: Vec<(f64, f64)> = (0..=37).map(|i| (i as f64 / 37.0, 0.503)).collect();
        let apart: Vec<(f64, f64)> = (0..=37).map(|i| (i as f64 / 37.0, 0.52)).collect();
        assert!(lies_on(&near, &line));
        assert!(!lies_on(&apart, &line));
        // Half on it is not hidden.
        let half: Vec<(f64, f64)> = (0..=40)
            .map(|i| (i as f64 / 40.0, if i < 20 { 0.5 } else { 0.9 }))
            .collect();
        assert!(!lies_on(&half, &line));
        // A vertical mark is never taken for a hidden curve.
        assert!(!lies_on(&[(0.5, 0.0), (0.5, 1.0)], &line));
    }

    #[test]
    fn curves_of_few_points_and_hidden_ones_are_marked_but_not_a_vertical_mark() {
        let series = |name: &str, style, points: Vec<(f64, f64)>| Series {
            name: name.into(),
            points,
            style,
        };
        let long: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), f64::from(i))).collect();
        let chart = LineChart {
            x_label: "x".into(),
            y_label: "y".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: vec![
                series(
                    "short",
                    SeriesStyle::Line,
                    vec![(0.0, 3.0), (10.0, 5.0), (20.0, 4.0)],
                ),
                series("under", SeriesStyle::Line, long.clone()),
                series("over", SeriesStyle::Line, long),
                series("mark", SeriesStyle::Dashed, vec![(2.0, 0.0), (2.0, 49.0)]),
            ],
        };
        let names = ["short", "under", "over", "mark"];
        let prepared = prepare(&chart, &names);
        let marked: Vec<bool> = prepared.curves.iter().map(|c| c.marked).collect();
        assert_eq!(marked, [true, true, false, false]);
        assert_eq!(
            coinciding(&chart, &names),
            [("under".to_string(), "over".to_string())]
        );
        let notes: Vec<Option<String>> = entries(&prepared).into_iter().map(|e| e.note).collect();
        assert_eq!(notes, [None, Some("under over".into()), None, None]);
    }
}
