//! A run's trace: read or synthesized, mutated as the run says, written once as binary records
//! and shared by every run that asks for the same one.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use ldplayer_mutate::{MutateConfig, Mutator};
use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::open::{open, ReadOptions};
use ldplayer_trace::{Record, Sink, SinkError, Source};

use crate::error::ExperimentError;

/// Where a run's records come from.
#[derive(Debug, Clone)]
pub enum TraceInput {
    /// A trace file of any format `ldplayer` reads.
    File(PathBuf),
    /// The synthesizer.
    Synth(SynthConfig),
}

/// What a prepared trace holds (its form on disk is `ldplayer-study`'s).
pub use ldplayer_study::TraceFacts;

/// Writes the trace of `input`, mutated by each stage of `mutate` in turn, to `out` as binary records, unless `out`
/// is there already from an earlier run (its facts are kept beside it, in `out.json`, written
/// last: a trace without them is made again).
pub fn prepare_trace(
    input: &TraceInput,
    mutate: &[MutateConfig],
    out: &Path,
) -> Result<TraceFacts, ExperimentError> {
    let facts_path = out.with_extension("json");
    if out.exists() {
        if let Ok(text) = std::fs::read(&facts_path) {
            if let Ok(facts) = serde_json::from_slice(&text) {
                return Ok(facts);
            }
        }
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ExperimentError::io(dir, e))?;
    }
    let partial = out.with_extension("partial");
    let file = ldplayer_output::create_direct(&partial)
        .map_err(|e| ExperimentError::io(&partial, e.into()))?;
    let writer =
        BinaryWriter::new(BufWriter::new(file)).map_err(|e| ExperimentError::io(&partial, e))?;
    let mut facts_sink = Facts {
        inner: writer,
        facts: TraceFacts::default(),
    };
    let mut source: Box<dyn Source> = match input {
        TraceInput::File(path) => {
            open(
                path,
                &ReadOptions {
                    dns_ports: vec![53, 853, 443],
                    ..Default::default()
                },
            )
            .map_err(|e| ExperimentError::Trace(format!("{}: {e}", path.display())))?
            .source
        }
        TraceInput::Synth(config) => {
            Box::new(Synth::new(config.clone()).map_err(|e| ExperimentError::Trace(e.to_string()))?)
        }
    };
    {
        // Each stage feeds the next; the last feeds the writer.
        let mut sink: Box<dyn Sink + '_> = Box::new(&mut facts_sink);
        for config in mutate.iter().rev() {
            sink = Box::new(
                Mutator::new(config.clone(), sink)
                    .map_err(|e| ExperimentError::Trace(e.to_string()))?,
            );
        }
        source
            .run(&mut *sink)
            .map_err(|e| ExperimentError::Trace(e.to_string()))?;
    }
    let facts = facts_sink.facts;
    facts_sink
        .inner
        .into_inner()
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
        .and_then(|f| f.sync_all())
        .map_err(|e| ExperimentError::io(&partial, e))?;
    if facts.records == 0 {
        return Err(ExperimentError::Trace(
            "the trace has no records left (after its mutations)".into(),
        ));
    }
    std::fs::rename(&partial, out).map_err(|e| ExperimentError::io(out, e))?;
    let text = serde_json::to_vec_pretty(&facts).unwrap_or_default();
    ldplayer_output::write(&facts_path, text)
        .map_err(|e| ExperimentError::io(&facts_path, e.into()))?;
    Ok(facts)
}

/// Passes records on and notes their count and time span.
struct Facts<S> {
    inner: S,
    facts: TraceFacts,
}

impl<S: Sink> Sink for Facts<S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if self.facts.records == 0 {
            self.facts.first_ns = record.time_ns;
        }
        self.facts.records += 1;
        self.facts.last_ns = self.facts.last_ns.max(record.time_ns);
        self.facts.per_proto[record.proto as usize] += 1;
        self.inner.record(record)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}
