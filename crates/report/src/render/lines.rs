//! Line charts: CDFs, CCDFs and time series, on linear or log axes.

use std::ops::Range;

use plotters::chart::ChartBuilder;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::element::Circle;
use plotters::prelude::{DrawingBackend, IntoLogRange};
use plotters::series::{DashedLineSeries, LineSeries};
use plotters::style::{Color, RGBColor};

use super::style::{self, Drawn, Entry, Sample};
use crate::figure::{LineChart, Scale, Series, SeriesStyle};

/// Draws `chart` in `area`, coloured by position in `names`.
pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    names: &[&str],
) -> Drawn<DB> {
    let (width, _) = area.dim_in_pixel();
    let (plot_area, legend_area) = area.split_horizontally(width - style::LEGEND_WIDTH);
    let curves: Vec<Curve> = chart
        .series
        .iter()
        .map(|s| {
            let mut curve = Curve::new(
                s,
                chart.x_scale,
                chart.y_scale,
                style::colour(names, &s.name),
            );
            if s.style == SeriesStyle::Line && style::colour_repeats(names, &s.name) {
                curve.style = SeriesStyle::Dashed;
            }
            curve
        })
        .collect();
    let x = range(
        curves.iter().flat_map(|c| c.points.iter().map(|p| p.0)),
        chart.x_scale,
    );
    let y = range(
        curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)),
        chart.y_scale,
    );
    let top = match (chart.x_scale, chart.y_scale) {
        (Scale::Linear, Scale::Linear) => plot(&plot_area, chart, &curves, x, y),
        (Scale::Log, Scale::Linear) => plot(&plot_area, chart, &curves, x.log_scale(), y),
        (Scale::Linear, Scale::Log) => plot(&plot_area, chart, &curves, x, y.log_scale()),
        (Scale::Log, Scale::Log) => plot(&plot_area, chart, &curves, x.log_scale(), y.log_scale()),
    }?;
    style::legend(&legend_area, &entries(chart, &curves), top)
}

/// A series ready to draw: its drawable points (finite, positive on log axes) and colour.
struct Curve {
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    /// How it is drawn: the series' style, but a line whose colour repeats an earlier
    /// series' is dashed.
    style: SeriesStyle,
}

impl Curve {
    fn new(series: &Series, x_scale: Scale, y_scale: Scale, colour: RGBColor) -> Self {
        let shown = |v: f64, scale: Scale| v.is_finite() && (scale == Scale::Linear || v > 0.0);
        let points = series
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| shown(x, x_scale) && shown(y, y_scale))
            .collect();
        Curve {
            points,
            colour,
            style: series.style,
        }
    }

    /// True when every drawable point is the same one (and there is one).
    fn is_one_point(&self) -> bool {
        self.points
            .first()
            .is_some_and(|first| self.points.iter().all(|p| p == first))
    }

    /// The points joined as an empirical distribution function: across, then up.
    fn steps(&self) -> Vec<(f64, f64)> {
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

/// The axis range covering `values`: whole decades on a log axis, the values' span with a
/// little room on a linear one; a unit range when there is nothing to cover.
pub(super) fn range(values: impl Iterator<Item = f64>, scale: Scale) -> Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    match scale {
        _ if lo > hi => match scale {
            Scale::Linear => 0.0..1.0,
            Scale::Log => 1.0..10.0,
        },
        Scale::Linear => {
            let pad = if hi > lo {
                (hi - lo) * 0.03
            } else {
                lo.abs().max(1.0) * 0.5
            };
            (lo - pad)..(hi + pad)
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

/// Draws the axes and the curves; returns the top of the plot's frame, where the legend
/// starts.
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
    let mut ctx = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(x, y)?;
    ctx.configure_mesh()
        .x_desc(style::clean(&chart.x_label, 60))
        .y_desc(style::clean(&chart.y_label, 40))
        .axis_desc_style(style::font(style::LABEL_SIZE))
        .label_style(style::font(style::TICK_SIZE))
        .x_label_formatter(&style::tick)
        .y_label_formatter(&style::tick)
        .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
        .bold_line_style(RGBColor(0xD8, 0xD8, 0xD8))
        .draw()?;
    for curve in curves {
        let stroke = style::stroke(curve.colour);
        let points = curve.points.iter().copied();
        match curve.style {
            SeriesStyle::Line => ctx.draw_series(LineSeries::new(points, stroke))?,
            SeriesStyle::Step => ctx.draw_series(LineSeries::new(curve.steps(), stroke))?,
            SeriesStyle::Dashed => ctx.draw_series(DashedLineSeries::new(points, 8, 5, stroke))?,
            SeriesStyle::Points => {
                ctx.draw_series(points.map(|p| Circle::new(p, 3, curve.colour.filled())))?
            }
        };
        // A curve that is one point (every second's rate error 0, a distribution of one
        // value) draws no line: it is marked instead, or it would vanish.
        if curve.style != SeriesStyle::Points && curve.is_one_point() {
            let p = curve.points[0];
            ctx.draw_series(std::iter::once(Circle::new(p, 4, curve.colour.filled())))?;
        }
    }
    let frame = ctx.plotting_area();
    if curves.iter().all(|c| c.points.is_empty()) {
        style::no_data(&frame.strip_coord_spec())?;
    }
    let (_, top) = frame.get_base_pixel();
    let (_, area_top) = area.get_base_pixel();
    Ok(top - area_top)
}

/// The legend: each name once, with the style of its first series.
fn entries<'a>(chart: &'a LineChart, curves: &[Curve]) -> Vec<Entry<'a>> {
    let mut entries: Vec<Entry> = Vec::new();
    for (series, curve) in chart.series.iter().zip(curves) {
        if let Some(entry) = entries.iter_mut().find(|e| e.name == series.name) {
            entry.empty &= curve.points.is_empty();
            continue;
        }
        entries.push(Entry {
            name: &series.name,
            sample: match curve.style {
                SeriesStyle::Line => Sample::Line,
                SeriesStyle::Step => Sample::Step,
                SeriesStyle::Points => Sample::Point,
                SeriesStyle::Dashed => Sample::Dashed,
            },
            colour: curve.colour,
            empty: curve.points.is_empty(),
        });
    }
    entries
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
        let r = range([0.0, 1.0].into_iter(), Scale::Linear);
        assert!(r.start < 0.0 && r.end > 1.0, "{r:?}");
        let r = range([3.0].into_iter(), Scale::Linear);
        assert!(r.start < 3.0 && r.end > 3.0, "{r:?}");
    }
}
