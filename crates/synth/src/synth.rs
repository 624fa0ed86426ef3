//! The synthesizer: a validated configuration that pushes its trace into a sink.

use crate::clients::{zipf_weights, Alias, Clients};
use crate::config::{SynthConfig, Workload};
use crate::encode;
use crate::error::SynthError;
use crate::names::{RootNames, UniqueNames};
use crate::renewal::Schedule;
use crate::rng::{self, below, exponential, mix64, Chance};
use chacha20::rand_core::Rng as _;
use ldplayer_dns::Rtype;
use ldplayer_trace::{drive, Proto, Record, Sink, Source, TraceError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A seeded synthetic trace generator; a [`Source`] of DNS queries in time order.
///
/// Build one with [`Synth::new`], which checks the configuration, then [`Source::run`] it into
/// any sink. Every run of the same configuration gives the same records, on every platform.
#[derive(Debug, Clone)]
pub struct Synth {
    config: SynthConfig,
    clients: Clients,
    server: SocketAddr,
    picker: Picker,
    names: Names,
    qtypes: Vec<(Rtype, u64)>,
    qtype_total: u64,
    edns: Chance,
    dnssec_ok: Chance,
    clock: Clock,
    /// Each client's transport ([`Workload::Clients`]); empty otherwise.
    protos: Vec<Proto>,
}

/// How the client of a query is chosen.
#[derive(Debug, Clone)]
enum Picker {
    RoundRobin,
    Uniform,
    Weighted(Alias),
}

/// How query names are made.
#[derive(Debug, Clone)]
enum Names {
    Unique(UniqueNames),
    Root(RootNames),
}

/// How query times advance.
#[derive(Debug, Clone, Copy)]
enum Clock {
    Fixed(u64),
    /// Exponential gaps with this mean, in nanoseconds.
    Exponential(f64),
    /// Each client on its own clock ([`Schedule`]): the time gives the client.
    PerClient,
}

impl Synth {
    /// Checks `config` and prepares the generator (the client weight table of the root-like
    /// workload is built here: O(clients) time and memory).
    pub fn new(config: SynthConfig) -> Result<Synth, SynthError> {
        let share = |name: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(SynthError::BadShare { name, value })
            }
        };
        let rate = |r: f64| {
            if r.is_finite() && r > 0.0 {
                Ok(1e9 / r)
            } else {
                Err(SynthError::BadRate(r))
            }
        };
        share("the EDNS share", config.edns_share)?;
        share("the DO share", config.do_share)?;
        share("the TCP share", config.tcp_share)?;
        if config.do_share > config.edns_share {
            return Err(SynthError::DoWithoutEdns {
                do_share: config.do_share,
                edns_share: config.edns_share,
            });
        }
        if config.count.is_none() && config.duration_ns.is_none() {
            return Err(SynthError::Unbounded);
        }
        let clients = Clients::new(
            config.client_net,
            config.client_prefix_len,
            config.clients,
            config.tcp_share,
            config.seed,
        )?;
        let server = match config.server {
            Some(s) if s.is_ipv4() != config.client_net.is_ipv4() => {
                return Err(SynthError::FamilyMismatch)
            }
            Some(s) => s,
            None if config.client_net.is_ipv4() => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53)), 53)
            }
            None => SocketAddr::new(
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x53)),
                53,
            ),
        };
        let mut qtypes = Vec::with_capacity(config.qtypes.len());
        let mut qtype_total = 0u64;
        for &(t, w) in &config.qtypes {
            if w > 0 {
                qtype_total += w as u64;
                qtypes.push((t, qtype_total));
            }
        }
        if qtypes.is_empty() {
            return Err(SynthError::NoQtypes);
        }
        let (picker, names, clock) = match &config.workload {
            Workload::Fixed { interval_ns } => {
                if *interval_ns == 0 {
                    return Err(SynthError::ZeroInterval);
                }
                check_fixed_times(&config, *interval_ns)?;
                (
                    Picker::RoundRobin,
                    Names::Unique(UniqueNames::new(&config.zone)?),
                    Clock::Fixed(*interval_ns),
                )
            }
            Workload::Poisson { rate_qps } => (
                Picker::Uniform,
                Names::Unique(UniqueNames::new(&config.zone)?),
                Clock::Exponential(rate(*rate_qps)?),
            ),
            Workload::Clients(mix) => {
                let (rates_qps, protos) = (&mix.rates_qps, &mix.protos);
                let n = config.clients as usize;
                if rates_qps.len() != n || protos.len() != n {
                    return Err(SynthError::ClientMix {
                        clients: config.clients,
                        rates: rates_qps.len(),
                        protos: protos.len(),
                    });
                }
                if let Some(&r) = rates_qps.iter().find(|r| !(r.is_finite() && **r >= 0.0)) {
                    return Err(SynthError::BadRate(r));
                }
                let cvs = &mix.gap_cvs;
                if !cvs.is_empty() && cvs.len() != n {
                    return Err(SynthError::BadGapCv(format!(
                        "{} values for {n} clients",
                        cvs.len()
                    )));
                }
                if let Some(cv) = cvs.iter().find(|c| !(0.01..=100.0).contains(*c)) {
                    return Err(SynthError::BadGapCv(cv.to_string()));
                }
                let total: f64 = rates_qps.iter().sum();
                let rate = rate(total)?;
                // All Poisson: one exponential clock at the sum of the rates, each query's
                // client drawn by its rate (the same queries as before gap variations existed).
                let clock = if cvs.iter().all(|&c| c == 1.0) {
                    Clock::Exponential(rate)
                } else {
                    Clock::PerClient
                };
                (
                    Picker::Weighted(Alias::new(rates_qps)),
                    Names::Unique(UniqueNames::new(&config.zone)?),
                    clock,
                )
            }
            Workload::RootLike(r) => {
                let mean = rate(r.rate_qps)?;
                share("the junk share", r.junk_share)?;
                if !(r.zipf_exponent.is_finite()
                    && r.zipf_exponent > 0.0
                    && r.zipf_exponent <= 16.0)
                {
                    return Err(SynthError::BadZipf("the exponent must be in (0, 16]"));
                }
                if !(r.zipf_offset.is_finite() && r.zipf_offset >= 0.0 && r.zipf_offset <= 1e9) {
                    return Err(SynthError::BadZipf("the offset must be in [0, 1e9]"));
                }
                let mut setup = rng::rng(mix64(config.seed ^ 0x7a69_7066_7365_7475));
                let weights =
                    zipf_weights(config.clients, r.zipf_exponent, r.zipf_offset, &mut setup);
                (
                    Picker::Weighted(Alias::new(&weights)),
                    Names::Root(RootNames::new(r.junk_share)),
                    Clock::Exponential(mean),
                )
            }
        };
        let protos = match &config.workload {
            Workload::Clients(mix) => mix.protos.clone(),
            _ => Vec::new(),
        };
        Ok(Synth {
            protos,
            edns: Chance::new(config.edns_share),
            dnssec_ok: Chance::new(config.do_share),
            config,
            clients,
            server,
            picker,
            names,
            qtypes,
            qtype_total,
            clock,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SynthConfig {
        &self.config
    }

    /// The server address queries go to (the configured one or the family's default).
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Generates the trace into `sink` (without calling `finish`).
    fn generate(&self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let cfg = &self.config;
        let mut rng = rng::rng(cfg.seed);
        let mut conns: Vec<u32> = if cfg.tcp_share > 0.0 || !self.protos.is_empty() {
            vec![0; self.clients.count() as usize]
        } else {
            Vec::new()
        };
        let mut next_conn = 1u32;
        let mut wire = Vec::with_capacity(512);
        let mut elapsed = 0f64;
        let mut schedule = match (&self.clock, &cfg.workload) {
            (Clock::PerClient, Workload::Clients(mix)) => {
                Some(Schedule::new(&mix.rates_qps, &mix.gap_cvs, &mut rng))
            }
            _ => None,
        };
        let mut scheduled_client = 0u32;
        for n in 0..cfg.count.unwrap_or(u64::MAX) {
            // The offset from the start; `None` past what a u64 holds.
            let offset = match self.clock {
                Clock::Fixed(interval) => n.checked_mul(interval),
                Clock::Exponential(mean) => {
                    if n > 0 {
                        elapsed += exponential(&mut rng, mean);
                    }
                    (elapsed < 1.8e19).then_some(elapsed as u64)
                }
                Clock::PerClient => {
                    let Some((at, client)) = schedule.as_mut().and_then(|s| s.pop(&mut rng)) else {
                        break;
                    };
                    elapsed = at;
                    scheduled_client = client;
                    (elapsed < 1.8e19).then_some(elapsed as u64)
                }
            };
            if let (Some(d), o) = (cfg.duration_ns, offset) {
                if o.is_none_or(|o| o >= d) {
                    break;
                }
            }
            let time_ns = offset
                .and_then(|o| i64::try_from(o).ok())
                .and_then(|o| cfg.start_ns.checked_add(o))
                .ok_or_else(|| {
                    let offset_s = match self.clock {
                        Clock::Fixed(interval) => n as f64 * interval as f64 / 1e9,
                        Clock::Exponential(_) | Clock::PerClient => elapsed / 1e9,
                    };
                    TraceError::Format(
                        SynthError::TimeOutOfRange {
                            query: n + 1,
                            offset_s,
                            start_s: cfg.start_ns as f64 / 1e9,
                        }
                        .to_string(),
                    )
                })?;
            let client = match &self.picker {
                _ if matches!(self.clock, Clock::PerClient) => scheduled_client,
                Picker::RoundRobin => (n % self.clients.count() as u64) as u32,
                Picker::Uniform => below(&mut rng, self.clients.count() as u64) as u32,
                Picker::Weighted(alias) => alias.sample(&mut rng),
            };
            let r = rng.next_u64();
            let id = r as u16;
            let stream = match self.protos.get(client as usize) {
                Some(&p) => (p != Proto::Udp).then_some(p),
                None => (!conns.is_empty() && self.clients.is_tcp(client)).then_some(Proto::Tcp),
            };
            let (proto, conn, port) = if let Some(proto) = stream {
                let slot = &mut conns[client as usize];
                if *slot == 0 {
                    *slot = next_conn;
                    next_conn += 1;
                }
                (proto, *slot as u64, self.clients.tcp_port(client))
            } else {
                (Proto::Udp, 0, (1024 + (r >> 16) % 64512) as u16)
            };
            let e = rng.next_u64();
            let edns = self
                .edns
                .hit(e)
                .then_some((cfg.udp_size, self.dnssec_ok.hit(e)));
            let q = below(&mut rng, self.qtype_total);
            let qtype = self.qtypes[self.qtypes.partition_point(|&(_, c)| c <= q)].0;

            encode::header(&mut wire, id, cfg.rd, edns.is_some());
            let suffix = match &self.names {
                Names::Unique(u) => u.write(&mut wire, n),
                Names::Root(r) => r.write(&mut wire, &mut rng),
            };
            encode::finish(&mut wire, suffix, qtype, edns);
            sink.record(&Record {
                time_ns,
                src: SocketAddr::new(self.clients.addr(client), port),
                dst: self.server,
                proto,
                conn,
                wire: &wire,
            })?;
        }
        Ok(())
    }
}

impl Source for Synth {
    /// Pushes the whole trace into `sink`, then finishes it; every run gives the same records.
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        drive(sink, |s| self.generate(s))
    }
}

/// Refuses a fixed-interval trace whose last query (by count or duration) would come at a time
/// that does not fit, before anything is written.
fn check_fixed_times(config: &SynthConfig, interval_ns: u64) -> Result<(), SynthError> {
    let by_count = config.count.map(|c| c.saturating_sub(1));
    let by_duration = config
        .duration_ns
        .map(|d| d.saturating_sub(1) / interval_ns);
    let last = match (by_count, by_duration) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return Ok(()),
    };
    let fits = (last as i128 * interval_ns as i128 + config.start_ns as i128) <= i64::MAX as i128;
    if fits {
        return Ok(());
    }
    Err(SynthError::TimeOutOfRange {
        query: last + 1,
        offset_s: last as f64 * interval_ns as f64 / 1e9,
        start_s: config.start_ns as f64 / 1e9,
    })
}
