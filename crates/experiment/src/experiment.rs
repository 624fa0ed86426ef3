//! A whole plan: every run in turn, each in its own folder, the tidy summary rewritten after
//! each, finished runs kept when the plan is interrupted and skipped when it is resumed.
//!
//! The output folder holds
//! * `plan.toml`: the plan as run (with `--set` changes applied);
//! * `environment.json`: ldplayer's version, the kernel, the machine;
//! * `traces/`: the runs' traces, made once for every run that asks for the same one;
//! * `runs/ID/`: one folder per run: `run.json` (its settings, outcome and figures; written
//!   last, so a run without it did not finish), `results.res`, `samples.csv`, `replay.json`,
//!   the sides' logs and the server's files;
//! * `summary.csv`: one row per run and metric.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use crate::error::ExperimentError;
use crate::plan::{Plan, RunSettings, RunSpec};
use crate::prepare::{prepare_trace, TraceFacts, TraceInput};
use crate::runner::{self, RunInputs, RunOutputs};
use crate::side::{ClientSideConfig, ServerSideConfig};

/// How to run a plan.
#[derive(Debug, Clone)]
pub struct Options {
    /// The output folder.
    pub dir: PathBuf,
    /// The executable that runs the sides of each run (normally this program,
    /// `std::env::current_exe()`): the runs start it again in their namespaces with the side's
    /// configuration named in [`SIDE_ENV`](crate::topology::SIDE_ENV), so its `main` must call
    /// [`crate::run_side_if_asked`] first thing and return when that says `true`.
    pub exe: PathBuf,
    /// Skip runs that finished in an earlier invocation with the same output folder.
    pub resume: bool,
    /// Capture both ends of the link with tcpdump in every run (`client.pcap`,
    /// `server.pcap`).
    pub capture: bool,
}

/// What the caller hears while the plan runs (a progress bar, a log).
pub trait Observer {
    /// A run starts; `position` counts from 0 over `total` runs.
    fn run_started(&mut self, spec: &RunSpec, position: usize, total: usize);
    /// Share of the current run's trace replayed.
    fn run_progress(&mut self, share: f64);
    /// A run ended (or was skipped as finished before).
    fn run_ended(&mut self, spec: &RunSpec, record: &RunRecord);
}

/// An observer that hears nothing.
#[derive(Debug, Default)]
pub struct Silent;

impl Observer for Silent {
    fn run_started(&mut self, _: &RunSpec, _: usize, _: usize) {}
    fn run_progress(&mut self, _: f64) {}
    fn run_ended(&mut self, _: &RunSpec, _: &RunRecord) {}
}

pub use ldplayer_study::Status;

/// `run.json`: one run's settings, outcome and headline figures, with the experiment's full
/// settings and outputs (the form on disk is `ldplayer-study`'s [`ldplayer_study::RunRecord`]).
pub type RunRecord = ldplayer_study::RunRecord<RunSettings, RunOutputs>;

/// What a plan left.
#[derive(Debug, Clone, Default)]
pub struct PlanReport {
    /// Every run's record, in plan order.
    pub runs: Vec<RunRecord>,
    /// Whether it was interrupted before its end.
    pub interrupted: bool,
    /// The summary file.
    pub summary: PathBuf,
    /// With `[diff]`: every run's answers against its base run's.
    pub differences: Vec<crate::differences::RunDiff>,
}

/// Runs every run of `plan` (whose text is `plan_text`) into `options.dir`.
pub fn run_plan(
    plan: &Plan,
    plan_text: &str,
    options: &Options,
    interrupted: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<PlanReport, ExperimentError> {
    // The plan's copy is checked before anything is made: it may be the plan being read
    // (`experiment DIR/plan.toml -o DIR`, a resumed study: then it is left as it is).
    let plan_copy = options.dir.join("plan.toml");
    let copied = std::fs::read(&plan_copy).ok().as_deref() == Some(plan_text.as_bytes());
    if !copied {
        ldplayer_output::check(&plan_copy)
            .map_err(|e| ExperimentError::io(&plan_copy, e.into()))?;
    }
    std::fs::create_dir_all(options.dir.join("runs"))
        .map_err(|e| ExperimentError::io(&options.dir, e))?;
    // The sides and the servers are told absolute paths: they do not share our idea of `.`.
    let dir =
        &std::fs::canonicalize(&options.dir).map_err(|e| ExperimentError::io(&options.dir, e))?;
    if !copied {
        write(&dir.join("plan.toml"), plan_text.as_bytes())?;
    }
    let environment = crate::environment::gather();
    write(
        &dir.join("environment.json"),
        &serde_json::to_vec_pretty(&environment).unwrap_or_default(),
    )?;
    let runs = plan.runs();
    check_programs(&runs)?;
    let mut report = PlanReport {
        summary: dir.join("summary.csv"),
        ..PlanReport::default()
    };
    let mut summary_rows = Vec::new();
    for (position, spec) in runs.iter().enumerate() {
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            report.interrupted = true;
            break;
        }
        let run_dir = dir.join("runs").join(&spec.id);
        observer.run_started(spec, position, runs.len());
        if options.resume {
            if let Some(mut done) = finished_record(&run_dir) {
                summary_rows.extend(crate::metrics::summary_rows(spec, &run_dir, &done)?);
                done.status = Status::Skipped;
                observer.run_ended(spec, &done);
                report.runs.push(done);
                continue;
            }
        }
        let outcome = run_one(spec, &run_dir, dir, options, interrupted, observer);
        let record = match outcome {
            Ok(record) => record,
            Err(ExperimentError::Interrupted) => {
                // The interrupted run is left without run.json: it counts as not run.
                report.interrupted = true;
                break;
            }
            Err(e) => {
                let record = RunRecord {
                    id: spec.id.clone(),
                    varied: spec.varied.clone(),
                    status: Status::Failed,
                    error: Some(e.to_string()),
                    settings: spec.settings.clone(),
                    trace_file: PathBuf::new(),
                    trace: TraceFacts::default(),
                    outputs: None,
                    medians: BTreeMap::new(),
                    unsteady: Vec::new(),
                };
                // A failed run's record goes beside its files under another name, so that
                // `--resume` runs it again.
                write(
                    &run_dir.join("failed.json"),
                    &serde_json::to_vec_pretty(&record).unwrap_or_default(),
                )?;
                record
            }
        };
        if record.status == Status::Finished {
            summary_rows.extend(crate::metrics::summary_rows(spec, &run_dir, &record)?);
            crate::metrics::write_summary(&report.summary, plan, &summary_rows)?;
        }
        observer.run_ended(spec, &record);
        report.runs.push(record);
    }
    crate::metrics::write_summary(&report.summary, plan, &summary_rows)?;
    if let Some(d) = &plan.diff {
        report.differences = crate::differences::diff_runs(plan, d, dir, &report.runs)?;
    }
    Ok(report)
}

/// Fails before any run when a server program of the plan is not installed, naming the
/// Debian package that has it.
pub fn check_programs(runs: &[RunSpec]) -> Result<(), ExperimentError> {
    let mut kinds: Vec<ldplayer_servers::ServerKind> =
        runs.iter().map(|r| r.settings.server.kind).collect();
    kinds.sort_by_key(|k| k.name());
    kinds.dedup();
    for kind in kinds {
        kind.find_program()?;
    }
    Ok(())
}

/// A run's record when it finished before.
fn finished_record(run_dir: &Path) -> Option<RunRecord> {
    let text = std::fs::read(run_dir.join("run.json")).ok()?;
    let record: RunRecord = serde_json::from_slice(&text).ok()?;
    (record.status == Status::Finished).then_some(record)
}

fn run_one(
    spec: &RunSpec,
    run_dir: &Path,
    dir: &Path,
    options: &Options,
    interrupted: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<RunRecord, ExperimentError> {
    // A run started again starts clean.
    if run_dir.exists() {
        std::fs::remove_dir_all(run_dir).map_err(|e| ExperimentError::io(run_dir, e))?;
    }
    std::fs::create_dir_all(run_dir).map_err(|e| ExperimentError::io(run_dir, e))?;
    let s = &spec.settings;
    let (trace_path, facts) = trace_for(s, dir)?;
    let mut inputs = inputs_for(spec, run_dir, dir, &trace_path, &facts, options)?;
    if let Some(h) = &s.server.hierarchy {
        let manifest = crate::hierarchy::prepare_hierarchy(h, &dir.join("hierarchies"))?;
        if s.server.kind.is_recursive() {
            inputs.server.manifest = Some(manifest);
        } else {
            // An authoritative server serves the hierarchy's root, as a root server.
            inputs.server.zones = vec![crate::hierarchy::root_zone(&manifest)];
        }
    }
    let outputs = runner::run(&inputs, interrupted, &mut |share| {
        observer.run_progress(share)
    })?;
    let mut record = RunRecord {
        id: spec.id.clone(),
        varied: spec.varied.clone(),
        status: Status::Finished,
        error: None,
        settings: s.clone(),
        trace_file: trace_path.clone(),
        trace: facts,
        outputs: Some(outputs),
        medians: BTreeMap::new(),
        unsteady: Vec::new(),
    };
    let rows = crate::metrics::summary_rows(spec, run_dir, &record)?;
    record.medians = rows
        .iter()
        .map(|r| (r.metric.clone(), r.dist.p50))
        .collect();
    let trend = |metric: &str| {
        record
            .medians
            .get(metric)
            .copied()
            .filter(|t| t.is_finite())
    };
    // A ramp measures a capacity: its load rises throughout, by design, not a steady state.
    record.unsteady = if s.client.ramp.is_some() {
        Vec::new()
    } else {
        crate::summary::steady::unsteady_notes(
            s.holds_connections(),
            s.warmup_s,
            s.closing_idle_timeout_s(),
            &[
                ("connections", trend("trend_tcp_established_pct")),
                ("server memory", trend("trend_server_rss_pct")),
            ],
        )
    };
    // Written last: its presence means the run finished.
    write(
        &run_dir.join("run.json"),
        &serde_json::to_vec_pretty(&record).unwrap_or_default(),
    )?;
    Ok(record)
}

/// The run's trace, made once per distinct source, mutations and seed.
fn trace_for(s: &RunSettings, dir: &Path) -> Result<(PathBuf, TraceFacts), ExperimentError> {
    let input = match s.trace.synth_config() {
        Some(config) => TraceInput::Synth(config),
        None => match &s.trace.source {
            crate::plan::TraceSource::File(path) => TraceInput::File(path.clone()),
            crate::plan::TraceSource::Synth(_) => unreachable!("synth_config covers it"),
        },
    };
    let stages = s.trace.mutate_stages(s.seed);
    let key = format!("{:?}|{:?}", s.trace.source, stages);
    let name = format!("{:016x}.bin", fnv1a(key.as_bytes()));
    let path = dir.join("traces").join(name);
    let facts = prepare_trace(&input, &stages, &path)?;
    Ok((path, facts))
}

/// FNV-1a: a stable name for a trace's recipe (not a security boundary).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn inputs_for(
    spec: &RunSpec,
    run_dir: &Path,
    dir: &Path,
    trace: &Path,
    facts: &TraceFacts,
    options: &Options,
) -> Result<RunInputs, ExperimentError> {
    let s = &spec.settings;
    let kind = s.server.kind;
    let proto = s.trace.mutate.proto.forced();
    let population = s.client.read_population().map_err(ExperimentError::Input)?;
    // What the server must serve: the population's transports, else the (mutated) trace's.
    let transports = match &population {
        Some(p) => p.transports(),
        None => facts.transports(),
    };
    let wants = |p: ldplayer_trace::Proto| transports.contains(&p);
    let (dot, doh, doq) = (
        s.server.tls || wants(ldplayer_trace::Proto::Tls),
        wants(ldplayer_trace::Proto::Https),
        wants(ldplayer_trace::Proto::Quic),
    );
    for (wanted, able, what) in [
        (dot, kind.supports_tls(), "DNS over TLS"),
        (doh, kind.supports_https(), "DNS over HTTPS"),
        (doq, kind.supports_quic(), "DNS over QUIC"),
    ] {
        if wanted && !able {
            return Err(ExperimentError::Input(format!(
                "the run's queries need {what}, and {kind} does not serve it here"
            )));
        }
    }
    let tls_files = if dot || doh || doq {
        Some(ldplayer_servers::make_certificate(
            &dir.join("tls"),
            &[
                crate::topology::SERVER_V4.into(),
                crate::topology::SERVER_V6.into(),
            ],
            &["server.ldplayer.test".to_string()],
        )?)
    } else {
        None
    };
    let mut zones = s.server.zones.clone();
    // An authoritative server given nothing to serve serves the synthetic root of root-like
    // traces (the TLDs they ask for, delegated).
    if zones.is_empty() && s.server.manifest.is_none() && s.server.hierarchy.is_none() {
        let root = dir.join("synthetic-root.zone");
        write(&root, ldplayer_synth::synthetic_root_zone().as_bytes())?;
        zones.push(root);
    }
    let (c2s, s2c) = s.network.link_params();
    let capture = |name: &str| options.capture.then(|| run_dir.join(name));
    Ok(RunInputs {
        dir: run_dir.to_path_buf(),
        exe: options.exe.clone(),
        server: ServerSideConfig {
            tun: String::new(),
            kind,
            zones,
            manifest: s.server.manifest.clone(),
            threads: s.server.threads.map(|t| t as usize),
            idle_timeout_ms: s.server.idle_timeout().as_millis() as u64,
            tls: tls_files.clone(),
            dot,
            doh,
            doq,
            extra: s.server.extra.clone(),
            validation: s.server.validation.clone(),
            resolver: s.server.resolver,
            work_dir: run_dir.join("server"),
            capture: capture("server.pcap"),
        },
        client: ClientSideConfig {
            tun: String::new(),
            trace: trace.to_path_buf(),
            results: PathBuf::new(),
            stats: PathBuf::new(),
            proto: proto.map(|p| p.to_string()),
            population: s.client.population.clone(),
            doh_method: s.client.doh_method,
            stack: s.client.stack,
            timeout_ms: s.client.timeout().as_millis() as u64,
            udp_retries: s.client.udp_retries,
            idle_timeout_ms: s.client.idle_timeout().as_millis() as u64,
            tls_ca: tls_files.map(|t| t.ca),
            tls_resume: s.client.tls_resume,
            tc_retry: s.client.tc_retry,
            max_udp_sockets: s.client.max_udp_sockets,
            queriers: s.client.queriers,
            capture: capture("client.pcap"),
            keep_answers: s.client.keep_answers,
            ramp: s.client.ramp,
            fast: (s.client.mode == crate::plan::ClientMode::Fast)
                .then(|| s.client.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT)),
            queries_per_connection: s.client.queries_per_connection,
            processes: s.client.processes,
        },
        client_to_server: c2s,
        server_to_client: s2c,
        client_delay: s.network.client_rtt.map(|rtt| client_delay(rtt, s.seed)),
        seed: s.seed,
        duration: std::time::Duration::from_secs_f64(s.replay_s(facts)),
        link_timing: ldplayer_link::Timing {
            spin: std::time::Duration::from_secs_f64(s.network.spin_us / 1e6),
        },
        cooldown: s.cooldown(),
    })
}

/// Each client's extra round trip as the link emulator takes it: stable per address and seed.
fn client_delay(rtt: crate::plan::ClientRtt, seed: u64) -> ldplayer_link::AddressDelay {
    ldplayer_link::AddressDelay::new(move |ip| rtt.sample(ip, seed))
}

/// Queries in flight of `mode = "fast"` when the plan does not say: `replay --fast`'s.
const DEFAULT_MAX_IN_FLIGHT: usize = 1000;

fn write(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    ldplayer_output::write(path, bytes).map_err(|e| ExperimentError::io(path, e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_with_a_metric_without_values_reads_back() {
        let plan = Plan::parse(
            "[trace]\nsynth = { workload = \"root\", rate = 10, duration_s = 10 }\n[server]\nkind = \"ldplayer\"\n",
            Path::new("."),
        ).unwrap();
        let spec = &plan.runs()[0];
        let record = RunRecord {
            id: spec.id.clone(),
            varied: Vec::new(),
            status: Status::Finished,
            error: None,
            settings: spec.settings.clone(),
            trace_file: PathBuf::new(),
            trace: TraceFacts::default(),
            outputs: None,
            medians: [
                ("latency_ms".to_string(), 20.5),
                ("x".to_string(), f64::NAN),
            ]
            .into(),
            unsteady: Vec::new(),
        };
        let json = serde_json::to_string(&record).unwrap();
        let back: RunRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back.medians["latency_ms"], 20.5);
        assert!(back.medians["x"].is_nan());
    }

    /// The record as the experiment writes it, read as a report reads it (with
    /// `ldplayer-study`'s views of the settings and outputs): every figure the report takes
    /// from it is the same.
    #[test]
    fn a_report_reads_the_record_the_experiment_writes() {
        let plan = Plan::parse(
            "[trace]\nsynth = { workload = \"root\", rate = 10, duration_s = 10 }\n\
             [server]\nkind = \"bind\"\n[client]\nmode = \"ramp\"\n\
             ramp_to_qps = 100\nramp_s = 30\n[vary]\nproto = [\"tcp\", \"doh\"]\n",
            Path::new("."),
        )
        .unwrap();
        for spec in plan.runs() {
            let record = RunRecord {
                id: spec.id.clone(),
                varied: spec.varied.clone(),
                status: Status::Finished,
                error: None,
                settings: spec.settings.clone(),
                trace_file: PathBuf::from("traces/t.bin"),
                trace: TraceFacts {
                    records: 100,
                    first_ns: 1_000_000_000,
                    last_ns: 11_000_000_000,
                    per_proto: [100, 0, 0, 0, 0],
                },
                outputs: Some(RunOutputs {
                    results: PathBuf::from("results.res"),
                    samples: Vec::new(),
                    replay: crate::client::ReplayReport {
                        start_ns: 42,
                        interrupted: false,
                        engine: serde_json::Value::Null,
                        summary: serde_json::Value::Null,
                        kernel_udp: Default::default(),
                        kernel_tcp: Default::default(),
                    },
                    server_version: "PowerDNS Recursor 5.0 (TCP clients 9)".into(),
                    server_tcp_clients: Some(9),
                    probe_rtt_us: 20_000,
                    probe_queries: 1,
                    link: Default::default(),
                    seconds: 31.5,
                    upstream: None,
                }),
                medians: [("latency_ms".to_string(), 1.5)].into(),
                unsteady: vec!["still drifting".into()],
            };
            let json = serde_json::to_vec(&record).unwrap();
            let read: ldplayer_study::RunRecord = serde_json::from_slice(&json).unwrap();
            let s = &record.settings;
            assert_eq!((&read.id, &read.varied), (&record.id, &record.varied));
            assert_eq!(
                read.settings.trace.mutate.proto,
                s.trace.mutate.proto.as_str()
            );
            assert_eq!(
                read.settings.trace.nonbusy_max_queries,
                s.trace.nonbusy_max_queries
            );
            assert_eq!(read.settings.server.kind, s.server.kind.name());
            assert_eq!(read.settings.warmup_s, s.warmup_s);
            assert_eq!(read.settings.client.ramp, s.client.ramp);
            assert_eq!(
                read.settings.replay_s(&read.trace),
                s.replay_s(&record.trace)
            );
            assert_eq!(read.settings.replay_s(&read.trace), 30.0);
            let (o, r) = (record.outputs.as_ref().unwrap(), read.outputs.unwrap());
            assert_eq!(r.replay.start_ns, o.replay.start_ns);
            assert_eq!(r.server_version(), o.server_version());
            assert_eq!(r.server_tcp_clients, o.server_tcp_clients);
            assert_eq!(r.seconds, o.seconds);
            assert_eq!(read.trace, record.trace);
            assert_eq!(
                (read.medians, read.unsteady),
                (record.medians, record.unsteady)
            );
        }
    }
}
