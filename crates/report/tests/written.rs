//! What writing a report leaves on disk: the page, and its figures in a folder of its own.

use ldplayer_report::{
    Figure, LineChart, Plot, Report, Scale, Section, Series, SeriesStyle, Table,
};

/// A report whose one figure, `latency`, has the title `title`.
fn report(title: &str) -> Report {
    let points = (1..=50)
        .map(|i| (f64::from(i) / 10.0, f64::from(i) / 50.0))
        .collect();
    Report {
        title: title.into(),
        sections: vec![Section {
            title: "Replay".into(),
            figures: vec![Figure {
                id: "latency".into(),
                title: title.into(),
                caption: "Latency.".into(),
                plot: Plot::Lines(LineChart {
                    x_label: "latency (ms)".into(),
                    y_label: "share".into(),
                    x_scale: Scale::Linear,
                    y_scale: Scale::Linear,
                    series: vec![Series {
                        name: "udp".into(),
                        points,
                        style: SeriesStyle::Line,
                    }],
                }),
                table: Table::new(["series"]),
            }],
            ..Section::default()
        }],
        ..Report::default()
    }
}

#[test]
fn two_reports_written_into_one_folder_keep_their_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let first = report("The first report")
        .write(&dir.path().join("first.html"))
        .unwrap();
    let first_svg = std::fs::read_to_string(&first.svgs[0]).unwrap();
    let first_png = first.pngs.first().map(|p| std::fs::read(p).unwrap());
    let second = report("The second report")
        .write(&dir.path().join("second.html"))
        .unwrap();
    assert_ne!(first.svgs, second.svgs, "both reports wrote the same files");
    for (written, name) in [(&first, "first"), (&second, "second")] {
        for file in written.svgs.iter().chain(&written.pngs) {
            assert_eq!(
                file.parent().and_then(|p| p.file_name()),
                Some(std::ffi::OsStr::new(&format!("{name}-figures"))),
                "{}",
                file.display()
            );
        }
    }
    // The first report's figures are as it wrote them.
    assert_eq!(std::fs::read_to_string(&first.svgs[0]).unwrap(), first_svg);
    assert!(first_svg.contains("The first report"));
    if let Some(png) = first_png {
        assert_eq!(std::fs::read(&first.pngs[0]).unwrap(), png);
    }
    assert!(std::fs::read_to_string(&second.svgs[0])
        .unwrap()
        .contains("The second report"));
}
