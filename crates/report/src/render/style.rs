//! What every figure shares: colours, fonts, the title, the legend, tick labels, the "no data"
//! note.

use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, DrawingAreaErrorKind};
use plotters::element::{Circle, PathElement, Rectangle, Text};
use plotters::prelude::DrawingBackend;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, IntoFont, RGBColor, ShapeStyle, TextStyle, BLACK};

use super::metrics::text_size;

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

/// The width of the legend column, right of the plot.
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
        .take(max + 1)
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
    let max = (f64::from(width) / (0.62 * TITLE_SIZE)) as usize;
    root.titled(&clean(title, max.max(8)), font(TITLE_SIZE))
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
#[derive(Debug, Clone, Copy)]
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
pub(super) struct Entry<'a> {
    pub(super) name: &'a str,
    pub(super) sample: Sample,
    pub(super) colour: RGBColor,
    /// Said after the name when the series has nothing to draw.
    pub(super) empty: bool,
}

/// Draws the legend in `area` (the column right of the plot), from `top` down.
pub(super) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    top: i32,
) -> Drawn<DB> {
    const ROW: i32 = 24;
    const MAX_ROWS: usize = 15;
    let (width, height) = area.dim_in_pixel();
    let max_chars = ((f64::from(width) - 44.0) / (0.62 * LEGEND_SIZE)) as usize;
    for (row, entry) in entries.iter().take(MAX_ROWS).enumerate() {
        let y = top + ROW * row as i32;
        if y + ROW > height as i32 {
            break;
        }
        sample(area, entry, (8, y))?;
        let name = if entry.empty {
            format!("{} (no data)", entry.name)
        } else {
            entry.name.to_string()
        };
        let style = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(clean(&name, max_chars), (38, y), style))?;
    }
    if entries.len() > MAX_ROWS {
        let y = top + ROW * MAX_ROWS as i32;
        let more = format!("… and {} more", entries.len() - MAX_ROWS);
        let style = font(LEGEND_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(more, (8, y), style))?;
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
        Sample::Line => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], stroke)),
        Sample::Dashed => {
            area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], stroke))?;
            area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], stroke))
        }
        Sample::Step => area.draw(&PathElement::new(
            vec![
                (x, y + 5),
                (x + 12, y + 5),
                (x + 12, y - 5),
                (x + 24, y - 5),
            ],
            stroke,
        )),
        Sample::Point => area.draw(&Circle::new((x + 12, y), 4, entry.colour.filled())),
        Sample::Box => {
            area.draw(&Rectangle::new(
                [(x + 4, y - 7), (x + 20, y + 7)],
                entry.colour.mix(0.3).filled(),
            ))?;
            area.draw(&Rectangle::new([(x + 4, y - 7), (x + 20, y + 7)], stroke))
        }
    }
}

/// Writes "no data" in the middle of a plot's drawing area.
pub(super) fn no_data<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>) -> Drawn<DB> {
    let size = area.dim_in_pixel();
    let text = "no data";
    let (w, _) = text_size(text, LABEL_SIZE);
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
