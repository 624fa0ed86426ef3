//! The engine's configuration: plain data, validated by [`ReplayConfig::validate`].

use crate::error::ReplayError;
use ldplayer_trace::Proto;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// When queries are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// The trace's own timing: a query captured `d` after the first one is sent `d / speed` after
    /// the replay's start (speed 2.0 replays twice as fast).
    Original {
        /// Speed factor; must be finite and at least [`MIN_SPEED`].
        speed: f64,
    },
    /// Evenly paced at `qps` queries per second, ignoring the trace's times.
    Rate {
        /// Queries per second over all queriers; must be finite and at least [`MIN_RATE`].
        qps: f64,
    },
    /// Closed loop: each querier sends as fast as answers come, with at most
    /// `max_in_flight / queriers` (at least 1) queries outstanding, topped up once an eighth
    /// of them are answered.
    Fast {
        /// Bound on outstanding queries over all queriers.
        max_in_flight: usize,
    },
    /// A linear ramp, resperf's method: the offered rate rises from 0 to `to_qps` over
    /// `ramp_s` seconds, and the k-th query of the trace (from 1) is due when the integral of
    /// the rate reaches k, at `sqrt(2·k·ramp_s / to_qps)` s after the start. The trace's times
    /// are ignored; each query keeps its client. The ramp ends after `ramp_s` seconds: queries
    /// past it are not sent (see [`Schedule::ramp_queries`](crate::Schedule::ramp_queries)).
    Ramp {
        /// The rate at the end of the ramp, queries per second; finite and at least
        /// [`MIN_RATE`].
        to_qps: f64,
        /// How long the ramp lasts, seconds; finite, above 0 and at most [`MAX_GAP_SECS`].
        ramp_s: f64,
    },
}

/// The longest the schedule waits between two queries: one day. A rate or a speed that asks for
/// longer gaps (`--rate 1e-300` asked for one query every 10²⁹² years, and the replay sent its
/// first query and then waited in silence for a due time that had saturated at the end of
/// time) is refused up front by [`ReplayConfig::validate`].
pub const MAX_GAP_SECS: f64 = 86_400.0;

/// The slowest rate [`Timing::Rate`] takes, in queries per second: one a day.
pub const MIN_RATE: f64 = 1.0 / MAX_GAP_SECS;

/// The slowest speed [`Timing::Original`] takes: one second of the trace a day.
pub const MIN_SPEED: f64 = 1.0 / MAX_GAP_SECS;

/// `secs` in words: days, or years when it is longer than one.
fn span(secs: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    if secs >= YEAR {
        format!("{:.3e} years", secs / YEAR)
    } else {
        format!("{:.1} days", secs / 86_400.0)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::Original { speed: 1.0 }
    }
}

/// TLS settings for DNS over TLS (RFC 7858).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM file with the certificates to trust (CA certificates or the server's self-signed
    /// one). Without it and without `insecure`, nothing is trusted and handshakes fail.
    pub ca_file: Option<PathBuf>,
    /// Accept any server certificate (the handshake signature is still checked). Only for test
    /// servers: it gives no authentication at all.
    pub insecure: bool,
    /// Name to send in SNI and to check the certificate against; `None` uses the server's IP
    /// address.
    pub server_name: Option<String>,
    /// Resume sessions (TLS 1.3 tickets), each simulated client with its own session store.
    pub resume: bool,
    /// Send DoQ queries in 0-RTT on resumed sessions when the server's ticket allows it.
    pub zero_rtt: bool,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            ca_file: None,
            insecure: false,
            server_name: None,
            resume: true,
            zero_rtt: true,
        }
    }
}

/// The HTTP method of DNS-over-HTTPS queries (RFC 8484 §4.1), the one the population files,
/// plans and command line name too.
pub use ldplayer_trace::DohMethod;

/// DNS over HTTPS (RFC 8484) settings; TLS comes from [`TlsConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DohConfig {
    /// GET or POST.
    pub method: DohMethod,
    /// The path of the URI template, e.g. `/dns-query`.
    pub path: String,
    /// HTTP/3 over QUIC (RFC 9114) rather than HTTP/2 over TLS over TCP: the same server
    /// address, over UDP.
    pub http3: bool,
}

impl Default for DohConfig {
    /// POST to `/dns-query`.
    fn default() -> Self {
        DohConfig {
            method: DohMethod::Post,
            path: "/dns-query".into(),
            http3: false,
        }
    }
}

/// Which client stacks carry DoT, DoH and DoQ (`--stack`, a group's or a plan's `stack`): the
/// one the command line, population files and plans name.
pub use ldplayer_trace::Stack;

/// How one group of clients behaves, beside the replay's own settings (a population group's
/// session profile); `None` keeps the replay's own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientProfile {
    /// How long a connection of the client may stay idle.
    pub idle_timeout: Option<Duration>,
    /// How long the client waits for an answer.
    pub timeout: Option<Duration>,
    /// How many times the client resends a UDP query that timed out.
    pub udp_retries: Option<u32>,
    /// Whether the client resumes TLS sessions (DoT, DoH, DoQ).
    pub resume: Option<bool>,
    /// Whether the client sends DoQ queries in 0-RTT on resumed sessions.
    pub zero_rtt: Option<bool>,
    /// The client's DoH method.
    pub doh_method: Option<DohMethod>,
    /// The client's DoT, DoH and DoQ stack.
    pub stack: Option<Stack>,
}

/// The clients' session profiles: which profile each client (by its address in the trace)
/// follows.
#[derive(Clone)]
pub struct Profiles {
    /// The profiles, indexed by what `assign` returns.
    pub profiles: Vec<ClientProfile>,
    /// The profile of the client with this address (a stable function of it).
    pub assign: Arc<dyn Fn(IpAddr) -> usize + Send + Sync>,
}

impl std::fmt::Debug for Profiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiles")
            .field("profiles", &self.profiles)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Profiles {
    fn eq(&self, other: &Self) -> bool {
        self.profiles == other.profiles && Arc::ptr_eq(&self.assign, &other.assign)
    }
}

/// Packets the lean QUIC stack sends with one set of keys before it updates them, unless told
/// otherwise ([`ReplayConfig::quic_key_update_packets`]; why this count:
/// [`ldplayer_stacks::quic::conn::DEFAULT_KEY_UPDATE_PACKETS`]).
pub const DEFAULT_QUIC_KEY_UPDATE_PACKETS: u64 =
    ldplayer_stacks::quic::conn::DEFAULT_KEY_UPDATE_PACKETS;

/// Everything that shapes a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayConfig {
    /// The server every query goes to (the trace's destinations are ignored).
    pub server: SocketAddr,
    /// Where DNS over TLS connections go, when they do not go to [`server`](Self::server): a
    /// replay that keeps each record's transport sends UDP and TCP to port 53 and TLS to 853 of
    /// the same host. `None`: to `server`.
    pub tls_server: Option<SocketAddr>,
    /// Where DNS over HTTPS connections go, when they do not go to [`server`](Self::server)
    /// (port 443 of the same host, in a replay that mixes transports). `None`: to `server`.
    pub https_server: Option<SocketAddr>,
    /// Where DNS over QUIC connections go, when they do not go to [`server`](Self::server)
    /// (UDP port 853 of the same host, in a replay that mixes transports). `None`: to `server`.
    pub quic_server: Option<SocketAddr>,
    /// Send every query over this transport; `None` keeps each record's own.
    pub proto_override: Option<Proto>,
    /// When queries are sent.
    pub timing: Timing,
    /// Number of querier threads.
    pub queriers: usize,
    /// Pin querier `i` to core `pin_cores[i % len]`. The engine's other threads (the reader,
    /// which is the caller's thread, and the result writer) then keep off those cores for the
    /// run, so that a querier has its core to itself.
    pub pin_cores: Option<Vec<usize>>,
    /// Ask for real-time scheduling (`SCHED_FIFO`) for the queriers, so that no normal thread
    /// of the machine preempts one. Refused without `CAP_SYS_NICE`; the replay then runs at
    /// normal priority and says so ([`crate::Running::warnings`]).
    pub realtime: bool,
    /// How long to wait for an answer.
    pub timeout: Duration,
    /// How many times a UDP query is resent after a timeout before it counts as timed out.
    pub udp_retries: u32,
    /// Close a TCP or TLS connection after this long without queries in flight.
    pub tcp_idle_timeout: Duration,
    /// Open UDP sockets per querier; past it the least recently used one is closed.
    pub max_udp_sockets: usize,
    /// Open TCP and TLS connections per querier; past it the least recently used idle one is
    /// closed (busy ones are kept, so this is a soft bound).
    pub max_connections: usize,
    /// Resend queries whose UDP answer has TC set over TCP.
    pub retry_truncated_over_tcp: bool,
    /// Take the idle timeout of a connection from the server's EDNS TCP keepalive option
    /// (RFC 7828) when its answers carry one.
    pub honor_keepalive: bool,
    /// Give each original source address its own local address in this prefix (in order of first
    /// appearance: the first source gets the prefix's address + 1, and so on, wrapping around).
    /// `None` binds to the unspecified address with an ephemeral port.
    pub source_prefix: Option<(IpAddr, u8)>,
    /// Send each client's queries from its original address (the trace's source address), so
    /// that the server sees the trace's client population. That address must be local here: an
    /// experiment's client namespace makes every address local (`ip route add local 0.0.0.0/0
    /// dev lo`). Addresses that cannot be a routed source (of the other family than the server,
    /// loopback, multicast, unspecified, or the server's own) get a stable stand-in address
    /// (`net::stand_in_source`). Ignored when `source_prefix` is set.
    pub original_sources: bool,
    /// Take each query's send time from the kernel's send timestamp of its last packet (see
    /// `SO_TIMESTAMPING`), where the system offers it; otherwise, and when false, from the clock
    /// read just before the system call that sends it. Answers are always timed by the kernel's
    /// receive timestamps. The kernel's stamps cost one more system call per query.
    pub kernel_send_times: bool,
    /// With kernel send times, have the kernel stamp every UDP datagram; otherwise the first,
    /// every 8th and the last of each `sendmmsg`, the queries between timed by interpolation
    /// between the stamps around them (a stamp costs the kernel a queued message and a
    /// wake-up, and the querier a read: a sixth of its CPU under `--fast`).
    pub stamp_every_datagram: bool,
    /// TLS settings (DNS over TLS and over HTTPS).
    pub tls: TlsConfig,
    /// DNS over HTTPS settings.
    pub doh: DohConfig,
    /// The client stack of DoT, DoH and DoQ (for the clients whose profile does not choose).
    pub stack: Stack,
    /// The lean QUIC stack starts a key update (RFC 9001 §6) after this many packets sent with
    /// the same keys; 0: none (but at the cipher's confidentiality limit, §6.6). The reference
    /// stack (quinn) keeps its own schedule.
    pub quic_key_update_packets: u64,
    /// Session profiles per client (a population's groups); `None`: every client follows the
    /// settings above.
    pub profiles: Option<Profiles>,
    /// How far ahead of real time the reader runs (queries buffered before they are due).
    pub preload: Duration,
    /// Skip responses in the trace (QR set); when false, every record is sent as a query.
    pub queries_only: bool,
    /// When the schedule starts, as `CLOCK_REALTIME` ns: the instant the trace origin maps to.
    /// Several processes, on one host or several with synchronized clocks, given the same start
    /// and origin send each query at the same intended time. It must still be ahead when the
    /// replay starts ([`Replay::start`](crate::Replay::start) refuses a start in the past rather
    /// than send a burst of late queries). `None`: 100 ms after the replay starts.
    pub start_ns: Option<i64>,
    /// The trace time (ns since the epoch) that maps to the start, with original timing; queries
    /// captured before it are sent at the start. `None`: the first query's time. Ignored by rate
    /// and closed-loop timing.
    pub trace_origin_ns: Option<i64>,
    /// How long past [`start_ns`](Self::start_ns) the replay may still begin: a shard that an
    /// orchestrator started a little late keeps its place in the shared, absolute schedule
    /// (the queries due before it began are not sent, each recorded as
    /// [`ErrorKind::LateStart`](ldplayer_results::ErrorKind::LateStart), rather than sent at
    /// once) and warns by how much. Later than that, [`Replay::start`](crate::Replay::start)
    /// refuses.
    pub late_start: Duration,
    /// Replay only the clients of this shard (see [`crate::shard_of`]); `None`: every client.
    pub shard: Option<ldplayer_results::ShardId>,
    /// Hand every answer, byte for byte as received, to the result sink with its result
    /// ([`ldplayer_results::ResultSink::result_with_answer`]), on every transport
    /// (`replay --keep-answers`).
    pub keep_answers: bool,
    /// Close a TCP, TLS or DoH connection once this many queries went over it, and open a new
    /// one for the client's next query (dnsperf's and resperf's `--num-queries-per-conn`);
    /// `None`: connections are reused until idle.
    pub queries_per_connection: Option<u64>,
}

impl ReplayConfig {
    /// The defaults with `server` as the target.
    pub fn new(server: SocketAddr) -> ReplayConfig {
        ReplayConfig {
            server,
            ..ReplayConfig::default()
        }
    }

    /// Checks the settings for values the engine cannot work with (a rate or speed slower than
    /// [`MIN_RATE`] or [`MIN_SPEED`] among them) and for destinations it must not send to
    /// ([`crate::check_destination`]).
    pub fn validate(&self) -> Result<(), ReplayError> {
        let bad = |m: &str| Err(ReplayError::Config(m.to_string()));
        match self.timing {
            Timing::Original { speed } if !(speed.is_finite() && speed > 0.0) => {
                return bad("speed must be positive and finite")
            }
            Timing::Original { speed } if speed < MIN_SPEED => {
                return bad(&format!(
                    "speed {speed:e} makes one second of the trace last {}: the slowest speed is \
                     {MIN_SPEED:.3e} (one second of the trace a day)",
                    span(1.0 / speed)
                ))
            }
            Timing::Rate { qps } if !(qps.is_finite() && qps > 0.0) => {
                return bad("rate must be positive and finite")
            }
            Timing::Rate { qps } if qps < MIN_RATE => {
                return bad(&format!(
                    "rate {qps:e} per second is one query every {}: the slowest rate is \
                     {MIN_RATE:.3e} per second (one query a day)",
                    span(1.0 / qps)
                ))
            }
            Timing::Fast { max_in_flight: 0 } => return bad("max in flight must be at least 1"),
            Timing::Ramp { to_qps, ramp_s } => {
                if !(to_qps.is_finite() && to_qps >= MIN_RATE) {
                    return bad(&format!(
                        "the ramp's final rate must be finite and at least {MIN_RATE:.3e} per \
                         second (one query a day)"
                    ));
                }
                if !(ramp_s.is_finite() && ramp_s > 0.0 && ramp_s <= MAX_GAP_SECS) {
                    return bad("the ramp's duration must be above 0 and at most a day (86400 s)");
                }
                if to_qps * ramp_s < 2.0 {
                    return bad(&format!(
                        "a ramp to {to_qps} queries/s over {ramp_s} s sends {} queries: give a \
                         higher rate or a longer ramp (at least one query)",
                        (to_qps * ramp_s / 2.0).floor()
                    ));
                }
            }
            _ => {}
        }
        let destinations = [
            ("the server", Some(self.server)),
            ("the TLS server", self.tls_server),
            ("the HTTPS server", self.https_server),
            ("the QUIC server", self.quic_server),
        ];
        for (which, addr) in destinations {
            if let Some(Err(e)) = addr.map(crate::destination::check_destination) {
                return bad(&format!("{which}: {e}"));
            }
        }
        if self.queriers == 0 || self.queriers > 1024 {
            return bad("queriers must be between 1 and 1024");
        }
        if let Some(pins) = &self.pin_cores {
            if let Ok(allowed) = crate::cpu::CoreSet::of_current_thread() {
                if let Some(core) = pins.iter().find(|&&c| !allowed.contains(c)) {
                    let list: Vec<String> = allowed.cores().map(|c| c.to_string()).collect();
                    return bad(&format!(
                        "core {core} is not one this process may use (cores {})",
                        list.join(",")
                    ));
                }
            }
        }
        if self.timeout.is_zero() {
            return bad("timeout must be positive");
        }
        if let Some(s) = self.shard {
            if s.count == 0 || s.index >= s.count {
                return bad("the shard must be I/N with I < N");
            }
        }
        if self.queries_per_connection == Some(0) {
            return bad("queries per connection must be at least 1");
        }
        if self.max_udp_sockets == 0 || self.max_connections == 0 {
            return bad("socket and connection limits must be at least 1");
        }
        if !self.doh.path.starts_with('/') {
            return bad("the DoH path must start with /");
        }
        if let Some((addr, len)) = self.source_prefix {
            let max = if addr.is_ipv4() { 32 } else { 128 };
            if len > max {
                return bad("source prefix length too long");
            }
            if addr.is_ipv4() != self.server.is_ipv4() {
                return bad("source prefix and server must be of the same address family");
            }
        }
        Ok(())
    }
}

impl Default for ReplayConfig {
    /// Original timing at speed 1 to 127.0.0.1:53, one querier per core less one (at least one),
    /// 2 s timeout, no UDP retries, 20 s TCP idle timeout, 10 000 UDP sockets and 100 000
    /// connections per querier, TC retries over TCP, keepalive honoured, kernel send times, the lean stacks (QUIC key updates every 1,000 packets), 1 s
    /// preload, responses skipped, the start chosen by the engine (no late start allowed) and
    /// the first query as the trace origin, every client replayed, connections reused until idle.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ReplayConfig {
            server: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 53),
            tls_server: None,
            https_server: None,
            quic_server: None,
            proto_override: None,
            timing: Timing::default(),
            queriers: cores.saturating_sub(1).max(1),
            pin_cores: None,
            original_sources: false,
            realtime: false,
            timeout: Duration::from_secs(2),
            udp_retries: 0,
            tcp_idle_timeout: Duration::from_secs(20),
            max_udp_sockets: 10_000,
            max_connections: 100_000,
            retry_truncated_over_tcp: true,
            honor_keepalive: true,
            source_prefix: None,
            kernel_send_times: true,
            stamp_every_datagram: true,
            tls: TlsConfig::default(),
            doh: DohConfig::default(),
            stack: Stack::Lean,
            quic_key_update_packets: DEFAULT_QUIC_KEY_UPDATE_PACKETS,
            profiles: None,
            preload: Duration::from_secs(1),
            queries_only: true,
            start_ns: None,
            trace_origin_ns: None,
            late_start: Duration::ZERO,
            shard: None,
            keep_answers: false,
            queries_per_connection: None,
        }
    }
}
