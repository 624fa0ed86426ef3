//! The experiment of docs/library.md, driven from a program of one's own (the `run_plan`
//! example): a one-run plan through the emulated link to ldplayer's own server, its sides
//! started by the example itself through `run_side_if_asked`.

use std::process::Command;

#[test]
fn a_plan_runs_from_a_program_of_ones_own() {
    // A run's sides live in network namespaces: root.
    if !ldplayer_testbed::prerequisite::netns() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch directory");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[trace]\n\
         synth = { workload = \"root\", rate = 100, duration_s = 2, seed = 1 }\n\
         [server]\n\
         kind = \"ldplayer\"\n\
         [network]\n\
         rtt_ms = 2\n\
         [run]\n\
         warmup_s = 0\n",
    )
    .expect("plan written");
    let out_dir = dir.path().join("out");
    let out = Command::new(ldplayer_testbed::cargo_example("run_plan"))
        .arg(&plan)
        .arg(&out_dir)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("summary:"))
        .collect();
    assert_eq!(runs.len(), 1, "one run: {stdout}");
    assert!(runs[0].ends_with(" Finished"), "{stdout}");
    // The summary is the run's, metric by metric (the run as the example printed it).
    let id = runs[0].split(' ').next().unwrap_or_default();
    let summary = std::fs::read_to_string(out_dir.join("summary.csv")).expect("summary.csv");
    let rows: Vec<&str> = summary.lines().skip(1).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.starts_with(&format!("{id},"))),
        "{summary}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with(&format!("{id},answered_share,"))),
        "{summary}"
    );
}
