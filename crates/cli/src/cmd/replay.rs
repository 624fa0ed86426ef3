//! `ldplayer replay TRACE --server HOST[:PORT] [--proto keep|udp|tcp|tls]
//! [--speed K | --rate QPS | --fast] [--results FILE] [--json]`

use crate::args::{ReadArgs, ReplayArgs};
use crate::io::open_input;
use crate::progress::{interrupted, Progress};
use anyhow::{bail, Context, Result};
use ldplayer_replay::{Replay, ReplayConfig, ReplayStats, Timing, TlsConfig};
use ldplayer_results::{QueryResult, ResultSink, ResultsWriter, Summary};
use ldplayer_trace::{Proto, Record, Sink, SinkError, SkipReason};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub fn run(args: ReplayArgs) -> Result<()> {
    let config = config(&args)?;
    let replay = Replay::new(config).context("replay")?;
    let summary = Arc::new(Mutex::new(Summary::new()));
    // The results file is written in place, not renamed at the end: a replay killed with
    // SIGKILL leaves its results readable up to the last block under the name asked for.
    crate::io::refuse_same_file_opt(args.results.as_deref(), [args.trace.as_path()])?;
    let writer = match &args.results {
        Some(p) => Some(
            ResultsWriter::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        ),
        None => None,
    };
    let answered = Arc::new(AtomicU64::new(0));
    let results = Box::new(Tee {
        summary: summary.clone(),
        writer,
        answered: answered.clone(),
    });

    let progress = Progress::new(args.quiet || args.json);
    let read = ReadArgs {
        dns_ports: args.dns_ports.clone(),
        queries_only: false,
        responses_only: false,
    };
    let mut input = open_input(&args.trace, &read, &progress)?;

    // Ctrl-C: stop feeding, let the engine stop scheduling, wait for what is in flight, flush.
    let ctrl_c = interrupted();
    let stop = replay.stop_flag();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (ctrl_c, stop, done) = (ctrl_c.clone(), stop.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if ctrl_c.load(Ordering::Relaxed) {
                    stop.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let running = replay.start(results).context("starting the replay")?;
    let mut feed = Feed {
        running,
        stop: stop.clone(),
        records: 0,
        skipped: Default::default(),
        progress: &progress,
        answered,
    };
    let read_result = input.source.run(&mut feed);
    let Feed {
        running, skipped, ..
    } = feed;
    let stats = running.finish().context("replay")?;
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    progress.finish();
    match read_result {
        Ok(()) | Err(ldplayer_trace::TraceError::Sink(SinkError::Stopped)) => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", args.trace.display())),
    }
    let report = summary
        .lock()
        .map_err(|_| anyhow::anyhow!("summary lock poisoned"))?
        .report();
    if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let Some(obj) = json.as_object_mut() {
            obj.insert("replay".into(), engine_json(&stats, &skipped));
        }
        println!("{json}");
    } else {
        print!("{report}");
        println!(
            "engine: {} clients, {} UDP sockets, {} connections opened, {} reused, {} TLS resumed, {} TC retries over TCP, {} UDP retries, {} unmatched responses, {} ICMP unreachable{}",
            stats.clients,
            stats.udp_sockets_opened,
            stats.connections_opened,
            stats.connections_reused,
            stats.tls_resumed,
            stats.tc_retries,
            stats.udp_retries,
            stats.unmatched_responses,
            stats.udp_unreachable,
            if stop.load(Ordering::Relaxed) { "; interrupted" } else { "" }
        );
        if skipped.total() > 0 {
            println!("trace: skipped {}", super::skipped_list(&skipped));
        }
        if let Some(p) = &args.results {
            println!("results: {}", p.display());
        }
    }
    Ok(())
}

fn engine_json(stats: &ReplayStats, skipped: &ldplayer_trace::SkipCounts) -> serde_json::Value {
    serde_json::json!({
        "records": stats.records,
        "queries": stats.queries,
        "skipped_responses": stats.skipped_responses,
        "clients": stats.clients,
        "udp_sockets_opened": stats.udp_sockets_opened,
        "connections_opened": stats.connections_opened,
        "connections_reused": stats.connections_reused,
        "tls_resumed": stats.tls_resumed,
        "tc_retries": stats.tc_retries,
        "udp_retries": stats.udp_retries,
        "unmatched_responses": stats.unmatched_responses,
        "udp_unreachable": stats.udp_unreachable,
        "trace_skipped": skipped.iter().map(|(r, c)| (r.name().to_string(), c)).collect::<std::collections::BTreeMap<_, _>>(),
    })
}

/// The engine configuration the flags ask for.
fn config(args: &ReplayArgs) -> Result<ReplayConfig> {
    let proto_override = match args.proto.as_str() {
        "keep" => None,
        p => {
            let proto: Proto = p
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--proto: {e}"))?;
            if !matches!(proto, Proto::Udp | Proto::Tcp | Proto::Tls) {
                bail!("--proto {p}: only udp, tcp and tls can be replayed so far");
            }
            Some(proto)
        }
    };
    let default_port = if proto_override == Some(Proto::Tls) {
        853
    } else {
        53
    };
    let server = resolve_server(&args.server, default_port)?;
    let timing = if args.fast {
        Timing::Fast {
            max_in_flight: args.max_in_flight,
        }
    } else if let Some(qps) = args.rate {
        Timing::Rate { qps }
    } else {
        Timing::Original {
            speed: args.speed.unwrap_or(1.0),
        }
    };
    let mut c = ReplayConfig::new(server);
    c.proto_override = proto_override;
    c.timing = timing;
    if let Some(n) = args.queriers {
        c.queriers = n;
    }
    if !args.pin.is_empty() {
        c.pin_cores = Some(args.pin.clone());
    }
    c.timeout = seconds(args.timeout, "--timeout")?;
    c.udp_retries = args.udp_retries;
    c.tcp_idle_timeout = seconds(args.idle_timeout, "--idle-timeout")?;
    c.retry_truncated_over_tcp = !args.no_tc_retry;
    c.honor_keepalive = !args.no_keepalive;
    if let Some(p) = &args.source_prefix {
        let (addr, len) = p
            .split_once('/')
            .with_context(|| format!("--source-prefix {p}: expected ADDRESS/LENGTH"))?;
        let addr: IpAddr = addr
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad address"))?;
        let len: u8 = len
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad length"))?;
        c.source_prefix = Some((addr, len));
    }
    c.tls = TlsConfig {
        ca_file: args.tls_ca.clone(),
        insecure: args.tls_insecure,
        server_name: args.tls_name.clone().or_else(|| host_name(&args.server)),
        resume: !args.no_tls_resume,
    };
    c.validate().context("replay options")?;
    Ok(c)
}

fn seconds(v: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{flag} must be a non-negative number of seconds"))
}

/// `HOST[:PORT]`, `[V6]:PORT` or a bare IPv6 address.
fn resolve_server(s: &str, default_port: u16) -> Result<SocketAddr> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port = if s.contains(':') {
        s.to_string()
    } else {
        format!("{s}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .with_context(|| format!("--server {s}: cannot resolve"))?
        .next()
        .with_context(|| format!("--server {s}: no address"))
}

/// The host part of `--server` when it is a name rather than an address (for TLS SNI).
fn host_name(s: &str) -> Option<String> {
    let host = s.rsplit_once(':').map_or(s, |(h, _)| h);
    (host.parse::<IpAddr>().is_err() && !s.starts_with('[') && !host.is_empty())
        .then(|| host.to_string())
}

/// Feeds the engine and updates the progress display.
struct Feed<'p> {
    running: ldplayer_replay::Running,
    stop: Arc<AtomicBool>,
    records: u64,
    skipped: ldplayer_trace::SkipCounts,
    progress: &'p Progress,
    answered: Arc<AtomicU64>,
}

impl Sink for Feed<'_> {
    fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(SinkError::Stopped);
        }
        self.records += 1;
        if self.records.is_multiple_of(4096) {
            self.progress.message(format!(
                "{} records read, {} answered",
                self.records,
                self.answered.load(Ordering::Relaxed)
            ));
        }
        self.running.record(r)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.skipped.add(reason);
        self.running.skipped(reason, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Sends each result to the summary and, when asked, to the results file.
struct Tee {
    summary: Arc<Mutex<Summary>>,
    writer: Option<ResultsWriter<std::io::BufWriter<std::fs::File>>>,
    answered: Arc<AtomicU64>,
}

impl ResultSink for Tee {
    fn result(&mut self, r: &QueryResult) -> std::io::Result<()> {
        if let Ok(mut s) = self.summary.lock() {
            s.add(r);
        }
        if r.outcome == ldplayer_results::Outcome::Answered {
            self.answered.fetch_add(1, Ordering::Relaxed);
        }
        match &mut self.writer {
            Some(w) => w.result(r),
            None => Ok(()),
        }
    }
    fn finish(&mut self) -> std::io::Result<()> {
        match &mut self.writer {
            Some(w) => w.finish(),
            None => Ok(()),
        }
    }
}
