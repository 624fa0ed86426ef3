//! Boxplots grouped by category: whiskers at p5 and p95, a box from p25 to p75, a line at the
//! median; one slot per series in every group, so that a series keeps its place and colour.

use std::ops::Range;

use plotters::coord::ranged1d::{
    AsRangedCoord, KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter,
};
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind};
use plotters::element::{PathElement, Rectangle};
use plotters::prelude::{DrawingBackend, IntoLogRange};
use plotters::style::Color;

use super::lines::range;
use super::style::{self, Drawn, Entry, Legend, Sample};
use crate::figure::{BoxChart, BoxStat, Scale};

/// The share of a group's width its boxes take (the rest separates groups).
const GROUP_WIDTH: f64 = 0.8;

/// The legend: one box per series, in `names`' order, saying which series are all 0.
pub(super) fn entries<'a>(chart: &BoxChart, names: &[&'a str]) -> Vec<Entry<'a>> {
    names
        .iter()
        .map(|&name| {
            let mut values = chart
                .groups
                .iter()
                .flat_map(|g| &g.boxes)
                .filter(|b| b.series == name)
                .flat_map(values)
                .filter(|v| v.is_finite())
                .peekable();
            let zero = values.peek().is_some() && values.all(|v| v == 0.0);
            Entry {
                name,
                sample: Sample::Box,
                colour: style::colour(names, name),
                note: zero.then(|| "all 0".to_string()),
                marked: false,
            }
        })
        .collect()
}

/// Draws `chart` in `area`, coloured by position in `names`, its legend laid out as `legend`.
pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &BoxChart,
    names: &[&str],
    legend: &Legend,
) -> Drawn<DB> {
    let (width, _) = area.dim_in_pixel();
    let (plot_area, legend_area) = area.split_horizontally(width.saturating_sub(legend.width));
    let x = Categories(
        chart
            .groups
            .iter()
            .map(|g| style::clean(&g.label, 16))
            .collect(),
    );
    let y = range(
        chart
            .groups
            .iter()
            .flat_map(|g| &g.boxes)
            .flat_map(values)
            .filter(|v| v.is_finite() && (chart.y_scale == Scale::Linear || *v > 0.0)),
        chart.y_scale,
    );
    let top = match chart.y_scale {
        Scale::Linear => plot(&plot_area, chart, names, x, y.clone(), y),
        Scale::Log => plot(&plot_area, chart, names, x, y.clone().log_scale(), y),
    }?;
    style::legend(&legend_area, legend, &entries(chart, names), top)
}

/// A box's five values, bottom to top.
fn values(b: &BoxStat) -> [f64; 5] {
    [b.p5, b.p25, b.p50, b.p75, b.p95]
}

/// Draws the axes and the boxes; returns the top of the plot's frame.
fn plot<DB, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &BoxChart,
    names: &[&str],
    x: Categories,
    y: Y,
    y_range: Range<f64>,
) -> Result<i32, DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = style::plot_builder(area).build_cartesian_2d(x, y)?;
    style::axes(&mut ctx.configure_mesh(), &chart.x_label, &chart.y_label)
        .disable_x_mesh()
        .draw()?;
    let slot = GROUP_WIDTH / names.len().max(1) as f64;
    let mut drawn = 0;
    for (group, boxes) in chart.groups.iter().enumerate() {
        for stat in &boxes.boxes {
            let Some(v) = shown(stat, chart.y_scale, &y_range) else {
                continue;
            };
            let index = names.iter().position(|n| *n == stat.series).unwrap_or(0);
            let centre = group as f64 - GROUP_WIDTH / 2.0 + slot * (index as f64 + 0.5);
            let half = slot * 0.36;
            let colour = style::colour(names, &stat.series);
            let stroke = colour.stroke_width(2);
            let (left, right) = (centre - half, centre + half);
            let (cap_left, cap_right) = (centre - half * 0.6, centre + half * 0.6);
            ctx.draw_series([
                PathElement::new(vec![(centre, v[0]), (centre, v[1])], stroke),
                PathElement::new(vec![(centre, v[3]), (centre, v[4])], stroke),
                PathElement::new(vec![(cap_left, v[0]), (cap_right, v[0])], stroke),
                PathElement::new(vec![(cap_left, v[4]), (cap_right, v[4])], stroke),
            ])?;
            ctx.draw_series([
                Rectangle::new([(left, v[1]), (right, v[3])], colour.mix(0.25).filled()),
                Rectangle::new([(left, v[1]), (right, v[3])], stroke),
            ])?;
            ctx.draw_series([PathElement::new(
                vec![(left, v[2]), (right, v[2])],
                colour.stroke_width(4),
            )])?;
            drawn += 1;
        }
    }
    let frame = ctx.plotting_area();
    if drawn == 0 {
        style::no_data(&frame.strip_coord_spec())?;
    }
    let (_, top) = frame.get_base_pixel();
    let (_, area_top) = area.get_base_pixel();
    Ok(top - area_top)
}

/// A box's values as drawn: none if one is not finite; on a log axis, values ≤ 0 at the axis'
/// bottom (the whisker or box then reaches it; the table has the value).
fn shown(stat: &BoxStat, scale: Scale, y: &Range<f64>) -> Option<[f64; 5]> {
    let v = values(stat);
    if v.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(match scale {
        Scale::Linear => v,
        Scale::Log => v.map(|v| v.max(y.start)),
    })
}

/// The x axis of a boxplot: group `i` (labelled `self.0[i]`) centred at `i`, each given a unit
/// of width.
struct Categories(Vec<String>);

impl Categories {
    fn span(&self) -> Range<f64> {
        -0.5..self.0.len().max(1) as f64 - 0.5
    }
}

impl Ranged for Categories {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, (lo, hi): (i32, i32)) -> i32 {
        let span = self.span();
        let share = (value - span.start) / (span.end - span.start);
        lo + (share * f64::from(hi - lo)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        // Every group is labelled, however many.
        (0..self.0.len()).map(|i| i as f64).collect()
    }

    fn range(&self) -> Range<f64> {
        self.span()
    }
}

impl ValueFormatter<f64> for Categories {
    fn format_ext(&self, value: &f64) -> String {
        let index = value.round();
        let label = (index >= 0.0).then(|| self.0.get(index as usize)).flatten();
        label.cloned().unwrap_or_default()
    }
}
