//! `compare` of two experiment folders pairs runs by their varied values and repeat, not by
//! their number: folders whose run names and `summary.csv` come from the experiment crate
//! (its plan expansion names the runs, its writer writes the file), for the cases a tiny real
//! experiment cannot show cheaply: plans that vary different keys, repeats, runs that match
//! several, and `--as` on one experiment against itself. (`crates/cli/tests/compare.rs` runs
//! real experiments numbered differently.)

use ldplayer_experiment::plan::Plan;
use ldplayer_experiment::summary::{Distribution, SummaryCsv, SummaryRow};
use ldplayer_report::compare::{compare, compare_with, Comparison, RunPair, TransportPair};
use ldplayer_report::ReportError;
use std::path::{Path, PathBuf};

/// Writes the experiment folder `dir` of the plan with this `[vary]` and `[run]` table: its
/// runs as the experiment crate names them, each with a `server_rss_mib` row whose values are
/// the run's position in `figures` order (1, 2, ...), so that a row tells which run it is.
fn experiment(dir: &Path, vary_and_run: &str) -> (PathBuf, Vec<String>) {
    let text = format!(
        "[trace]\nsynth = {{ workload = \"root\", rate = 100, duration_s = 30, seed = 1 }}\n\
         [server]\nkind = \"ldplayer\"\n{vary_and_run}\n"
    );
    std::fs::create_dir_all(dir).expect("folder");
    let plan = Plan::parse(&text, dir).expect("a plan");
    let keys = plan.varied_keys();
    let mut csv = SummaryCsv::create(&dir.join("summary.csv"), &keys).expect("summary.csv");
    let runs = plan.runs();
    for (i, run) in runs.iter().enumerate() {
        let mark = (i + 1) as f64;
        csv.write_row(&SummaryRow {
            run: run.id.clone(),
            varied: run.varied.iter().map(|(_, v)| v.clone()).collect(),
            metric: "server_rss_mib".into(),
            dist: Distribution::of(&[mark, mark, mark]),
        })
        .expect("row");
    }
    csv.flush().expect("flush");
    (dir.to_path_buf(), runs.into_iter().map(|r| r.id).collect())
}

fn pair(base: Option<&str>, new: Option<&str>, transports: Option<&str>) -> RunPair {
    RunPair {
        base: base.map(str::to_string),
        new: new.map(str::to_string),
        transports: transports.map(str::to_string),
    }
}

/// The values of `server_rss_mib.p50@run` in BASE and NEW.
fn rss(c: &Comparison, run: &str) -> (Option<f64>, Option<f64>) {
    let name = format!("server_rss_mib.p50@{run}");
    let row = c
        .metrics
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"));
    (row.base, row.new)
}

#[test]
fn runs_pair_by_the_keys_both_plans_vary_and_by_repeat() {
    let dir = tempfile::tempdir().expect("scratch");
    let (base, base_runs) = experiment(
        &dir.path().join("base"),
        "[vary]\nproto = [\"udp\", \"tcp\"]\n[run]\nrepeat = 2",
    );
    assert_eq!(
        base_runs,
        [
            "001-proto=udp-r1",
            "002-proto=udp-r2",
            "003-proto=tcp-r1",
            "004-proto=tcp-r2"
        ]
    );
    let (new, new_runs) = experiment(
        &dir.path().join("new"),
        "[vary]\nrtt_ms = [20]\nproto = [\"tcp\", \"udp\"]\n[run]\nrepeat = 1",
    );
    assert_eq!(
        new_runs,
        ["001-rtt_ms=20+proto=tcp-r1", "002-rtt_ms=20+proto=udp-r1"]
    );
    let c = compare(&base, &new, &[]).expect("compared");
    assert_eq!(
        c.run_pairs,
        [
            pair(
                Some("001-proto=udp-r1"),
                Some("002-rtt_ms=20+proto=udp-r1"),
                None
            ),
            pair(Some("002-proto=udp-r2"), None, None),
            pair(
                Some("003-proto=tcp-r1"),
                Some("001-rtt_ms=20+proto=tcp-r1"),
                None
            ),
            pair(Some("004-proto=tcp-r2"), None, None),
        ]
    );
    // BASE's first run (1) against NEW's second (2), BASE's third (3) against NEW's first (1).
    assert_eq!(rss(&c, "001-proto=udp-r1"), (Some(1.0), Some(2.0)));
    assert_eq!(rss(&c, "003-proto=tcp-r1"), (Some(3.0), Some(1.0)));
    assert_eq!(rss(&c, "002-proto=udp-r2"), (Some(2.0), None));
    assert!(
        c.warnings.iter().any(|w| w
            == "BASE varies proto and NEW varies rtt_ms, proto: runs pair by proto (the keys \
                both vary) and their repeat"),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w == "runs only BASE has: 002-proto=udp-r2, 004-proto=tcp-r2"),
        "{:?}",
        c.warnings
    );
    assert_eq!(
        c.to_string().lines().nth(2),
        Some("runs paired by their varied values and repeat (- for none):")
    );
}

#[test]
fn a_run_that_matches_several_is_not_paired_and_the_warning_says_why() {
    let dir = tempfile::tempdir().expect("scratch");
    let (base, _) = experiment(
        &dir.path().join("base"),
        "[vary]\nproto = [\"udp\"]\n[run]\nrepeat = 1",
    );
    let (new, new_runs) = experiment(
        &dir.path().join("new"),
        "[vary]\nproto = [\"udp\"]\nrtt_ms = [20, 60]\n[run]\nrepeat = 1",
    );
    let c = compare(&base, &new, &[]).expect("compared");
    assert_eq!(c.run_pairs[0], pair(Some("001-proto=udp-r1"), None, None));
    assert_eq!(c.shared, 0);
    let said = format!(
        "BASE's run 001-proto=udp-r1 is not paired: by proto=udp and repeat 1 it matches NEW's {}",
        new_runs.join(", ")
    );
    assert!(c.warnings.contains(&said), "{:?}", c.warnings);
    assert!(
        c.to_string()
            .contains("nothing compared: BASE and NEW share no metric"),
        "{c}"
    );
}

#[test]
fn one_experiment_against_itself_sets_its_udp_runs_against_its_tls_runs() {
    let dir = tempfile::tempdir().expect("scratch");
    let (exp, _) = experiment(
        &dir.path().join("exp"),
        "[vary]\nproto = [\"udp\", \"tcp\", \"tls\"]\n[run]\nrepeat = 1",
    );
    let as_udp_tls = [TransportPair::parse("udp=tls").expect("pair")];
    let c = compare_with(&exp, &exp, &[], &as_udp_tls).expect("compared");
    assert_eq!(c.transport_pairs, ["udp=tls"]);
    assert_eq!(
        c.run_pairs,
        [
            pair(
                Some("001-proto=udp-r1"),
                Some("003-proto=tls-r1"),
                Some("udp=tls")
            ),
            pair(Some("002-proto=tcp-r1"), Some("002-proto=tcp-r1"), None),
            pair(Some("003-proto=tls-r1"), None, None),
            pair(None, Some("001-proto=udp-r1"), None),
        ]
    );
    assert_eq!(rss(&c, "001-proto=udp-r1"), (Some(1.0), Some(3.0)));
    assert_eq!(rss(&c, "002-proto=tcp-r1"), (Some(2.0), Some(2.0)));
    // The runs whose partners --as took are left out: no row twice, no row of no partner.
    let mut names: Vec<&str> = c.metrics.iter().map(|r| r.name.as_str()).collect();
    let all = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all, "a row name twice: {names:?}");
    assert!(c
        .metrics
        .iter()
        .all(|r| r.base.is_some() && r.new.is_some()));
    for said in [
        "BASE's runs left out, their partners taken by --as: 003-proto=tls-r1",
        "NEW's runs left out, their partners taken by --as: 001-proto=udp-r1",
    ] {
        assert!(c.warnings.iter().any(|w| w == said), "{:?}", c.warnings);
    }
    let table = c.to_string();
    assert!(
        table.contains("001-proto=udp-r1  003-proto=tls-r1  (--as udp=tls)"),
        "{table}"
    );
}

#[test]
fn as_needs_both_experiments_to_vary_the_transports_it_names() {
    let dir = tempfile::tempdir().expect("scratch");
    let (by_proto, _) = experiment(
        &dir.path().join("proto"),
        "[vary]\nproto = [\"udp\", \"tcp\"]\n[run]\nrepeat = 1",
    );
    let (by_rtt, _) = experiment(
        &dir.path().join("rtt"),
        "[vary]\nrtt_ms = [20, 60]\n[run]\nrepeat = 1",
    );
    let pairs = |texts: &[&str]| -> Vec<TransportPair> {
        texts
            .iter()
            .map(|t| TransportPair::parse(t).expect("pair"))
            .collect()
    };
    for (base, new, given, why) in [
        (&by_proto, &by_rtt, &["udp=tcp"][..], "does not vary proto"),
        (
            &by_proto,
            &by_proto,
            &["udp=tls"][..],
            "has no run with proto=tls (its runs have proto=udp, proto=tcp)",
        ),
        (
            &by_proto,
            &by_proto,
            &["udp=tcp", "udp=doh"][..],
            "a run of BASE pairs with one run of NEW",
        ),
    ] {
        let err = compare_with(base, new, &[], &pairs(given)).expect_err("refused");
        assert!(
            matches!(err, ReportError::TransportPair { .. }),
            "{given:?}: {err}"
        );
        assert!(err.to_string().contains(why), "{given:?}: {err}");
    }
}
