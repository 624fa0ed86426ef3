//! The pipeline: reader/distributor (the caller's thread) → queriers (one thread each) → result
//! writer (one thread).

use crate::clock;
use crate::config::{ReplayConfig, Timing};
use crate::cpu::{self, Confinement};
use crate::distributor::{Batch, Distributor, QueryMeta, Schedule};
use crate::error::ReplayError;
use crate::handover;
use crate::live::Live;
use crate::querier::{self, ResultBatch, Setup, WAKER};
use crate::stats::ReplayStats;
use crate::tls::TlsBase;
use crossbeam_channel::{bounded, Receiver, Sender};
use ldplayer_dns::flag;
use ldplayer_results::{ErrorKind, Outcome, QueryResult, ResultSink};
use ldplayer_trace::{Proto, Record, Sink, SinkError, SkipReason, Source};
use mio::{Poll, Waker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Queries per batch sent to a querier.
const BATCH_QUERIES: usize = 64;
/// Batches a querier's channel holds (backpressure beyond it): 2,048 × 64 queries, enough for
/// the whole preload window (1 s) up to ≈ 130k qps per querier, so that a reader that does not
/// get the CPU for a while (a busy machine) does not leave the querier without queries. At 256
/// batches the window was 0.16 s at 100k qps. Each batch is ≈ 6 KB: ≈ 12 MB per querier.
const CHANNEL_BATCHES: usize = 2048;
/// How far in the future the shared start is set, so that all threads start aligned.
const START_DELAY_NS: i64 = 100_000_000;
/// A batch is handed over at least this often, even when not full.
const MAX_BATCH_AGE_NS: i64 = 5_000_000;

/// The query engine. Build it with a configuration, then [`Replay::run`] a trace, or
/// [`Replay::start`] it and feed it records as a [`Sink`]. Either way the results go to a
/// [`ResultSink`] of the caller's choosing, handed back with the counters when the replay is
/// done ([`Finished`]).
#[derive(Debug)]
pub struct Replay {
    config: Arc<ReplayConfig>,
    tls: Option<Arc<TlsBase>>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
}

impl Replay {
    /// Checks the configuration and prepares TLS.
    pub fn new(config: ReplayConfig) -> Result<Replay, ReplayError> {
        config.validate()?;
        let tls_needed = config
            .proto_override
            .is_none_or(|p| matches!(p, Proto::Tls | Proto::Https | Proto::Quic));
        let tls = if tls_needed {
            Some(Arc::new(TlsBase::new(&config.tls, config.server.ip())?))
        } else {
            None
        };
        Ok(Replay {
            config: Arc::new(config),
            tls,
            stop: Arc::new(AtomicBool::new(false)),
            live: Arc::new(Live::default()),
        })
    }

    /// The flag that stops the replay when set (Ctrl-C): no more queries are scheduled, queries
    /// already handed to queriers but not sent end as `Stopped`, queries in flight get their
    /// answer or time out, and the results are finished.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Counters of the running replay (queries queued, sent, answered, timed out, failed), for
    /// progress displays; current to within 20 ms.
    pub fn live(&self) -> Arc<Live> {
        self.live.clone()
    }

    /// The configuration.
    pub fn config(&self) -> &ReplayConfig {
        &self.config
    }

    /// Replays everything `source` yields, writing one result per query to `results`, and hands
    /// `results` back with the counters. The source's read error, if any, comes after the
    /// replay of what was read is finished (a source stopped by [`Replay::stop_flag`] is not an
    /// error). On an error the sink is dropped; what it wrote before stays written.
    pub fn run<S: ResultSink + 'static>(
        &self,
        source: &mut dyn Source,
        results: S,
    ) -> Result<Finished<S>, ReplayError> {
        let mut running = self.start(results)?;
        let read = source.run(&mut running);
        let finished = running.finish()?;
        match read {
            Ok(()) | Err(ldplayer_trace::TraceError::Sink(SinkError::Stopped)) => Ok(finished),
            Err(e) => Err(e.into()),
        }
    }

    /// Starts the queriers and the result writer (which owns `results` until
    /// [`Running::finish`] hands it back); the returned [`Running`] takes records as a
    /// [`Sink`]. Fails if [`ReplayConfig::start_ns`] is already past.
    pub fn start<S: ResultSink + 'static>(&self, results: S) -> Result<Running<S>, ReplayError> {
        let mut warnings = Vec::new();
        // A shard that begins after the shared start: the queries due before it began are not
        // sent (sending them at once would burst them at the server).
        let mut late_before_ns = None;
        let t0_ns = match self.config.start_ns {
            Some(t0) => {
                let now = clock::now_ns();
                let late = now - t0;
                let grace = self.config.late_start.as_nanos().min(i64::MAX as u128) as i64;
                if late > grace {
                    return Err(ReplayError::Config(format!(
                        "the start is {:.3} s in the past (at most {:.3} s late is allowed): give \
                         a start ahead of the replay's",
                        late as f64 / 1e9,
                        grace as f64 / 1e9
                    )));
                }
                if late >= 0 {
                    late_before_ns = Some(now);
                    warnings.push(format!(
                        "started {:.3} s after the shared start: it keeps its place in the \
                         shared schedule; the queries due before now are not sent (late-start \
                         in the results) rather than sent at once",
                        late as f64 / 1e9
                    ));
                }
                t0
            }
            None => clock::now_ns() + START_DELAY_NS,
        };
        let schedule = Schedule::new(self.config.timing, t0_ns);
        let schedule = match self.config.trace_origin_ns {
            Some(origin) => schedule.with_trace_origin(origin),
            None => schedule,
        };
        let config = self.config.clone();
        let timestamping = crate::net::timestamping_on();
        let n = config.queriers;
        let pins: &[usize] = config.pin_cores.as_deref().unwrap_or_default();
        // Before any thread starts, so that the result writer inherits it.
        let confinement = match pins {
            [] => None,
            _ => match Confinement::away_from(pins) {
                Ok(Some(c)) => Some(c),
                Ok(None) => {
                    warnings.push(
                        "every core this process may use has a querier pinned to it: the other \
                         threads share their cores"
                            .to_string(),
                    );
                    None
                }
                Err(e) => {
                    warnings.push(format!(
                        "cannot keep the other threads off the queriers' cores: {e}"
                    ));
                    None
                }
            },
        };
        if config.realtime {
            warnings.extend(cpu::realtime_limit_warning());
        }
        let (placed_tx, placed_rx) = bounded::<String>(2 * n);
        let (res_tx, res_rx) = bounded::<ResultBatch>(4096);
        let writer = std::thread::Builder::new()
            .name("ldplayer-results".into())
            .spawn(move || write_results(results, res_rx))
            .map_err(|e| ReplayError::io("starting the result writer", e))?;
        let per_querier = match config.timing {
            Timing::Fast { max_in_flight } => max_in_flight.div_ceil(n).max(1),
            _ => usize::MAX,
        };
        let mut queriers = Vec::with_capacity(n);
        let mut spawn_error = None;
        for i in 0..n {
            let poll = match Poll::new() {
                Ok(p) => p,
                Err(e) => {
                    spawn_error = Some(ReplayError::io("creating epoll", e));
                    break;
                }
            };
            let waker = match Waker::new(poll.registry(), WAKER) {
                Ok(w) => Arc::new(w),
                Err(e) => {
                    spawn_error = Some(ReplayError::io("creating a waker", e));
                    break;
                }
            };
            let (tx, rx) = bounded::<Batch>(CHANNEL_BATCHES);
            let (recycle_tx, recycle_rx) = bounded::<Batch>(CHANNEL_BATCHES);
            let setup = Setup {
                config: config.clone(),
                poll,
                rx,
                recycle: recycle_tx,
                results: res_tx.clone(),
                stop: self.stop.clone(),
                live: self.live.clone(),
                tls: self.tls.clone(),
                max_in_flight: per_querier,
                waker: waker.clone(),
            };
            let core = (!pins.is_empty()).then(|| pins[i % pins.len()]);
            let realtime = config.realtime;
            let placed = placed_tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("ldplayer-q{i}"))
                .spawn(move || {
                    place_querier(i, core, realtime, &placed);
                    drop(placed);
                    querier::run(setup)
                });
            match handle {
                Ok(h) => queriers.push(QuerierHandle {
                    tx: Some(tx),
                    waker,
                    recycle: recycle_rx,
                    batch: Batch::default(),
                    batch_started: 0,
                    thread: Some(h),
                }),
                Err(e) => {
                    spawn_error = Some(ReplayError::io("starting a querier", e));
                    break;
                }
            }
        }
        let late_tx = late_before_ns.map(|_| res_tx.clone());
        drop(res_tx);
        drop(placed_tx);
        // Every querier says where it runs before the first query is due (the schedule starts
        // START_DELAY_NS from now); a thread that never reports has failed to start.
        while let Ok(w) = placed_rx.recv_timeout(std::time::Duration::from_secs(5)) {
            warnings.push(w);
        }
        let mut running = Running {
            config: config.clone(),
            stop: self.stop.clone(),
            live: self.live.clone(),
            distributor: Distributor::new(n),
            schedule,
            late: late_before_ns
                .zip(late_tx)
                .map(|(before_ns, tx)| LateStart {
                    before_ns,
                    tx,
                    pending: Vec::new(),
                }),
            queriers,
            writer: Some(writer),
            stats: ReplayStats::default(),
            started: Instant::now(),
            index: 0,
            failed: None,
            warnings,
            confinement,
            _timestamping: timestamping,
        };
        if let Some(e) = spawn_error {
            let _ = running.shutdown();
            return Err(e);
        }
        Ok(running)
    }
}

struct QuerierHandle {
    tx: Option<Sender<Batch>>,
    waker: Arc<Waker>,
    recycle: Receiver<Batch>,
    batch: Batch,
    batch_started: i64,
    thread: Option<JoinHandle<ReplayStats>>,
}

impl QuerierHandle {
    fn flush(&mut self) -> Result<(), SinkError> {
        if self.batch.queries.is_empty() {
            return Ok(());
        }
        let next = self.recycle.try_recv().unwrap_or_default();
        let batch = std::mem::replace(&mut self.batch, next);
        let tx = self.tx.as_ref().ok_or(SinkError::Stopped)?;
        let thread = &self.thread;
        let alive = || thread.as_ref().is_some_and(|t| !t.is_finished());
        let waker = &self.waker;
        let wake = || {
            let _ = waker.wake();
        };
        handover::hand_over(tx, batch, &alive, &wake)
            .map_err(|_| SinkError::Other("a querier thread ended early".into()))
    }
}

/// The queries of a shard that began after the shared start which were due before it began:
/// never sent, each written straight to the results as `late-start`, so that the shard keeps
/// its place in the schedule instead of sending its backlog at once.
struct LateStart {
    /// When the replay began (`CLOCK_REALTIME` ns): queries due before it are not sent.
    before_ns: i64,
    /// To the result writer.
    tx: Sender<ResultBatch>,
    /// Results not yet handed to the writer.
    pending: Vec<QueryResult>,
}

impl LateStart {
    /// Hands the pending results to the writer.
    fn flush(&mut self) -> Result<(), SinkError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.tx
            .send(ResultBatch {
                results: std::mem::take(&mut self.pending),
                ..ResultBatch::default()
            })
            .map_err(|_| SinkError::Other("the result writer ended early".into()))
    }
}

/// A finished replay: the result sink it was given, and what it did.
#[derive(Debug)]
pub struct Finished<S> {
    /// The result sink, back from the result writer after its [`ResultSink::finish`].
    pub results: S,
    /// The counters.
    pub stats: ReplayStats,
}

/// A started replay: feed it records (it is a [`Sink`]), then call [`Running::finish`].
///
/// As a sink it also counts what the source skipped or found malformed
/// ([`ReplayStats::trace_skipped`], [`ReplayStats::trace_malformed`]), and stops taking records
/// (with [`SinkError::Stopped`]) once the [`Replay::stop_flag`] is set.
pub struct Running<S: ResultSink> {
    config: Arc<ReplayConfig>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
    distributor: Distributor,
    schedule: Schedule,
    /// Set when the replay began after the shared start.
    late: Option<LateStart>,
    queriers: Vec<QuerierHandle>,
    writer: Option<JoinHandle<(S, std::io::Result<u64>)>>,
    stats: ReplayStats,
    started: Instant,
    index: u64,
    failed: Option<ReplayError>,
    warnings: Vec<String>,
    /// The process's other threads kept off the queriers' cores, until the end of the run.
    confinement: Option<Confinement>,
    /// Keeps the kernel's receive timestamping on for the whole run.
    _timestamping: Option<std::net::UdpSocket>,
}

impl<S: ResultSink> std::fmt::Debug for Running<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("queriers", &self.queriers.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<S: ResultSink> Running<S> {
    /// The realtime ns at which the schedule starts.
    pub fn start_ns(&self) -> i64 {
        self.schedule.t0_ns()
    }

    /// What did not go as configured when the threads were placed (a querier that could not be
    /// pinned, real-time scheduling refused, no core left for the other threads), in words; the
    /// replay runs anyway.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn flush_all(&mut self) -> Result<(), SinkError> {
        if let Some(late) = &mut self.late {
            late.flush()?;
        }
        for q in &mut self.queriers {
            self.live.add_queued(q.batch.queries.len() as u64);
            q.flush()?;
        }
        Ok(())
    }

    /// Notes a record of the trace that this replay leaves to another process (a shard
    /// worker's filter drops it instead of handing it to [`Sink::record`]): it is not sent and
    /// not counted in [`ReplayStats::records`], but it keeps its position, so that the indexes
    /// of the results stay positions in the whole trace and the results of every process merge
    /// on them.
    pub fn pass(&mut self) {
        self.index += 1;
    }

    /// The trace time mapped to the start, once known (see [`ReplayConfig::trace_origin_ns`]).
    pub fn trace_origin_ns(&self) -> Option<i64> {
        self.schedule.trace_origin_ns()
    }

    /// Waits for the queriers to answer or time out every query, finishes the results and
    /// hands them back with the counters.
    pub fn finish(mut self) -> Result<Finished<S>, ReplayError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<Finished<S>, ReplayError> {
        let _ = self.flush_all();
        // The writer ends once every sender is gone.
        self.late = None;
        let mut panicked = false;
        for q in &mut self.queriers {
            q.tx = None;
            let _ = q.waker.wake();
        }
        for q in &mut self.queriers {
            if let Some(t) = q.thread.take() {
                match t.join() {
                    Ok(s) => self.stats.merge(&ReplayStats {
                        records: 0,
                        skipped_responses: 0,
                        other_shards: 0,
                        clients: 0,
                        results: 0,
                        ..s
                    }),
                    Err(_) => panicked = true,
                }
            }
        }
        let (results, written) = match self.writer.take().map(JoinHandle::join) {
            Some(Ok((results, written))) => (results, written.map_err(ReplayError::Results)?),
            Some(Err(_)) => return Err(ReplayError::Panicked("result writer")),
            None => return Err(ReplayError::Panicked("result writer (finished twice)")),
        };
        if panicked {
            return Err(ReplayError::Panicked("querier"));
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        // The process's threads get their cores back.
        self.confinement = None;
        self.stats.results = written;
        self.stats.clients = self.distributor.clients() as u64;
        self.stats.duration = self.started.elapsed();
        self.stats.describe_clocks(&self.config);
        if let (Some(all), None) = (self.schedule.ramp_queries(), self.stats.ramp_completed) {
            // The trace ended at the ramp's last query, or before it.
            self.stats.ramp_completed = Some(self.schedule.scheduled() >= all);
        }
        Ok(Finished {
            results,
            stats: self.stats.clone(),
        })
    }
}

impl<S: ResultSink> Sink for Running<S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(SinkError::Stopped);
        }
        self.stats.records += 1;
        let index = self.index;
        self.index += 1;
        if self.config.queries_only
            && record.wire.len() >= 4
            && u16::from_be_bytes([record.wire[2], record.wire[3]]) & flag::QR != 0
        {
            self.stats.skipped_responses += 1;
            return Ok(());
        }
        // Every query takes its place in the schedule (a rate schedule counts them all), so that
        // the shards of one replay agree on each query's due time.
        let intended = self.schedule.next(record.time_ns);
        if self.schedule.past_ramp() {
            // The ramp's end: this record and the rest of the trace are not replayed.
            self.stats.records -= 1;
            self.index -= 1;
            self.stats.ramp_completed = Some(true);
            return Err(SinkError::Stopped);
        }
        if intended == i64::MAX {
            // Saturated: the trace is too long for its speed or rate (a long trace at the
            // slowest one).
            self.failed = Some(ReplayError::Config(format!(
                "query {index} of the trace is due past the end of the clock (year 2262): the \
                 speed or rate stretches the trace too far"
            )));
            return Err(SinkError::Stopped);
        }
        if let Some(shard) = self.config.shard {
            if crate::shard::shard_of(record.src.ip(), shard.count) != shard.index {
                self.stats.other_shards += 1;
                return Ok(());
            }
        }
        if let Some(late) = self
            .late
            .as_mut()
            .filter(|l| intended != 0 && intended < l.before_ns)
        {
            self.stats.queries += 1;
            self.stats
                .count_outcome(Outcome::Error(ErrorKind::LateStart));
            late.pending.push(QueryResult {
                index,
                trace_ns: record.time_ns,
                intended_ns: intended,
                sent_ns: 0,
                received_ns: 0,
                proto: self.config.proto_override.unwrap_or(record.proto),
                new_connection: false,
                handshake_ns: 0,
                rcode: ldplayer_dns::Rcode::NOERROR,
                response_len: 0,
                truncated: false,
                outcome: Outcome::Error(ErrorKind::LateStart),
                target: 0,
            });
            if late.pending.len() >= BATCH_QUERIES {
                late.flush()?;
            }
            return Ok(());
        }
        if intended != 0 {
            // Stay at most `preload` ahead of real time. When the window is full, sleep until a
            // quarter of it has drained, then refill: waking for every record instead kept this
            // thread spinning (a whole core, taken from the server on a small machine).
            let preload = self.config.preload.as_nanos().min(i64::MAX as u128) as i64;
            let now = clock::now_ns();
            if intended - now > preload {
                self.flush_all()?;
                let target = intended - preload + preload / 4;
                loop {
                    if self.stop.load(Ordering::Relaxed) {
                        return Err(SinkError::Stopped);
                    }
                    let left = target - clock::now_ns();
                    if left <= 0 {
                        break;
                    }
                    std::thread::sleep(
                        std::time::Duration::from_nanos(left.min(50_000_000) as u64),
                    );
                }
            }
        }
        let (client, qi) = self.distributor.assign(record.src.ip());
        let now = clock::now_ns();
        let Some(q) = self.queriers.get_mut(qi) else {
            return Err(SinkError::Other("no querier".into()));
        };
        if q.batch.queries.is_empty() {
            q.batch_started = now;
        }
        let off = q.batch.bytes.len() as u32;
        q.batch.bytes.extend_from_slice(record.wire);
        q.batch.queries.push(QueryMeta {
            index,
            trace_ns: record.time_ns,
            intended_ns: intended,
            client,
            src: record.src.ip(),
            proto: record.proto,
            off,
            len: record.wire.len() as u32,
        });
        let due_soon = intended != 0 && intended - now < 2 * MAX_BATCH_AGE_NS;
        if q.batch.queries.len() >= BATCH_QUERIES
            || due_soon
            || now - q.batch_started > MAX_BATCH_AGE_NS
        {
            self.live.add_queued(q.batch.queries.len() as u64);
            q.flush()?;
        }
        Ok(())
    }

    fn skipped(&mut self, reason: SkipReason, _location: u64) {
        self.stats.count_skipped(reason);
    }

    fn malformed(&mut self, error: ldplayer_dns::DnsError, _location: u64) {
        self.stats.count_malformed(error);
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.flush_all()
    }
}

impl<S: ResultSink> Drop for Running<S> {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.shutdown();
        }
    }
}

/// Pins querier `i` to `core` and asks for real-time scheduling, as configured; sends a line
/// for each thing refused.
fn place_querier(
    i: usize,
    core: Option<usize>,
    realtime: bool,
    report: &crossbeam_channel::Sender<String>,
) {
    if let Some(core) = core {
        if let Err(e) = cpu::pin_current_thread(core) {
            let _ = report.send(format!("querier {i}: cannot pin to core {core}: {e}"));
        }
    }
    if realtime {
        if let Err(e) = cpu::realtime_current_thread() {
            let _ = report.send(format!(
                "querier {i}: real-time scheduling (SCHED_FIFO) refused: {e}; it runs at normal \
                 priority (needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least {})",
                cpu::REALTIME_PRIORITY
            ));
        }
    }
}

/// The result writer's loop: every result to `sink`, then its `finish`; hands `sink` back with
/// the number of results written or the first error.
fn write_results<S: ResultSink>(
    mut sink: S,
    rx: Receiver<ResultBatch>,
) -> (S, std::io::Result<u64>) {
    let mut n = 0u64;
    let mut error = None;
    for batch in rx {
        if error.is_some() {
            continue; // keep draining so queriers never block
        }
        for (r, answer) in batch.iter() {
            let written = match answer {
                Some(a) => sink.result_with_answer(r, a),
                None => sink.result(r),
            };
            if let Err(e) = written {
                error = Some(e);
                break;
            }
            n += 1;
        }
    }
    let finished = sink.finish();
    let written = match error {
        Some(e) => Err(e),
        None => finished.map(|()| n),
    };
    (sink, written)
}
