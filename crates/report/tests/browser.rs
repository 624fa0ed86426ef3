//! A report read as its readers read it: headless Chromium loads the written page with the
//! network off; the page must log nothing, fetch nothing, and show every figure drawn.
//!
//! The page, its figures and the screenshot are kept in `target/test-artifacts/report-browser/`.

use std::path::{Path, PathBuf};

use ldplayer_report::{
    render, BoxChart, BoxGroup, BoxStat, Figure, LineChart, Plot, Report, Scale, Section, Series,
    SeriesStyle, Table,
};
use ldplayer_testbed::browser::{self, Rect, Screenshot};
use ldplayer_testbed::prerequisite;

fn figure(id: &str, title: &str, plot: Plot) -> Figure {
    let mut table = Table::new(["series", "points"]);
    for name in plot.series_names() {
        table.push([name, "…"]);
    }
    Figure {
        id: id.into(),
        title: title.into(),
        caption: format!("What {title} shows, and how to read it."),
        plot,
        table,
    }
}

fn lines(x_scale: Scale, y_scale: Scale, series: Vec<Series>) -> Plot {
    Plot::Lines(LineChart {
        x_label: "latency (ms)".into(),
        y_label: "share".into(),
        x_scale,
        y_scale,
        series,
    })
}

fn series(name: &str, style: SeriesStyle, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: name.into(),
        points,
        style,
    }
}

/// An exponential-looking distribution of `n` points, scaled by `scale`, as (value, share ≤).
fn cdf(n: usize, scale: f64) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            let q = (i as f64 + 0.5) / n as f64;
            (scale * (0.2 - (1.0 - q).ln()), q)
        })
        .collect()
}

fn boxes(y_scale: Scale) -> Plot {
    let groups = ["5", "20", "60", "120"]
        .iter()
        .enumerate()
        .map(|(g, label)| BoxGroup {
            label: (*label).into(),
            boxes: ["udp", "tcp", "tls"]
                .iter()
                .enumerate()
                .map(|(k, series)| {
                    let m = 10.0 * (g as f64 + 1.0) * (k as f64 + 1.0);
                    BoxStat {
                        series: (*series).into(),
                        p5: m * 0.4,
                        p25: m * 0.8,
                        p50: m,
                        p75: m * 1.2,
                        p95: m * 2.0,
                    }
                })
                .collect(),
        })
        .collect();
    Plot::Boxes(BoxChart {
        x_label: "idle timeout (s)".into(),
        y_label: "memory (MB)".into(),
        y_scale,
        groups,
    })
}

/// A report with every kind of plot, an empty one, and text needing escaping.
fn report() -> Report {
    let ccdf = ["udp", "tcp", "tls"]
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let points = cdf(2000, k as f64 + 1.0);
            let points = points.into_iter().map(|(x, q)| (x, 1.0 - q)).collect();
            series(name, SeriesStyle::Line, points)
        })
        .collect();
    let rate: Vec<(f64, f64)> = (0..120).map(|s| (f64::from(s), 2000.0)).collect();
    let answers: Vec<(f64, f64)> = (0..120)
        .map(|s| (f64::from(s), 2000.0 + 150.0 * (f64::from(s) / 9.0).sin()))
        .collect();
    let mut answers_plot = lines(
        Scale::Linear,
        Scale::Linear,
        vec![
            series("trace's rate", SeriesStyle::Dashed, rate),
            series("answers <ok> & \"fine\"", SeriesStyle::Points, answers),
        ],
    );
    if let Plot::Lines(chart) = &mut answers_plot {
        chart.x_label = "time (s) <since start> & more".into();
        chart.y_label = "answers/s".into();
    }
    Report {
        title: "ldplayer report: <every> figure & table".into(),
        header: vec![
            ("inputs".into(), "results.bin <original> & replayed".into()),
            ("machine".into(), "2 cores".into()),
        ],
        warnings: vec![],
        sections: vec![
            Section {
                title: "Replay".into(),
                paragraphs: vec!["TLS answers 0.4 ms later than UDP <median> & p99.".into()],
                figures: vec![
                    figure("latency-ccdf", "Latency CCDF per transport", {
                        lines(Scale::Log, Scale::Log, ccdf)
                    }),
                    figure("inter-arrival-cdf", "Inter-arrival CDF", {
                        lines(
                            Scale::Log,
                            Scale::Linear,
                            vec![
                                series("original", SeriesStyle::Step, cdf(40, 0.5)),
                                series("replayed", SeriesStyle::Step, cdf(40, 0.55)),
                            ],
                        )
                    }),
                    figure(
                        "answers-per-second",
                        "Answers per second <vs> the trace's rate & more",
                        answers_plot,
                    ),
                    figure("connections", "Connections over time (none measured)", {
                        lines(
                            Scale::Linear,
                            Scale::Log,
                            vec![series("opened", SeriesStyle::Line, vec![])],
                        )
                    }),
                ],
                tables: vec![("Rcodes".into(), {
                    let mut t = Table::new(["rcode", "answers"]);
                    t.push(["NOERROR", "1999"]);
                    t.push(["<SERVFAIL>", "1"]);
                    t
                })],
            },
            Section {
                title: "Experiment".into(),
                paragraphs: vec![],
                figures: vec![
                    figure(
                        "memory",
                        "Server memory by idle timeout",
                        boxes(Scale::Linear),
                    ),
                    figure(
                        "latency-boxes",
                        "Latency by idle timeout",
                        boxes(Scale::Log),
                    ),
                ],
                tables: vec![],
            },
        ],
    }
}

/// Where this test leaves what it made.
fn artifacts() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts/report-browser");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("artifact directory");
    dir
}

/// The plot's part of a figure's drawing: left of the legend column.
fn plot_region(drawing: Rect) -> Rect {
    let legend = f64::from(drawing.width) * 200.0 / f64::from(render::WIDTH);
    Rect {
        width: drawing.width - legend.ceil() as u32,
        ..drawing
    }
}

#[test]
fn a_written_report_shows_every_figure_in_chromium_with_the_network_off() {
    if browser::chromium().is_none() {
        return;
    }
    let dir = artifacts();
    let html = dir.join("report.html");
    let report = report();
    let written = report.write(&html).expect("write the report");
    let ids = [
        "latency-ccdf",
        "inter-arrival-cdf",
        "answers-per-second",
        "connections",
        "memory",
        "latency-boxes",
    ];
    assert_eq!(written.svgs.len(), ids.len());
    let font = prerequisite::require(
        render::bitmap_font().is_some(),
        "the font DejaVu Sans",
        "apt-get install fonts-dejavu-core (scripts/test.sh does)",
    );
    if font {
        assert_eq!(written.pngs.len(), ids.len(), "{:?}", written.pngs_skipped);
    }

    let rendering = browser::render(&html, &dir).expect("render in chromium");
    eprintln!("screenshot: {}", rendering.screenshot.display());
    assert!(
        rendering.console.is_empty(),
        "console: {:#?}",
        rendering.console
    );
    assert!(
        rendering.fetched.is_empty(),
        "fetched: {:?}",
        rendering.fetched
    );
    let found: Vec<&str> = rendering.figures.iter().map(|f| f.id.as_str()).collect();
    let expected: Vec<String> = ids.iter().map(|id| format!("fig-{id}")).collect();
    assert_eq!(found, expected);
    assert!(
        rendering.page_height <= browser::MAX_HEIGHT,
        "the whole page is in the screenshot"
    );

    let screenshot = Screenshot::open(&rendering.screenshot).expect("screenshot");
    for figure in &rendering.figures {
        let drawing = figure.drawing.expect("each figure has its svg");
        assert_eq!(
            (drawing.width, drawing.height),
            (render::WIDTH, render::HEIGHT),
            "{} drawn at its own size",
            figure.id
        );
        let whole = screenshot.ink(drawing);
        assert!(!whole.is_blank(), "{} is blank: {whole:?}", figure.id);
        // Curves and boxes are in colour; axes, ticks and text are black and grey.
        let plot = screenshot.ink(plot_region(drawing));
        if figure.id == "fig-connections" {
            assert_eq!(plot.vivid, 0, "nothing to draw, nothing coloured: {plot:?}");
        } else {
            assert!(
                plot.vivid > 500,
                "{}: no curve or box drawn: {plot:?}",
                figure.id
            );
        }
    }
}

#[test]
fn a_blank_figure_in_a_report_is_seen_blank() {
    if browser::chromium().is_none() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let html = dir.path().join("blank.html");
    let report = Report {
        title: "one figure, blanked".into(),
        header: vec![],
        warnings: vec![],
        sections: vec![Section {
            title: "Blank".into(),
            figures: vec![figure("blank", "Blank", boxes(Scale::Linear))],
            ..Section::default()
        }],
    };
    // The figure's drawing emptied: everything between the svg's tags removed.
    let page = report.to_html().expect("html");
    let start = page.find("<svg ").expect("svg");
    let open_end = start + page[start..].find('>').expect("svg tag end") + 1;
    let close = page.find("</svg>").expect("svg end");
    let blanked = format!("{}{}", &page[..open_end], &page[close..]);
    std::fs::write(&html, blanked).expect("page");
    let rendering = browser::render(&html, dir.path()).expect("render");
    assert!(rendering.console.is_empty(), "{:?}", rendering.console);
    let screenshot = Screenshot::open(&rendering.screenshot).expect("screenshot");
    let [figure] = rendering.figures.as_slice() else {
        panic!("one figure: {:?}", rendering.figures);
    };
    let drawing = figure.drawing.expect("svg");
    let ink = screenshot.ink(drawing);
    assert!(ink.is_blank(), "{ink:?}");
    assert_eq!(
        drawing.height,
        render::HEIGHT,
        "the empty drawing keeps its place"
    );
}
