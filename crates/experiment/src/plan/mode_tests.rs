//! `[client] mode` (trace, fast, ramp) with the keys that go with it, and `[vary] server`:
//! kinds with their threads, for capacity studies (issue 32).

use super::tests::{line_of, parse, refused};
use super::*;

const BASE: &str = "[trace]\nsynth = { workload = \"poisson\", rate = 10, duration_s = 20 }\n\
                    [server]\nkind = \"ldplayer\"\n";

#[test]
fn a_ramp_takes_its_rate_length_and_bounds() {
    let plan = parse(&format!(
        "{BASE}[client]\nmode = \"ramp\"\nramp_to_qps = 30000\nramp_s = 60\nmax_loss_pct = 1\n\
         max_latency_ms = 50\nqueries_per_connection = 5000\n"
    ))
    .unwrap();
    let c = &plan.base.client;
    assert_eq!(c.mode, ClientMode::Ramp);
    let ramp = c.ramp.expect("a ramp");
    assert_eq!((ramp.to_qps, ramp.ramp_s), (30_000.0, 60.0));
    assert_eq!((ramp.max_loss_pct, ramp.max_latency_ms), (1.0, Some(50.0)));
    assert_eq!(c.queries_per_connection, Some(5000));
    // A ramp lasts its length, whatever the trace: 60 s, not the trace's 20.
    let text = plan.describe_runs();
    assert!(text.contains("\t60 s"), "{text}");
    // Without a loss bound, resperf's default: none (100%).
    let plan = parse(&format!(
        "{BASE}[client]\nmode = \"ramp\"\nramp_to_qps = 100\nramp_s = 10\n"
    ))
    .unwrap();
    assert_eq!(plan.base.client.ramp.map(|r| r.max_loss_pct), Some(100.0));
    // The trace's own timing, by default; a closed loop with its window.
    let plan = parse(BASE).unwrap();
    assert_eq!(plan.base.client.mode, ClientMode::Trace);
    assert!(plan.base.client.ramp.is_none());
    let plan = parse(&format!(
        "{BASE}[client]\nmode = \"fast\"\nmax_in_flight = 64\n"
    ))
    .unwrap();
    assert_eq!(plan.base.client.mode, ClientMode::Fast);
    assert_eq!(plan.base.client.max_in_flight, Some(64));
}

#[test]
fn keys_of_another_mode_and_ramps_without_their_rate_are_refused() {
    let text = format!("{BASE}[client]\nramp_to_qps = 3000\n");
    let (key, line, message) = refused(&text);
    assert_eq!(key, "client.ramp_to_qps");
    assert_eq!(line, line_of(&text, "ramp_to_qps"));
    assert!(message.contains("mode = \"ramp\""), "{message}");
    let text = format!(
        "{BASE}[client]\nmode = \"ramp\"\nmax_in_flight = 5\nramp_to_qps = 10\nramp_s = 1\n"
    );
    assert_eq!(refused(&text).0, "client.max_in_flight");
    let text = format!("{BASE}[client]\nmode = \"ramp\"\nramp_s = 60\n");
    let (key, line, message) = refused(&text);
    assert_eq!(
        (key.as_str(), line),
        ("client.mode", line_of(&text, "mode"))
    );
    assert!(message.contains("ramp_to_qps"), "{message}");
    for (bad, key) in [
        ("ramp_to_qps = 0\nramp_s = 60", "client.ramp_to_qps"),
        ("ramp_to_qps = 10\nramp_s = 0", "client.ramp_s"),
        ("ramp_to_qps = 10\nramp_s = 1e9", "client.ramp_s"),
        (
            "ramp_to_qps = 10\nramp_s = 6\nmax_loss_pct = 101",
            "client.max_loss_pct",
        ),
        (
            "ramp_to_qps = 10\nramp_s = 6\nmax_latency_ms = -1",
            "client.max_latency_ms",
        ),
    ] {
        let text = format!("{BASE}[client]\nmode = \"ramp\"\n{bad}\n");
        assert_eq!(refused(&text).0, key, "{bad}");
    }
    let text = format!("{BASE}[client]\nmode = \"steady\"\n");
    assert_eq!(refused(&text).0, "client.mode");
    let text = format!("{BASE}[client]\nqueries_per_connection = 0\n");
    assert_eq!(refused(&text).0, "client.queries_per_connection");
}

#[test]
fn servers_vary_with_their_threads_and_a_kind_that_cannot_is_blamed() {
    let base = "[trace]\nsynth = { workload = \"poisson\", rate = 10, duration_s = 20 }\n\
                [server]\nkind = \"unbound\"\nzones = [\"root.zone\"]\n";
    let plan = parse(&format!(
        "{base}[vary]\nserver = [\"unbound@1\", \"unbound@2\", \"kresd\", \"bind@4\"]\n"
    ))
    .unwrap();
    let runs = plan.runs();
    let got: Vec<(ServerKind, Option<u32>)> = runs
        .iter()
        .map(|r| (r.settings.server.kind, r.settings.server.threads))
        .collect();
    assert_eq!(
        got,
        [
            (ServerKind::Unbound, Some(1)),
            (ServerKind::Unbound, Some(2)),
            (ServerKind::Kresd, None),
            (ServerKind::Bind, Some(4)),
        ]
    );
    // A resolver answering from zones of its own needs no hierarchy.
    assert!(runs[2].id.contains("server=kresd"), "{}", runs[2].id);
    // kresd runs one thread: kresd@2 is blamed where it is written.
    let text = format!("{base}[vary]\nserver = [\"unbound@2\", \"kresd@2\"]\n");
    let (key, line, message) = refused(&text);
    assert_eq!(
        (key.as_str(), line),
        ("vary.server[1]", line_of(&text, "kresd@2"))
    );
    assert!(message.contains("threads must be 1"), "{message}");
    for bad in ["\"unbound@x\"", "\"nosuch\"", "\"unbound@0\"", "3"] {
        let text = format!("{base}[vary]\nserver = [{bad}]\n");
        assert_eq!(refused(&text).0, "vary.server[0]", "{bad}");
    }
    // PowerDNS Recursor does not answer from zones of its own here.
    let text = base.replace("unbound", "pdns-recursor");
    let (key, _, message) = refused(&text);
    assert_eq!(key, "server.zones");
    assert!(message.contains("unbound and kresd do"), "{message}");
}
