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

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::prerequisite;

/// The width of the browser's window, in CSS pixels (one device pixel each).
pub const WINDOW_WIDTH: u32 = 1280;

/// The tallest screenshot taken; a longer page is cut there.
pub const MAX_HEIGHT: u32 = 16_384;

/// How long one Chromium run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The id of the element the measuring script writes into.
const MEASURE_ID: &str = "ldplayer-measure";

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

    let (figures, page_height) = measure(&chromium, &html, scratch.path())?;

    let stem = html
        .file_stem()
        .map_or_else(|| "page".into(), |s| s.to_os_string());
    let screenshot = out_dir.join(Path::new(&stem).with_extension("png"));
    let screenshot = std::path::absolute(&screenshot).map_err(|source| io(&screenshot, source))?;
    let net_log = scratch.path().join("net-log.json");
    let height = page_height.clamp(1, MAX_HEIGHT);
    let mut args = vec![
        flag("--screenshot=", &screenshot),
        format!("--window-size={WINDOW_WIDTH},{height}").into(),
        flag("--log-net-log=", &net_log),
    ];
    args.push(file_url(&html));
    let run = run(&chromium, "screenshot", &args, scratch.path())?;
    if !screenshot.is_file() {
        return Err(BrowserError::Chromium {
            what: "screenshot",
            why: format!("no screenshot at {}", screenshot.display()),
            stderr: tail(&run.stderr),
        });
    }
    let log = std::fs::read_to_string(&net_log).map_err(|source| io(&net_log, source))?;
    Ok(Rendering {
        screenshot,
        console: console_messages(&run.stderr),
        fetched: page_fetches(&log)?,
        figures,
        page_height,
    })
}

/// Where the figures are and how tall the page is, from a copy of the page with a measuring
/// script (and without a Content-Security-Policy, which would forbid it).
fn measure(
    chromium: &Path,
    html: &Path,
    scratch: &Path,
) -> Result<(Vec<FigureBox>, u32), BrowserError> {
    let page = std::fs::read_to_string(html).map_err(|source| io(html, source))?;
    // A self-contained page lays out the same from any folder.
    let copy = scratch.join("measure.html");
    std::fs::write(&copy, with_measuring_script(&page)).map_err(|source| io(&copy, source))?;
    let args = vec![
        OsString::from("--dump-dom"),
        format!("--window-size={WINDOW_WIDTH},800").into(),
        file_url(&copy),
    ];
    let run = run(chromium, "measure", &args, scratch)?;
    parse_measurements(&run.stdout)
}

/// The script that writes each `figure.figure`'s rectangle (and its drawing's) and the page's
/// size into the page, as lines of text in a `pre` element the dumped DOM shows.
const MEASURING_SCRIPT: &str = r#"<script>
(function () {
  var sx = window.scrollX, sy = window.scrollY, out = [];
  function rect(e) {
    var r = e.getBoundingClientRect();
    return [Math.round(r.left + sx), Math.round(r.top + sy), Math.round(r.width), Math.round(r.height)].join(' ');
  }
  function words(t) { return (t || '').replace(/\s+/g, ' ').trim(); }
  document.querySelectorAll('figure.figure').forEach(function (f, k) {
    var d = f.querySelector('svg, img, canvas');
    out.push('figure ' + rect(f) + ' ' + (d ? rect(d) : '- - - -') + ' ' + f.id);
    if (d) {
      d.querySelectorAll('text').forEach(function (t) {
        out.push('text ' + k + ' ' + rect(t) + ' ' + words(t.textContent));
      });
    }
    var n = f.querySelector('p.note');
    if (n) { out.push('note ' + k + ' ' + words(n.textContent)); }
  });
  out.push('height ' + Math.ceil(document.documentElement.scrollHeight));
  var pre = document.createElement('pre');
  pre.id = 'ldplayer-measure';
  pre.textContent = '\n' + out.join('\n') + '\n';
  document.body.appendChild(pre);
})();
</script>
"#;

/// `page` without its Content-Security-Policy meta element, the measuring script added at the
/// end of its body.
fn with_measuring_script(page: &str) -> String {
    let mut page = page.to_string();
    let lower = page.to_ascii_lowercase();
    if let Some(policy) = lower.find("content-security-policy") {
        // Only when the words are inside a meta tag (not, say, in a paragraph).
        let start = lower[..policy]
            .rfind("<meta")
            .filter(|&start| !lower[start..policy].contains('>'));
        let end = lower[policy..].find('>').map(|e| policy + e + 1);
        if let (Some(start), Some(end)) = (start, end) {
            page.replace_range(start..end, "");
        }
    }
    let lower = page.to_ascii_lowercase();
    match lower.rfind("</body>") {
        Some(at) => page.insert_str(at, MEASURING_SCRIPT),
        None => page.push_str(MEASURING_SCRIPT),
    }
    page
}

/// The figures and the page height from the dumped DOM.
fn parse_measurements(dom: &str) -> Result<(Vec<FigureBox>, u32), BrowserError> {
    let open = format!("<pre id=\"{MEASURE_ID}\">");
    let start = dom
        .find(&open)
        .ok_or_else(|| BrowserError::Measure(format!("no {open} in the dumped page")))?;
    let text = &dom[start + open.len()..];
    let text = &text[..text.find("</pre>").unwrap_or(text.len())];
    let mut figures = Vec::new();
    let mut height = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let words: Vec<&str> = line.split(' ').collect();
        let bad = || BrowserError::Measure(format!("unreadable line {line:?}"));
        match words.first().copied() {
            Some("figure") if words.len() >= 9 => {
                let number = |w: &str| w.parse::<i64>().map(|v| v.max(0) as u32).ok();
                let rect = |at: usize| -> Option<Rect> {
                    Some(Rect {
                        x: number(words[at])?,
                        y: number(words[at + 1])?,
                        width: number(words[at + 2])?,
                        height: number(words[at + 3])?,
                    })
                };
                figures.push(FigureBox {
                    id: unescape(&words[9..].join(" ")),
                    rect: rect(1).ok_or_else(bad)?,
                    drawing: rect(5),
                    texts: Vec::new(),
                    note: None,
                });
            }
            Some("text") if words.len() >= 6 => {
                let number = |w: &str| w.parse::<i64>().map(|v| v.max(0) as u32).ok();
                let figure = words[1]
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| figures.get_mut(k))
                    .ok_or_else(bad)?;
                let rect = Rect {
                    x: number(words[2]).ok_or_else(bad)?,
                    y: number(words[3]).ok_or_else(bad)?,
                    width: number(words[4]).ok_or_else(bad)?,
                    height: number(words[5]).ok_or_else(bad)?,
                };
                figure.texts.push(TextBox {
                    rect,
                    text: unescape(&words[6..].join(" ")),
                });
            }
            Some("note") if words.len() >= 2 => {
                let figure = words[1]
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| figures.get_mut(k))
                    .ok_or_else(bad)?;
                figure.note = Some(unescape(&words[2..].join(" ")));
            }
            Some("height") if words.len() == 2 => {
                height = Some(words[1].parse::<u32>().map_err(|_| bad())?);
            }
            _ => return Err(bad()),
        }
    }
    let height = height.ok_or_else(|| BrowserError::Measure("no page height".into()))?;
    Ok((figures, height))
}

/// Text of the dumped DOM as it was before serialisation.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// What a Chromium run printed.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs Chromium headless with `args` in a new network namespace, with a fresh profile in
/// `scratch`, for at most [`RUN_TIMEOUT`].
fn run(
    chromium: &Path,
    what: &'static str,
    args: &[OsString],
    scratch: &Path,
) -> Result<Run, BrowserError> {
    let profile = tempfile::tempdir_in(scratch).map_err(|source| io(scratch, source))?;
    let mut command = Command::new("unshare");
    if !prerequisite::effective_uid_is_root() {
        // A user namespace of our own, in which we may make the network namespace.
        command.arg("--map-root-user");
    }
    command
        .args(["--net", "--"])
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--force-device-scale-factor=1",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--mute-audio",
        ])
        .arg(flag("--user-data-dir=", profile.path()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fail = |why: String, stderr: &str| BrowserError::Chromium {
        what,
        why,
        stderr: tail(stderr),
    };
    let mut child = command
        .spawn()
        .map_err(|e| fail(format!("could not start unshare: {e}"), ""))?;
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > RUN_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("still running after {RUN_TIMEOUT:?}, killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => break Err(format!("waiting for it: {e}")),
        }
    };
    let joined = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let (stdout, stderr) = (joined(stdout), joined(stderr));
    match status {
        Ok(status) if status.success() => Ok(Run { stdout, stderr }),
        Ok(status) => Err(fail(format!("exited with {status}"), &stderr)),
        Err(why) => Err(fail(why, &stderr)),
    }
}

/// Reads a pipe to its end on a thread of its own (so that neither pipe blocks the child).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The page's console messages among Chromium's log lines, which look like
/// `[pid:tid:time:INFO:CONSOLE:1] "message", source: file:///page.html (1)`.
fn console_messages(stderr: &str) -> Vec<String> {
    const BROWSER_OWN: [&str; 4] = [
        "chrome://",
        "chrome-untrusted://",
        "devtools://",
        "chrome-extension://",
    ];
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught"))
        .filter(|line| {
            let source = line.rsplit_once("source: ").map_or("", |(_, s)| s);
            !BROWSER_OWN.iter().any(|own| source.starts_with(own))
        })
        .map(|line| line.split_once("] ").map_or(line, |(_, m)| m).to_string())
        .collect()
}

/// The URLs of the network requests a page (a `file:` document) started, from Chromium's
/// network log; the browser's own requests are left out.
fn page_fetches(log: &str) -> Result<Vec<String>, BrowserError> {
    // A log cut short (Chromium killed) lacks its closing brackets.
    let parsed: serde_json::Value = serde_json::from_str(log)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", log.trim_end().trim_end_matches(','))))
        .map_err(|e| BrowserError::Measure(format!("Chromium's network log: {e}")))?;
    let start_job = parsed
        .pointer("/constants/logEventTypes/URL_REQUEST_START_JOB")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| {
            BrowserError::Measure("the network log names no URL_REQUEST_START_JOB".into())
        })?;
    let events = parsed
        .get("events")
        .and_then(serde_json::Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut urls = Vec::new();
    for event in events {
        if event.get("type").and_then(serde_json::Value::as_i64) != Some(start_job) {
            continue;
        }
        let param = |key: &str| {
            event
                .pointer(&format!("/params/{key}"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        let from_page = param("network_isolation_key").contains("file://")
            || param("initiator").starts_with("file://");
        let url = param("url");
        if from_page && !url.starts_with("file:") && !url.starts_with("data:") {
            urls.push(url.to_string());
        }
    }
    Ok(urls)
}

/// A decoded screenshot.
#[derive(Debug, Clone)]
pub struct Screenshot {
    width: u32,
    height: u32,
    rgb: Vec<[u8; 3]>,
}

/// What is drawn in a region of a screenshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ink {
    /// The pixels of the region (inside the picture).
    pub pixels: u64,
    /// Those of another colour than the region's commonest (its background).
    pub drawn: u64,
    /// The distinct colours, counted up to 1,000.
    pub colours: usize,
    /// The pixels of a vivid colour (a channel at least 64 from another), which text and axes
    /// in black and grey never are: a coloured curve or box.
    pub vivid: u64,
}

impl Ink {
    /// Whether nothing is drawn: under 1 % of the pixels differ from the background, or there
    /// is a single colour.
    pub fn is_blank(&self) -> bool {
        self.colours < 2 || self.drawn * 100 < self.pixels
    }
}

impl Screenshot {
    /// Reads a PNG screenshot (8-bit RGB or RGBA, as Chromium writes).
    pub fn open(path: &Path) -> Result<Screenshot, BrowserError> {
        let bad = |why: String| BrowserError::Screenshot {
            path: path.to_path_buf(),
            why,
        };
        let file = std::fs::File::open(path).map_err(|source| io(path, source))?;
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().map_err(|e| bad(e.to_string()))?;
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| bad("an image too large to hold in memory".into()))?;
        let mut buffer = vec![0; size];
        let frame = reader
            .next_frame(&mut buffer)
            .map_err(|e| bad(e.to_string()))?;
        let channels = match frame.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => return Err(bad(format!("colour type {other:?}"))),
        };
        let rgb = buffer[..frame.buffer_size()]
            .chunks_exact(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Ok(Screenshot {
            width: frame.width,
            height: frame.height,
            rgb,
        })
    }

    /// The picture's width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// How many pixels of `rect` (the part of it inside the picture) are of the colour `rgb`,
    /// each channel within `tolerance`: how much of one curve's colour is seen.
    pub fn pixels_of(&self, rect: Rect, rgb: [u8; 3], tolerance: u8) -> u64 {
        let x_end = rect.x.saturating_add(rect.width).min(self.width);
        let y_end = rect.y.saturating_add(rect.height).min(self.height);
        let mut n = 0;
        for y in rect.y.min(y_end)..y_end {
            let row = (y * self.width) as usize;
            for x in rect.x.min(x_end)..x_end {
                let pixel = self.rgb[row + x as usize];
                if pixel
                    .iter()
                    .zip(rgb)
                    .all(|(&a, b)| a.abs_diff(b) <= tolerance)
                {
                    n += 1;
                }
            }
        }
        n
    }

    /// What is drawn in `rect` (the part of it inside the picture).
    pub fn ink(&self, rect: Rect) -> Ink {
        let x_end = rect.x.saturating_add(rect.width).min(self.width);
        let y_end = rect.y.saturating_add(rect.height).min(self.height);
        let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
        let mut vivid = 0;
        for y in rect.y.min(y_end)..y_end {
            let row = (y * self.width) as usize;
            for x in rect.x.min(x_end)..x_end {
                let pixel = self.rgb[row + x as usize];
                *counts.entry(pixel).or_default() += 1;
                let (max, min) = (pixel.iter().max(), pixel.iter().min());
                if let (Some(max), Some(min)) = (max, min) {
                    if max - min >= 64 {
                        vivid += 1;
                    }
                }
            }
        }
        let pixels: u64 = counts.values().sum();
        let background = counts.values().copied().max().unwrap_or(0);
        Ink {
            pixels,
            drawn: pixels - background,
            colours: counts.len().min(1000),
            vivid,
        }
    }
}

/// A `--flag=path` argument.
fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path);
    flag
}

/// The `file://` URL of an absolute path, its bytes other than letters, digits, `/`, `-`,
/// `.`, `_` and `~` percent-encoded.
fn file_url(path: &Path) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    let mut url = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url.into()
}

/// The last lines of a run's standard error, for an error message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn io(path: &Path, source: std::io::Error) -> BrowserError {
    BrowserError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_of_the_page_are_kept_and_the_browser_s_own_left_out() {
        let stderr = "\
[1:1:1123/202527.366321:ERROR:dbus/bus.cc:405] Failed to connect to the bus
[2:2:1123/202539.277063:INFO:CONSOLE:574] \"Slow network is detected.\", source: chrome://resources/x.js (574)
[3:3:1123/202549.604287:INFO:CONSOLE:1] \"plain log\", source: file:///tmp/a%20b.html (1)
[3:3:1123/202549.605148:INFO:CONSOLE:1] \"Uncaught Error: boom\", source: file:///tmp/a.html (1)
";
        assert_eq!(
            console_messages(stderr),
            [
                "\"plain log\", source: file:///tmp/a%20b.html (1)",
                "\"Uncaught Error: boom\", source: file:///tmp/a.html (1)"
            ]
        );
    }

    #[test]
    fn the_copy_loses_its_policy_and_gains_the_script_at_the_end_of_its_body() {
        let page = "<html><head><META http-equiv=\"Content-Security-Policy\" \
                    content=\"default-src 'none'\"><title>t</title></head><body><p>x</p></body></html>";
        let copy = with_measuring_script(page);
        assert!(
            !copy
                .to_ascii_lowercase()
                .contains("content-security-policy"),
            "{copy}"
        );
        assert!(copy.contains("<title>t</title>"));
        assert!(copy.contains("<p>x</p><script>"), "{copy}");
        assert!(copy.ends_with("</script>\n</body></html>"), "{copy}");
        let prose =
            "<head><meta charset=\"utf-8\"></head><body><p>Content-Security-Policy</p></body>";
        let copy = with_measuring_script(prose);
        assert!(
            copy.starts_with(
                "<head><meta charset=\"utf-8\"></head><body><p>Content-Security-Policy</p>"
            ),
            "{copy}"
        );
    }

    #[test]
    fn measurements_are_read_from_the_dumped_page() {
        let dom =
            "<body><pre id=\"ldplayer-measure\">\nfigure 8 100 800 600 8 120 800 480 fig-a&amp;b\n\
                   text 0 600 130 180 18 warm-up end (2 s) &lt;x&gt;\n\
                   figure 8 800 300 20 - - - - \nnote 1 Every value is 0.\nheight 1500\n</pre></body>";
        let (figures, height) = parse_measurements(dom).expect("readable");
        assert_eq!(height, 1500);
        assert_eq!(
            figures,
            [
                FigureBox {
                    id: "fig-a&b".into(),
                    rect: Rect {
                        x: 8,
                        y: 100,
                        width: 800,
                        height: 600
                    },
                    drawing: Some(Rect {
                        x: 8,
                        y: 120,
                        width: 800,
                        height: 480
                    }),
                    texts: vec![TextBox {
                        rect: Rect {
                            x: 600,
                            y: 130,
                            width: 180,
                            height: 18
                        },
                        text: "warm-up end (2 s) <x>".into(),
                    }],
                    note: None,
                },
                FigureBox {
                    id: String::new(),
                    rect: Rect {
                        x: 8,
                        y: 800,
                        width: 300,
                        height: 20
                    },
                    drawing: None,
                    texts: Vec::new(),
                    note: Some("Every value is 0.".into()),
                },
            ]
        );
        let drawing = figures[0].drawing.expect("drawing");
        assert!(drawing.contains(&figures[0].texts[0].rect));
        assert!(!drawing.contains(&Rect {
            x: 700,
            y: 130,
            width: 180,
            height: 18
        }));
        assert!(parse_measurements("<body></body>").is_err());
        assert!(parse_measurements("<pre id=\"ldplayer-measure\">figure x</pre>").is_err());
        assert!(
            parse_measurements("<pre id=\"ldplayer-measure\">text 0 1 2 3 4 t\nheight 5</pre>")
                .is_err(),
            "a text of no figure"
        );
    }

    #[test]
    fn file_urls_are_percent_encoded() {
        assert_eq!(
            file_url(Path::new("/tmp/a b#c.html")),
            "file:///tmp/a%20b%23c.html"
        );
    }

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
