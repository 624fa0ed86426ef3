//! What a figure shows, apart from how it is drawn.
//!
//! The data modules ([`replay`](crate::replay), [`experiment`](crate::experiment)) build
//! [`Figure`]s; [`render`](crate::render) draws them and [`html`](crate::html) places them in a
//! report. Every figure carries the [`Table`] of the numbers it draws, printed after it, so that
//! a reader can quote a value without measuring pixels.

use serde::Serialize;

/// One figure of a report: a plot, its words, and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// A short file-name-safe identifier, unique in its report (`latency-ccdf`): the stem of its
    /// files in `figures/` and the anchor in the HTML.
    pub id: String,
    /// The title drawn above the plot.
    pub title: String,
    /// One or two sentences under it: what is drawn and how to read it.
    pub caption: String,
    /// What is drawn.
    pub plot: Plot,
    /// The numbers the plot draws (or, for dense curves, the points a reader would quote:
    /// percentiles), printed after the figure.
    pub table: Table,
}

/// The kinds of plots a report draws.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Plot {
    /// Curves over a numeric x axis: CDFs, CCDFs, time series.
    Lines(LineChart),
    /// Boxplots (whiskers at p5 and p95, box from p25 to p75, a line at p50) per category.
    Boxes(BoxChart),
    /// Nothing worth drawing, said in one sentence shown in the drawing's place (the figure's
    /// caption and table stay): values all 0, too few for a curve, the same as another figure.
    Note {
        /// The sentence.
        text: String,
    },
}

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced decades; values ≤ 0 are left out of the plot (not of the table).
    Log,
}

/// Curves over a numeric x axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineChart {
    /// The x axis's label, with its unit (`latency (ms)`).
    pub x_label: String,
    /// The y axis's label, with its unit.
    pub y_label: String,
    /// The x axis's scale.
    pub x_scale: Scale,
    /// The y axis's scale.
    pub y_scale: Scale,
    /// The curves, drawn in this order, each in its own colour and named in the legend.
    pub series: Vec<Series>,
}

impl LineChart {
    /// A latency CCDF: the share of answers slower than each latency, both axes logarithmic so
    /// the tail stays readable. The replay's and the experiment's reports draw it alike.
    pub fn latency_ccdf(series: Vec<Series>) -> Self {
        LineChart {
            x_label: "latency (ms)".into(),
            y_label: "share of answers slower".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Log,
            series,
        }
    }
}

/// One named curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// Its name in the legend (`udp`, `base tcp`).
    pub name: String,
    /// The points, in increasing x for lines and steps.
    pub points: Vec<(f64, f64)>,
    /// How the points are joined.
    pub style: SeriesStyle,
}

/// How a series' points are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SeriesStyle {
    /// Straight segments between points.
    Line,
    /// Horizontal then vertical segments, as an empirical distribution function.
    Step,
    /// A marker per point, unjoined.
    Points,
    /// Straight segments, dashed: a reference (the trace's rate, a model) beside a measurement.
    Dashed,
}

/// Boxplots grouped by category: one group per value on the x axis (an idle timeout), one box
/// per series in each group (a protocol), as the paper's Figures 10 to 15.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxChart {
    /// The x axis's label (the varied key: `idle timeout (s)`).
    pub x_label: String,
    /// The y axis's label, with its unit.
    pub y_label: String,
    /// The y axis's scale.
    pub y_scale: Scale,
    /// The groups, left to right.
    pub groups: Vec<BoxGroup>,
}

/// The boxes drawn at one category of a [`BoxChart`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxGroup {
    /// The category's label on the x axis (`20`).
    pub label: String,
    /// Its boxes, one per series; a series keeps its colour across groups.
    pub boxes: Vec<BoxStat>,
}

/// One box: five percentiles of one series at one category.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoxStat {
    /// The series (legend entry) it belongs to (`tcp`).
    pub series: String,
    /// 5th percentile: the lower whisker.
    pub p5: f64,
    /// 25th percentile: the box's bottom.
    pub p25: f64,
    /// The median.
    pub p50: f64,
    /// 75th percentile: the box's top.
    pub p75: f64,
    /// 95th percentile: the upper whisker.
    pub p95: f64,
}

/// A table of text cells, printed after a figure (and used for other tables of a report).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Table {
    /// The column headers.
    pub columns: Vec<String>,
    /// The rows, each as long as `columns`.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and no rows yet.
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Table {
        Table {
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (cells beyond the columns are kept; missing ones print empty).
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }
}

/// What a figure shows in place of a drawing whose every value is 0.
pub const ALL_ZERO_NOTE: &str =
    "Every value is 0: there is nothing to draw (the table gives the numbers).";

impl Figure {
    /// The sentence shown instead of a drawing, when the figure is not drawn: its
    /// [`Plot::Note`], or [`ALL_ZERO_NOTE`] when every value it would draw is 0 (a flat line
    /// on an axis of nothing reads as a measurement).
    pub fn note(&self) -> Option<&str> {
        match &self.plot {
            Plot::Note { text } => Some(text),
            plot if plot.all_zero() => Some(ALL_ZERO_NOTE),
            _ => None,
        }
    }
}

impl Plot {
    /// Whether there is something to draw and every finite value drawn is 0 (the y values of
    /// lines, the five values of boxes).
    pub fn all_zero(&self) -> bool {
        let values: Vec<f64> = match self {
            Plot::Lines(chart) => chart
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .collect(),
            Plot::Boxes(chart) => chart
                .groups
                .iter()
                .flat_map(|g| &g.boxes)
                .flat_map(|b| [b.p5, b.p25, b.p50, b.p75, b.p95])
                .collect(),
            Plot::Note { .. } => Vec::new(),
        };
        let finite: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        !finite.is_empty() && finite.iter().all(|&v| v == 0.0)
    }

    /// The names of the series, in legend order (each once).
    pub fn series_names(&self) -> Vec<&str> {
        let all: Vec<&str> = match self {
            Plot::Lines(chart) => chart.series.iter().map(|s| s.name.as_str()).collect(),
            Plot::Boxes(chart) => chart
                .groups
                .iter()
                .flat_map(|g| g.boxes.iter().map(|b| b.series.as_str()))
                .collect(),
            Plot::Note { .. } => Vec::new(),
        };
        let mut names = Vec::new();
        for name in all {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }
}
