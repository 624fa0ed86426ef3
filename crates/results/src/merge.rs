//! Merging results files of one trace (shards of one replay, run by several processes or
//! hosts) into one file in trace order.
//!
//! Each file holds its results in completion order, which is trace order give or take the
//! queries in flight. Each input is put back in trace order through a bounded reorder window
//! (a min-heap on [`QueryResult::index`], then [`QueryResult::target`]), and the inputs are then
//! merged by index and target, so memory is `inputs × window` results (and their answers, when
//! the files keep them) whatever the files' sizes. Answers are carried over when the output
//! keeps answers. A result that reaches its input's window
//! after a later one was already written (a query that took longer than the window's worth of
//! answers) is still written, just out of order, and counted in [`MergeReport::late`]; readers
//! of a results file never rely on its order.

use crate::fidelity::MAX_P99_LATE_US;
use crate::file::{ResultsError, ResultsReader, ResultsWriter};
use crate::reader::{Damage, Tail};
use crate::result::{ErrorKind, Outcome, QueryResult};
use crate::run_info::RunInfo;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{Read, Write};

/// The largest timing error (µs) told apart: a day; larger ones count as a day.
const TIMING_MAX_US: u64 = 86_400_000_000;

/// Results each input holds back to restore trace order (64 B each: 4 MiB per input).
pub const MERGE_WINDOW: usize = 65_536;

/// What merging found in one input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputReport {
    /// Results read from it.
    pub results: u64,
    /// What its reader skipped (damaged blocks, a last block cut short).
    pub damage: Damage,
    /// True when the file ends in a block cut short: its replay was killed or is still running.
    pub cut_short: bool,
    /// What its header says about its run (shard, start, clock).
    pub run_info: Option<RunInfo>,
    /// The median of its queries' absolute timing errors (µs), over those sent on a schedule.
    pub timing_error_p50_us: Option<f64>,
    /// The 99th percentile of the same.
    pub timing_error_p99_us: Option<f64>,
    /// Its queries never sent because they were due before its replay began (a shard started
    /// after the shared start: [`ErrorKind::LateStart`]).
    pub late_start: u64,
    /// How long after the shared start ([`RunInfo::start_ns`]) the last of those was due, in
    /// ns: how late it began, at least.
    pub began_late_ns: Option<i64>,
}

impl InputReport {
    /// Whether this input kept the shared schedule badly: it began after the shared start (some
    /// of its queries are [`ErrorKind::LateStart`]), or its timing error p99 is over
    /// [`MAX_P99_LATE_US`]. A replay that sent as fast as answers came has no schedule to keep.
    pub fn late(&self) -> bool {
        let closed_loop = self.run_info.as_ref().and_then(|r| r.closed_loop) == Some(true);
        self.late_start > 0
            || (!closed_loop
                && self
                    .timing_error_p99_us
                    .is_some_and(|p99| p99 > MAX_P99_LATE_US))
    }

    /// Whether this input's replay did not finish (it was killed or is still running): its
    /// file was cut short, or its run info says it is incomplete. A merge that holds one is
    /// incomplete too.
    pub fn unfinished(&self) -> bool {
        self.cut_short || self.run_info.as_ref().and_then(|r| r.complete) == Some(false)
    }
}

/// What a merge wrote and found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeReport {
    /// Every input, in the order given.
    pub inputs: Vec<InputReport>,
    /// Results written.
    pub merged: u64,
    /// Results whose trace index (and target) an earlier input already had, dropped: the
    /// inputs overlap (shards of different splits, or one file given twice).
    pub duplicates: u64,
    /// Results written after a result of a later trace index (too far out of order for the
    /// window).
    pub late: u64,
}

/// One input put back in trace order through a reorder window.
struct Reordered<R: Read> {
    reader: ResultsReader<R>,
    /// Absolute timing errors, µs.
    timing: Histogram<u64>,
    /// Results that are [`ErrorKind::LateStart`].
    late_start: u64,
    /// The latest intended time of those.
    late_start_until_ns: Option<i64>,
    held: BinaryHeap<Reverse<Held>>,
    window: usize,
    done: bool,
}

/// A held result, ordered by trace index and target (then by arrival, to keep the sort
/// stable).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    index: u64,
    target: u16,
    arrival: u64,
    result: Key,
}

/// The result itself, with its answer when the file keeps it; excluded from the order.
#[derive(Debug)]
struct Key(QueryResult, Option<Box<[u8]>>);

impl PartialEq for Key {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<R: Read> Reordered<R> {
    /// The input's next result in (windowed) trace order, with its answer if kept.
    fn next(&mut self) -> Result<Option<Key>, ResultsError> {
        while !self.done && self.held.len() < self.window {
            match self.reader.next_with_answer()? {
                Some((r, answer)) => {
                    let answer = answer.map(Box::from);
                    if r.outcome == Outcome::Error(ErrorKind::LateStart) {
                        self.late_start += 1;
                        self.late_start_until_ns =
                            self.late_start_until_ns.max(Some(r.intended_ns));
                    }
                    if r.intended_ns != 0 {
                        if let Some(e) = r.timing_error_ns() {
                            self.timing.saturating_record(e.unsigned_abs() / 1_000);
                        }
                    }
                    let arrival = self.reader.results_read();
                    self.held.push(Reverse(Held {
                        index: r.index,
                        target: r.target,
                        arrival,
                        result: Key(r, answer),
                    }));
                }
                None => self.done = true,
            }
        }
        Ok(self.held.pop().map(|Reverse(h)| h.result))
    }

    fn report(&self) -> InputReport {
        InputReport {
            results: self.reader.results_read(),
            damage: self.reader.damage(),
            cut_short: self.reader.tail() == Tail::Truncated,
            run_info: self.reader.run_info().cloned(),
            timing_error_p50_us: (!self.timing.is_empty())
                .then(|| self.timing.value_at_quantile(0.5) as f64),
            timing_error_p99_us: (!self.timing.is_empty())
                .then(|| self.timing.value_at_quantile(0.99) as f64),
            late_start: self.late_start,
            began_late_ns: self
                .reader
                .run_info()
                .and_then(|i| i.start_ns)
                .zip(self.late_start_until_ns)
                .map(|(start, until)| until.saturating_sub(start).max(0)),
        }
    }
}

/// An input's next result: its (index, target), the input, the result.
type Head = ((u64, u16), usize, Key);

/// What the merge of `inputs` says about its run while it is written (`complete` false until
/// [`crate::mark_complete`]): the parts every input agrees on. The merged run kept a schedule
/// or ran closed loop when its shards all say so; it keeps answers when every input does and
/// names the targets they all name; the shards of one ramp share its spec and start, so the
/// merged file keeps them and its summary and report judge the whole ramp.
pub fn merged_run_info<R: Read>(inputs: &[ResultsReader<R>]) -> RunInfo {
    /// The value every input gives, if they all give the same one.
    fn shared<T: PartialEq + Clone>(mut values: impl Iterator<Item = Option<T>>) -> Option<T> {
        let first = values.next()??;
        values.all(|v| v.as_ref() == Some(&first)).then_some(first)
    }
    let infos = || inputs.iter().map(ResultsReader::run_info);
    let ramp = shared(infos().map(|i| i.map(|i| (i.ramp, i.start_ns))))
        .filter(|(ramp, _)| ramp.is_some())
        .unwrap_or_default();
    RunInfo {
        complete: Some(false),
        closed_loop: shared(infos().map(|i| i.and_then(|i| i.closed_loop))),
        answers: inputs
            .iter()
            .all(ResultsReader::keeps_answers)
            .then_some(true),
        targets: shared(infos().map(|i| i.and_then(|i| i.targets.clone()))),
        ramp: ramp.0,
        start_ns: ramp.1,
        ..RunInfo::default()
    }
}

/// Merges `inputs` into `out` in trace order, holding back at most `window` results per input
/// ([`MERGE_WINDOW`] is a good default). The caller finishes `out`.
pub fn merge<R: Read, W: Write>(
    inputs: Vec<ResultsReader<R>>,
    out: &mut ResultsWriter<W>,
    window: usize,
) -> Result<MergeReport, ResultsError> {
    let window = window.max(1);
    let mut inputs: Vec<Reordered<R>> = inputs
        .into_iter()
        .map(|reader| Reordered {
            reader,
            // Bounds given: `Histogram::new` tracks values up to 2 and clamps the rest to it
            // when recording with saturation, so a shard seconds late read as 2 µs.
            timing: Histogram::new_with_bounds(1, TIMING_MAX_US, 3).expect("valid bounds"),
            late_start: 0,
            late_start_until_ns: None,
            held: BinaryHeap::new(),
            window,
            done: false,
        })
        .collect();
    // The head of every input, smallest (index, target) first (ties: the earlier input).
    let mut heads: BinaryHeap<Reverse<Head>> = BinaryHeap::new();
    for (i, input) in inputs.iter_mut().enumerate() {
        if let Some(k) = input.next()? {
            heads.push(Reverse(((k.0.index, k.0.target), i, k)));
        }
    }
    let (mut merged, mut duplicates, mut late) = (0, 0, 0);
    let mut last: Option<(u64, u16)> = None;
    // Keys written at or after `last` that could repeat: only the last one can, because each
    // input yields its keys in order (late ones aside).
    while let Some(Reverse((key, i, Key(r, answer)))) = heads.pop() {
        if last == Some(key) {
            duplicates += 1;
        } else {
            if last.is_some_and(|l| key < l) {
                late += 1;
            }
            match &answer {
                Some(a) => out.write_with_answer(&r, a)?,
                None => out.write(&r)?,
            }
            merged += 1;
            last = Some(last.map_or(key, |l| l.max(key)));
        }
        if let Some(next) = inputs[i].next()? {
            heads.push(Reverse(((next.0.index, next.0.target), i, next)));
        }
    }
    Ok(MergeReport {
        inputs: inputs.iter().map(Reordered::report).collect(),
        merged,
        duplicates,
        late,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Outcome;
    use ldplayer_trace::Proto;

    fn result(index: u64) -> QueryResult {
        QueryResult {
            index,
            trace_ns: index as i64 * 1_000,
            intended_ns: 1,
            sent_ns: 2,
            received_ns: 3,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode(0),
            response_len: 40,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        }
    }

    fn file(indexes: &[u64]) -> Vec<u8> {
        let mut w = ResultsWriter::new(Vec::new()).unwrap();
        for &i in indexes {
            w.write(&result(i)).unwrap();
        }
        w.into_inner().unwrap()
    }

    fn run(files: &[Vec<u8>], window: usize) -> (Vec<u64>, MergeReport) {
        let readers = files
            .iter()
            .map(|f| ResultsReader::new(&f[..]).unwrap())
            .collect();
        let mut out = ResultsWriter::new(Vec::new()).unwrap();
        let report = merge(readers, &mut out, window).unwrap();
        let bytes = out.into_inner().unwrap();
        let indexes = crate::read_all(&bytes[..])
            .unwrap()
            .into_iter()
            .map(|r| r.index)
            .collect();
        (indexes, report)
    }

    #[test]
    fn shards_in_completion_order_merge_into_trace_order() {
        // Three shards, each slightly out of order as answers come back.
        let a = file(&[0, 3, 9, 6, 12]);
        let b = file(&[4, 1, 7, 10, 13]);
        let c = file(&[2, 5, 11, 8, 14]);
        let (indexes, report) = run(&[a, b, c], 4);
        assert_eq!(indexes, (0..15).collect::<Vec<_>>());
        assert_eq!(report.merged, 15);
        assert_eq!((report.duplicates, report.late), (0, 0));
        assert!(report.inputs.iter().all(|i| i.results == 5 && !i.cut_short));
    }

    #[test]
    fn each_input_says_its_shard_and_timing() {
        let info = RunInfo {
            shard: Some(crate::ShardId { index: 1, count: 2 }),
            start_ns: Some(5),
            clock: None,
            host: None,
            complete: None,
            closed_loop: None,
            answers: None,
            targets: None,
            ramp: None,
        };
        let mut w = ResultsWriter::with_run_info(Vec::new(), &info).unwrap();
        for i in [1, 3] {
            let mut r = result(i);
            r.intended_ns = 1_000_000;
            r.sent_ns = 1_000_000 + 250_000 * i as i64;
            w.write(&r).unwrap();
        }
        let a = w.into_inner().unwrap();
        let (indexes, report) = run(&[file(&[0, 2]), a], 8);
        assert_eq!(indexes, vec![0, 1, 2, 3]);
        assert_eq!(report.inputs[0].run_info, None);
        assert_eq!(report.inputs[0].timing_error_p50_us, Some(0.0));
        assert_eq!(report.inputs[1].run_info, Some(info));
        let p50 = report.inputs[1].timing_error_p50_us.unwrap();
        assert!((249.0..=251.0).contains(&p50), "{p50}");
    }

    #[test]
    fn a_shard_that_began_late_or_sent_late_is_late() {
        let on_time = file(&[0, 1]);
        let mut w = ResultsWriter::new(Vec::new()).unwrap();
        let mut skipped = result(2);
        skipped.sent_ns = 0;
        skipped.outcome = Outcome::Error(ErrorKind::LateStart);
        w.write(&skipped).unwrap();
        w.write(&result(3)).unwrap();
        let began_late = w.into_inner().unwrap();
        let mut w = ResultsWriter::new(Vec::new()).unwrap();
        for i in [4, 5] {
            let mut r = result(i);
            r.intended_ns = 1_000_000_000;
            r.sent_ns = 1_000_000_000 + 3_800_000_000;
            w.write(&r).unwrap();
        }
        let sent_late = w.into_inner().unwrap();
        let (_, report) = run(&[on_time, began_late, sent_late], 8);
        let late: Vec<bool> = report.inputs.iter().map(InputReport::late).collect();
        assert_eq!(late, [false, true, true], "{report:?}");
        assert_eq!(report.inputs[1].late_start, 1);
        let p99 = report.inputs[2].timing_error_p99_us.unwrap();
        assert!((3.79e6..=3.81e6).contains(&p99), "{p99}");
    }

    #[test]
    fn overlapping_inputs_keep_one_copy_and_say_so() {
        let a = file(&[0, 1, 2]);
        let (indexes, report) = run(&[a.clone(), a], 8);
        assert_eq!(indexes, vec![0, 1, 2]);
        assert_eq!(report.duplicates, 3);
    }

    #[test]
    fn a_result_beyond_the_window_is_kept_and_counted_late() {
        let a = file(&[1, 2, 3, 4, 0]);
        let (indexes, report) = run(&[a], 2);
        assert_eq!(indexes.len(), 5);
        assert_eq!(report.late, 1);
        let mut sorted = indexes.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_shard_cut_short_gives_what_it_has() {
        let mut a = file(&[0, 2, 4]);
        let b = file(&[1, 3, 5]);
        let mut more = ResultsWriter::new(Vec::new()).unwrap();
        for i in [6, 8] {
            more.write(&result(i)).unwrap();
        }
        let tail = more.into_inner().unwrap();
        // A second block whose end was never written (the process was killed).
        let block = &tail[crate::file::FILE_HEADER_LEN..];
        a.extend_from_slice(&block[..block.len() - 10]);
        let (indexes, report) = run(&[a, b], 16);
        assert_eq!(indexes, vec![0, 1, 2, 3, 4, 5]);
        assert!(report.inputs[0].cut_short);
        assert_eq!(report.inputs[0].damage.results_lost, 2);
        assert!(!report.inputs[1].cut_short);
    }

    #[test]
    fn the_merged_run_keeps_what_every_input_agrees_on() {
        let with = |info: &RunInfo| {
            let w = ResultsWriter::with_run_info(Vec::new(), info).unwrap();
            w.into_inner().unwrap()
        };
        let shard = |closed_loop, targets: &[&str]| RunInfo {
            closed_loop: Some(closed_loop),
            targets: Some(targets.iter().map(|t| t.to_string()).collect()),
            start_ns: Some(7),
            ..RunInfo::default()
        };
        let merged = |files: &[Vec<u8>]| {
            let readers: Vec<_> = files
                .iter()
                .map(|f| ResultsReader::new(&f[..]).unwrap())
                .collect();
            merged_run_info(&readers)
        };
        let agreed = merged(&[
            with(&shard(true, &["a", "b"])),
            with(&shard(true, &["a", "b"])),
        ]);
        assert_eq!(agreed.complete, Some(false), "complete only once marked");
        assert_eq!(agreed.closed_loop, Some(true));
        assert_eq!(agreed.targets, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(agreed.start_ns, None, "a start is kept only with a ramp");
        let split = merged(&[with(&shard(true, &["a"])), with(&shard(false, &["b"]))]);
        assert_eq!((split.closed_loop, split.targets), (None, None));
        let one_silent = merged(&[with(&shard(true, &["a"])), file(&[1])]);
        assert_eq!((one_silent.closed_loop, one_silent.targets), (None, None));
    }
}
