//! Experiment directories written with the experiment crate's own writers, for the report's
//! tests to read back: runs, their results and samples, and the summary.

#![allow(dead_code)] // each test binary uses its own share of these

use std::path::Path;

use ldplayer_experiment::client::ReplayReport;
use ldplayer_experiment::model::IndexSet;
use ldplayer_experiment::prepare::TraceFacts;
use ldplayer_experiment::runner::RunOutputs;
use ldplayer_experiment::summary::{
    rows_for_spec, Distribution, RunMeasurements, Sample, SamplesWriter, SummaryCsv, SummaryRow,
};
use ldplayer_experiment::{Plan, RunRecord, RunSpec, Status};
use ldplayer_report::{Figure, Section};
use ldplayer_results::{Outcome, QueryResult, ResultsWriter};
use ldplayer_trace::Proto;

pub const START: i64 = 1_700_000_000_000_000_000;
/// Queries per run: one every 50 ms over 10 s.
pub const QUERIES: u64 = 200;
pub const WARMUP_S: f64 = 2.0;
pub const DURATION_S: f64 = 10.0;

pub const PLAN: &str = r#"
[trace]
synth = { workload = "root", rate = 20, duration_s = 10, seed = 1 }
[server]
kind = "ldplayer"
[network]
rtt_ms = 20
[vary]
proto = ["udp", "tcp"]
idle_timeout_s = [5, 10]
[run]
warmup_s = 2
"#;

/// The latency of query `i` of a run, in ms: 1 s during warm-up (so that a figure that counted
/// warm-up would show it), otherwise the RTT plus a spread, more over TCP.
pub fn latency_ms(spec: &RunSpec, i: u64) -> f64 {
    let at_s = i as f64 * DURATION_S / QUERIES as f64;
    if at_s < WARMUP_S {
        return 1000.0;
    }
    let tcp = spec.varied[0].1 == "tcp";
    20.0 + (i % 10) as f64 + if tcp { 5.0 } else { 0.0 }
}

pub fn result(spec: &RunSpec, i: u64) -> QueryResult {
    let intended_ns = START + (i as f64 * DURATION_S / QUERIES as f64 * 1e9) as i64;
    let tcp = spec.varied[0].1 == "tcp";
    let answered = i % 50 != 49;
    QueryResult {
        index: i,
        trace_ns: intended_ns,
        intended_ns,
        sent_ns: intended_ns,
        received_ns: intended_ns + (latency_ms(spec, i) * 1e6) as i64,
        proto: if tcp { Proto::Tcp } else { Proto::Udp },
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: if answered { 100 } else { 0 },
        truncated: false,
        outcome: if answered {
            Outcome::Answered
        } else {
            Outcome::Timeout
        },
        target: 0,
    }
}

pub fn samples(spec: &RunSpec) -> Vec<Sample> {
    let tcp = spec.varied[0].1 == "tcp";
    let idle: u64 = spec.varied[1].1.parse().unwrap();
    (1..=11u64)
        .map(|t| Sample {
            t_s: t as f64,
            rss_kib: 10_240 + if tcp { idle * 1024 + t * 100 } else { t * 10 },
            cpu_pct: 2.0 + t as f64 / 10.0,
            tcp_established: if tcp { idle * 3 + t } else { 0 },
            tcp_time_wait: if tcp { t } else { 0 },
            s2c_bytes: 1000 * t,
            c2s_bytes: 500 * t,
            ..Sample::default()
        })
        .collect()
}

/// Writes a finished run of `spec` into `dir/runs/ID` and returns its summary rows.
pub fn write_run(dir: &Path, spec: &RunSpec, nonbusy: Option<&IndexSet>) -> Vec<SummaryRow> {
    let run_dir = dir.join("runs").join(&spec.id);
    std::fs::create_dir_all(&run_dir).unwrap();
    let results = run_dir.join("results.res");
    let mut w = ResultsWriter::create(&results).unwrap();
    for i in 0..QUERIES {
        w.write(&result(spec, i)).unwrap();
    }
    w.into_inner().unwrap();
    let samples = samples(spec);
    let mut s = SamplesWriter::create(&run_dir.join("samples.csv")).unwrap();
    for sample in &samples {
        s.write(sample).unwrap();
    }
    let tcp = spec.varied[0].1 == "tcp";
    let idle: u64 = spec.varied[1].1.parse().unwrap();
    let model: Vec<u64> = (0..=10).map(|t| idle * 3 + t + 1).collect();
    let rows = rows_for_spec(
        spec,
        &RunMeasurements {
            results: &results,
            samples: &samples,
            start_ns: START,
            warmup_s: WARMUP_S,
            duration_s: DURATION_S,
            nonbusy,
            model_connections: tcp.then_some(model.as_slice()),
            upstream: None,
        },
    )
    .unwrap();
    let record = RunRecord {
        id: spec.id.clone(),
        varied: spec.varied.clone(),
        status: Status::Finished,
        error: None,
        settings: spec.settings.clone(),
        trace_file: dir.join("traces/x.bin"),
        trace: TraceFacts {
            records: QUERIES,
            first_ns: START,
            last_ns: START + (DURATION_S * 1e9) as i64,
            per_proto: [QUERIES, 0, 0, 0, 0],
        },
        outputs: Some(RunOutputs {
            results,
            samples: Vec::new(),
            replay: ReplayReport {
                start_ns: START,
                interrupted: false,
                engine: serde_json::Value::Null,
                summary: serde_json::Value::Null,
                kernel_udp: Default::default(),
                kernel_tcp: Default::default(),
            },
            server_version: "ldplayer 0.1.0".into(),
            server_tcp_clients: Some(60_000),
            probe_rtt_us: 20_000,
            probe_queries: 1,
            link: Default::default(),
            seconds: 12.0,
            upstream: None,
        }),
        medians: rows
            .iter()
            .map(|r| (r.metric.clone(), r.dist.p50))
            .collect(),
        unsteady: Vec::new(),
    };
    std::fs::write(
        run_dir.join("run.json"),
        serde_json::to_vec_pretty(&record).unwrap(),
    )
    .unwrap();
    rows
}

/// An experiment directory as `ldplayer experiment` leaves it: four finished runs of `plan`,
/// one run that did not finish and one that failed. Returns every summary row. With `nonbusy`,
/// the even queries are of non-busy clients.
pub fn write_experiment(dir: &Path, plan: &str, nonbusy: bool) -> Vec<SummaryRow> {
    let mut set = IndexSet::default();
    (0..QUERIES).step_by(2).for_each(|i| set.insert(i));
    write_experiment_with(dir, plan, nonbusy.then_some(set))
}

/// [`write_experiment`], the queries of non-busy clients given.
pub fn write_experiment_with(dir: &Path, plan: &str, nonbusy: Option<IndexSet>) -> Vec<SummaryRow> {
    let parsed = Plan::parse(plan, dir).unwrap();
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    std::fs::write(
        dir.join("environment.json"),
        serde_json::to_vec_pretty(&ldplayer_experiment::environment::gather()).unwrap(),
    )
    .unwrap();
    let mut rows = Vec::new();
    for spec in parsed.runs() {
        rows.extend(write_run(dir, &spec, nonbusy.as_ref()));
    }
    let mut csv = SummaryCsv::create(&dir.join("summary.csv"), &parsed.varied_keys()).unwrap();
    csv.write_rows(&rows).unwrap();
    csv.flush().unwrap();
    // A run cut short (no run.json) and a failed one (failed.json beside its files).
    std::fs::create_dir_all(dir.join("runs/005-unfinished-r1")).unwrap();
    let failed_dir = dir.join("runs/006-failed-r1");
    std::fs::create_dir_all(&failed_dir).unwrap();
    let spec = &parsed.runs()[0];
    let failed = RunRecord {
        id: "006-failed-r1".into(),
        varied: spec.varied.clone(),
        status: Status::Failed,
        error: Some("the server did not start".into()),
        settings: spec.settings.clone(),
        trace_file: Default::default(),
        trace: TraceFacts::default(),
        outputs: None,
        medians: Default::default(),
        unsteady: Vec::new(),
    };
    std::fs::write(
        failed_dir.join("failed.json"),
        serde_json::to_vec(&failed).unwrap(),
    )
    .unwrap();
    rows
}

pub fn figures(sections: &[Section]) -> Vec<&Figure> {
    sections.iter().flat_map(|s| &s.figures).collect()
}

pub fn figure<'a>(sections: &'a [Section], id: &str) -> &'a Figure {
    figures(sections)
        .into_iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no figure {id}"))
}

pub fn row<'a>(rows: &'a [SummaryRow], run: &str, metric: &str) -> &'a Distribution {
    &rows
        .iter()
        .find(|r| r.run == run && r.metric == metric)
        .unwrap_or_else(|| panic!("no {metric} for {run}"))
        .dist
}

pub fn paragraphs(sections: &[Section]) -> String {
    sections
        .iter()
        .flat_map(|s| &s.paragraphs)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}
