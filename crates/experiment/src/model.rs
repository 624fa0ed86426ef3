//! The connections model beside the experiment (paper §5.2): from a trace alone, how many
//! connections a server with idle timeout T would hold open at each second, if each client
//! kept one connection and the server closed it T after the client's last query. And which
//! queries come from non-busy clients (fewer than some number of queries, §5.3).
//!
//! A client counts as open at second `s` (whole seconds since the trace's first record) when
//! one of its queries was sent at a time `t` with `t <= s < t + T`. Clients are the queries'
//! source addresses; responses in the trace are left out, as the replay leaves them out.
//! Memory is one entry per client plus one counter per second and timeout: each query either
//! extends its client's open stretch or closes it and opens a new one, and the stretches are
//! added up per second at the end. A close past the trace's last second is not kept, so a long
//! timeout costs no memory.

use ldplayer_results::join::is_response;
use ldplayer_trace::open::{open, Notes, OpenError, ReadOptions};
use ldplayer_trace::{Record, Sink, SinkError, TraceError};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

const NS_PER_S: i64 = 1_000_000_000;

/// Why a trace could not be modelled.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The trace could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Reading the trace failed.
    #[error("reading {}", .path.display())]
    Read {
        /// The trace.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: TraceError,
    },
}

/// Connections a server would hold open each second, per idle timeout, and the queries of each
/// client, from one trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionModel {
    start_ns: Option<i64>,
    series: Vec<(Duration, Vec<u64>)>,
    client_queries: HashMap<IpAddr, u64>,
    queries: u64,
    records: u64,
}

impl ConnectionModel {
    /// Time of the trace's first record (the replay's start), ns since the epoch; `None` for an
    /// empty trace.
    pub fn start_ns(&self) -> Option<i64> {
        self.start_ns
    }

    /// Length of each series: the whole seconds from the first record to the last query,
    /// both included.
    pub fn seconds(&self) -> usize {
        self.series.first().map_or(0, |(_, s)| s.len())
    }

    /// The idle timeouts modelled, in the order asked.
    pub fn timeouts(&self) -> impl Iterator<Item = Duration> + '_ {
        self.series.iter().map(|(t, _)| *t)
    }

    /// Open connections at each second for idle timeout `timeout`, if it was modelled.
    pub fn open(&self, timeout: Duration) -> Option<&[u64]> {
        self.series
            .iter()
            .find(|(t, _)| *t == timeout)
            .map(|(_, s)| s.as_slice())
    }

    /// Distinct clients (query source addresses).
    pub fn clients(&self) -> usize {
        self.client_queries.len()
    }

    /// Queries in the trace (records that are not responses).
    pub fn queries(&self) -> u64 {
        self.queries
    }

    /// Records in the trace, responses included: one more than the last result index a replay
    /// of it can have.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Queries of each client.
    pub fn client_queries(&self) -> &HashMap<IpAddr, u64> {
        &self.client_queries
    }

    /// The clients with fewer than `n` queries: the non-busy ones for `n` = 250.
    pub fn clients_with_fewer_than(&self, n: u64) -> HashSet<IpAddr> {
        self.client_queries
            .iter()
            .filter(|(_, &q)| q < n)
            .map(|(c, _)| *c)
            .collect()
    }

    /// The records (by index, as results number them) that are queries of clients with fewer
    /// than `n` queries, reading `trace` (the one this model was made from) again.
    pub fn nonbusy_queries(
        &self,
        trace: &Path,
        options: &ReadOptions,
        n: u64,
    ) -> Result<IndexSet, ModelError> {
        let mut sink = NonBusySink {
            counts: &self.client_queries,
            n,
            index: 0,
            set: IndexSet::default(),
        };
        run(trace, options, &mut sink)?;
        Ok(sink.set)
    }
}

/// A set of record indices, one bit each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexSet {
    bits: Vec<u64>,
    len: u64,
}

impl IndexSet {
    /// Adds `index`.
    pub fn insert(&mut self, index: u64) {
        let word = (index / 64) as usize;
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let bit = 1u64 << (index % 64);
        if self.bits[word] & bit == 0 {
            self.bits[word] |= bit;
            self.len += 1;
        }
    }

    /// Whether `index` is in the set.
    pub fn contains(&self, index: u64) -> bool {
        self.bits
            .get((index / 64) as usize)
            .is_some_and(|w| w & (1u64 << (index % 64)) != 0)
    }

    /// Indices in the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The connections model of the trace at `trace` for each of `timeouts`, read with the
/// default options (DNS on port 53, malformed messages kept, as `replay` reads by default).
pub fn connection_model(
    trace: &Path,
    timeouts: &[Duration],
) -> Result<ConnectionModel, ModelError> {
    connection_model_with(trace, timeouts, &read_options())
}

/// [`connection_model`] reading the trace with `options` (those the replay used, so that
/// record indices agree).
pub fn connection_model_with(
    trace: &Path,
    timeouts: &[Duration],
    options: &ReadOptions,
) -> Result<ConnectionModel, ModelError> {
    let mut sink = ModelSink::new(timeouts);
    run(trace, options, &mut sink)?;
    Ok(sink.finish_model())
}

/// Seconds from the first to the last record of the trace at `trace` (0 for fewer than two).
pub fn trace_duration_s(trace: &Path) -> Result<f64, ModelError> {
    struct Span(Option<(i64, i64)>);
    impl Sink for Span {
        fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
            let (lo, hi) = self.0.get_or_insert((r.time_ns, r.time_ns));
            *lo = (*lo).min(r.time_ns);
            *hi = (*hi).max(r.time_ns);
            Ok(())
        }
    }
    let mut span = Span(None);
    run(trace, &read_options(), &mut span)?;
    Ok(span.0.map_or(0.0, |(lo, hi)| (hi - lo) as f64 / 1e9))
}

/// Default reading options with the reader's notes dropped (the replay reports them).
/// How the model reads a trace: as the replay does (DNS on port 53, malformed messages
/// kept), quietly, so that record indices agree with the results'.
pub fn read_options() -> ReadOptions {
    ReadOptions {
        notes: Notes::ignore(),
        ..ReadOptions::default()
    }
}

fn run(trace: &Path, options: &ReadOptions, sink: &mut dyn Sink) -> Result<(), ModelError> {
    let mut input = open(trace, options)?;
    input.source.run(sink).map_err(|source| ModelError::Read {
        path: trace.to_path_buf(),
        source,
    })
}

/// Builds the model record by record.
struct ModelSink {
    timeouts: Vec<(Duration, i64)>,
    /// Per timeout: connections opened minus closed at each second.
    diffs: Vec<Vec<i64>>,
    /// Per client: time of its last query (ns from the start) and its queries.
    clients: HashMap<IpAddr, (i64, u64)>,
    start_ns: Option<i64>,
    last_query: i64,
    queries: u64,
    records: u64,
}

impl ModelSink {
    fn new(timeouts: &[Duration]) -> Self {
        ModelSink {
            timeouts: timeouts
                .iter()
                .map(|t| (*t, i64::try_from(t.as_nanos()).unwrap_or(i64::MAX)))
                .collect(),
            diffs: vec![Vec::new(); timeouts.len()],
            clients: HashMap::new(),
            start_ns: None,
            last_query: 0,
            queries: 0,
            records: 0,
        }
    }

    /// Adds `delta` at the first whole second at or after `at_ns`.
    fn add(diff: &mut Vec<i64>, at_ns: i64, delta: i64) {
        let second = if at_ns <= 0 {
            0
        } else {
            (at_ns / NS_PER_S + i64::from(at_ns % NS_PER_S != 0)) as usize
        };
        if second >= diff.len() {
            diff.resize(second + 1, 0);
        }
        diff[second] += delta;
    }

    fn finish_model(mut self) -> ConnectionModel {
        let seconds = if self.queries == 0 {
            0
        } else {
            (self.last_query / NS_PER_S) as usize + 1
        };
        // The last closes: only those within the trace's seconds count (memory follows the
        // trace's length, not the timeout's).
        for &(last, _) in self.clients.values() {
            for (diff, &(_, t)) in self.diffs.iter_mut().zip(&self.timeouts) {
                let close = last.saturating_add(t);
                if close / NS_PER_S < seconds as i64 {
                    Self::add(diff, close, -1);
                }
            }
        }
        let series = self
            .timeouts
            .iter()
            .zip(&self.diffs)
            .map(|(&(timeout, _), diff)| {
                let mut open = 0i64;
                let counts = (0..seconds)
                    .map(|s| {
                        open += diff.get(s).copied().unwrap_or(0);
                        open.max(0) as u64
                    })
                    .collect();
                (timeout, counts)
            })
            .collect();
        ConnectionModel {
            start_ns: self.start_ns,
            series,
            client_queries: self.clients.into_iter().map(|(c, (_, n))| (c, n)).collect(),
            queries: self.queries,
            records: self.records,
        }
    }
}

impl Sink for ModelSink {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        self.records += 1;
        let start = *self.start_ns.get_or_insert(r.time_ns);
        if is_response(r.wire) {
            return Ok(());
        }
        self.queries += 1;
        let at = r.time_ns.saturating_sub(start).max(0);
        self.last_query = self.last_query.max(at);
        match self.clients.get_mut(&r.src.ip()) {
            None => {
                for diff in &mut self.diffs {
                    Self::add(diff, at, 1);
                }
                self.clients.insert(r.src.ip(), (at, 1));
            }
            Some((last, n)) => {
                let gap = (at - *last).max(0);
                for (diff, &(_, t)) in self.diffs.iter_mut().zip(&self.timeouts) {
                    if gap >= t {
                        Self::add(diff, last.saturating_add(t), -1);
                        Self::add(diff, at, 1);
                    }
                }
                *last = (*last).max(at);
                *n += 1;
            }
        }
        Ok(())
    }
}

/// Marks the queries of clients with fewer than `n` queries.
struct NonBusySink<'a> {
    counts: &'a HashMap<IpAddr, u64>,
    n: u64,
    /// Index of the next record.
    index: u64,
    set: IndexSet,
}

impl Sink for NonBusySink<'_> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        let index = self.index;
        self.index += 1;
        if !is_response(r.wire) && self.counts.get(&r.src.ip()).is_some_and(|&q| q < self.n) {
            self.set.insert(index);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_trace::binary::BinaryWriter;
    use ldplayer_trace::Proto;
    use proptest::prelude::*;
    use std::net::SocketAddr;

    /// Time of the first record of the test traces, ns.
    const T0: i64 = 1_700_000_000 * NS_PER_S;

    /// A query (or, with `response`, a response) for `example.`.
    fn message(id: u16, response: bool) -> Vec<u8> {
        let flags: u16 = if response { 0x8180 } else { 0x0100 };
        let mut m = Vec::new();
        for x in [id, flags, 1, 0, 0, 0] {
            m.extend_from_slice(&x.to_be_bytes());
        }
        m.extend_from_slice(b"\x07example\x00\x00\x01\x00\x01");
        m
    }

    /// Writes a binary trace of (seconds after T0, client number, is a response) to `path`.
    /// Client `c` is 10.0.0.c; responses come from the server to client `c`.
    fn write_trace(path: &Path, records: &[(f64, u8, bool)]) {
        let server: SocketAddr = "192.0.2.53:53".parse().unwrap();
        let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        let mut w = BinaryWriter::new(file).unwrap();
        for (i, &(t, c, response)) in records.iter().enumerate() {
            let client: SocketAddr = format!("10.0.0.{c}:5300").parse().unwrap();
            let (src, dst) = if response {
                (server, client)
            } else {
                (client, server)
            };
            let wire = message(i as u16, response);
            w.write(&Record {
                time_ns: T0 + (t * 1e9).round() as i64,
                src,
                dst,
                proto: Proto::Udp,
                conn: 0,
                wire: &wire,
            })
            .unwrap();
        }
        w.into_inner().unwrap();
    }

    fn ip(c: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, c])
    }

    #[test]
    fn a_small_trace_gives_the_counts_worked_out_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        // Client 1 at 0, 1.5 and 10 s; client 2 at 2 s; a response to client 1 at 3 s.
        write_trace(
            &path,
            &[
                (0.0, 1, false),
                (1.5, 1, false),
                (2.0, 2, false),
                (3.0, 1, true),
                (10.0, 1, false),
            ],
        );
        let secs = |s: u64| Duration::from_secs(s);
        let m = connection_model(&path, &[secs(0), secs(1), secs(5), secs(20)]).unwrap();
        assert_eq!(m.start_ns(), Some(T0));
        assert_eq!(m.seconds(), 11);
        assert_eq!((m.records(), m.queries(), m.clients()), (5, 4, 2));
        assert_eq!(m.open(secs(0)).unwrap(), [0; 11]);
        assert_eq!(m.open(secs(1)).unwrap(), [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(m.open(secs(5)).unwrap(), [1, 1, 2, 2, 2, 2, 2, 0, 0, 0, 1]);
        assert_eq!(m.open(secs(20)).unwrap(), [1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
        assert_eq!(m.open(secs(7)), None);
        assert_eq!(
            m.timeouts().collect::<Vec<_>>(),
            [secs(0), secs(1), secs(5), secs(20)]
        );

        assert_eq!(m.client_queries()[&ip(1)], 3);
        assert_eq!(m.clients_with_fewer_than(2), HashSet::from([ip(2)]));
        let options = read_options();
        let nonbusy = m.nonbusy_queries(&path, &options, 2).unwrap();
        assert_eq!(nonbusy.len(), 1);
        assert!(nonbusy.contains(2) && !nonbusy.contains(0) && !nonbusy.contains(3));
        let all = m.nonbusy_queries(&path, &options, 4).unwrap();
        let indices: Vec<u64> = (0..70).filter(|&i| all.contains(i)).collect();
        assert_eq!(indices, [0, 1, 2, 4], "every query, no response");

        assert_eq!(trace_duration_s(&path).unwrap(), 10.0);
    }

    #[test]
    fn a_timeout_far_past_the_trace_costs_no_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        write_trace(&path, &[(0.0, 1, false), (2.0, 2, false)]);
        // 1e10 s: a counter per second up to the last close would take 80 GB.
        let long = Duration::from_secs(10_000_000_000);
        let m = connection_model(&path, &[long, Duration::MAX]).unwrap();
        assert_eq!(m.open(long).unwrap(), [1, 1, 2]);
        assert_eq!(m.open(Duration::MAX).unwrap(), [1, 1, 2]);
    }

    #[test]
    fn an_empty_trace_has_no_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bin");
        write_trace(&path, &[]);
        let m = connection_model(&path, &[Duration::from_secs(5)]).unwrap();
        assert_eq!((m.seconds(), m.clients(), m.start_ns()), (0, 0, None));
        assert!(connection_model(&dir.path().join("missing"), &[]).is_err());
    }

    #[test]
    fn index_sets_count_each_index_once() {
        let mut s = IndexSet::default();
        assert!(s.is_empty());
        for i in [5, 64, 5, 1000] {
            s.insert(i);
        }
        assert_eq!(s.len(), 3);
        assert!(s.contains(64) && s.contains(1000) && !s.contains(63) && !s.contains(1 << 40));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The model agrees with counting by definition at every second, never exceeds the
        /// clients seen, and grows with the timeout.
        #[test]
        fn the_model_counts_clients_whose_last_query_is_recent(
            mut queries in proptest::collection::vec((0u32..30_000, 1u8..6), 1..40)
        ) {
            queries.sort_unstable();
            let records: Vec<(f64, u8, bool)> =
                queries.iter().map(|&(ms, c)| (f64::from(ms) / 1e3, c, false)).collect();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.bin");
            write_trace(&path, &records);
            let timeouts: Vec<Duration> =
                [0, 700, 1_000, 2_500, 10_000].map(Duration::from_millis).to_vec();
            let m = connection_model(&path, &timeouts).unwrap();
            let first = i64::from(queries[0].0);
            for pair in timeouts.windows(2) {
                let (short, long) = (m.open(pair[0]).unwrap(), m.open(pair[1]).unwrap());
                prop_assert!(short.iter().zip(long).all(|(a, b)| a <= b));
            }
            for t in &timeouts {
                let t_ms = t.as_millis() as i64;
                for (s, &n) in m.open(*t).unwrap().iter().enumerate() {
                    let at = s as i64 * 1000;
                    let mut open = HashSet::new();
                    let mut seen = HashSet::new();
                    for &(ms, c) in &queries {
                        let q = i64::from(ms) - first;
                        if q <= at {
                            seen.insert(c);
                            if at < q + t_ms {
                                open.insert(c);
                            }
                        }
                    }
                    prop_assert_eq!(n, open.len() as u64, "second {} timeout {:?}", s, t);
                    prop_assert!(n <= seen.len() as u64);
                }
            }
        }
    }
}
