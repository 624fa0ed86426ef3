//! The facts a report shows first about an experiment: plan, versions, machine, runs.

use super::layout::first_seen;
use super::read::{plan_varied, value_label};
use super::ExperimentData;

pub(super) fn header(data: &ExperimentData) -> Vec<(String, String)> {
    let mut facts: Vec<(String, String)> = Vec::new();
    let mut fact = |key: &str, value: String| facts.push((key.to_string(), value));
    fact("plan", data.dir.join("plan.toml").display().to_string());
    let run_table = |name: &str| {
        data.plan
            .as_ref()
            .and_then(|p| p.get("run"))
            .and_then(|r| r.get(name))
            .map(value_label)
    };
    match &data.plan {
        Some(plan) => {
            let varied = plan_varied(plan);
            fact(
                "varied",
                if varied.is_empty() {
                    "nothing".into()
                } else {
                    varied
                        .iter()
                        .map(|(k, v)| format!("{k} = {}", v.join(", ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                },
            );
            fact("repeats", run_table("repeat").unwrap_or_else(|| "1".into()));
        }
        None => fact("varied", data.varied_keys.join(", ")),
    }
    if let Some(run) = data.runs.first() {
        fact("warm-up", format!("{} s", run.warmup_s()));
        let t = &run.record.trace;
        fact(
            "trace",
            format!(
                "{} queries over {:.1} s{}",
                t.records,
                t.duration_s(),
                if data.runs.len() > 1 {
                    " (first run)"
                } else {
                    ""
                }
            ),
        );
    } else if let Some(w) = run_table("warmup_s") {
        fact("warm-up", format!("{w} s"));
    }
    if let Some(env) = &data.environment {
        fact("ldplayer", env.ldplayer.clone());
        fact("kernel", env.kernel.clone());
        fact("CPU", env.cpu.clone());
        fact("cores", env.cores.to_string());
        fact("memory", format!("{} MiB", env.memory_mib));
        fact("host", env.host.clone());
        fact("started", env.started.clone());
    }
    let kinds = first_seen(
        data.runs
            .iter()
            .map(|r| r.record.settings.server.kind.as_str()),
    );
    if !kinds.is_empty() {
        fact("server", kinds.join(", "));
    }
    let versions = first_seen(data.runs.iter().filter_map(|r| {
        let v = r.record.outputs.as_ref()?.server_version();
        (!v.is_empty()).then(|| v.to_string())
    }));
    if !versions.is_empty() {
        fact("server version", versions.join("; "));
    }
    let tcp_clients = first_seen(
        data.runs
            .iter()
            .filter_map(|r| r.record.outputs.as_ref()?.server_tcp_clients),
    );
    if !tcp_clients.is_empty() {
        let list: Vec<String> = tcp_clients.iter().map(u64::to_string).collect();
        fact("server TCP connections allowed", list.join("; "));
    }
    let left_out = data.left_out.len();
    fact(
        "runs",
        if left_out == 0 {
            format!("{} finished", data.runs.len())
        } else {
            format!(
                "{} finished, {left_out} failed or unfinished (see the notes)",
                data.runs.len()
            )
        },
    );
    facts
}
