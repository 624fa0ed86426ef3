//! `diff --reask N`: the differing queries sent N more times to every target, through the
//! replay engine (each target over the transport its first answer came by), and each
//! difference judged reproducible or not ([`ldplayer_diff::Differ::reassess`]).

use super::diff::DiffArgs;
use crate::args::ReadArgs;
use crate::io::open_input;
use crate::progress::Progress;
use anyhow::{bail, Context, Result};
use ldplayer_diff::{DiffRun, Field, ReaskReport};
use ldplayer_replay::{Replay, ReplayConfig, Timing, TlsConfig};
use ldplayer_results::{QueryResult, ResultSink};
use ldplayer_trace::{Proto, Record, RecordBuf, Sink, SinkError};
use std::collections::HashMap;
use std::time::Duration;

/// Queries re-asked in flight at once, per target.
const IN_FLIGHT: usize = 64;

/// The records of the trace at some indexes, counted as the replay counts them (every record
/// the reader yields).
struct Pick<'a> {
    wanted: &'a HashMap<u64, usize>,
    found: Vec<Option<RecordBuf>>,
    index: u64,
    left: usize,
}

impl Sink for Pick<'_> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        if let Some(&at) = self.wanted.get(&self.index) {
            self.found[at] = Some(r.to_owned_record());
            self.left -= 1;
        }
        self.index += 1;
        if self.left == 0 {
            return Err(SinkError::Stopped);
        }
        Ok(())
    }
}

/// Each query's answer, by its position among the queries fed.
struct Collect(Vec<Option<Vec<u8>>>);

impl ResultSink for Collect {
    fn result(&mut self, _: &QueryResult) -> std::io::Result<()> {
        Ok(())
    }

    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> std::io::Result<()> {
        if let Some(slot) = self.0.get_mut(r.index as usize) {
            *slot = Some(answer.to_vec());
        }
        Ok(())
    }
}

/// Re-asks the differing queries of `run` `rounds` times; what it found, with the differences
/// that did not reproduce by field.
pub fn reask(run: &mut DiffRun, rounds: u32, args: &DiffArgs) -> Result<(ReaskReport, Vec<u64>)> {
    let trace = args
        .trace
        .as_deref()
        .context("--reask needs --trace, the trace that was replayed")?;
    let (differing, not_asked) = run.differ.differing();
    let differing = differing.to_vec();
    let wanted: HashMap<u64, usize> = differing
        .iter()
        .enumerate()
        .map(|(i, d)| (d.index, i))
        .collect();
    let mut pick = Pick {
        wanted: &wanted,
        found: vec![None; differing.len()],
        index: 0,
        left: differing.len(),
    };
    if !differing.is_empty() {
        let read = ReadArgs::every_message(args.dns_ports.clone());
        let mut input = open_input(trace, &read, &Progress::new(true))?;
        match input.source.run(&mut pick) {
            Ok(()) | Err(ldplayer_trace::TraceError::Sink(SinkError::Stopped)) => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", trace.display())),
        }
    }
    let queries: Vec<RecordBuf> = pick
        .found
        .into_iter()
        .zip(&differing)
        .map(|(r, d)| {
            r.with_context(|| {
                format!(
                    "{} has no record {}: not the trace that was replayed",
                    trace.display(),
                    d.index
                )
            })
        })
        .collect::<Result<_>>()?;
    for (q, d) in queries.iter().zip(&differing) {
        let asked = ldplayer_diff::present::question_of(&q.wire);
        let answered = d
            .answers
            .iter()
            .flatten()
            .find_map(|a| ldplayer_diff::present::question_of(a));
        if let (Some(asked), Some(answered)) = (asked, answered) {
            if !asked.0.eq_ignore_ascii_case(&answered.0) || asked.1 != answered.1 {
                bail!(
                    "record {} of {} asks {} {}, and its answers are for {} {}: not the trace \
                     that was replayed",
                    d.index,
                    trace.display(),
                    asked.0,
                    asked.1,
                    answered.0,
                    answered.1
                );
            }
        }
    }
    let targets = run.targets.clone();
    // answers[r][q][t]
    let mut answers = vec![vec![vec![None; targets.len()]; queries.len()]; rounds as usize];
    let taking_part: Vec<usize> = std::iter::once(run.differ.tested())
        .chain(run.differ.references().iter().copied())
        .collect();
    for &t in &taking_part {
        let target = &targets[t];
        let Some(server) = &target.server else {
            bail!(
                "--reask: {} does not name the server of its target {} (written by an older \
                 ldplayer): replay again to re-ask",
                target.file.display(),
                target.file_target
            );
        };
        for round in answers.iter_mut() {
            let got = ask(server, t, &queries, &differing, args)?;
            for (q, a) in got.into_iter().enumerate() {
                round[q][t] = a;
            }
        }
    }
    let mut report = ReaskReport {
        rounds,
        asked: differing.len() as u64,
        not_asked,
        ..ReaskReport::default()
    };
    let mut by_field = vec![0u64; Field::ALL.len()];
    for (q, d) in differing.iter().enumerate() {
        let rounds: Vec<Vec<Option<Vec<u8>>>> =
            answers.iter().map(|round| round[q].clone()).collect();
        if run.differ.reassess(d, &rounds) {
            report.reproducible += 1;
        } else {
            report.not_reproducible += 1;
            for f in d.fields() {
                by_field[f.index()] += 1;
            }
        }
    }
    Ok((report, by_field))
}

/// Sends `queries` once to `server` (target `t`, each query over the transport target `t`
/// answered it by), as fast as it answers; each query's answer.
fn ask(
    server: &str,
    t: usize,
    queries: &[RecordBuf],
    differing: &[ldplayer_diff::Differing],
    args: &DiffArgs,
) -> Result<Vec<Option<Vec<u8>>>> {
    let proto = differing
        .first()
        .and_then(|d| d.protos.get(t).copied())
        .unwrap_or(Proto::Udp);
    let default_port = match proto {
        Proto::Tls | Proto::Quic => 853,
        Proto::Https => 443,
        _ => 53,
    };
    let target = super::replay_config::parse_server(server, default_port)?;
    let mut config = ReplayConfig::new(target.addr);
    config.timing = Timing::Fast {
        max_in_flight: IN_FLIGHT,
    };
    config.queriers = 1;
    config.keep_answers = true;
    config.timeout = Duration::try_from_secs_f64(args.timeout)
        .map_err(|_| anyhow::anyhow!("--timeout must be a number of seconds"))?;
    config.tls = TlsConfig {
        ca_file: args.tls_ca.clone(),
        insecure: args.tls_insecure,
        server_name: target.name,
        ..TlsConfig::default()
    };
    let replay = Replay::new(config).context("re-asking")?;
    let mut running = replay
        .start(Collect(vec![None; queries.len()]))
        .context("re-asking")?;
    for (q, d) in queries.iter().zip(differing) {
        let mut record = q.clone();
        record.proto = d.protos.get(t).copied().unwrap_or(Proto::Udp);
        running
            .record(&record.as_record())
            .map_err(|e| anyhow::anyhow!("re-asking: {e}"))?;
    }
    Sink::finish(&mut running).map_err(|e| anyhow::anyhow!("re-asking: {e}"))?;
    let done = running.finish().context("re-asking")?;
    Ok(done.results.0)
}
