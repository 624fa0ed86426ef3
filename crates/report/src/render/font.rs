//! The font a PNG's text is drawn with, read from the system once.
//!
//! plotters draws bitmap text through ab_glyph, from font bytes it is handed; no font file is
//! shipped with ldplayer, so DejaVu Sans (Debian's `fonts-dejavu-core`, present on most Linux
//! systems) is looked for in the usual places. SVG needs no font: its text is drawn by whatever
//! displays it.

use std::path::Path;
use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

/// Where the bitmap font is looked for, in order.
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
];

/// The Debian package that installs the bitmap font.
pub const FONT_PACKAGE: &str = "fonts-dejavu-core";

/// The font PNG figures are drawn with, registered with plotters on the first call; `None` when
/// none of [`FONT_CANDIDATES`] is a font (then only SVG can be drawn).
pub fn bitmap_font() -> Option<&'static Path> {
    static FONT: OnceLock<Option<&'static Path>> = OnceLock::new();
    *FONT.get_or_init(|| FONT_CANDIDATES.iter().map(Path::new).find(|p| register(p)))
}

/// Registers the font file at `path` as plotters' sans-serif; false when it cannot be read or
/// is not a font.
fn register(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    // plotters keeps registered fonts for the life of the process; it is read once.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
}
