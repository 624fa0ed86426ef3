//! A real browser as a test's witness: Debian's headless Chromium loads a page with the network
//! off and tells what a reader would see.
//!
//! [`render`] runs Chromium twice in a fresh network namespace (`unshare --net`: nothing but a
//! down loopback, so nothing can be fetched): once on a copy of the page with a measuring script
//! added, which writes where every `figure.figure` element lies and how tall the page is, and
//! once on the page itself, unchanged, for a screenshot of the whole page, its console messages
//! and the network requests it tried (from Chromium's network log). [`Screenshot::ink`] then
//! says whether a region of the picture has anything drawn in it. The measuring run also says
//! where each piece of text of a figure's drawing lies ([`FigureBox::texts`]) and what a figure
//! says in place of a drawing ([`FigureBox::note`]), so that a test can check that a legend is
//! shown whole or that no tick reads below zero.

mod logs;
mod measure;
mod process;
mod screenshot;

use std::path::{Path, PathBuf};

use crate::prerequisite;

pub use screenshot::{Ink, Screenshot};

/// The width of the browser's window, in CSS pixels (one device pixel each).
pub const WINDOW_WIDTH: u32 = 1280;

/// The tallest screenshot taken; a longer page is cut there.
pub const MAX_HEIGHT: u32 = 16_384;

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// Chromium is not installed.
    #[error("chromium is not installed (apt-get install chromium)")]
    NotInstalled,
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Chromium failed, or did not finish in time.
    #[error("chromium ({what}): {why}; its last words:\n{stderr}")]
    Chromium {
        /// Which run (`measure`, `screenshot`).
        what: &'static str,
        /// How it failed.
        why: String,
        /// The end of its standard error.
        stderr: String,
    },
    /// The measuring run did not say where the figures are.
    #[error("the measuring script wrote nothing readable: {0}")]
    Measure(String),
    /// The screenshot is not a PNG this module can read.
    #[error("screenshot {path}: {why}")]
    Screenshot {
        /// The screenshot.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// What Chromium made of a page.
#[derive(Debug, Clone)]
pub struct Rendering {
    /// The screenshot of the whole page (up to [`MAX_HEIGHT`] pixels), kept in the output
    /// directory as `<page's stem>.png`.
    pub screenshot: PathBuf,
    /// The page's console messages (logs, errors, uncaught exceptions, Content-Security-Policy
    /// violations), each as Chromium logged it; the browser's own pages' messages are left out.
    pub console: Vec<String>,
    /// The URLs the page tried to fetch over the network (all failed: there is none).
    pub fetched: Vec<String>,
    /// Every `figure.figure` element, in document order.
    pub figures: Vec<FigureBox>,
    /// The page's full height in pixels (the screenshot's height, unless cut at
    /// [`MAX_HEIGHT`]).
    pub page_height: u32,
}

/// Where a figure lies on the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureBox {
    /// The element's `id` (empty when it has none).
    pub id: String,
    /// The whole element: drawing, caption and all.
    pub rect: Rect,
    /// Its first `svg`, `img` or `canvas` element: the drawing itself.
    pub drawing: Option<Rect>,
    /// Every `text` element of its drawing, in document order, as laid out (the box of its
    /// glyphs).
    pub texts: Vec<TextBox>,
    /// The text of its `p.note` element, which says why a figure is not drawn, if it has one.
    pub note: Option<String>,
}

/// A piece of text of a drawing and where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextBox {
    /// Where its glyphs lie, in page coordinates.
    pub rect: Rect,
    /// The text, as the page has it (spaces and line breaks as single spaces).
    pub text: String,
}

impl Rect {
    /// Whether `inner` lies wholly inside this rectangle.
    pub fn contains(&self, inner: &Rect) -> bool {
        inner.x >= self.x
            && inner.y >= self.y
            && inner.x + inner.width <= self.x + self.width
            && inner.y + inner.height <= self.y + self.height
    }
}

/// A rectangle in page coordinates (pixels from the page's top left corner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Chromium and network namespaces, for a test that renders a page; `None` only when
/// skipping is allowed.
pub fn chromium() -> Option<PathBuf> {
    let path = prerequisite::tool("chromium", "chromium")?;
    prerequisite::netns().then_some(path)
}

/// Renders the page `html` in headless Chromium with the network off; the screenshot is
/// written into `out_dir`.
pub fn render(html: &Path, out_dir: &Path) -> Result<Rendering, BrowserError> {
    let chromium = prerequisite::installed("chromium").ok_or(BrowserError::NotInstalled)?;
    let html = std::fs::canonicalize(html).map_err(|source| io(html, source))?;
    std::fs::create_dir_all(out_dir).map_err(|source| io(out_dir, source))?;
    let scratch =
        tempfile::tempdir().map_err(|source| io(Path::new("temporary directory"), source))?;

    let (figures, page_height) = measure::measure(&chromium, &html, scratch.path())?;

    let stem = html
        .file_stem()
        .map_or_else(|| "page".into(), |s| s.to_os_string());
    let screenshot = out_dir.join(Path::new(&stem).with_extension("png"));
    let screenshot = std::path::absolute(&screenshot).map_err(|source| io(&screenshot, source))?;
    let net_log = scratch.path().join("net-log.json");
    let height = page_height.clamp(1, MAX_HEIGHT);
    let mut args = vec![
        process::flag("--screenshot=", &screenshot),
        format!("--window-size={WINDOW_WIDTH},{height}").into(),
        process::flag("--log-net-log=", &net_log),
    ];
    args.push(process::file_url(&html));
    let run = process::run(&chromium, "screenshot", &args, scratch.path())?;
    if !screenshot.is_file() {
        return Err(BrowserError::Chromium {
            what: "screenshot",
            why: format!("no screenshot at {}", screenshot.display()),
            stderr: process::tail(&run.stderr),
        });
    }
    let log = std::fs::read_to_string(&net_log).map_err(|source| io(&net_log, source))?;
    Ok(Rendering {
        screenshot,
        console: logs::console_messages(&run.stderr),
        fetched: logs::page_fetches(&log)?,
        figures,
        page_height,
    })
}

/// The error of a file that could not be read or written.
fn io(path: &Path, source: std::io::Error) -> BrowserError {
    BrowserError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page with `head` and `body`, written in `dir` and rendered.
    fn rendered(dir: &Path, name: &str, head: &str, body: &str) -> (Rendering, Screenshot) {
        let page = dir.join(name);
        let html = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
             <style>body{{margin:0;background:#fff}}figure{{margin:20px;width:400px;height:300px}}</style>\
             {head}</head><body>{body}</body></html>"
        );
        std::fs::write(&page, html).expect("page");
        let rendering = render(&page, dir).expect("render");
        let screenshot = Screenshot::open(&rendering.screenshot).expect("screenshot");
        (rendering, screenshot)
    }

    #[test]
    fn a_blank_figure_is_told_from_a_drawn_one() {
        if chromium().is_none() {
            return;
        }
        let dir = tempfile::tempdir().expect("scratch");
        let (rendering, screenshot) = rendered(
            dir.path(),
            "figures.html",
            "",
            "<figure class=\"figure\" id=\"blank\"><svg width=\"400\" height=\"300\"></svg></figure>\
             <div style=\"height:900px\"></div>\
             <figure class=\"figure\" id=\"drawn\"><svg width=\"400\" height=\"300\">\
             <polyline points=\"0,300 100,50 200,250 400,0\" stroke=\"#0072B2\" stroke-width=\"3\" fill=\"none\"/>\
             </svg></figure>",
        );
        assert!(rendering.console.is_empty(), "{:?}", rendering.console);
        assert!(rendering.fetched.is_empty(), "{:?}", rendering.fetched);
        let ids: Vec<&str> = rendering.figures.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["blank", "drawn"]);
        let (blank, drawn) = (&rendering.figures[0], &rendering.figures[1]);
        assert_eq!(
            blank.rect,
            Rect {
                x: 20,
                y: 20,
                width: 400,
                height: 300
            }
        );
        assert!(drawn.rect.y > 1200, "{drawn:?}");
        assert!(rendering.page_height >= drawn.rect.y + drawn.rect.height);
        assert_eq!(screenshot.size(), (WINDOW_WIDTH, rendering.page_height));
        let blue = [0x00, 0x72, 0xB2];
        assert_eq!(screenshot.pixels_of(blank.rect, blue, 8), 0);
        assert!(screenshot.pixels_of(drawn.rect, blue, 8) > 300);
        let (blank, drawn) = (screenshot.ink(blank.rect), screenshot.ink(drawn.rect));
        assert!(blank.is_blank(), "{blank:?}");
        assert!(!drawn.is_blank(), "{drawn:?}");
        assert!(drawn.vivid > 300, "{drawn:?}");
    }

    #[test]
    fn console_errors_and_fetches_are_reported() {
        if chromium().is_none() {
            return;
        }
        let dir = tempfile::tempdir().expect("scratch");
        let (rendering, _) = rendered(
            dir.path(),
            "noisy.html",
            "",
            "<p>noisy</p><img src=\"https://example.com/a.png\">\
             <script>console.error('x-marks-the-spot'); undefinedFunction();</script>",
        );
        let console = rendering.console.join("\n");
        assert!(console.contains("x-marks-the-spot"), "{console}");
        assert!(console.contains("Uncaught ReferenceError"), "{console}");
        assert_eq!(rendering.fetched, ["https://example.com/a.png"]);
    }

    #[test]
    fn a_content_security_policy_violation_is_a_console_message() {
        if chromium().is_none() {
            return;
        }
        let dir = tempfile::tempdir().expect("scratch");
        let (rendering, _) = rendered(
            dir.path(),
            "blocked.html",
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">",
            "<img src=\"http://example.com/b.png\">",
        );
        let console = rendering.console.join("\n");
        assert!(console.contains("http://example.com/b.png"), "{console}");
        assert!(console.contains("Content Security Policy"), "{console}");
        assert!(
            rendering.fetched.is_empty(),
            "blocked before any request: {:?}",
            rendering.fetched
        );
    }
}
