//! A [`crate::Figure`] drawn with plotters, as SVG and PNG.
//!
//! One drawing function, generic over the plotters backend, draws both, so that the SVG inlined
//! in a report and the PNG beside it for papers never disagree. Text is laid out with
//! font-independent metrics (the `metrics` module), so a figure's layout (and its SVG, byte for byte) is
//! the same on every machine; only the glyphs of a PNG need a real font, DejaVu Sans read from
//! the system ([`bitmap_font`]).
//!
//! Conventions every figure follows: a fixed size ([`WIDTH`] × [`HEIGHT`], taller only when its
//! legend needs it: [`size`]), the title above the plot, a legend to the right of it naming
//! every series in full (long names wrap), each series coloured by its position in
//! [`Plot::series_names`](crate::Plot::series_names), values that a log axis cannot show (≤ 0)
//! and non-finite values left out (they stay in the figure's table), a linear axis of values
//! that are never negative starting no lower than 0, curves of few points and curves hidden
//! under another marked ([`coinciding`]), and a figure with nothing to draw still drawn, with
//! its axes and a "no data" note. A figure that is not to be drawn at all
//! ([`Figure::note`](crate::Figure::note)) is drawn as its title and note.

mod boxes;
mod font;
mod lines;
mod metrics;
mod style;

use plotters::backend::{BitMapBackend, DrawingBackend, SVGBackend};
use plotters::drawing::{DrawingAreaErrorKind, IntoDrawingArea};
use plotters::style::WHITE;

use crate::error::ReportError;
use crate::figure::{Figure, Plot};
use style::Legend;

pub use font::{bitmap_font, FONT_CANDIDATES, FONT_PACKAGE};

/// A figure's width in pixels (SVG user units).
pub const WIDTH: u32 = 800;
/// A figure's height in pixels (SVG user units).
pub const HEIGHT: u32 = 480;

/// The height a figure's title and the plot's margins take, above and below its legend.
const CHROME_HEIGHT: u32 = 52;

/// Most pixels a figure grows to for its legend.
const MAX_HEIGHT: u32 = 4 * HEIGHT;

/// The legend of `figure` laid out for a drawing `height` pixels tall (none for a note).
fn legend(figure: &Figure, height: u32) -> Option<Legend> {
    let names = figure.plot.series_names();
    let room = height.saturating_sub(CHROME_HEIGHT);
    let entries = match &figure.plot {
        Plot::Lines(chart) => lines::entries(&lines::prepare(chart, &names)),
        Plot::Boxes(chart) => boxes::entries(chart, &names),
        Plot::Note { .. } => return None,
    };
    Some(style::legend_layout(&entries, room))
}

/// The size `figure` is drawn at, in pixels: [`WIDTH`] × [`HEIGHT`], taller when its legend
/// needs it (many series, long names: every name is shown whole).
pub fn size(figure: &Figure) -> (u32, u32) {
    let needed = legend(figure, HEIGHT).map_or(0, |l| l.height() + CHROME_HEIGHT);
    (WIDTH, needed.clamp(HEIGHT, MAX_HEIGHT))
}

/// The series of a line chart drawn under a later one along the same path (and so marked
/// along it), each with the series it is under, by name.
pub fn coinciding(figure: &Figure) -> Vec<(String, String)> {
    match &figure.plot {
        Plot::Lines(chart) => lines::coinciding(chart, &figure.plot.series_names()),
        _ => Vec::new(),
    }
}

/// The figure as an SVG document (no XML declaration, so it can also be inlined in HTML).
pub fn svg(figure: &Figure) -> Result<String, ReportError> {
    let mut out = String::new();
    {
        let backend = metrics::Measured::new(SVGBackend::with_string(&mut out, size(figure)));
        draw(backend, figure).map_err(|why| draw_error(figure, why))?;
    }
    Ok(out)
}

/// The figure as a PNG image, or `None` when no font for its text is installed
/// ([`bitmap_font`]; the SVG needs none).
pub fn png(figure: &Figure) -> Result<Option<Vec<u8>>, ReportError> {
    if bitmap_font().is_none() {
        return Ok(None);
    }
    let (width, height) = size(figure);
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let backend = metrics::Measured::new(BitMapBackend::with_buffer(&mut rgb, (width, height)));
        draw(backend, figure).map_err(|why| draw_error(figure, why))?;
    }
    encode_png(&rgb, (width, height))
        .map(Some)
        .map_err(|why| draw_error(figure, why))
}

/// Draws `figure` on `backend`, the whole of it.
fn draw<DB: DrawingBackend>(backend: DB, figure: &Figure) -> Result<(), String> {
    let root = backend.into_drawing_area();
    let drawn = (|| {
        root.fill(&WHITE)?;
        let names = figure.plot.series_names();
        let (_, height) = root.dim_in_pixel();
        let legend = legend(figure, height);
        let plot_area = style::title(&root, &figure.title)?;
        match (&figure.plot, &legend) {
            (Plot::Lines(chart), Some(legend)) => lines::draw(&plot_area, chart, &names, legend),
            (Plot::Boxes(chart), Some(legend)) => boxes::draw(&plot_area, chart, &names, legend),
            _ => style::note(&plot_area, figure.note().unwrap_or_default()),
        }?;
        root.present()
    })();
    drawn.map_err(|e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string())
}

/// An RGB buffer of `width` × `height` pixels as a PNG file's bytes.
fn encode_png(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

fn draw_error(figure: &Figure, why: String) -> ReportError {
    ReportError::Draw {
        figure: figure.id.clone(),
        why,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::figure::{BoxChart, BoxGroup, BoxStat, LineChart, Scale, Series, SeriesStyle};
    use crate::Table;

    /// A figure of `plot` with id `id`.
    pub(crate) fn figure(id: &str, title: &str, plot: Plot) -> Figure {
        Figure {
            id: id.into(),
            title: title.into(),
            caption: format!("The {title}."),
            plot,
            table: Table::new(["what", "value"]),
        }
    }

    /// A latency CCDF of `n` points per transport, on log axes.
    pub(crate) fn latency_ccdf(n: usize) -> Figure {
        let series = ["udp", "tcp", "tls"]
            .iter()
            .enumerate()
            .map(|(k, name)| Series {
                name: (*name).into(),
                points: (0..n)
                    .map(|i| {
                        let q = (i as f64 + 0.5) / n as f64;
                        let ms = (k as f64 + 1.0) * 0.2 * (-(1.0 - q).ln() + 0.3);
                        (ms, 1.0 - q)
                    })
                    .collect(),
                style: SeriesStyle::Line,
            })
            .collect();
        figure(
            "latency-ccdf",
            "Latency CCDF per transport",
            Plot::Lines(LineChart::latency_ccdf(series)),
        )
    }

    /// Every kind of line: steps, dashed, points, one series empty, names needing escaping.
    pub(crate) fn mixed_lines() -> Figure {
        let ecdf: Vec<(f64, f64)> = [0.5, 0.8, 1.1, 1.3, 2.0, 2.4, 3.9]
            .iter()
            .enumerate()
            .map(|(i, &x)| (x, (i + 1) as f64 / 7.0))
            .collect();
        let rate: Vec<(f64, f64)> = (0..60).map(|s| (s as f64, 1000.0)).collect();
        let measured: Vec<(f64, f64)> = (0..60)
            .map(|s| (s as f64, 1000.0 + 80.0 * ((s as f64) / 4.0).sin()))
            .collect();
        figure(
            "answers-per-second",
            "Answers per second <vs> the trace's rate & more",
            Plot::Lines(LineChart {
                x_label: "time (s) <since start>".into(),
                y_label: "answers/s & \"queries\"".into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                series: vec![
                    Series {
                        name: "trace <rate> & 'ref'".into(),
                        points: rate,
                        style: SeriesStyle::Dashed,
                    },
                    Series {
                        name: "measured".into(),
                        points: measured,
                        style: SeriesStyle::Points,
                    },
                    Series {
                        name: "error CDF".into(),
                        points: ecdf
                            .iter()
                            .map(|&(x, y)| (x * 10.0, 900.0 + y * 100.0))
                            .collect(),
                        style: SeriesStyle::Step,
                    },
                    Series {
                        name: "lost".into(),
                        points: vec![],
                        style: SeriesStyle::Line,
                    },
                ],
            }),
        )
    }

    /// Boxplots of three series in four groups, one box missing, on a log axis if asked.
    pub(crate) fn boxes(y_scale: Scale) -> Figure {
        let groups = [5, 10, 20, 40]
            .iter()
            .map(|&timeout| BoxGroup {
                label: timeout.to_string(),
                boxes: ["udp", "tcp", "tls"]
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| !(timeout == 40 && k == 0))
                    .map(|(k, name)| {
                        let m = f64::from(timeout) * (k as f64 + 1.0);
                        BoxStat {
                            series: (*name).into(),
                            p5: m * 0.5,
                            p25: m * 0.8,
                            p50: m,
                            p75: m * 1.3,
                            p95: m * 1.9,
                        }
                    })
                    .collect(),
            })
            .collect();
        figure(
            "memory-boxes",
            "Server memory by idle timeout",
            Plot::Boxes(BoxChart {
                x_label: "idle timeout (s)".into(),
                y_label: "memory (MB)".into(),
                y_scale,
                groups,
            }),
        )
    }

    /// A figure with nothing to draw.
    pub(crate) fn empty() -> Figure {
        figure(
            "rcodes",
            "Rcodes over time",
            Plot::Lines(LineChart {
                x_label: "time (s)".into(),
                y_label: "answers".into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Log,
                series: vec![Series {
                    name: "SERVFAIL".into(),
                    points: vec![(1.0, f64::INFINITY), (2.0, f64::NAN)],
                    style: SeriesStyle::Line,
                }],
            }),
        )
    }

    /// Where the tests leave the figures they draw, to be looked at.
    fn artifacts() -> std::path::PathBuf {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-artifacts/render");
        std::fs::create_dir_all(&dir).expect("artifact directory");
        dir
    }

    #[test]
    fn every_kind_of_figure_draws_as_svg_and_png() {
        let dir = artifacts();
        let figures = [
            latency_ccdf(500),
            mixed_lines(),
            boxes(Scale::Linear),
            boxes(Scale::Log),
            empty(),
        ];
        for (i, figure) in figures.iter().enumerate() {
            let svg = svg(figure).expect("svg");
            assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
            assert!(svg.trim_end().ends_with("</svg>"));
            std::fs::write(dir.join(format!("{i}-{}.svg", figure.id)), &svg).expect("write");
            if let Some(png) = png(figure).expect("png") {
                assert!(png.starts_with(b"\x89PNG"));
                std::fs::write(dir.join(format!("{i}-{}.png", figure.id)), &png).expect("write");
            }
        }
        eprintln!("figures in {}", dir.display());
    }

    /// Whether `svg` is free of unescaped markup in its text: every `<` opens a tag and every
    /// `&` an entity.
    fn well_formed_text(svg: &str) {
        for (i, _) in svg.match_indices('<') {
            let next = svg[i + 1..].chars().next().unwrap_or(' ');
            assert!(next.is_ascii_alphabetic() || next == '/', "stray < at {i}");
        }
        for (i, _) in svg.match_indices('&') {
            let rest = &svg[i..];
            let entity = ["&lt;", "&gt;", "&amp;", "&quot;", "&apos;"];
            assert!(entity.iter().any(|e| rest.starts_with(e)), "stray & at {i}");
        }
    }

    #[test]
    fn names_and_labels_with_markup_characters_stay_text_in_the_svg() {
        let svg = svg(&mixed_lines()).expect("svg");
        well_formed_text(&svg);
        assert!(svg.contains("Answers per second &lt;vs&gt; the trace&apos;s rate &amp; more"));
        assert!(svg.contains("time (s) &lt;since start&gt;"));
        assert!(svg.contains("answers/s &amp; &quot;queries&quot;"));
        assert!(svg.contains("trace &lt;rate&gt;"));
        let mut control = empty();
        control.title = "bell \u{7} and nul \u{0}".into();
        let svg = super::svg(&control).expect("svg");
        assert!(
            svg.contains("bell   and nul  "),
            "control characters become spaces"
        );
    }

    #[test]
    fn the_same_figure_makes_the_same_svg() {
        let figure = boxes(Scale::Log);
        assert_eq!(svg(&figure).expect("svg"), svg(&figure).expect("svg"));
    }

    #[test]
    fn a_line_chart_of_2000_points_stays_small() {
        // Bytes a series' points add to the SVG, beyond the same axes with its two ends only.
        let per_point = |style: SeriesStyle| {
            let mut figure = latency_ccdf(2000);
            if let Plot::Lines(chart) = &mut figure.plot {
                chart.series.truncate(1);
                chart.series[0].style = style;
            }
            let full = svg(&figure).expect("svg").len();
            if let Plot::Lines(chart) = &mut figure.plot {
                let points = &mut chart.series[0].points;
                *points = vec![points[0], points[points.len() - 1]];
            }
            let ends = svg(&figure).expect("svg").len();
            eprintln!("2000 points, {style:?}: {full} bytes");
            (full - ends) as f64 / 1998.0
        };
        let line = per_point(SeriesStyle::Line);
        let step = per_point(SeriesStyle::Step);
        let points = per_point(SeriesStyle::Points);
        eprintln!("bytes per point: line {line:.1}, step {step:.1}, points {points:.1}");
        assert!(line < 12.0, "{line} bytes per point");
        assert!(step < 24.0, "{step} bytes per point");
        assert!(points < 120.0, "{points} bytes per point");
    }
}
