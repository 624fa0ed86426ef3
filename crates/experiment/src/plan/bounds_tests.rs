//! Every number a plan gives is bounded where the plan is read, with the bound in the message
//! and the key's line, and what passes runs as written: values at the bounds reach the run's
//! settings and durations unchanged, and each server kind gets its idle timeout in its own unit
//! (issue 25).

use super::tests::{line_of, parse, refused, ISSUE_EXAMPLE};
use super::*;
use std::time::Duration;

/// `ISSUE_EXAMPLE` with `[client]` keys added before `[vary]`.
fn with_client(keys: &str) -> String {
    ISSUE_EXAMPLE.replace("[vary]\n", &format!("[client]\n{keys}\n[vary]\n"))
}

#[test]
fn every_number_out_of_its_range_is_refused_with_the_range_and_its_line() {
    let network =
        |keys: &str| ISSUE_EXAMPLE.replace("loss = 0.0\n", &format!("loss = 0.0\n{keys}\n"));
    let cases: Vec<(String, &str, &str, &str)> = vec![
        // (plan, key, the line holding, the message holding)
        (
            ISSUE_EXAMPLE.replace("idle_timeout_s = 20", "idle_timeout_s = 1e10"),
            "server.idle_timeout_s",
            "1e10",
            "10000000000 is out of range: from 0 to 86400 s (a day)",
        ),
        (
            ISSUE_EXAMPLE.replace("idle_timeout_s = 20", "idle_timeout_s = 1e30"),
            "server.idle_timeout_s",
            "1e30",
            "from 0 to 86400 s",
        ),
        (
            ISSUE_EXAMPLE.replace("idle_timeout_s = 20", "idle_timeout_s = 20.0004"),
            "server.idle_timeout_s",
            "20.0004",
            "not a whole number of milliseconds",
        ),
        (
            with_client("timeout_s = 1e300"),
            "client.timeout_s",
            "1e300",
            "from 0.001 to 86400 s",
        ),
        (
            with_client("timeout_s = 0.0001"),
            "client.timeout_s",
            "0.0001",
            "from 0.001 to 86400 s",
        ),
        (
            with_client("idle_timeout_s = 1e10"),
            "client.idle_timeout_s",
            "1e10",
            "from 0 to 86400 s",
        ),
        (
            with_client("queriers = 5000"),
            "client.queriers",
            "5000",
            "from 1 to 1024",
        ),
        (
            with_client("max_udp_sockets = 100000000"),
            "client.max_udp_sockets",
            "100000000",
            "from 1 to 1048576",
        ),
        (
            ISSUE_EXAMPLE.replace("idle_timeout_s = 20", "idle_timeout_s = 20\nthreads = 100000"),
            "server.threads",
            "100000",
            "from 1 to 1024",
        ),
        (
            ISSUE_EXAMPLE.replace("rtt_ms = 20\n", "rtt_ms = 1e300\n"),
            "network.rtt_ms",
            "1e300",
            "from 0 to 60000 ms (a minute)",
        ),
        (
            network("jitter_ms = 60001"),
            "network.jitter_ms",
            "60001",
            "from 0 to 60000 ms",
        ),
        (
            network("spin_us = 1e300"),
            "network.spin_us",
            "spin_us",
            "from 0 to 1000000 µs",
        ),
        (
            network("bandwidth_mbps = 1e-300"),
            "network.bandwidth_mbps",
            "bandwidth_mbps",
            "from 0.001 to 100000 Mbit/s",
        ),
        (
            network("bandwidth_mbps = 10\nqueue_kb = 1e300"),
            "network.queue_kb",
            "queue_kb",
            "from 1 to 1048576 KiB",
        ),
        (
            ISSUE_EXAMPLE.replace("warmup_s = 5", "warmup_s = 1e300"),
            "run.warmup_s",
            "warmup_s",
            "from 0 to 604800 s (a week)",
        ),
        (
            ISSUE_EXAMPLE.replace("warmup_s = 5", "warmup_s = 5\ncooldown_s = 1e300"),
            "run.cooldown_s",
            "cooldown_s",
            "from 0 to 604800 s",
        ),
        (
            ISSUE_EXAMPLE.replace("duration_s = 30", "duration_s = 1e300"),
            "trace.synth.duration_s",
            "synth =",
            "from 0 to 604800 s",
        ),
        (
            ISSUE_EXAMPLE.replace("rate = 2000", "rate = 1e300"),
            "trace.synth.rate",
            "synth =",
            "from 0.001 to 1000000 queries/s",
        ),
        (
            ISSUE_EXAMPLE.replace("duration_s = 30", "count = 100000000000"),
            "trace.synth.count",
            "synth =",
            "a trace lasts a week (604800 s) at most",
        ),
        (
            ISSUE_EXAMPLE.replace("set_do = true", "set_do = true, time_scale = 1e300"),
            "trace.mutate.time_scale",
            "mutate =",
            "from 0.001 to 1000",
        ),
        (
            ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "rtt_ms = [0, 1e300]"),
            "vary.rtt_ms[1]",
            "rtt_ms = [",
            "from 0 to 60000 ms",
        ),
        (
            ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "idle_timeout_s = [1e10]"),
            "vary.idle_timeout_s[0]",
            "idle_timeout_s = [",
            "from 0 to 86400 s",
        ),
        (
            ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "threads = [1, 5000]"),
            "vary.threads[1]",
            "threads = [",
            "from 1 to 1024",
        ),
        (
            ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "rate_scale = [1e-300]"),
            "vary.rate_scale[0]",
            "rate_scale = [",
            "from 0.001 to 1000",
        ),
        (
            ISSUE_EXAMPLE.replace("repeat = 1", "repeat = 4000000000"),
            "run.repeat",
            "repeat =",
            "9 combinations × 4000000000 repeats make 36000000000 runs: a plan has 10000 runs at most",
        ),
    ];
    for (text, key, line_with, message) in &cases {
        let (k, line, m) = refused(text);
        assert_eq!((k.as_str(), &m.contains(message)), (*key, &true), "{m}");
        assert_eq!(line, line_of(text, line_with), "{key}: {m}");
    }
}

#[test]
fn values_at_their_bounds_are_taken_and_carried_as_written() {
    let text = ISSUE_EXAMPLE
        .replace("kind = \"nsd\"", "kind = \"ldplayer\"")
        .replace("idle_timeout_s = 20", "idle_timeout_s = 86400\nthreads = 1024")
        .replace("rtt_ms = 20\n", "rtt_ms = 60000\njitter_ms = 60000\nspin_us = 1e6\n")
        .replace(
            "loss = 0.0\n",
            "loss = 0.0\nbandwidth_mbps = 100000\nqueue_kb = 1048576\n",
        )
        .replace("rtt_ms = [0, 20, 160]", "rate_scale = [0.001, 1000]")
        .replace("warmup_s = 5", "warmup_s = 0\ncooldown_s = 604800")
        .replace("duration_s = 30", "duration_s = 604800")
        .replace(
            "[vary]\n",
            "[client]\ntimeout_s = 86400\nidle_timeout_s = 0\nqueriers = 1024\nmax_udp_sockets = 1048576\n[vary]\n",
        );
    let plan = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let runs = plan.runs();
    assert_eq!(runs.len(), 6);
    let s = &runs[0].settings;
    assert_eq!(s.server.idle_timeout(), Duration::from_secs(86_400));
    assert_eq!(s.server.threads, Some(1024));
    assert_eq!(s.client.timeout(), Duration::from_secs(86_400));
    assert_eq!(s.client.idle_timeout(), Duration::ZERO);
    assert_eq!(
        (s.client.queriers, s.client.max_udp_sockets),
        (Some(1024), Some(1_048_576))
    );
    assert_eq!(s.cooldown(), Duration::from_secs(604_800));
    let (link, _) = s.network.link_params();
    assert_eq!(link.delay, Duration::from_secs(30));
    assert_eq!(link.jitter, Duration::from_secs(60));
    assert_eq!(link.rate_bps, Some(100_000_000_000));
    assert_eq!(link.queue_limit_bytes, 1 << 30);
    assert_eq!(runs[0].settings.trace.time_factor(), 1.0 / 0.001);

    // A decimal number of seconds is carried to the millisecond it says.
    let text = with_client("timeout_s = 0.29\nidle_timeout_s = 1.001");
    let s = parse(&text).unwrap().base;
    assert_eq!(s.client.timeout().as_millis(), 290);
    assert_eq!(s.client.idle_timeout().as_millis(), 1001);
}

#[test]
fn each_kind_takes_the_idle_timeout_in_its_own_unit() {
    let with = |kind: &str, idle: &str| {
        ISSUE_EXAMPLE
            .replace("kind = \"nsd\"", &format!("kind = \"{kind}\""))
            .replace("idle_timeout_s = 20", &format!("idle_timeout_s = {idle}"))
    };
    for (kind, idle, message) in [
        (
            "nsd",
            "40.5",
            "nsd takes its idle timeout (`tcp-timeout`) in whole seconds: 40.5 s would run as 41 s",
        ),
        (
            "nsd",
            "0",
            "nsd's idle timeout (`tcp-timeout`) is at least 1 s, not 0 s",
        ),
        (
            "knot",
            "2.5",
            "knot takes its idle timeout (`tcp-idle-timeout`) in whole seconds",
        ),
        (
            "bind",
            "121",
            "bind's idle timeout (`tcp-idle-timeout`) is from 2.5 to 120 s, not 121 s",
        ),
        (
            "bind",
            "1",
            "bind's idle timeout (`tcp-idle-timeout`) is from 2.5 to 120 s, not 1 s",
        ),
        (
            "bind",
            "3.25",
            "bind takes its idle timeout (`tcp-idle-timeout`) in steps of 0.1 s: 3.25 s would run as 3.3 s",
        ),
    ] {
        let text = with(kind, idle);
        let (key, line, m) = refused(&text);
        assert_eq!(key, "server.idle_timeout_s", "{m}");
        assert_eq!(line, line_of(&text, "idle_timeout_s"));
        assert!(m.contains(message), "{kind} {idle}: {m}");
    }
    for (kind, idle) in [
        ("nsd", "1"),
        ("bind", "120"),
        ("bind", "2.6"),
        ("ldplayer", "40.5"),
    ] {
        parse(&with(kind, idle)).unwrap_or_else(|e| panic!("{kind} {idle}: {e}"));
    }
    // Varied kinds: the kind that cannot take it is blamed.
    let text =
        with("ldplayer", "2.5").replace("rtt_ms = [0, 20, 160]", "kind = [\"ldplayer\", \"nsd\"]");
    let (key, _, m) = refused(&text);
    assert_eq!(key, "vary.kind[1]", "{m}");
}

#[test]
fn what_a_kind_refuses_at_start_is_refused_by_check() {
    let recursive = |kind: &str, more: &str| {
        ISSUE_EXAMPLE
            .replace("kind = \"nsd\"", &format!("kind = \"{kind}\"\n{more}"))
            .replace("zones = [\"root.zone\"]", "manifest = \"manifest\"")
            .replace("proto = [\"udp\", \"tcp\", \"tls\"]", "proto = [\"udp\"]")
    };
    let (key, _, m) = refused(&recursive("kresd", "threads = 2"));
    assert_eq!(key, "server.threads", "{m}");
    assert!(m.contains("threads must be 1"), "{m}");
    parse(&recursive("kresd", "threads = 1")).unwrap();
    let (key, _, m) = refused(&recursive("nsd", ""));
    assert_eq!(key, "server.manifest", "{m}");
    assert!(m.contains("nsd serves zone files, not a manifest"), "{m}");
    let text = ISSUE_EXAMPLE.replace("kind = \"nsd\"", "kind = \"ldplayer\"\nextra = [\"x\"]");
    let (key, _, m) = refused(&text);
    assert_eq!(key, "server", "{m}");
    assert!(m.contains("`extra`"), "{m}");
}

#[test]
fn a_synthetic_hierarchy_is_bounded_in_zones() {
    let text = ISSUE_EXAMPLE
        .replace("kind = \"nsd\"", "kind = \"unbound\"")
        .replace(
            "zones = [\"root.zone\"]",
            "hierarchy = { tlds = 30, slds = 1000000000000 }",
        )
        .replace("proto = [\"udp\", \"tcp\", \"tls\"]", "proto = [\"udp\"]");
    let (key, line, m) = refused(&text);
    assert_eq!(key, "server.hierarchy.slds", "{m}");
    assert_eq!(line, line_of(&text, "hierarchy ="));
    assert!(m.contains("1000000 second-level zones at most"), "{m}");
}

#[test]
fn a_plan_that_is_not_utf8_is_refused_at_its_line() {
    let mut bytes = ISSUE_EXAMPLE.as_bytes().to_vec();
    let at = ISSUE_EXAMPLE.find("[network]").unwrap();
    bytes.splice(at..at, b"# caf\xe9\n".iter().copied());
    let e = text_of(bytes).unwrap_err();
    let line = line_of(ISSUE_EXAMPLE, "[network]");
    assert_eq!(
        e.to_string(),
        format!(
            "line {line}, column 6: plan: not UTF-8 from byte 0xE9: a plan is TOML, which is UTF-8 text"
        )
    );
    assert_eq!(
        text_of(ISSUE_EXAMPLE.as_bytes().to_vec()).unwrap(),
        ISSUE_EXAMPLE
    );
}
