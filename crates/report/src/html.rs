//! A report as one self-contained HTML file, every figure also written beside it.
//!
//! The page carries everything it shows: figures as inline SVG, a small inline stylesheet, no
//! script, no font, image or stylesheet fetched from anywhere (its Content-Security-Policy
//! forbids it), so it reads offline, prints, and can be mailed as one file. Each figure is
//! followed by the table of the numbers it draws, and also written as `<id>.svg` and `<id>.png`
//! in the report's own figures folder beside the page, `<page's stem>-figures/` ([`figures_dir`]:
//! two reports in one folder keep their figures apart), for papers. A figure not worth drawing
//! ([`Figure::note`]) shows its sentence instead, and has no files. The same report makes the
//! same bytes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::figure::{Figure, Table};
use crate::render;

/// A whole report: a header of facts, then sections of figures and tables.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The page's title (`ldplayer report: quick-study`).
    pub title: String,
    /// Facts shown first, as a two-column table: inputs, plan, versions, machine.
    pub header: Vec<(String, String)>,
    /// What the reader must know before trusting any figure (an input whose run did not
    /// finish), shown in a box under the title.
    pub warnings: Vec<String>,
    /// The sections, in order.
    pub sections: Vec<Section>,
}

/// One section of a report: a heading, some sentences, figures and tables.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The section's heading.
    pub title: String,
    /// Paragraphs of plain text shown under the heading (findings, what could not be read).
    pub paragraphs: Vec<String>,
    /// The figures, each followed by its table.
    pub figures: Vec<Figure>,
    /// Further tables, each with a caption, after the figures.
    pub tables: Vec<(String, Table)>,
}

/// What [`Report::write`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The HTML page.
    pub html: PathBuf,
    /// The folder of its figures' files ([`figures_dir`]).
    pub figures_dir: PathBuf,
    /// Every figure drawn, as SVG, `<id>.svg` in [`figures_dir`](Self::figures_dir), in the
    /// report's order.
    pub svgs: Vec<PathBuf>,
    /// Every figure drawn, as PNG, `<id>.png`; empty when they were skipped.
    pub pngs: Vec<PathBuf>,
    /// Why no PNG was written (no font to draw their text with), if none was.
    pub pngs_skipped: Option<String>,
}

/// The folder, beside the page at `html_path`, that holds its figures' files: named after the
/// page (`report.html`: `report-figures/`), so that reports written into one folder do not
/// overwrite each other's figures.
pub fn figures_dir(html_path: &Path) -> PathBuf {
    let dir = html_path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let stem = html_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "report".into());
    dir.join(format!("{stem}-figures"))
}

/// The page's Content-Security-Policy: nothing may be fetched or run, only inline styles and
/// `data:` images are allowed.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The inline stylesheet: readable on screen, and on paper without a figure split across pages.
const STYLE: &str = "\
body{font-family:sans-serif;max-width:60rem;margin:1.5rem auto;padding:0 1rem;color:#111;line-height:1.45}
h1{font-size:1.6rem;margin:0 0 .8rem}
h2{font-size:1.3rem;margin-top:2.2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6rem 0 1.4rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.15rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.n{text-align:right;font-variant-numeric:tabular-nums}
table.facts th{white-space:nowrap}
nav.toc ol{margin:.2rem 0}
figure.figure{margin:1.2rem 0 .4rem;break-inside:avoid;page-break-inside:avoid}
figure.figure svg{display:block;max-width:100%;height:auto}
figure.figure p.note{border:1px dashed #999;background:#fafafa;padding:.6rem .8rem;margin:0}
figcaption{font-size:.9rem;margin-top:.3rem}
caption{text-align:left;font-weight:bold;padding:.2rem 0;white-space:nowrap}
p.warning{border:2px solid #b00;background:#fff0f0;color:#600;padding:.5rem .8rem;font-weight:bold}
@media print{body{max-width:none;margin:0}nav.toc{display:none}h2{break-after:avoid;page-break-after:avoid}table{break-inside:auto}tr{break-inside:avoid}}
";

impl Report {
    /// The report as one HTML page, its figures inlined as SVG.
    pub fn to_html(&self) -> Result<String, ReportError> {
        check_ids(self)?;
        let svgs = self
            .figures()
            .map(|f| f.note().is_none().then(|| render::svg(f)).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.page(&svgs))
    }

    /// Writes the page at `html_path` and every figure drawn as `<id>.svg` and `<id>.png` in
    /// [`figures_dir`] (PNGs are skipped, saying why, when no font for their text is
    /// installed). Each figure's file is claimed with the output guard ([`ldplayer_output`]),
    /// as every output is: one that is an input of the process, or that another output of it
    /// already claimed (another report's figure), is refused rather than overwritten.
    pub fn write(&self, html_path: &Path) -> Result<Written, ReportError> {
        check_ids(self)?;
        let figures_dir = figures_dir(html_path);
        if self.figures().any(|f| f.note().is_none()) {
            std::fs::create_dir_all(&figures_dir).map_err(|source| ReportError::Io {
                path: figures_dir.clone(),
                source,
            })?;
        }
        let mut written = Written {
            html: html_path.to_path_buf(),
            figures_dir: figures_dir.clone(),
            svgs: Vec::new(),
            pngs: Vec::new(),
            pngs_skipped: None,
        };
        let mut svgs = Vec::new();
        for figure in self.figures() {
            if figure.note().is_some() {
                svgs.push(None);
                continue;
            }
            let svg = render::svg(figure)?;
            let path = figures_dir.join(format!("{}.svg", figure.id));
            claim_and_write(&path, html_path, svg.as_bytes())?;
            written.svgs.push(path);
            svgs.push(Some(svg));
            match render::png(figure)? {
                Some(png) => {
                    let path = figures_dir.join(format!("{}.png", figure.id));
                    claim_and_write(&path, html_path, &png)?;
                    written.pngs.push(path);
                }
                None => {
                    written.pngs_skipped = Some(format!(
                        "no font to draw the PNGs' text with: none of {} is installed \
                         (apt-get install {}); the SVGs are complete",
                        render::FONT_CANDIDATES.join(", "),
                        render::FONT_PACKAGE
                    ));
                }
            }
        }
        write_file(html_path, self.page(&svgs).as_bytes())?;
        Ok(written)
    }

    /// Every figure, in the report's order.
    fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().flat_map(|s| &s.figures)
    }

    /// The page, given each figure's SVG in the report's order (none for a figure shown as its
    /// note).
    fn page(&self, svgs: &[Option<String>]) -> String {
        let mut out = String::new();
        let title = escape(&self.title);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
             <header>\n<h1>{title}</h1>\n"
        );
        if !self.header.is_empty() {
            out.push_str("<table class=\"facts\">\n<tbody>\n");
            for (key, value) in &self.header {
                let _ = writeln!(
                    out,
                    "<tr><th scope=\"row\">{}</th><td>{}</td></tr>",
                    escape(key),
                    escape(value)
                );
            }
            out.push_str("</tbody>\n</table>\n");
        }
        for warning in &self.warnings {
            let _ = writeln!(
                out,
                "<p class=\"warning\" role=\"alert\">Warning: {}</p>",
                escape(warning)
            );
        }
        out.push_str("</header>\n");
        self.contents(&mut out);
        out.push_str("<main>\n");
        let mut svgs = svgs.iter();
        let mut number = 0;
        for (s, section) in self.sections.iter().enumerate() {
            let _ = writeln!(
                out,
                "<section id=\"sec-{}\">\n<h2>{}. {}</h2>",
                s + 1,
                s + 1,
                escape(&section.title)
            );
            for paragraph in &section.paragraphs {
                let _ = writeln!(out, "<p>{}</p>", escape(paragraph));
            }
            for figure in &section.figures {
                number += 1;
                let svg = svgs.next().and_then(Option::as_deref);
                figure_html(&mut out, figure, number, svg);
            }
            for (caption, table) in &section.tables {
                table_html(&mut out, Some(caption), table);
            }
            out.push_str("</section>\n");
        }
        out.push_str("</main>\n</body>\n</html>\n");
        out
    }

    /// The table of contents: sections and their figures, linked.
    fn contents(&self, out: &mut String) {
        if self.sections.is_empty() {
            return;
        }
        out.push_str("<nav class=\"toc\">\n<h2>Contents</h2>\n<ol>\n");
        let mut number = 0;
        for (s, section) in self.sections.iter().enumerate() {
            let _ = write!(
                out,
                "<li><a href=\"#sec-{}\">{}</a>",
                s + 1,
                escape(&section.title)
            );
            if !section.figures.is_empty() {
                out.push_str("\n<ol>\n");
                for figure in &section.figures {
                    number += 1;
                    let _ = writeln!(
                        out,
                        "<li><a href=\"#fig-{}\">Figure {number}: {}</a></li>",
                        escape(&figure.id),
                        escape(&figure.title)
                    );
                }
                out.push_str("</ol>\n");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n</nav>\n");
    }
}

/// A figure: its drawing (or the sentence saying why there is none), its caption, then the
/// table of its numbers.
fn figure_html(out: &mut String, figure: &Figure, number: usize, svg: Option<&str>) {
    let id = escape(&figure.id);
    let title = escape(&figure.title);
    let _ = writeln!(out, "<figure id=\"fig-{id}\" class=\"figure\">");
    match (figure.note(), svg) {
        (Some(note), _) => {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
        }
        (None, Some(svg)) => {
            // The drawing is named for screen readers by its title.
            match svg.strip_prefix("<svg ") {
                Some(rest) => {
                    let _ = write!(out, "<svg role=\"img\" aria-label=\"{title}\" {rest}");
                }
                None => out.push_str(svg),
            }
        }
        (None, None) => {}
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let mut caption = escape(&figure.caption);
    if figure.note().is_none() {
        for (under, over) in render::coinciding(figure) {
            let _ = write!(
                caption,
                " The curve {} runs under {} (they coincide), marked with dots along it.",
                quoted(&under),
                quoted(&over)
            );
        }
    }
    let _ = writeln!(
        out,
        "<figcaption><strong>Figure {number}: {title}.</strong> {caption}</figcaption>\n</figure>"
    );
    if !figure.table.columns.is_empty() || !figure.table.rows.is_empty() {
        let caption = format!("The numbers of Figure {number}");
        table_html(out, Some(&caption), &figure.table);
    }
}

/// A series' name in a sentence, escaped and in quotation marks.
fn quoted(name: &str) -> String {
    format!("“{}”", escape(name))
}

/// A table of text cells, numbers right-aligned.
fn table_html(out: &mut String, caption: Option<&str>, table: &Table) {
    out.push_str("<table>\n");
    if let Some(caption) = caption {
        let _ = writeln!(out, "<caption>{}</caption>", escape(caption));
    }
    if !table.columns.is_empty() {
        out.push_str("<thead><tr>");
        for column in &table.columns {
            let _ = write!(out, "<th scope=\"col\">{}</th>", escape(column));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    let width = table.columns.len();
    for row in &table.rows {
        out.push_str("<tr>");
        let missing = width.saturating_sub(row.len());
        for cell in row
            .iter()
            .map(String::as_str)
            .chain(std::iter::repeat_n("", missing))
        {
            let class = if looks_numeric(cell) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Whether a cell reads as a number (`12`, `-0.5`, `3.2e-4`, `97.1 %`), to be right-aligned.
fn looks_numeric(cell: &str) -> bool {
    let cell = cell.trim().trim_end_matches('%').trim_end();
    !cell.is_empty() && cell.parse::<f64>().is_ok()
}

/// `text` as HTML text or attribute value: markup characters escaped, control characters
/// (other than tab and newline) made spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Figure ids name files and anchors: each must be made of letters, digits, `.`, `_` and `-`,
/// not start with `.`, and be unique in the report.
fn check_ids(report: &Report) -> Result<(), ReportError> {
    let mut seen = std::collections::HashSet::new();
    for figure in report.figures() {
        let id = &figure.id;
        let safe = !id.is_empty()
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        let why = if !safe {
            "a figure id must be letters, digits, '.', '_' and '-', not starting with '.'"
        } else if !seen.insert(id.as_str()) {
            "two figures of the report have this id"
        } else {
            continue;
        };
        return Err(ReportError::Draw {
            figure: id.clone(),
            why: why.into(),
        });
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    ldplayer_output::write(path, bytes).map_err(|e| ReportError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })
}

/// Claims the figure file `path` of the report at `html` with the output guard, then writes it.
fn claim_and_write(path: &Path, html: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let what = format!("a figure of the report {}", html.display());
    ldplayer_output::claim(path, &what).map_err(|e| ReportError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    })?;
    write_file(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Scale;
    use crate::render::tests::{boxes, empty, latency_ccdf, mixed_lines};

    fn report() -> Report {
        let mut numbers = Table::new(["transport", "p50 (ms)"]);
        numbers.push(["udp", "0.21"]);
        numbers.push(["<tcp> & \"friends\""]);
        let mut ccdf = latency_ccdf(200);
        ccdf.table = numbers.clone();
        Report {
            title: "ldplayer report: <quick> & study".into(),
            header: vec![
                ("plan".into(), "quick.toml".into()),
                ("machine".into(), "2 cores <shared>".into()),
            ],
            warnings: vec!["r.res is INCOMPLETE: <partial> & more".into()],
            sections: vec![
                Section {
                    title: "Replay".into(),
                    paragraphs: vec!["TCP is 0.2 ms slower than UDP & TLS <more>.".into()],
                    figures: vec![ccdf, mixed_lines()],
                    tables: vec![("Rcodes".into(), numbers)],
                },
                Section {
                    title: "Experiment".into(),
                    paragraphs: vec![],
                    figures: vec![boxes(Scale::Linear), empty()],
                    tables: vec![],
                },
            ],
        }
    }

    #[test]
    fn the_page_has_every_part_in_order_and_the_same_bytes_each_time() {
        let html = report().to_html().expect("html");
        assert_eq!(html, report().to_html().expect("html"), "deterministic");
        assert!(html.starts_with("<!DOCTYPE html>"));
        let csp = format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">"
        );
        assert!(html.contains(&csp), "{csp}");
        let order = [
            "<h1>ldplayer report: &lt;quick&gt; &amp; study</h1>",
            "<th scope=\"row\">machine</th><td>2 cores &lt;shared&gt;</td>",
            "<p class=\"warning\" role=\"alert\">Warning: r.res is INCOMPLETE: &lt;partial&gt; &amp; more</p>",
            "<nav class=\"toc\">",
            "<a href=\"#fig-latency-ccdf\">Figure 1: Latency CCDF per transport</a>",
            "<a href=\"#fig-rcodes\">Figure 4: Rcodes over time</a>",
            "<h2>1. Replay</h2>",
            "<p>TCP is 0.2 ms slower than UDP &amp; TLS &lt;more&gt;.</p>",
            "<figure id=\"fig-latency-ccdf\" class=\"figure\">",
            "<svg role=\"img\" aria-label=\"Latency CCDF per transport\" width=\"800\"",
            "<figcaption><strong>Figure 1: Latency CCDF per transport.</strong>",
            "<caption>The numbers of Figure 1</caption>",
            "<td class=\"n\">0.21</td>",
            "<td>&lt;tcp&gt; &amp; &quot;friends&quot;</td><td></td>",
            "<figure id=\"fig-answers-per-second\" class=\"figure\">",
            "<caption>Rcodes</caption>",
            "<h2>2. Experiment</h2>",
            "<figure id=\"fig-memory-boxes\" class=\"figure\">",
            "<figure id=\"fig-rcodes\" class=\"figure\">",
            "</html>",
        ];
        let mut at = 0;
        for part in order {
            let found = html[at..].find(part);
            assert!(found.is_some(), "missing after byte {at}: {part}");
            at += found.unwrap_or(0) + part.len();
        }
        assert_eq!(html.matches("<figure ").count(), 4);
        assert_eq!(html.matches("</svg>").count(), 4);
    }

    #[test]
    fn the_page_runs_nothing_and_fetches_nothing() {
        let html = report().to_html().expect("html");
        assert!(!html.to_ascii_lowercase().contains("<script"));
        let without_namespace = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        for scheme in ["http://", "https://", "url(", "@import", "<img", "<link"] {
            assert!(!without_namespace.contains(scheme), "{scheme}");
        }
    }

    #[test]
    fn text_needing_escaping_stays_text() {
        let mut report = report();
        report.title = "</title><script>alert(1)</script>".into();
        report.sections[0].figures[0].caption = "a <b>c</b> \u{1} & d".into();
        let html = report.to_html().expect("html");
        assert!(!html.contains("<script"));
        assert!(html.contains("&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("a &lt;b&gt;c&lt;/b&gt;   &amp; d"));
    }

    #[test]
    fn figure_ids_must_be_file_names_and_unique() {
        for bad in ["../escape", "", ".hidden", "a b", "a/b"] {
            let mut report = report();
            report.sections[0].figures[0].id = bad.into();
            let err = report.to_html().expect_err(bad);
            assert!(
                matches!(err, ReportError::Draw { ref figure, .. } if figure == bad),
                "{err}"
            );
        }
        let mut report = report();
        report.sections[1].figures[1].id = "latency-ccdf".into();
        let err = report.to_html().expect_err("duplicate");
        assert!(err.to_string().contains("two figures"), "{err}");
    }

    #[test]
    fn write_puts_the_page_and_every_figure_as_svg_and_png_beside_it() {
        let dir = tempfile::tempdir().expect("scratch directory");
        let html_path = dir.path().join("out").join("report.html");
        std::fs::create_dir_all(html_path.parent().expect("parent")).expect("dir");
        let report = report();
        let written = report.write(&html_path).expect("write");
        let page = std::fs::read_to_string(&html_path).expect("page");
        assert_eq!(page, report.to_html().expect("html"));
        let figures = dir.path().join("out/report-figures");
        let ids = [
            "latency-ccdf",
            "answers-per-second",
            "memory-boxes",
            "rcodes",
        ];
        let svgs: Vec<PathBuf> = ids
            .iter()
            .map(|id| figures.join(format!("{id}.svg")))
            .collect();
        assert_eq!(written.html, html_path);
        assert_eq!(written.svgs, svgs);
        for (svg, figure) in svgs.iter().zip(report.figures()) {
            let text = std::fs::read_to_string(svg).expect("svg");
            assert_eq!(text, render::svg(figure).expect("svg"));
            assert!(page.contains(text.trim_start_matches("<svg ")));
        }
        let font = ldplayer_testbed::prerequisite::require(
            render::bitmap_font().is_some(),
            "the font DejaVu Sans",
            "apt-get install fonts-dejavu-core (scripts/test.sh does)",
        );
        if font {
            assert_eq!(written.pngs_skipped, None);
            let pngs: Vec<PathBuf> = ids
                .iter()
                .map(|id| figures.join(format!("{id}.png")))
                .collect();
            assert_eq!(written.pngs, pngs);
            for png in &pngs {
                let bytes = std::fs::read(png).expect("png");
                assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{}", png.display());
            }
        }
    }

    /// A report of `figures` in one section.
    fn of(figures: Vec<Figure>) -> Report {
        Report {
            title: "t".into(),
            sections: vec![Section {
                title: "s".into(),
                figures,
                ..Section::default()
            }],
            ..Report::default()
        }
    }

    #[test]
    fn a_figure_not_worth_drawing_shows_its_sentence_and_has_no_files() {
        let mut zero = boxes(Scale::Linear);
        if let crate::Plot::Boxes(chart) = &mut zero.plot {
            for b in chart.groups.iter_mut().flat_map(|g| &mut g.boxes) {
                (b.p5, b.p25, b.p50, b.p75, b.p95) = (0.0, 0.0, 0.0, 0.0, 0.0);
            }
        }
        let mut said = latency_ccdf(10);
        said.id = "said".into();
        said.plot = crate::Plot::Note {
            text: "Too few <values> for a curve.".into(),
        };
        let report = of(vec![zero, said, mixed_lines()]);
        let html = report.to_html().expect("html");
        assert!(html.contains(&format!(
            "<figure id=\"fig-memory-boxes\" class=\"figure\">\n<p class=\"note\">{}</p>",
            escape(crate::figure::ALL_ZERO_NOTE)
        )));
        assert!(html.contains("<p class=\"note\">Too few &lt;values&gt; for a curve.</p>"));
        assert_eq!(html.matches("</svg>").count(), 1, "one figure drawn");
        let dir = tempfile::tempdir().expect("scratch");
        let written = report.write(&dir.path().join("r.html")).expect("write");
        assert_eq!(written.figures_dir, dir.path().join("r-figures"));
        assert_eq!(
            written.svgs,
            [dir.path().join("r-figures/answers-per-second.svg")]
        );
    }

    #[test]
    fn two_reports_in_one_folder_keep_their_own_figures() {
        let dir = tempfile::tempdir().expect("scratch");
        let first = of(vec![latency_ccdf(50)]);
        let mut second = of(vec![latency_ccdf(50)]);
        second.sections[0].figures[0].title = "Another latency CCDF".into();
        let a = first.write(&dir.path().join("a.html")).expect("a");
        let b = second.write(&dir.path().join("b.html")).expect("b");
        assert_eq!(a.svgs, [dir.path().join("a-figures/latency-ccdf.svg")]);
        assert_eq!(b.svgs, [dir.path().join("b-figures/latency-ccdf.svg")]);
        let read = |p: &Path| std::fs::read_to_string(p).expect("svg");
        assert!(read(&a.svgs[0]).contains("Latency CCDF per transport"));
        assert!(read(&b.svgs[0]).contains("Another latency CCDF"));
        assert_eq!(
            figures_dir(Path::new("report.html")),
            Path::new("report-figures")
        );
        assert_eq!(
            figures_dir(Path::new("/x/y/run.1.html")),
            Path::new("/x/y/run.1-figures")
        );
    }
}
