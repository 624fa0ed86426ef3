//! Plans as users write them: the issue's example, the order of `[vary]`, and every kind of
//! mistake reported with its key and line.

use super::*;
use ldplayer_mutate::Mutation;
use ldplayer_synth::Workload;
use std::path::Path;

/// A folder with a zone file and a trace file for plans to name.
pub(super) fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("root.zone"), "").unwrap();
    std::fs::write(dir.path().join("trace.bin"), "").unwrap();
    std::fs::write(dir.path().join("manifest"), "").unwrap();
    dir
}

pub(super) const ISSUE_EXAMPLE: &str = r#"
[trace]
synth = { workload = "root", rate = 2000, duration_s = 30, seed = 1 }   # or: file = "trace.bin"
mutate = { proto = "tcp", set_do = true }                               # optional
[server]
kind = "nsd"
zones = ["root.zone"]
idle_timeout_s = 20
[network]
rtt_ms = 20
loss = 0.0
[vary]
proto = ["udp", "tcp", "tls"]
rtt_ms = [0, 20, 160]
[run]
repeat = 1
warmup_s = 5
"#;

pub(super) fn parse(text: &str) -> Result<Plan, PlanError> {
    let dir = folder();
    Plan::parse(text, dir.path())
}

/// The error of `text`, with its key and line.
pub(super) fn refused(text: &str) -> (String, usize, String) {
    match parse(text) {
        Ok(plan) => panic!("accepted: {plan:?}"),
        Err(PlanError::Invalid {
            place,
            key,
            message,
        }) => (key, place.line, message),
        Err(e) => panic!("not a plan error: {e}"),
    }
}

/// The line of the first line of `text` that contains `needle`, from 1.
pub(super) fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn the_issues_example_makes_nine_runs_in_vary_order() {
    let plan = parse(ISSUE_EXAMPLE).unwrap();
    assert_eq!(plan.varied_keys(), ["proto", "rtt_ms"]);
    let runs = plan.runs();
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "001-proto=udp+rtt_ms=0-r1",
            "002-proto=udp+rtt_ms=20-r1",
            "003-proto=udp+rtt_ms=160-r1",
            "004-proto=tcp+rtt_ms=0-r1",
            "005-proto=tcp+rtt_ms=20-r1",
            "006-proto=tcp+rtt_ms=160-r1",
            "007-proto=tls+rtt_ms=0-r1",
            "008-proto=tls+rtt_ms=20-r1",
            "009-proto=tls+rtt_ms=160-r1",
        ]
    );
    let r = &runs[7];
    assert_eq!(r.index, 7);
    assert_eq!(
        r.varied,
        [
            ("proto".into(), "tls".into()),
            ("rtt_ms".into(), "20".into())
        ]
    );
    assert_eq!(r.settings.trace.mutate.proto, ProtoChoice::Tls);
    assert_eq!(r.settings.network.rtt_ms, 20.0);
    assert_eq!(runs[6].settings.network.rtt_ms, 0.0);
    assert!(r.settings.server.tls, "a tls run turns the server's TLS on");
    assert_eq!(r.settings.server.idle_timeout_s, 20.0);
    assert_eq!(
        r.settings.client.idle_timeout_s, 21.0,
        "the server closes first"
    );
    assert_eq!(r.settings.client.timeout_s, DEFAULT_TIMEOUT_S);
    assert_eq!(r.settings.warmup_s, 5.0);
    assert_eq!(r.settings.trace.mutate.do_share, Some(1.0));
    assert!(runs
        .iter()
        .all(|r| r.settings.is_connection_oriented() == (r.varied[0].1 != "udp")));
}

#[test]
fn the_synth_spec_maps_as_the_synth_command_does() {
    let plan = parse(ISSUE_EXAMPLE).unwrap();
    let c = plan.base.trace.synth_config().unwrap();
    assert_eq!(
        c.workload,
        Workload::RootLike(ldplayer_synth::RootLike::new(2000.0))
    );
    assert_eq!(c.seed, 1);
    assert_eq!(c.duration_ns, Some(30_000_000_000));
    assert_eq!(c.count, None);
    assert_eq!(c.clients, 100_000, "the root workload's own client count");
    assert_eq!(plan.base.trace.expected_duration_s(), Some(30.0));

    let fixed = ISSUE_EXAMPLE.replace(
        r#"workload = "root", rate = 2000, duration_s = 30, seed = 1"#,
        r#"workload = "fixed", rate = 1000, count = 50000, clients = 10, qtypes = { AAAA = 3, A = 1 }"#,
    );
    let plan = parse(&fixed).unwrap();
    let c = plan.base.trace.synth_config().unwrap();
    assert_eq!(
        c.workload,
        Workload::Fixed {
            interval_ns: 1_000_000
        }
    );
    assert_eq!((c.count, c.clients, c.seed), (Some(50_000), 10, 0));
    assert_eq!(
        c.qtypes,
        [(ldplayer_dns::Rtype::AAAA, 3), (ldplayer_dns::Rtype::A, 1)],
        "in the order written"
    );
    assert_eq!(plan.base.trace.expected_duration_s(), Some(50.0));
}

#[test]
fn the_first_vary_key_is_outermost_and_repeats_innermost() {
    let text = ISSUE_EXAMPLE
        .replace(
            "proto = [\"udp\", \"tcp\", \"tls\"]\nrtt_ms = [0, 20, 160]",
            "rtt_ms = [160, 0.5]\nproto = [\"tcp\", \"udp\"]",
        )
        .replace("repeat = 1", "repeat = 2");
    let plan = parse(&text).unwrap();
    assert_eq!(plan.varied_keys(), ["rtt_ms", "proto"]);
    let ids: Vec<String> = plan.runs().into_iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        [
            "001-rtt_ms=160+proto=tcp-r1",
            "002-rtt_ms=160+proto=tcp-r2",
            "003-rtt_ms=160+proto=udp-r1",
            "004-rtt_ms=160+proto=udp-r2",
            "005-rtt_ms=0.5+proto=tcp-r1",
            "006-rtt_ms=0.5+proto=tcp-r2",
            "007-rtt_ms=0.5+proto=udp-r1",
            "008-rtt_ms=0.5+proto=udp-r2",
        ]
    );
    assert!(!plan.base.server.tls, "no tls run, no TLS by default");
}

#[test]
fn without_vary_there_is_one_run_per_repeat() {
    let text = ISSUE_EXAMPLE.replace(
        "[vary]\nproto = [\"udp\", \"tcp\", \"tls\"]\nrtt_ms = [0, 20, 160]\n",
        "",
    );
    let runs = parse(&text).unwrap().runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, "001-r1");
    assert!(runs[0].varied.is_empty());
}

#[test]
fn varied_values_reach_every_setting() {
    let text = r#"
[trace]
file = "trace.bin"
mutate = { proto = "tcp" }
[server]
kind = "nsd"
zones = ["root.zone"]
[network]
loss_model = "gilbert-elliott"
[client]
idle_timeout_s = 30
[vary]
idle_timeout_s = [5, 40]
loss = [0.02]
jitter_ms = [3]
bandwidth_mbps = [100]
queue_kb = [256]
burst_len = [4]
do_share = [0.72]
rate_scale = [2]
kind = ["bind"]
threads = [4]
"#;
    let plan = parse(text).unwrap();
    let runs = plan.runs();
    assert_eq!(runs.len(), 2);
    let s = &runs[1].settings;
    assert_eq!(s.server.idle_timeout_s, 40.0);
    assert_eq!(
        s.client.idle_timeout_s, 30.0,
        "set in [client], so it does not follow"
    );
    assert_eq!(s.network.loss, 0.02);
    assert_eq!(s.network.jitter_ms, 3.0);
    assert_eq!(s.network.bandwidth_mbps, Some(100.0));
    assert_eq!(s.network.queue_kb, Some(256.0));
    assert_eq!(s.network.burst_len, 4.0);
    assert_eq!(s.trace.mutate.do_share, Some(0.72));
    assert_eq!(s.trace.rate_scale, 2.0);
    assert_eq!(s.server.kind, ServerKind::Bind);
    assert_eq!(s.server.threads, Some(4));
    assert_eq!(
        s.trace.source,
        TraceSource::File(plan.dir.join("trace.bin"))
    );
    assert_eq!(s.network.link_params().0.queue_limit_bytes, 256 * 1024);
}

#[test]
fn an_exact_do_share_clears_then_sets() {
    let text = ISSUE_EXAMPLE.replace("set_do = true", "do_share = 0.72, time_scale = 3");
    let plan = parse(&text.replace("[vary]", "[vary]\nrate_scale = [1.5]")).unwrap();
    let stages = plan.runs()[0].settings.trace.mutate_stages(9);
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[0].seed, 9);
    assert!(stages[0].mutations.contains(&Mutation::ClearDo));
    assert!(stages[0].mutations.contains(&Mutation::TimeScale(2.0)));
    assert!(stages[0].mutations.contains(&Mutation::Transport {
        proto: ldplayer_trace::Proto::Udp,
        client_share: 1.0
    }));
    assert_eq!(stages[1].mutations, [Mutation::SetDo { share: 0.72 }]);

    let all = parse(ISSUE_EXAMPLE).unwrap().base.trace.mutate_stages(0);
    assert_eq!(all.len(), 1);
    assert!(all[0].mutations.contains(&Mutation::SetDo { share: 1.0 }));
    let plain = ISSUE_EXAMPLE.replace("mutate = { proto = \"tcp\", set_do = true }", "");
    assert!(parse(&plain)
        .unwrap()
        .base
        .trace
        .mutate_stages(0)
        .is_empty());
}

#[test]
fn an_unknown_key_is_named_with_its_line() {
    let text = ISSUE_EXAMPLE.replace("loss = 0.0", "los = 0.0");
    let (key, line, message) = refused(&text);
    assert_eq!(key, "network.los");
    assert_eq!(line, line_of(&text, "los = 0.0"));
    assert!(message.contains("unknown field `los`"), "{message}");

    let text = ISSUE_EXAMPLE.replace("seed = 1 }", "seed = 1, sped = 2 }");
    let (key, line, message) = refused(&text);
    assert_eq!(
        (key.as_str(), line),
        ("trace.synth.sped", line_of(&text, "sped"))
    );
    assert!(message.contains("sped"), "{message}");

    let text = format!("{ISSUE_EXAMPLE}[extra]\nx = 1\n");
    let (_, line, message) = refused(&text);
    assert_eq!(line, line_of(&text, "[extra]"));
    assert!(message.contains("extra"), "{message}");
}

#[test]
fn a_bad_value_is_named_with_its_key_and_line() {
    for (from, to, want_key) in [
        ("loss = 0.0", "loss = 1.0", "network.loss"),
        ("rtt_ms = 20\n", "rtt_ms = -1\n", "network.rtt_ms"),
        ("rate = 2000", "rate = 0", "trace.synth.rate"),
        ("warmup_s = 5", "warmup_s = 30", "run.warmup_s"),
        ("repeat = 1", "repeat = 0", "run.repeat"),
        (
            "idle_timeout_s = 20",
            "idle_timeout_s = \"20\"",
            "server.idle_timeout_s",
        ),
        ("seed = 1 }", "seed = -1 }", "trace.synth.seed"),
    ] {
        let text = ISSUE_EXAMPLE.replacen(from, to, 1);
        let (key, line, message) = refused(&text);
        assert_eq!(key, want_key, "{to}: {message}");
        assert_eq!(line, line_of(&text, to.trim_end()), "{to}: {message}");
    }
}

#[test]
fn an_unknown_server_kind_lists_the_kinds() {
    let text = ISSUE_EXAMPLE.replace("kind = \"nsd\"", "kind = \"nsdx\"");
    let (key, line, message) = refused(&text);
    assert_eq!(
        (key.as_str(), line),
        ("server.kind", line_of(&text, "nsdx"))
    );
    for k in ServerKind::ALL {
        assert!(message.contains(k.name()), "{message}");
    }
}

#[test]
fn a_trace_is_a_file_or_a_synth_spec() {
    let both = ISSUE_EXAMPLE.replace("[trace]\n", "[trace]\nfile = \"trace.bin\"\n");
    let (key, line, _) = refused(&both);
    assert_eq!(
        (key.as_str(), line),
        ("trace.synth", line_of(&both, "synth ="))
    );
    let neither = ISSUE_EXAMPLE.replace("synth = {", "# synth = {");
    let (key, _, message) = refused(&neither);
    assert_eq!(key, "trace");
    assert!(
        message.contains("file") && message.contains("synth"),
        "{message}"
    );
    let missing = ISSUE_EXAMPLE.replace(
        "synth = { workload = \"root\", rate = 2000, duration_s = 30, seed = 1 }",
        "file = \"nothing.bin\"",
    );
    let (key, line, message) = refused(&missing);
    assert_eq!(
        (key.as_str(), line),
        ("trace.file", line_of(&missing, "nothing.bin"))
    );
    assert!(message.contains("does not exist"), "{message}");
}

#[test]
fn vary_lists_must_hold_values_of_variable_keys() {
    let empty = ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "rtt_ms = []");
    let (key, line, message) = refused(&empty);
    assert_eq!(
        (key.as_str(), line),
        ("vary.rtt_ms", line_of(&empty, "rtt_ms = []"))
    );
    assert!(message.contains("empty"), "{message}");

    let fixed = ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "zones = [\"a\", \"b\"]");
    let (key, line, message) = refused(&fixed);
    assert_eq!(
        (key.as_str(), line),
        ("vary.zones", line_of(&fixed, "zones = [\"a\""))
    );
    assert!(
        message.contains("proto") && message.contains("rate_scale"),
        "{message}"
    );

    let bad = ISSUE_EXAMPLE.replace(
        "rtt_ms = [0, 20, 160]",
        "rtt_ms = [0, 20]\nloss = [0.01,\n  1.5]",
    );
    let (key, line, message) = refused(&bad);
    assert_eq!(
        (key.as_str(), line),
        ("vary.loss[1]", line_of(&bad, "1.5]"))
    );
    assert!(message.contains("1.5"), "{message}");

    let twice = ISSUE_EXAMPLE.replace("\"tls\"]", "\"udp\"]");
    let (key, _, message) = refused(&twice);
    assert_eq!(key, "vary.proto[2]");
    assert!(message.contains("twice"), "{message}");

    let typo = ISSUE_EXAMPLE.replace("\"tls\"]", "\"dot\"]");
    let (key, _, message) = refused(&typo);
    assert_eq!(key, "vary.proto[2]");
    assert!(message.contains("dot"), "{message}");
}

#[test]
fn tls_against_a_server_without_it_blames_the_varied_value() {
    let text = ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "kind = [\"nsd\", \"knot\"]");
    let (key, line, message) = refused(&text);
    assert_eq!(key, "vary.kind[1]");
    assert_eq!(line, line_of(&text, "kind = [\"nsd\""));
    assert!(
        message.contains("knot") && message.contains("proto=tls, kind=knot"),
        "{message}"
    );

    let fixed_kind = ISSUE_EXAMPLE.replace("kind = \"nsd\"", "kind = \"knot\"");
    let (key, _, message) = refused(&fixed_kind);
    assert_eq!(key, "vary.proto[2]", "{message}");

    let knot_tls = ISSUE_EXAMPLE
        .replace("kind = \"nsd\"", "kind = \"knot\"\ntls = true")
        .replace(", \"tls\"]", "]");
    let (key, line, _) = refused(&knot_tls);
    assert_eq!(
        (key.as_str(), line),
        ("server.tls", line_of(&knot_tls, "tls = true"))
    );

    let no_tls = ISSUE_EXAMPLE.replace("idle_timeout_s = 20", "idle_timeout_s = 20\ntls = false");
    let (key, _, _) = refused(&no_tls);
    assert_eq!(key, "vary.proto[2]");
}

#[test]
fn contradicting_keys_are_refused() {
    let local = ISSUE_EXAMPLE
        .replace("kind = \"nsd\"", "kind = \"unbound\"")
        .replace("\"tls\"]", "\"tcp\"]")
        .replace("[\"udp\", \"tcp\", \"tcp\"]", "[\"udp\", \"tcp\"]");
    // A resolver answers from zones of its own, or resolves through a hierarchy: one of them.
    assert!(parse(&local).is_ok());
    let recursive = local.replace("zones = [\"root.zone\"]\n", "");
    let (key, line, message) = refused(&recursive);
    assert_eq!(
        (key.as_str(), line),
        ("server.kind", line_of(&recursive, "unbound"))
    );
    assert!(message.contains("manifest"), "{message}");
    let with_manifest = local.replace("zones = [\"root.zone\"]", "manifest = \"manifest\"");
    assert!(parse(&with_manifest).is_ok());

    let two_do = ISSUE_EXAMPLE.replace("set_do = true", "set_do = true, do_share = 0.5");
    let (key, _, message) = refused(&two_do);
    assert_eq!(key, "trace.mutate.do_share");
    assert!(message.contains("set_do"), "{message}");

    let strip = ISSUE_EXAMPLE.replace("set_do = true", "set_do = true, strip_edns = true");
    let (key, _, message) = refused(&strip);
    assert_eq!(key, "trace.mutate", "{message}");

    let queue = ISSUE_EXAMPLE.replace("loss = 0.0", "loss = 0.0\nqueue_kb = 64");
    let (key, line, _) = refused(&queue);
    assert_eq!(
        (key.as_str(), line),
        ("network.queue_kb", line_of(&queue, "queue_kb"))
    );

    let share = ISSUE_EXAMPLE.replace("proto = \"tcp\", set_do", "proto_share = 0.5, set_do");
    let (key, _, message) = refused(&share);
    assert_eq!(key, "trace.mutate.proto_share");
    assert!(message.contains("proto"), "{message}");
}

#[test]
fn client_rtts_are_checked() {
    let with = |spec: &str| {
        ISSUE_EXAMPLE.replace("loss = 0.0", &format!("loss = 0.0\nclient_rtt = {spec}"))
    };
    let plan = parse(&with("{ dist = \"uniform\", min_ms = 10, max_ms = 100 }")).unwrap();
    let rtt = plan.base.network.client_rtt.unwrap();
    let d = rtt.sample("10.0.0.1".parse().unwrap(), 1);
    assert!((10.0..=100.0).contains(&(d.as_secs_f64() * 1e3)));
    let (key, _, message) = refused(&with("{ dist = \"lognormal\", median_ms = 40 }"));
    assert_eq!(key, "network.client_rtt");
    assert!(message.contains("sigma"), "{message}");
    let (key, _, _) = refused(&with("{ dist = \"uniform\", min_ms = 100, max_ms = 10 }"));
    assert_eq!(key, "network.client_rtt");
}

#[test]
fn a_plan_file_names_itself_in_errors_and_resolves_paths_next_to_it() {
    let dir = folder();
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, ISSUE_EXAMPLE.replace("loss = 0.0", "loss = 2")).unwrap();
    let e = Plan::from_file(&path).unwrap_err().to_string();
    let line = line_of(ISSUE_EXAMPLE, "loss = 0.0");
    assert!(e.starts_with(&format!("{}:{line}:", path.display())), "{e}");
    assert!(e.contains("network.loss"), "{e}");
    std::fs::write(&path, ISSUE_EXAMPLE).unwrap();
    let plan = Plan::from_file(&path).unwrap();
    assert_eq!(plan.base.server.zones, [dir.path().join("root.zone")]);
    let missing = Plan::from_file(Path::new("/nonexistent/plan.toml")).unwrap_err();
    assert!(matches!(missing, PlanError::Read { .. }));
}

#[test]
fn runs_read_back_from_json() {
    let plan = parse(ISSUE_EXAMPLE).unwrap();
    for run in plan.runs() {
        let json = serde_json::to_string(&run).unwrap();
        let back: RunSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, run);
    }
    let json = serde_json::to_string(&plan).unwrap();
    assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), plan);
}

#[test]
fn check_lists_every_run_and_the_total() {
    let text = ISSUE_EXAMPLE.replace(
        "rtt_ms = [0, 20, 160]",
        "rtt_ms = [0, 20]\nrate_scale = [1, 2]",
    );
    let out = parse(&text).unwrap().describe_runs();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 13, "{out}");
    assert_eq!(lines[0], "001-proto=udp+rtt_ms=0+rate_scale=1-r1\t30 s");
    assert_eq!(lines[1], "002-proto=udp+rtt_ms=0+rate_scale=2-r1\t15 s");
    // 6 runs of 30 s and 6 of 15 s, each with a 1 s cool-down.
    assert_eq!(
        lines[12],
        "12 runs (12 combinations × 1 repeat), about 4 min 42 s of replay"
    );
}

#[test]
fn a_missing_section_or_field_is_named() {
    let text = ISSUE_EXAMPLE.replace("[server]", "[serve]");
    let (_, _, message) = refused(&text);
    assert!(message.contains("serve"), "{message}");
    let text = ISSUE_EXAMPLE.replace("kind = \"nsd\"\n", "");
    let (key, _, message) = refused(&text);
    assert!(key.starts_with("server"), "{key}: {message}");
    assert!(message.contains("missing field `kind`"), "{message}");
    let (key, _, message) = refused("[trace]\nfile = \"trace.bin\"\n");
    assert!(
        message.contains("missing field `server`"),
        "{key}: {message}"
    );
}

#[test]
fn the_mutate_flags_names_are_accepted_where_they_differ() {
    let text = ISSUE_EXAMPLE.replace("set_do = true", "set_do = true, proto_fraction = 0.25");
    let plan = parse(&text).unwrap();
    assert_eq!(plan.base.trace.mutate.proto_share, 0.25);
}

#[test]
fn the_client_idle_timeout_follows_a_varied_server_timeout() {
    // ldplayer's server takes milliseconds (nsd whole seconds).
    let text = ISSUE_EXAMPLE
        .replace("rtt_ms = [0, 20, 160]", "idle_timeout_s = [5, 40.5]")
        .replace("kind = \"nsd\"", "kind = \"ldplayer\"");
    let runs = parse(&text).unwrap().runs();
    let pairs: Vec<(f64, f64)> = runs
        .iter()
        .map(|r| {
            (
                r.settings.server.idle_timeout_s,
                r.settings.client.idle_timeout_s,
            )
        })
        .collect();
    assert_eq!(pairs[..2], [(5.0, 6.0), (40.5, 41.5)]);
    assert_eq!(runs[1].varied[1], ("idle_timeout_s".into(), "40.5".into()));
}

#[test]
fn set_do_varies_between_the_trace_as_it_is_and_all_do() {
    let text = ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "set_do = [false, true]");
    let runs = parse(&text).unwrap().runs();
    assert_eq!(runs[0].settings.trace.mutate.do_share, None);
    assert_eq!(runs[1].settings.trace.mutate.do_share, Some(1.0));
    assert_eq!(runs[1].varied[1].1, "true");

    let both = ISSUE_EXAMPLE.replace("rtt_ms = [0, 20, 160]", "do_share = [0.7]\nset_do = [true]");
    let (key, line, message) = refused(&both);
    assert_eq!(
        (key.as_str(), line),
        ("vary.set_do", line_of(&both, "set_do = [true]"))
    );
    assert!(message.contains("do_share"), "{message}");
}

/// `[client] stack` sets every run's client stack; `stack` in `[vary]` makes one run per
/// stack, named by it; a stack that does not exist is refused with its key.
#[test]
fn the_client_stack_is_set_and_varied() {
    use super::kinds::Stack;
    let base = "[trace]\nsynth = { workload = \"poisson\", rate = 10, duration_s = 20 }\n\
                [server]\nkind = \"ldplayer\"\n[trace.mutate]\nproto = \"doq\"\n";
    let plan = parse(&format!("{base}[client]\nstack = \"reference\"\n")).unwrap();
    assert_eq!(plan.base.client.stack, Stack::Reference);
    assert_eq!(parse(base).unwrap().base.client.stack, Stack::Lean);
    let plan = parse(&format!(
        "{base}[vary]\nstack = [\"lean\", \"reference\"]\n"
    ))
    .unwrap();
    let runs = plan.runs();
    let stacks: Vec<_> = runs.iter().map(|r| r.settings.client.stack).collect();
    assert_eq!(stacks, [Stack::Lean, Stack::Reference]);
    assert!(runs[1].id.contains("stack=reference"), "{}", runs[1].id);
    let e = parse(&format!("{base}[vary]\nstack = [\"heavy\"]\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("stack"), "{e}");
}

#[test]
fn a_diff_names_its_base_run_and_its_criteria_are_read() {
    let dir = folder();
    let plan = |diff: &str| {
        Plan::parse(
            &format!(
                "[trace]\nsynth = {{ workload = \"root\", rate = 10, duration_s = 20 }}\n\
                 [server]\nkind = \"ldplayer\"\n[vary]\nproto = [\"udp\", \"tcp\"]\n\
                 [run]\nrepeat = 2\n{diff}"
            ),
            dir.path(),
        )
    };
    // Without [diff], no answers are kept.
    let p = plan("").unwrap();
    assert!(p.diff.is_none() && !p.base.client.keep_answers);
    // By its values: each repeat against the base's same repeat.
    let p = plan("[diff]\nbase = \"proto=udp\"\n").unwrap();
    assert!(p.base.client.keep_answers);
    let runs = p.runs();
    assert!(runs.iter().all(|r| r.settings.client.keep_answers));
    let d = p.diff.as_ref().unwrap();
    let base = |id: &str| {
        let run = runs.iter().find(|r| r.id == id).unwrap();
        d.base_of(run, &runs).map(|b| b.id.clone())
    };
    assert_eq!(
        base("004-proto=tcp-r2").as_deref(),
        Some("002-proto=udp-r2")
    );
    assert_eq!(
        base("003-proto=tcp-r1").as_deref(),
        Some("001-proto=udp-r1")
    );
    // By its name: every run against that one.
    let p = plan("[diff]\nbase = \"001-proto=udp-r1\"\n").unwrap();
    let runs = p.runs();
    let d = p.diff.as_ref().unwrap();
    assert!(runs
        .iter()
        .all(|r| d.base_of(r, &runs).unwrap().id == "001-proto=udp-r1"));
    // A name no run has: refused, with the runs' names and the line.
    let e = plan("[diff]\nbase = \"proto=tls\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("diff.base") && e.contains("line 10") && e.contains("001-proto=udp-r1"),
        "{e}"
    );
    // The criteria file must be there and read.
    let e = plan("[diff]\nbase = \"proto=udp\"\ncriteria = \"nope.toml\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("diff.criteria") && e.contains("does not exist"),
        "{e}"
    );
    std::fs::write(dir.path().join("bad.toml"), "fields = [\"rcodes\"]\n").unwrap();
    let e = plan("[diff]\nbase = \"proto=udp\"\ncriteria = \"bad.toml\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rcodes"), "{e}");
    std::fs::write(dir.path().join("good.toml"), "ignore = [\"edns.*\"]\n").unwrap();
    let p = plan("[diff]\nbase = \"proto=udp\"\ncriteria = \"good.toml\"\n").unwrap();
    assert_eq!(p.diff.unwrap().criteria, Some(dir.path().join("good.toml")));
    // Unknown keys are refused, as everywhere in a plan.
    assert!(plan("[diff]\nbase = \"proto=udp\"\nbse = 1\n").is_err());
}
