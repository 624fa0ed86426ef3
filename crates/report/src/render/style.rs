//! What every figure shares: colours, fonts, the title, the legend, tick labels, the "no data"
//! note.

use plotters::chart::{ChartBuilder, MeshStyle};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind};
use plotters::element::{Circle, PathElement, Rectangle, Text};
use plotters::prelude::DrawingBackend;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, IntoFont, RGBColor, ShapeStyle, TextStyle, BLACK};

use super::metrics::{text_size, text_width};

/// The result of drawing on a backend `DB`.
pub(super) type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The series' colours, in legend order (Okabe and Ito's palette, told apart with colour-blind
/// eyes too; its yellow left out, too pale on white), then again.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
];

/// Grey for axes' light grid and notes.
pub(super) const GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// The narrowest width of the legend column, right of the plot.
pub(super) const LEGEND_WIDTH: u32 = 200;

/// Font sizes (plotters' pixel sizes).
const TITLE_SIZE: f64 = 22.0;
pub(super) const LABEL_SIZE: f64 = 16.0;
pub(super) const TICK_SIZE: f64 = 14.0;
const LEGEND_SIZE: f64 = 15.0;

/// Whether the series named `name` comes after the palette has run out once: its colour is
/// another series' too, so a line is drawn dashed to tell them apart.
pub(super) fn colour_repeats(names: &[&str], name: &str) -> bool {
    names.iter().position(|n| *n == name).unwrap_or(0) >= PALETTE.len()
}

/// The colour of the series named `name` among `names` (legend order).
pub(super) fn colour(names: &[&str], name: &str) -> RGBColor {
    let index = names.iter().position(|n| *n == name).unwrap_or(0);
    PALETTE[index % PALETTE.len()]
}

/// A text style in the common sans-serif font.
pub(super) fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

/// `text` fit for any backend: control characters (which XML forbids) become spaces, and text
/// longer than `max` characters is cut with an ellipsis.
pub(super) fn clean(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max.saturating_add(1))
        .collect();
    if out.chars().count() > max {
        out = out.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
    }
    out
}

/// Draws the title at the top of `root`; returns the area below it.
pub(super) fn title<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, _) = root.dim_in_pixel();
    let room = f64::from(width.saturating_sub(16));
    let mut text = clean(title, usize::MAX);
    while text_width(&text, TITLE_SIZE) > room && text.chars().count() > 8 {
        let keep = text.chars().count() - 2;
        text = text.chars().take(keep).collect();
        text.push('…');
    }
    root.titled(&text, font(TITLE_SIZE))
}

/// A chart on `area` with the margin and the room for tick labels and axis names every plot
/// has; the caller gives its coordinates.
pub(super) fn plot_builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(78);
    builder
}

/// `mesh` styled as every plot's axes: the axis names `x_label` and `y_label` (cut to fit),
/// their fonts, the y axis's tick labels ([`tick`]) and the grid's greys. The caller adds what
/// its kind of chart does otherwise (the x axis's labels, no vertical grid) and draws it.
pub(super) fn axes<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    x_label: &str,
    y_label: &str,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged<ValueType = f64>,
    DB: DrawingBackend,
{
    mesh.x_desc(clean(x_label, 60))
        .y_desc(clean(y_label, 40))
        .axis_desc_style(font(LABEL_SIZE))
        .label_style(font(TICK_SIZE))
        .y_label_formatter(&tick)
        .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
        .bold_line_style(RGBColor(0xD8, 0xD8, 0xD8))
}

/// A tick label: integers as such, other values with at most four significant digits, very
/// large or small ones in scientific notation (`2.5e-5`).
pub(super) fn tick(value: &f64) -> String {
    let v = *value;
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    let magnitude = v.abs();
    if !(1e-3..1e6).contains(&magnitude) {
        let digits = format!("{:.3e}", v);
        return match digits.split_once('e') {
            Some((mantissa, exponent)) => {
                let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
                format!("{mantissa}e{exponent}")
            }
            None => digits,
        };
    }
    let decimals = (3 - magnitude.log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// How a legend entry's sample is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sample {
    /// A short line.
    Line,
    /// A short dashed line.
    Dashed,
    /// A step.
    Step,
    /// A marker.
    Point,
    /// A small filled box.
    Box,
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(super) struct Entry<'a> {
    pub(super) name: &'a str,
    pub(super) sample: Sample,
    pub(super) colour: RGBColor,
    /// Said after the name, in parentheses: `no data`, `all 0`, `under tls`.
    pub(super) note: Option<String>,
    /// Whether its curve carries markers (few points, or drawn under another): so does the
    /// sample.
    pub(super) marked: bool,
}

impl Entry<'_> {
    /// The entry's text: its name, and its note in parentheses.
    fn text(&self) -> String {
        let name = clean(self.name, usize::MAX);
        match &self.note {
            Some(note) => format!("{name} ({note})"),
            None => name,
        }
    }
}

/// The narrowest legend column, right of the plot.
const LEGEND_MIN_WIDTH: u32 = LEGEND_WIDTH;
/// The widest legend column: names longer than fits wrap onto more lines.
const LEGEND_MAX_WIDTH: u32 = 300;
/// Where a legend entry's text starts, right of its sample.
const LEGEND_TEXT_X: i32 = 38;
/// Room kept right of the longest line of a legend.
const LEGEND_RIGHT: u32 = 10;
/// Legend font sizes tried, largest first, until the legend fits the figure's height.
const LEGEND_SIZES: [f64; 4] = [LEGEND_SIZE, 14.0, 13.0, 12.0];
/// The space between two legend entries, in pixels.
const LEGEND_GAP: u32 = 6;

/// A legend laid out: the width of its column, its font size and each entry's lines (a name
/// wraps rather than being cut).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Legend {
    /// The column's width in pixels.
    pub(super) width: u32,
    /// The font size.
    size: f64,
    /// Each entry's text, one string per line.
    lines: Vec<Vec<String>>,
}

impl Legend {
    /// The height of one line of text.
    fn line_height(&self) -> u32 {
        (self.size * 1.25).ceil() as u32
    }

    /// The height the whole legend takes.
    pub(super) fn height(&self) -> u32 {
        let lines: usize = self.lines.iter().map(Vec::len).sum();
        let gaps = self.lines.len().saturating_sub(1) as u32;
        lines as u32 * self.line_height() + gaps * LEGEND_GAP
    }
}

/// Lays out the legend of `entries` to fit `height` pixels if it can: each name whole, on as
/// many lines as it takes in a column from [`LEGEND_MIN_WIDTH`] to [`LEGEND_MAX_WIDTH`]
/// pixels wide, in the largest of [`LEGEND_SIZES`] that fits (the smallest when none does: the
/// figure is then drawn taller, see [`Legend::height`]).
pub(super) fn legend_layout(entries: &[Entry], height: u32) -> Legend {
    let texts: Vec<String> = entries.iter().map(Entry::text).collect();
    let mut legend = None;
    for size in LEGEND_SIZES {
        let widest = texts
            .iter()
            .map(|t| text_width(t, size).ceil() as u32)
            .max()
            .unwrap_or(0);
        let width = (widest + LEGEND_TEXT_X as u32 + LEGEND_RIGHT)
            .clamp(LEGEND_MIN_WIDTH, LEGEND_MAX_WIDTH);
        let room = f64::from(width - LEGEND_TEXT_X as u32 - LEGEND_RIGHT);
        let laid = Legend {
            width,
            size,
            lines: texts.iter().map(|t| wrap(t, size, room)).collect(),
        };
        let fits = laid.height() <= height;
        legend = Some(laid);
        if fits {
            break;
        }
    }
    legend.unwrap_or(Legend {
        width: LEGEND_MIN_WIDTH,
        size: LEGEND_SIZE,
        lines: Vec::new(),
    })
}

/// `text` cut into lines no wider than `room` pixels at font size `size`: at spaces, or inside
/// a word too long for a line of its own; nothing is left out.
fn wrap(text: &str, size: f64, room: f64) -> Vec<String> {
    let fits = |line: &str| text_width(line, size) <= room;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let joined = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if fits(&joined) {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // The word alone, cut where it must be.
        for c in word.chars() {
            line.push(c);
            if !fits(&line) && line.chars().count() > 1 {
                line.pop();
                lines.push(std::mem::take(&mut line));
                line.push(c);
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Draws the legend of `entries`, laid out as `legend`, in `area` (the column right of the
/// plot), from `top` down.
pub(super) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: &Legend,
    entries: &[Entry],
    top: i32,
) -> Drawn<DB> {
    let line = legend.line_height() as i32;
    let mut y = top + line / 2;
    for (entry, lines) in entries.iter().zip(&legend.lines) {
        sample(area, entry, (8, y))?;
        let style = font(legend.size).pos(Pos::new(HPos::Left, VPos::Center));
        for (k, text) in lines.iter().enumerate() {
            let at = (LEGEND_TEXT_X, y + line * k as i32);
            area.draw(&Text::new(text.clone(), at, style.clone()))?;
        }
        y += line * lines.len() as i32 + LEGEND_GAP as i32;
    }
    Ok(())
}

/// Draws an entry's sample, 24 pixels wide, centred vertically on `y`.
fn sample<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entry: &Entry,
    (x, y): (i32, i32),
) -> Drawn<DB> {
    let stroke = entry.colour.stroke_width(2);
    match entry.sample {
        Sample::Line => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], stroke))?,
        Sample::Dashed => {
            area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], stroke))?;
            area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], stroke))?
        }
        Sample::Step => area.draw(&PathElement::new(
            vec![
                (x, y + 5),
                (x + 12, y + 5),
                (x + 12, y - 5),
                (x + 24, y - 5),
            ],
            stroke,
        ))?,
        Sample::Point => area.draw(&Circle::new((x + 12, y), 4, entry.colour.filled()))?,
        Sample::Box => {
            area.draw(&Rectangle::new(
                [(x + 4, y - 7), (x + 20, y + 7)],
                entry.colour.mix(0.3).filled(),
            ))?;
            area.draw(&Rectangle::new([(x + 4, y - 7), (x + 20, y + 7)], stroke))?
        }
    }
    if entry.marked && entry.sample != Sample::Point {
        area.draw(&Circle::new(
            (x + 12, y),
            MARKER_RADIUS,
            entry.colour.filled(),
        ))?;
    }
    Ok(())
}

/// The radius of the markers put on a curve with few points or drawn under another.
pub(super) const MARKER_RADIUS: u32 = 4;

/// Writes "no data" in the middle of a plot's drawing area.
pub(super) fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Drawn<DB> {
    note(area, "no data")
}

/// Writes `text` in the middle of `area`, in grey (cut to its width).
pub(super) fn note<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str) -> Drawn<DB> {
    let size = area.dim_in_pixel();
    let mut text = clean(text, usize::MAX);
    while text_width(&text, LABEL_SIZE) > f64::from(size.0.saturating_sub(16))
        && text.chars().count() > 8
    {
        let keep = text.chars().count() - 2;
        text = text.chars().take(keep).collect();
        text.push('…');
    }
    let (w, _) = text_size(&text, LABEL_SIZE);
    let style = font(LABEL_SIZE)
        .color(&GREY)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let at = ((size.0 as i32 - w as i32) / 2, size.1 as i32 / 2);
    area.draw(&Text::new(text, at, style))
}

/// The style of a series' line.
pub(super) fn stroke(colour: RGBColor) -> ShapeStyle {
    colour.stroke_width(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        let cases = [
            (0.0, "0"),
            (1.0, "1"),
            (10.0, "10"),
            (0.5, "0.5"),
            (0.1 + 0.2, "0.3"),
            (1234.5678, "1235"),
            (0.012345, "0.01235"),
            (100_000.0, "100000"),
            (1e6, "1e6"),
            (2.5e-5, "2.5e-5"),
            (0.001, "0.001"),
            (-3.0, "-3"),
        ];
        for (value, label) in cases {
            assert_eq!(tick(&value), label, "{value}");
        }
    }

    #[test]
    fn cleaned_text_has_no_control_characters_and_is_cut_with_an_ellipsis() {
        assert_eq!(clean("a\u{0}b\nc", 10), "a b c");
        assert_eq!(clean("abcdefghij", 5), "abcd…");
        assert_eq!(clean("abcde", 5), "abcde");
    }
}
