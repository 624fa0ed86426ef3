//! The figures of experiment directories written with the experiment crate's own writers
//! (`run.json`, `results.res`, `samples.csv`, `summary.csv`), checked against what was written.

use std::path::Path;

use ldplayer_experiment::model::IndexSet;
use ldplayer_experiment::summary::SummaryCsv;
use ldplayer_experiment::{Plan, RunRecord, RunSpec};
use ldplayer_report::experiment::{sections, ExperimentData};
use ldplayer_report::{Plot, ReportError, SeriesStyle};

mod directories;

use directories::*;

#[test]
fn an_experiment_directory_gives_every_figure_with_the_summarys_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let rows = write_experiment(dir.path(), PLAN, true);
    let data = ExperimentData::read(dir.path()).unwrap();
    let ids: Vec<&str> = data.runs().iter().map(|r| r.id()).collect();
    assert_eq!(
        ids,
        [
            "001-proto=udp+idle_timeout_s=5-r1",
            "002-proto=udp+idle_timeout_s=10-r1",
            "003-proto=tcp+idle_timeout_s=5-r1",
            "004-proto=tcp+idle_timeout_s=10-r1"
        ]
    );
    assert_eq!(data.left_out(), ["005-unfinished-r1", "006-failed-r1"]);
    let notes = data.notes().join("\n");
    assert!(
        notes.contains("005-unfinished-r1 did not finish"),
        "{notes}"
    );
    assert!(
        notes.contains("006-failed-r1 failed") && notes.contains("the server did not start"),
        "{notes}"
    );
    assert_eq!(data.varied_keys(), ["proto", "idle_timeout_s"]);

    let header = data.header();
    let fact = |key: &str| {
        header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {key} in {header:?}"))
    };
    assert_eq!(fact("varied"), "proto = udp, tcp; idle_timeout_s = 5, 10");
    assert_eq!(fact("repeats"), "1");
    assert_eq!(fact("warm-up"), "2 s");
    assert_eq!(fact("server"), "ldplayer");
    assert_eq!(fact("server version"), "ldplayer 0.1.0");
    assert_eq!(fact("ldplayer"), env!("CARGO_PKG_VERSION"));
    assert!(fact("runs").starts_with("4 finished, 2 failed or unfinished"));
    assert!(fact("plan").ends_with("plan.toml"));
    for key in ["kernel", "CPU", "cores", "memory"] {
        assert!(!fact(key).is_empty(), "{key}");
    }

    let sections = sections(&[("quick", &data)]);
    let ids: Vec<&str> = figures(&sections).iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "exp-response-bandwidth",
            "exp-server-cpu",
            "exp-server-memory",
            "exp-tcp-established",
            "exp-tcp-time-wait",
            "exp-latency",
            "exp-latency-nonbusy",
            "exp-memory-over-time",
            "exp-connections-over-time",
            "exp-connections-model",
            "exp-latency-ccdf-udp",
            "exp-latency-ccdf-tcp",
        ]
    );

    // Boxes: x = the idle timeout, one box per protocol, the numbers of summary.csv.
    let memory = figure(&sections, "exp-server-memory");
    let Plot::Boxes(chart) = &memory.plot else {
        panic!("boxes")
    };
    assert_eq!(chart.x_label, "server's TCP idle timeout (s)");
    let labels: Vec<&str> = chart.groups.iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, ["5", "10"]);
    let tcp10 = &chart.groups[1].boxes[1];
    assert_eq!(tcp10.series, "tcp");
    let want = row(
        &rows,
        "004-proto=tcp+idle_timeout_s=10-r1",
        "server_rss_mib",
    );
    assert_eq!(
        (tcp10.p5, tcp10.p25, tcp10.p50, tcp10.p75, tcp10.p95),
        (want.p5, want.p25, want.p50, want.p75, want.p95)
    );
    assert_eq!(memory.table.rows.len(), 4);
    assert_eq!(
        memory.table.columns,
        [
            "run",
            "proto",
            "idle_timeout_s",
            "p5",
            "p25",
            "p50",
            "p75",
            "p95",
            "mean",
            "n"
        ]
    );
    assert_eq!(
        memory.table.rows[3][0],
        "004-proto=tcp+idle_timeout_s=10-r1"
    );
    assert_eq!(memory.table.rows[3][9], want.n.to_string());

    // Time series: one line per run, and the warm-up and trace end marked.
    let Plot::Lines(over_time) = &figure(&sections, "exp-connections-over-time").plot else {
        panic!("lines")
    };
    let names: Vec<&str> = over_time.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "udp idle 5 s",
            "udp idle 10 s",
            "tcp idle 5 s",
            "tcp idle 10 s",
            "warm-up end (2 s)",
            "trace end (10 s)"
        ]
    );
    assert_eq!(over_time.series[3].points.len(), 11);
    assert_eq!(over_time.series[3].points[0], (1.0, 31.0));
    assert_eq!(over_time.series[4].style, SeriesStyle::Dashed);
    assert_eq!(over_time.series[4].points[0].0, 2.0);

    // The model beside the measured, TCP runs only, the difference in the table.
    let model = figure(&sections, "exp-connections-model");
    assert_eq!(
        model.plot.series_names(),
        ["tcp measured", "tcp model"],
        "UDP runs have no model"
    );
    assert_eq!(model.table.rows.len(), 2);
    let id = "004-proto=tcp+idle_timeout_s=10-r1";
    let (measured, predicted) = (
        row(&rows, id, "tcp_established").mean,
        row(&rows, id, "model_connections").mean,
    );
    let difference = format!("{:+.1}", (measured - predicted) / predicted * 100.0);
    let cells = &model.table.rows[1];
    assert_eq!(cells[0], id);
    assert_eq!(cells[5], difference, "{cells:?}");

    // CCDFs from the results files: after warm-up only, quantiles as in summary.csv.
    let ccdf = figure(&sections, "exp-latency-ccdf-tcp");
    let Plot::Lines(chart) = &ccdf.plot else {
        panic!("lines")
    };
    let names: Vec<&str> = chart.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["idle_timeout_s=5", "idle_timeout_s=10"]);
    let curve = &chart.series[0].points;
    assert_eq!(curve[0].1, 1.0);
    assert!(curve.len() <= 500);
    assert!(
        curve.iter().all(|&(ms, _)| ms < 100.0),
        "warm-up's 1 s latencies are left out: {curve:?}"
    );
    let latency = row(&rows, "003-proto=tcp+idle_timeout_s=5-r1", "latency_ms");
    let cells = &ccdf.table.rows[0];
    assert_eq!(cells[3], latency.n.to_string(), "answered queries counted");
    let p50: f64 = cells[4].parse().unwrap();
    assert!(
        (p50 - latency.p50).abs() <= 1.0,
        "{p50} against {}",
        latency.p50
    );

    let text = paragraphs(&sections);
    assert!(text.contains("4 runs finished, 2 left out."), "{text}");
    assert!(
        text.contains("The median latency was lowest with proto=udp"),
        "{text}"
    );
    assert!(text.contains("Left out or not read"), "{text}");
}

#[test]
fn several_inputs_are_named_in_every_box_curve_and_row() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_experiment(a.path(), PLAN, true);
    write_experiment(b.path(), PLAN, true);
    let a = ExperimentData::read(a.path()).unwrap();
    let b = ExperimentData::read(b.path()).unwrap();
    let sections = sections(&[("base", &a), ("new", &b)]);
    let latency = figure(&sections, "exp-latency");
    assert_eq!(
        latency.plot.series_names(),
        ["base udp", "base tcp", "new udp", "new tcp"]
    );
    assert_eq!(latency.table.columns[0], "input");
    assert_eq!(latency.table.rows.len(), 8);
    assert_eq!(latency.table.rows[4][0], "new");
    let Plot::Lines(ccdf) = &figure(&sections, "exp-latency-ccdf-udp").plot else {
        panic!("lines")
    };
    assert_eq!(ccdf.series[2].name, "new idle_timeout_s=5");
}

#[test]
fn udp_only_leaves_out_the_connection_figures_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace(r#"proto = ["udp", "tcp"]"#, r#"proto = ["udp"]"#);
    write_experiment(dir.path(), &plan, false);
    let data = ExperimentData::read(dir.path()).unwrap();
    let sections = sections(&[("udp", &data)]);
    let ids: Vec<&str> = figures(&sections).iter().map(|f| f.id.as_str()).collect();
    for gone in [
        "exp-connections-model",
        "exp-connections-over-time",
        "exp-latency-nonbusy",
    ] {
        assert!(!ids.contains(&gone), "{gone} in {ids:?}");
    }
    let text = paragraphs(&sections);
    assert!(text.contains("no model"), "{text}");
    assert!(
        text.contains("No run held an established TCP connection"),
        "{text}"
    );
    assert!(
        text.contains("latency_ms_nonbusy") && text.contains("left out"),
        "{text}"
    );
    // Two runs of one protocol: a CCDF of that protocol.
    assert!(ids.contains(&"exp-latency-ccdf-udp"), "{ids:?}");
}

#[test]
fn only_the_protocol_varied_puts_it_on_the_x_axis() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace("idle_timeout_s = [5, 10]\n", "");
    // The fixture reads the idle timeout from the second varied value: give it one.
    let parsed = Plan::parse(&plan, dir.path()).unwrap();
    assert_eq!(parsed.varied_keys(), ["proto"]);
    std::fs::write(dir.path().join("plan.toml"), &plan).unwrap();
    let mut rows = Vec::new();
    for mut spec in parsed.runs() {
        spec.varied.push(("idle_timeout_s".into(), "5".into()));
        let mut written = write_run(dir.path(), &spec, None);
        for r in &mut written {
            r.varied.truncate(1);
        }
        rewrite_varied(dir.path(), &spec);
        rows.extend(written);
    }
    let mut csv =
        SummaryCsv::create(&dir.path().join("summary.csv"), &parsed.varied_keys()).unwrap();
    csv.write_rows(&rows).unwrap();
    csv.flush().unwrap();
    let data = ExperimentData::read(dir.path()).unwrap();
    let notes = data.notes().join("\n");
    assert!(notes.contains("environment.json"), "{notes}");
    let sections = sections(&[("quick", &data)]);
    let Plot::Boxes(chart) = &figure(&sections, "exp-latency").plot else {
        panic!("boxes")
    };
    assert_eq!(chart.x_label, "transport");
    let labels: Vec<&str> = chart.groups.iter().map(|g| g.label.as_str()).collect();
    assert_eq!(labels, ["udp", "tcp"]);
    assert_eq!(
        figure(&sections, "exp-latency").plot.series_names(),
        ["runs"]
    );
    assert_eq!(
        figure(&sections, "exp-connections-model")
            .plot
            .series_names(),
        ["measured", "model"]
    );
}

/// Puts back the run's own varied values in its `run.json` (the fixture added one).
fn rewrite_varied(dir: &Path, spec: &RunSpec) {
    let path = dir.join("runs").join(&spec.id).join("run.json");
    let mut record: RunRecord = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record.varied.truncate(1);
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
}

#[test]
fn bad_directories_fail_clearly_or_keep_what_can_be_read() {
    let empty = tempfile::tempdir().unwrap();
    let e = ExperimentData::read(empty.path()).unwrap_err();
    assert!(
        matches!(e, ReportError::UnknownInput { .. }) && e.to_string().contains("empty"),
        "{e}"
    );
    std::fs::write(empty.path().join("notes.txt"), "hello").unwrap();
    let e = ExperimentData::read(empty.path()).unwrap_err();
    assert!(
        e.to_string().contains("no plan.toml, summary.csv or runs/"),
        "{e}"
    );
    let e = ExperimentData::read(&empty.path().join("notes.txt")).unwrap_err();
    assert!(matches!(e, ReportError::UnknownInput { .. }), "{e}");
    let e = ExperimentData::read(&empty.path().join("missing")).unwrap_err();
    assert!(matches!(e, ReportError::Io { .. }), "{e}");

    // A malformed summary.csv names its line.
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), PLAN, true);
    let summary = dir.path().join("summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "001-proto=udp+idle_timeout_s=5-r1,udp,5,latency_ms,1,2";
    std::fs::write(&summary, lines.join("\n")).unwrap();
    let e = ExperimentData::read(dir.path()).unwrap_err();
    assert!(
        matches!(e, ReportError::Malformed { .. }) && e.to_string().contains("line 3"),
        "{e}"
    );

    // Without summary.csv, a results file cut short and a samples.csv gone: the rest is shown.
    std::fs::remove_file(&summary).unwrap();
    let run = dir.path().join("runs/003-proto=tcp+idle_timeout_s=5-r1");
    let results = std::fs::read(run.join("results.res")).unwrap();
    std::fs::write(run.join("results.res"), &results[..results.len() - 100]).unwrap();
    std::fs::remove_file(run.join("samples.csv")).unwrap();
    let data = ExperimentData::read(dir.path()).unwrap();
    assert_eq!(data.runs().len(), 4);
    let notes = data.notes().join("\n");
    assert!(notes.contains("summary.csv is missing"), "{notes}");
    assert!(notes.contains("cut short"), "{notes}");
    assert!(notes.contains("samples.csv"), "{notes}");
    let sections = sections(&[("cut", &data)]);
    let ids: Vec<&str> = figures(&sections).iter().map(|f| f.id.as_str()).collect();
    assert!(ids.contains(&"exp-memory-over-time"), "{ids:?}");
    assert!(ids.contains(&"exp-latency-ccdf-tcp"), "{ids:?}");
    assert!(
        !ids.contains(&"exp-server-memory"),
        "no summary, no boxes: {ids:?}"
    );

    // A results file from a newer version: a note, the other runs' curves stay.
    let mut newer = results.clone();
    newer[8] = 0xff;
    std::fs::write(run.join("results.res"), &newer).unwrap();
    let data = ExperimentData::read(dir.path()).unwrap();
    let notes = data.notes().join("\n");
    assert!(notes.contains("no latency CCDF"), "{notes}");
    assert!(data.runs()[2].latency.is_none() && data.runs()[3].latency.is_some());
}

#[test]
fn each_repeat_is_its_own_box_and_curve() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace("warmup_s = 2\n", "warmup_s = 2\nrepeat = 2\n");
    write_experiment(dir.path(), &plan, true);
    let data = ExperimentData::read(dir.path()).unwrap();
    assert_eq!(data.runs().len(), 8);
    assert_eq!(data.runs()[1].repeat, 2);
    assert!(data.header().contains(&("repeats".into(), "2".into())));
    let sections = sections(&[("twice", &data)]);
    let latency = figure(&sections, "exp-latency");
    assert_eq!(
        latency.plot.series_names(),
        ["udp r1", "udp r2", "tcp r1", "tcp r2"]
    );
    assert!(
        latency.caption.contains("Each repeat"),
        "{}",
        latency.caption
    );
    let Plot::Lines(memory) = &figure(&sections, "exp-memory-over-time").plot else {
        panic!("lines")
    };
    assert_eq!(memory.series[0].name, "udp idle 5 s r1");
    assert_eq!(memory.series[1].name, "udp idle 5 s r2");
    let Plot::Lines(ccdf) = &figure(&sections, "exp-latency-ccdf-tcp").plot else {
        panic!("lines")
    };
    assert_eq!(ccdf.series[1].name, "idle_timeout_s=5 r2");
}

/// Rewrites the `server_version` of every finished run's `run.json`, and forgets its TCP
/// connection limit, as records written before the two were told apart.
fn rewrite_server_version(dir: &Path, version: &str) {
    for entry in std::fs::read_dir(dir.join("runs")).unwrap() {
        let path = entry.unwrap().path().join("run.json");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut record: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let outputs = record["outputs"].as_object_mut().unwrap();
        outputs.insert("server_version".into(), version.into());
        outputs.remove("server_tcp_clients");
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    }
}

#[test]
fn the_server_version_cell_shows_the_version_alone() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), PLAN, true);
    let report = |dir: &Path| {
        let inputs = ldplayer_report::input::read_all(&[dir.to_path_buf()]).unwrap();
        ldplayer_report::input::report("versions", &inputs)
            .to_html()
            .unwrap()
    };
    // As a run writes it now: the version, and the TCP connections allowed in a fact of their
    // own.
    let html = report(dir.path());
    assert!(
        html.contains("<th scope=\"row\">server version</th><td>ldplayer 0.1.0</td>"),
        "{html}"
    );
    assert!(
        html.contains("<th scope=\"row\">server TCP connections allowed</th><td>60000</td>"),
        "{html}"
    );
    // As older runs wrote it, with the TCP connections after the version.
    rewrite_server_version(dir.path(), "NSD version 4.6.1 (TCP clients 15904)");
    let html = report(dir.path());
    assert!(
        html.contains("<th scope=\"row\">server version</th><td>NSD version 4.6.1</td>"),
        "{html}"
    );
    assert_eq!(
        html.matches("<td>NSD version 4.6.1</td>").count(),
        5,
        "the header and the four runs of the table of runs"
    );
    assert!(!html.contains("TCP clients"), "{html}");
    assert!(!html.contains("server TCP connections allowed"), "{html}");
}

/// The page `ldplayer report` draws of the experiment in `dir`.
fn page_of(dir: &Path) -> String {
    let inputs = ldplayer_report::input::read_all(&[dir.to_path_buf()]).unwrap();
    ldplayer_report::input::report("page", &inputs)
        .to_html()
        .unwrap()
}

/// The part of `page` that shows the figure `id`, up to the end of what follows it (its
/// table of numbers, when it has one).
fn figure_html<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<figure id=\"fig-{id}\""))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let figure_end = start + page[start..].find("</figure>").unwrap();
    let next = page[figure_end..]
        .find("<figure ")
        .map_or(page.len(), |at| figure_end + at);
    &page[start..next]
}

#[test]
fn when_no_client_is_busy_the_non_busy_figure_says_so_instead_of_drawing_it_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut every = IndexSet::default();
    (0..QUERIES).for_each(|i| every.insert(i));
    write_experiment_with(dir.path(), PLAN, Some(every));
    let page = page_of(dir.path());
    let nonbusy = figure_html(&page, "exp-latency-nonbusy");
    assert!(
        nonbusy.contains("<p class=\"note\">No client is busy: none sent 250 queries or more"),
        "{nonbusy}"
    );
    assert!(!nonbusy.contains("<svg"), "drawn twice: {nonbusy}");
    assert!(figure_html(&page, "exp-latency").contains("<svg"));
    // With busy clients (half the queries are non-busy), both are drawn.
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), PLAN, true);
    let page = page_of(dir.path());
    assert!(figure_html(&page, "exp-latency-nonbusy").contains("<svg"));
}

#[test]
fn a_metric_of_zeros_in_every_run_is_said_in_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN.replace(r#"proto = ["udp", "tcp"]"#, r#"proto = ["udp"]"#);
    write_experiment(dir.path(), &plan, false);
    let page = page_of(dir.path());
    let time_wait = figure_html(&page, "exp-tcp-time-wait");
    assert!(
        time_wait.contains(
            "<p class=\"note\">TCP connections in TIME_WAIT: every run measured 0 over the \
             seconds after warm-up (p5 to p95)"
        ),
        "{time_wait}"
    );
    assert!(!time_wait.contains("<svg"), "{time_wait}");
    // The table still gives the zeros.
    assert!(time_wait.contains("The numbers of Figure"), "{time_wait}");
}
