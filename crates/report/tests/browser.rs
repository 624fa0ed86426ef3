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

/// Where a test of one case leaves what it made: its own folder, emptied first.
fn case_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-artifacts/report-browser-cases")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("artifact directory");
    dir
}

/// Writes a report of `figures` in one section into the case's folder and renders it in
/// Chromium; checks that nothing was logged or fetched. Returns the rendering, the screenshot
/// and the page.
fn rendered(name: &str, figures: Vec<Figure>) -> (browser::Rendering, Screenshot, String) {
    let dir = case_dir(name);
    let html = dir.join("report.html");
    let report = Report {
        title: format!("ldplayer report: {name}"),
        header: vec![],
        warnings: vec![],
        sections: vec![Section {
            title: "Figures".into(),
            figures,
            ..Section::default()
        }],
    };
    report.write(&html).expect("write the report");
    let rendering = browser::render(&html, &dir).expect("render in chromium");
    eprintln!("screenshot: {}", rendering.screenshot.display());
    assert!(rendering.console.is_empty(), "{:?}", rendering.console);
    assert!(rendering.fetched.is_empty(), "{:?}", rendering.fetched);
    let screenshot = Screenshot::open(&rendering.screenshot).expect("screenshot");
    let page = std::fs::read_to_string(&html).expect("page");
    (rendering, screenshot, page)
}

/// The figure `id` (without `fig-`) as the browser laid it out.
fn laid_out<'a>(rendering: &'a browser::Rendering, id: &str) -> &'a browser::FigureBox {
    rendering
        .figures
        .iter()
        .find(|f| f.id == format!("fig-{id}"))
        .unwrap_or_else(|| panic!("no figure {id} in {:?}", rendering.figures))
}

/// Whether `text` reads as a negative number (`-0.5`, `−2`).
fn negative(text: &str) -> bool {
    let text = text.trim();
    let rest = text
        .strip_prefix('-')
        .or_else(|| text.strip_prefix('−'))
        .unwrap_or("");
    rest.starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

/// Counts over time: `values` per second.
fn counts(name: &str, values: impl IntoIterator<Item = f64>) -> Series {
    series(
        name,
        SeriesStyle::Line,
        values
            .into_iter()
            .enumerate()
            .map(|(t, v)| (t as f64, v))
            .collect(),
    )
}

fn time_series(series: Vec<Series>) -> Plot {
    Plot::Lines(LineChart {
        x_label: "time since the replay started (s)".into(),
        y_label: "connections".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        series,
    })
}

#[test]
fn an_all_zero_figure_says_so_in_a_line_and_no_axis_of_counts_goes_below_zero() {
    if browser::chromium().is_none() {
        return;
    }
    // TCP connections in TIME_WAIT, 0 in every run (a UDP-only experiment).
    let mut time_wait = boxes(Scale::Linear);
    if let Plot::Boxes(chart) = &mut time_wait {
        chart.y_label = "connections".into();
        for b in chart.groups.iter_mut().flat_map(|g| &mut g.boxes) {
            (b.p5, b.p25, b.p50, b.p75, b.p95) = (0.0, 0.0, 0.0, 0.0, 0.0);
        }
    }
    let figures = vec![
        figure("tcp-time-wait", "TCP connections in TIME_WAIT", time_wait),
        // Counts near 0 beside counts in thousands, one series all 0.
        figure(
            "established",
            "Established TCP connections over time",
            time_series(vec![
                counts("tcp", (0..60).map(|t| f64::from(t) * 20.0 + 2.0)),
                counts("udp", (0..60).map(|_| 0.0)),
            ]),
        ),
        // Small counts from 0.
        figure(
            "opened",
            "Connections opened per second",
            time_series(vec![counts("opened", (0..30).map(|t| f64::from(t % 3)))]),
        ),
    ];
    let (rendering, screenshot, _) = rendered("all-zero", figures);
    let zero = laid_out(&rendering, "tcp-time-wait");
    let note = zero.note.as_deref().unwrap_or_else(|| {
        panic!(
            "an all-0 figure is drawn, with ticks {:?}",
            zero.texts.iter().map(|t| &t.text).collect::<Vec<_>>()
        )
    });
    assert!(note.contains("0"), "{note}");
    assert!(zero.drawing.is_none(), "and not drawn as well");
    assert!(
        !screenshot.ink(zero.rect).is_blank(),
        "the note is seen: {:?}",
        screenshot.ink(zero.rect)
    );
    for id in ["established", "opened"] {
        let f = laid_out(&rendering, id);
        assert!(f.drawing.is_some(), "{id} is drawn");
        let below: Vec<&str> = f
            .texts
            .iter()
            .map(|t| t.text.as_str())
            .filter(|t| negative(t))
            .collect();
        assert!(below.is_empty(), "{id}: ticks below zero {below:?}");
        assert!(
            f.texts.iter().any(|t| t.text == "0"),
            "{id}: the axis starts at 0: {:?}",
            f.texts.iter().map(|t| &t.text).collect::<Vec<_>>()
        );
    }
}

#[test]
fn lines_that_coincide_are_both_seen() {
    if browser::chromium().is_none() {
        return;
    }
    // TCP and TLS hold the same connections second by second: TLS, drawn later, covers TCP.
    let same: Vec<f64> = (0..120)
        .map(|t| 300.0 + 10.0 * f64::from(t) - 0.05 * f64::from(t * t))
        .collect();
    let figures = vec![figure(
        "connections",
        "Established TCP connections over time",
        time_series(vec![
            counts("tcp", same.clone()),
            counts("tls", same),
            counts("udp", (0..120).map(|_| 0.0)),
        ]),
    )];
    let (rendering, screenshot, page) = rendered("coinciding", figures);
    let f = laid_out(&rendering, "connections");
    let plot = plot_region(f.drawing.expect("drawn"));
    // The first palette colour is TCP's, the second TLS's.
    let tcp = screenshot.pixels_of(plot, [0x00, 0x72, 0xB2], 24);
    let tls = screenshot.pixels_of(plot, [0xD5, 0x5E, 0x00], 24);
    eprintln!("pixels seen: tcp {tcp}, tls {tls}");
    assert!(tls > 300, "the covering line: {tls}");
    assert!(
        tcp > 300,
        "the covered line is not seen: {tcp} pixels of its colour"
    );
    let legend: String = f
        .texts
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(legend.contains("under tls"), "{legend}");
    assert!(
        page.contains("The curve “tcp” runs under “tls”"),
        "the caption says so"
    );
}

#[test]
fn legends_are_shown_whole() {
    if browser::chromium().is_none() {
        return;
    }
    let names = [
        "udp idle 5 s",
        "dsc-udp trace replayed at 2× its rate, repeat 3 of 3",
        "warm-up end (2 s)",
        "trace end (10 s)",
        "an-input-folder-named-without-any-space-to-break-it-at-0123456789",
        "SERVFAIL",
    ];
    let lines = names
        .iter()
        .enumerate()
        .map(|(k, name)| counts(name, (0..60).map(|t| f64::from(t) * (k as f64 + 1.0))))
        .collect();
    let mut boxes_plot = boxes(Scale::Linear);
    if let Plot::Boxes(chart) = &mut boxes_plot {
        for (b, name) in chart
            .groups
            .iter_mut()
            .flat_map(|g| &mut g.boxes)
            .zip(names.iter().cycle())
        {
            b.series = (*name).into();
        }
    }
    let figures = vec![
        figure(
            "long-names",
            "Memory over time, per run",
            time_series(lines),
        ),
        figure("long-boxes", "Memory per idle timeout", boxes_plot),
    ];
    let (rendering, _, _) = rendered("legends", figures);
    for id in ["long-names", "long-boxes"] {
        let f = laid_out(&rendering, id);
        let drawing = f.drawing.expect("drawn");
        let texts: Vec<&str> = f.texts.iter().map(|t| t.text.as_str()).collect();
        assert!(
            texts.iter().all(|t| !t.contains('…')),
            "{id}: text cut: {texts:?}"
        );
        for t in &f.texts {
            assert!(
                drawing.contains(&t.rect),
                "{id}: {:?} lies outside the drawing {drawing:?}: {:?}",
                t.text,
                t.rect
            );
        }
        let shown: String = texts.concat().split_whitespace().collect();
        for name in names {
            let whole: String = name.split_whitespace().collect();
            assert!(
                shown.contains(&whole),
                "{id}: {name:?} is not shown whole: {texts:?}"
            );
        }
    }
}

/// `n` UDP queries, 100 per second from `t0_ns`, each sent on time and answered after 1 to
/// 3 ms, but for the last `s` queries of second `s`, never sent (so that each second has a
/// rate error of its own).
fn paced_results(t0_ns: i64, n: u64) -> Vec<ldplayer_results::QueryResult> {
    use ldplayer_results::{ErrorKind, Outcome};
    (0..n)
        .map(|i| {
            let intended_ns = t0_ns + i as i64 * 10_000_000;
            let sent = i % 100 < 100 - i / 100;
            ldplayer_results::QueryResult {
                index: i,
                trace_ns: i as i64 * 10_000_000,
                intended_ns,
                sent_ns: if sent { intended_ns } else { 0 },
                received_ns: if sent {
                    intended_ns + 1_000_000 + (i as i64 % 3) * 1_000_000
                } else {
                    0
                },
                proto: ldplayer_trace::Proto::Udp,
                target: 0,
                new_connection: false,
                handshake_ns: 0,
                rcode: ldplayer_dns::Rcode::NOERROR,
                response_len: if sent { 60 } else { 0 },
                truncated: false,
                outcome: if sent {
                    Outcome::Answered
                } else {
                    Outcome::Error(ErrorKind::Send)
                },
            }
        })
        .collect()
}

#[test]
fn tiny_samples_are_drawn_as_points_or_given_as_a_table() {
    if browser::chromium().is_none() {
        return;
    }
    use ldplayer_report::replay::{section, ReplayData};
    const T0: i64 = 1_700_000_000_000_000_000;
    // Six seconds of queries: four whole seconds, each with its rate error. Two and a half
    // seconds: one.
    let four = ReplayData::from_results(&paced_results(T0, 600));
    let one = ReplayData::from_results(&paced_results(T0, 250));
    let mut figures = Vec::new();
    for (prefix, data) in [("four", &four), ("one", &one)] {
        let rate = section(&[("run", data)])
            .figures
            .into_iter()
            .find(|f| f.id == "replay-rate-error-cdf")
            .expect("the rate error figure");
        figures.push(Figure {
            id: format!("{prefix}-{}", rate.id),
            ..rate
        });
    }
    let (rendering, _, page) = rendered("tiny-samples", figures);
    // Four values: four points, no line through them.
    let four = laid_out(&rendering, "four-replay-rate-error-cdf");
    assert!(four.drawing.is_some(), "four seconds are drawn");
    let start = page
        .find("<figure id=\"fig-four-replay-rate-error-cdf\"")
        .expect("figure");
    let end = start + page[start..].find("</figure>").expect("figure end");
    let svg = &page[start..end];
    let colour = "#0072B2";
    assert!(
        !svg.contains(&format!(
            "<polyline fill=\"none\" opacity=\"1\" stroke=\"{colour}\""
        )),
        "four values joined by a line"
    );
    let dots = svg.matches("<circle").count();
    assert!(dots > 4, "four points and the legend's: {dots}");
    // One value: no figure of a single dot, a sentence and the table.
    let one = laid_out(&rendering, "one-replay-rate-error-cdf");
    let note = one
        .note
        .as_deref()
        .unwrap_or_else(|| panic!("one second drawn as a figure: {:?}", one.texts));
    assert!(note.contains("Too few"), "{note}");
    assert!(one.drawing.is_none());
}

/// The results of a ramp from 0 to 2000 queries/s over 20 s against a server that answers at
/// most 1000 queries a second (after 0.2 ms, and 5 ms once it is saturated), written as
/// `replay --ramp-to` writes them, with the ramp in the run info.
fn ramp_results(path: &Path, t0_ns: i64) {
    use ldplayer_results::{Outcome, QueryResult, RampSpec, ResultsWriter, RunInfo};
    let spec = RampSpec {
        max_loss_pct: 10.0,
        ..RampSpec::new(2000.0, 20.0)
    };
    let info = RunInfo {
        ramp: Some(spec),
        start_ns: Some(t0_ns),
        ..RunInfo::default()
    };
    let mut w = ResultsWriter::create_with_run_info(path, &info).expect("results file");
    let mut answered_in = std::collections::HashMap::new();
    for k in 1..=20_000u64 {
        let t = (2.0 * k as f64 * 20.0 / 2000.0).sqrt();
        let second = t.ceil() as i64;
        let n = answered_in.entry(second).or_insert(0u64);
        *n += 1;
        let due = t0_ns + (t * 1e9) as i64;
        let answered = *n <= 1000;
        let latency_ns = if 100.0 * t > 900.0 {
            5_000_000
        } else {
            200_000
        };
        w.write(&QueryResult {
            index: k - 1,
            trace_ns: 0,
            intended_ns: due,
            sent_ns: due,
            received_ns: if answered { due + latency_ns } else { 0 },
            proto: ldplayer_trace::Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: if answered { 60 } else { 0 },
            truncated: false,
            outcome: if answered {
                Outcome::Answered
            } else {
                Outcome::Timeout
            },
            target: 0,
        })
        .expect("write");
    }
    w.into_inner().expect("finish");
}

#[test]
fn a_ramp_is_drawn_as_answers_and_latency_against_the_offered_rate_with_its_knee() {
    if browser::chromium().is_none() {
        return;
    }
    use ldplayer_report::replay::{section, ReplayData};
    let scratch = tempfile::tempdir().expect("scratch");
    let results = scratch.path().join("ramp.res");
    ramp_results(&results, 1_700_000_000_000_000_000);
    let data = ReplayData::read(&results).expect("read the ramp");
    let section = section(&[("ramp", &data)]);
    assert!(
        section
            .paragraphs
            .iter()
            .any(|p| p.contains("capacity: 1000.0 answers/s") && p.contains("knee at")),
        "{:?}",
        section.paragraphs
    );
    let figures: Vec<Figure> = section
        .figures
        .into_iter()
        .filter(|f| f.id.starts_with("replay-ramp-"))
        .collect();
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["replay-ramp-answered", "replay-ramp-latency"]);
    for f in &figures {
        assert_eq!(f.table.rows.len(), 20, "{}: a row per second", f.id);
        assert!(
            f.caption.contains("the knee at 1150 q/s offered"),
            "{}",
            f.caption
        );
    }
    let (rendering, screenshot, _) = rendered("ramp", figures);
    // The knee is the fourth series of each figure: its colour, a dashed vertical line across
    // the plot; the capacity is the answers' figure's third, a point.
    const KNEE: [u8; 3] = [0xCC, 0x79, 0xA7];
    const CAPACITY: [u8; 3] = [0x00, 0x9E, 0x73];
    for id in ["replay-ramp-answered", "replay-ramp-latency"] {
        let f = laid_out(&rendering, id);
        let drawing = f.drawing.unwrap_or_else(|| panic!("{id} drawn"));
        let texts: Vec<&str> = f.texts.iter().map(|t| t.text.as_str()).collect();
        assert!(texts.contains(&"knee"), "{id}: legend {texts:?}");
        let plot = plot_region(drawing);
        let knee = screenshot.pixels_of(plot, KNEE, 40);
        assert!(knee > 100, "{id}: the knee's line is seen ({knee} pixels)");
        let ink = screenshot.ink(plot);
        assert!(ink.vivid > 500, "{id}: curves drawn: {ink:?}");
        if id == "replay-ramp-answered" {
            assert!(texts.contains(&"capacity"), "{texts:?}");
            let point = screenshot.pixels_of(plot, CAPACITY, 40);
            assert!(point > 10, "the capacity's point is seen ({point} pixels)");
            // The offered axis reaches the ramp's top second (1950 queries/s).
            assert!(
                texts
                    .iter()
                    .any(|t| t.parse::<f64>().is_ok_and(|v| v >= 1800.0)),
                "{texts:?}"
            );
        }
    }
}
