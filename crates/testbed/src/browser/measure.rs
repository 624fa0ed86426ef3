//! Where a page's figures lie: a copy of the page with a measuring script added, dumped by
//! Chromium, and the script's lines read back.

use std::ffi::OsString;
use std::path::Path;

use super::process::{file_url, run};
use super::{io, BrowserError, FigureBox, Rect, TextBox, WINDOW_WIDTH};

/// The id of the element the measuring script writes into.
const MEASURE_ID: &str = "ldplayer-measure";

/// Where the figures are and how tall the page is, from a copy of the page with a measuring
/// script (and without a Content-Security-Policy, which would forbid it).
pub(super) fn measure(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
