//! The report of capacity ramps in an experiment directory written with the experiment
//! crate's own writers: each run's capacity, and TCP and DoT as a share of UDP (the rest of
//! the experiment directories: experiment_dir.rs).

mod directories;

use directories::*;
use ldplayer_report::experiment::{sections, ExperimentData};
use ldplayer_report::Plot;
use ldplayer_results::{Outcome, QueryResult, ResultsWriter};
use ldplayer_trace::Proto;
use std::path::Path;

const RAMP_PLAN: &str = r#"
[trace]
synth = { workload = "root", rate = 20, duration_s = 10, seed = 1 }
[server]
kind = "ldplayer"
[client]
mode = "ramp"
ramp_to_qps = 1000
ramp_s = 10
max_loss_pct = 1
[vary]
proto = ["udp", "tcp", "tls"]
idle_timeout_s = [5, 10]
"#;

/// Rewrites the results of the finished run `id` as a ramp to 1000 q/s over 10 s (the k-th
/// query, from 1, due where 50 t² reaches k: 100 i - 50 queries due in second i), every query due
/// after `answered_until_s` lost, the others answered in 2 ms.
fn write_ramp_results(dir: &Path, id: &str, answered_until_s: f64) {
    let results = dir.join("runs").join(id).join("results.res");
    let info = ldplayer_results::RunInfo {
        start_ns: Some(START),
        ramp: Some(ldplayer_results::RampSpec {
            max_loss_pct: 1.0,
            ..ldplayer_results::RampSpec::new(1000.0, 10.0)
        }),
        ..Default::default()
    };
    let mut w = ResultsWriter::create_with_run_info(&results, &info).unwrap();
    for k in 1..=5000u64 {
        let due_s = (k as f64 / 50.0).sqrt();
        let intended_ns = START + (due_s * 1e9) as i64;
        let answered = due_s <= answered_until_s;
        w.write(&QueryResult {
            index: k - 1,
            trace_ns: intended_ns,
            intended_ns,
            sent_ns: intended_ns,
            received_ns: if answered { intended_ns + 2_000_000 } else { 0 },
            proto: Proto::Udp,
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
        })
        .unwrap();
    }
    w.into_inner().unwrap();
}

/// Ramp runs (`[client] mode = "ramp"`) get a capacity section: each run's capacity, and for
/// each server (here each idle timeout) TCP's and DoT's capacity as a share of UDP's, with
/// one figure of answers and one of latency against the offered rate per server. UDP keeps
/// up with the whole ramp (950 answers in its last second), TCP stops after 3.2 s (250 in
/// its third second) and DoT after 5.2 s (450): 26% and 47% of UDP.
#[test]
fn ramp_runs_give_each_capacity_and_tcp_and_dot_as_a_share_of_udp() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), RAMP_PLAN, false);
    let data = ExperimentData::read(dir.path()).unwrap();
    let ids: Vec<String> = data.runs().iter().map(|r| r.id().to_string()).collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    for id in &ids {
        let until = if id.contains("proto=udp") {
            10.0
        } else if id.contains("proto=tcp") {
            3.2
        } else {
            5.2
        };
        write_ramp_results(dir.path(), id, until);
    }
    let data = ExperimentData::read(dir.path()).unwrap();
    for run in data.runs() {
        let c = run.capacity.as_ref().expect("a ramp's capacity");
        let (capacity, limited_by) = match run.proto() {
            "udp" => (950.0, "none"),
            "tcp" => (250.0, "loss"),
            _ => (450.0, "loss"),
        };
        assert_eq!(c.capacity_qps, capacity, "{}", run.id());
        assert_eq!(c.limited_by, limited_by, "{}", run.id());
    }
    let all = sections(&[("", &data)]);
    let section = all
        .iter()
        .find(|s| s.title == "Capacity")
        .expect("a capacity section");
    let (_, runs) = &section.tables[0];
    assert_eq!(runs.rows.len(), 6);
    let (title, shares) = &section.tables[1];
    assert!(title.contains("as a share of UDP"), "{title}");
    assert_eq!(
        shares.columns,
        ["server", "udp (answers/s)", "tcp / udp", "tls / udp"]
    );
    assert_eq!(
        shares.rows,
        [
            ["idle_timeout_s=5", "950", "26%", "47%"],
            ["idle_timeout_s=10", "950", "26%", "47%"],
        ]
    );
    let ids: Vec<&str> = section.figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "exp-capacity-answered-1",
            "exp-capacity-latency-1",
            "exp-capacity-answered-2",
            "exp-capacity-latency-2"
        ]
    );
    let Plot::Lines(answered) = &section.figures[0].plot else {
        panic!("answers are lines");
    };
    for proto in ["udp", "tcp", "tls"] {
        assert!(
            answered.series.iter().any(|s| s.name.starts_with(proto)),
            "no {proto} curve: {:?}",
            answered.series.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }
    // A plan without ramps has no capacity section.
    let plain = tempfile::tempdir().unwrap();
    write_experiment(plain.path(), PLAN, false);
    let data = ExperimentData::read(plain.path()).unwrap();
    assert!(sections(&[("", &data)])
        .iter()
        .all(|s| s.title != "Capacity"));
}
