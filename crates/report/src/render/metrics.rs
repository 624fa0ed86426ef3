//! A plotters backend whose text is measured without a font.
//!
//! plotters lays out titles, tick labels and legends from the size of their text, which it
//! normally asks the font for. Measured with fixed per-character widths instead, a figure's
//! layout is the same whatever fonts a machine has (the SVG is reproducible byte for byte, and
//! needs no font at all), and the PNG is laid out exactly as the SVG.

use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle};
use plotters_backend::{DrawingBackend, DrawingErrorKind};

/// Width of an average character of a sans-serif font, in ems (DejaVu Sans: digits 0.64,
/// lower case about 0.56): a little generous, so that labels never overlap.
const CHAR_WIDTH_EM: f64 = 0.62;

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
    let chars = text.chars().count() as f64;
    let width = (chars * CHAR_WIDTH_EM * size).ceil();
    let height = (LINE_HEIGHT_EM * size).ceil();
    (width as u32, height as u32)
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
