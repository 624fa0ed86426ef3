//! A plotters backend whose text is measured without a font.
//!
//! plotters lays out titles, tick labels and legends from the size of their text, which it
//! normally asks the font for. Measured with a table of character widths instead (those of
//! DejaVu Sans, the font PNGs are drawn with and the one a Debian browser shows SVG text in; one
//! of the widest sans-serif fonts), a figure's layout is the same whatever fonts a machine has
//! (the SVG is reproducible byte for byte, and needs no font at all), the PNG is laid out
//! exactly as the SVG, and text measured to fit (a legend's wrapped names) fits when shown.

use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle};
use plotters_backend::{DrawingBackend, DrawingErrorKind};

/// The advance widths of DejaVu Sans (in 1/2048 em) of the printable ASCII characters, from
/// the space (0x20) to the tilde (0x7E), as its `hmtx` table gives them.
const ASCII_WIDTHS: [u16; 95] = [
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, 2048,
    1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, 1235,
    1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024, 1024,
    1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300,
    1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716,
];

/// The units of [`ASCII_WIDTHS`] in an em.
const UNITS_PER_EM: f64 = 2048.0;

/// A little room on top of the font's widths (a browser rounds glyph positions, hints, or
/// shows the text in a slightly wider font), so that text measured to fit does.
const SLACK: f64 = 1.04;

/// The width of `c` in ems: DejaVu Sans's for ASCII and the signs figures use (`µ`, `≤`, `−`,
/// `±`, `…`), a full em (as wide as the widest letters) for anything else.
pub(super) fn char_width_em(c: char) -> f64 {
    let units = match c {
        ' '..='~' => ASCII_WIDTHS[c as usize - 0x20],
        'µ' => 1303,
        '·' => 651,
        '°' | '–' => 1024,
        '≤' | '≥' | '−' | '±' | '×' | '→' | '←' => 1716,
        _ => 2048,
    };
    f64::from(units) / UNITS_PER_EM
}

/// Height of a line of text in ems, as plotters' own layout counts it.
const LINE_HEIGHT_EM: f64 = 1.0 / 1.24;

/// A backend drawing through `B`, measuring text by its length.
pub(super) struct Measured<B>(B);

impl<B> Measured<B> {
    /// Wraps `backend`.
    pub(super) fn new(backend: B) -> Self {
        Measured(backend)
    }
}

/// The size in pixels of `text` at a font size of `size` pixels.
pub(super) fn text_size(text: &str, size: f64) -> (u32, u32) {
    let width = (text_width(text, size)).ceil();
    let height = (LINE_HEIGHT_EM * size).ceil();
    (width as u32, height as u32)
}

/// The width in pixels of `text` at a font size of `size` pixels.
pub(super) fn text_width(text: &str, size: f64) -> f64 {
    let ems: f64 = text.chars().map(char_width_em).sum();
    ems * size * SLACK
}

impl<B: DrawingBackend> DrawingBackend for Measured<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.draw_text(text, style, pos)
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<B::ErrorType>> {
        Ok(text_size(text, style.size()))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.0.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ab_glyph::{Font, FontRef};

    /// The table holds the widths of the font figures are drawn with, as its file gives them.
    #[test]
    fn the_widths_are_those_of_the_bitmap_font() {
        let Some(path) = super::super::bitmap_font() else {
            ldplayer_testbed::prerequisite::require(
                false,
                "the font DejaVu Sans",
                "apt-get install fonts-dejavu-core (scripts/test.sh does)",
            );
            return;
        };
        let bytes = std::fs::read(path).expect("the font file");
        let font = FontRef::try_from_slice(&bytes).expect("a font");
        let em = f64::from(font.units_per_em().expect("units per em"));
        let checked = (' '..='~').chain("µ·°–≤≥−±×→←".chars());
        for c in checked {
            let advance = f64::from(font.h_advance_unscaled(font.glyph_id(c)));
            assert_eq!(char_width_em(c), advance / em, "{c:?}");
        }
    }
}
