//! What `ldplayer experiment --check` accepts runs as written (issue 25): a number a run cannot
//! carry as the plan gives it (an idle timeout of 1e10 s, which the connections model sized an
//! allocation by; 1e30 s, which reached the server as 0 ns; a timeout of 1e300 s, refused by the
//! replay after `--check` passed it; an idle timeout nsd would round) is refused by `--check`
//! with its bound and its line, and so is a plan that is not UTF-8; values at the bounds run,
//! and reach the server and the replay as written.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use ldplayer_testbed::prerequisite;
use std::path::Path;

/// A trace of 3 s, for a run.
const TRACE: &str =
    "[trace]\nsynth = { workload = \"root\", rate = 100, duration_s = 3, seed = 1 }\n";

/// A trace longer than the default warm-up, for plans that are otherwise fine.
const LONGER: &str =
    "[trace]\nsynth = { workload = \"root\", rate = 100, duration_s = 10, seed = 1 }\n";

/// What `experiment --check` says on standard error of the plan `text` (written to `dir`); it
/// must refuse it.
fn refusal(dir: &Path, text: &[u8]) -> String {
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, text).unwrap();
    let out = ldplayer_fails(&["experiment", &s(&plan), "--check"]);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn check_refuses_numbers_a_run_cannot_carry_with_their_bound_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("root.zone"), "").unwrap();
    for (rest, key, line, bound) in [
        (
            "[server]\nkind = \"ldplayer\"\nidle_timeout_s = 1e10\n",
            "server.idle_timeout_s",
            5,
            "from 0 to 86400 s (a day)",
        ),
        (
            "[server]\nkind = \"ldplayer\"\nidle_timeout_s = 1e30\n",
            "server.idle_timeout_s",
            5,
            "from 0 to 86400 s (a day)",
        ),
        (
            "[server]\nkind = \"ldplayer\"\n[client]\ntimeout_s = 1e300\n",
            "client.timeout_s",
            6,
            "from 0.001 to 86400 s (a day)",
        ),
        (
            "[server]\nkind = \"ldplayer\"\n[network]\nrtt_ms = 1e300\n",
            "network.rtt_ms",
            6,
            "from 0 to 60000 ms (a minute)",
        ),
        (
            "[server]\nkind = \"ldplayer\"\n[network]\nspin_us = 1e300\n",
            "network.spin_us",
            6,
            "from 0 to 1000000 µs (a second)",
        ),
        (
            "[server]\nkind = \"nsd\"\nzones = [\"root.zone\"]\nidle_timeout_s = 2.5\n",
            "server.idle_timeout_s",
            6,
            "nsd takes its idle timeout (`tcp-timeout`) in whole seconds: 2.5 s would run as 3 s",
        ),
        (
            "[server]\nkind = \"bind\"\nzones = [\"root.zone\"]\nidle_timeout_s = 300\n",
            "server.idle_timeout_s",
            6,
            "bind's idle timeout (`tcp-idle-timeout`) is from 2.5 to 120 s, not 300 s",
        ),
        (
            "[server]\nkind = \"ldplayer\"\n[client]\nqueriers = 2000\n",
            "client.queriers",
            6,
            "from 1 to 1024",
        ),
    ] {
        let said = refusal(dir.path(), format!("{LONGER}{rest}").as_bytes());
        assert!(
            said.contains(&format!("line {line}, column"))
                && said.contains(key)
                && said.contains(bound),
            "{rest}: {said}"
        );
    }
    // A plan that is not UTF-8: refused at the line of the byte.
    let mut text = format!("{LONGER}# caf").into_bytes();
    text.push(0xE9);
    text.extend_from_slice(b"\n[server]\nkind = \"ldplayer\"\n");
    let said = refusal(dir.path(), &text);
    assert!(
        said.contains("line 3, column 6: plan: not UTF-8 from byte 0xE9"),
        "{said}"
    );
}

#[test]
fn values_at_the_bounds_run_and_reach_the_server_and_the_replay_as_written() {
    if !prerequisite::netns() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "{TRACE}mutate = {{ proto = \"tcp\" }}\n[server]\nkind = \"ldplayer\"\n\
             idle_timeout_s = 86400\n[client]\ntimeout_s = 86400\n[run]\nwarmup_s = 1\n\
             cooldown_s = 0\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    ldplayer(&["experiment", &s(&plan), "--check"]);
    ldplayer(&["experiment", &s(&plan), "-o", &s(&out_dir), "-q"]);
    let run = out_dir.join("runs/001-r1");
    let json = |file: &str| -> serde_json::Value {
        let text =
            std::fs::read_to_string(run.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        serde_json::from_str(&text).unwrap()
    };
    let record = json("run.json");
    let text = record.to_string();
    assert!(text.contains("\"idle_timeout_s\":86400.0"), "{text}");
    assert!(text.contains("\"timeout_s\":86400.0"), "{text}");
    // What the server's and the replay's sides were given.
    let server = json("server-side.json").to_string();
    assert!(server.contains("\"idle_timeout_ms\":86400000"), "{server}");
    let client = json("client-side.json").to_string();
    assert!(
        client.contains("\"timeout_ms\":86400000")
            && client.contains("\"idle_timeout_ms\":86401000"),
        "{client}"
    );
    let summary = std::fs::read_to_string(out_dir.join("summary.csv")).unwrap();
    let answered = summary
        .lines()
        .find(|l| l.starts_with("001-r1,answered_share,"))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        answered.starts_with("001-r1,answered_share,1,"),
        "{answered}"
    );
}
