//! A population fitted to a real trace: its transport mix, the distribution of its clients'
//! query rates, and the gaps between a client's queries.

use crate::file::{proto_to_name, Arrivals, Group, Population, RateDist};
use ldplayer_trace::{Proto, Record, Sink, SinkError};
/// Per-record counters: hashbrown's map with `inline-more`, so that a count is an inlined probe.
type FxHashMap<K, V> = hashbrown::HashMap<K, V, rustc_hash::FxBuildHasher>;

use serde::Serialize;
use std::net::IpAddr;

/// True when a DNS message has QR set (a response).
pub(crate) fn is_response(wire: &[u8]) -> bool {
    wire.len() >= 3 && wire[2] & 0x80 != 0
}

/// What one client did.
#[derive(Debug, Clone, Copy)]
struct Client {
    first_ns: i64,
    last_ns: i64,
    /// The sum of the squares of its gaps, s².
    gap_squares: f64,
    queries: u32,
    /// Queries per transport, in [`Proto::ALL`] order.
    by_proto: [u32; 5],
}

/// The 50th, 90th and 99th percentiles of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// What a trace's clients did, measured by [`Fitter`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FitStats {
    /// Distinct clients (sources of queries).
    pub clients: u64,
    /// Queries.
    pub queries: u64,
    /// From the first query to the last, seconds.
    pub duration_s: f64,
    /// Clients by their transport (the one most of their queries used), by name.
    pub clients_by_proto: Vec<(String, u64)>,
    /// Per-client query rates (queries over the trace's duration), queries per second.
    pub rate_qps: Option<Quantiles>,
    /// Gaps between consecutive queries of one client, seconds.
    pub gap_s: Option<Quantiles>,
    /// The log-normal fit of the rates: median and sigma of the natural log.
    pub lognormal_median_qps: Option<f64>,
    /// See [`lognormal_median_qps`](Self::lognormal_median_qps).
    pub lognormal_sigma: Option<f64>,
    /// How irregular a client's gaps are: the standard deviation of its gaps over their mean,
    /// over the clients with two gaps or more. 1 for Poisson arrivals; more for bursts and
    /// silences; less for regular clients.
    pub gap_cv: Option<f64>,
}

/// How far from 1 (Poisson) the gaps' coefficient of variation must be for `fit` to write
/// renewal arrivals instead of Poisson ones: a Poisson trace of a few hundred gaps measures
/// within a few hundredths of 1.
pub const RENEWAL_CV_MARGIN: f64 = 0.25;

/// A [`Sink`] that measures a trace's clients (queries only), for [`Fitter::stats`] and
/// [`Fitter::population`]. Memory grows with the clients, and with a sample of at most
/// `GAP_SAMPLE` gaps.
#[derive(Debug, Default)]
pub struct Fitter {
    clients: FxHashMap<IpAddr, Client>,
    queries: u64,
    first_ns: Option<i64>,
    last_ns: i64,
    gaps: Vec<f64>,
    gaps_seen: u64,
    /// The state of the reservoir sample's random numbers (xorshift64*, fixed seed: the same
    /// trace gives the same statistics).
    rng: u64,
}

/// Most gaps kept: beyond it, a uniform random sample of them (reservoir sampling).
pub const GAP_SAMPLE: usize = 1 << 16;

impl Sink for Fitter {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if is_response(record.wire) {
            return Ok(());
        }
        self.queries += 1;
        let t = record.time_ns;
        self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
        self.last_ns = self.last_ns.max(t);
        let proto = Proto::ALL
            .iter()
            .position(|p| *p == record.proto)
            .unwrap_or(0);
        match self.clients.get_mut(&record.src.ip()) {
            Some(c) => {
                let gap = (t - c.last_ns).max(0) as f64 / 1e9;
                c.last_ns = t;
                c.gap_squares += gap * gap;
                c.queries = c.queries.saturating_add(1);
                c.by_proto[proto] = c.by_proto[proto].saturating_add(1);
                self.sample_gap(gap);
            }
            None => {
                let mut by_proto = [0; 5];
                by_proto[proto] = 1;
                self.clients.insert(
                    record.src.ip(),
                    Client {
                        queries: 1,
                        first_ns: t,
                        last_ns: t,
                        gap_squares: 0.0,
                        by_proto,
                    },
                );
            }
        }
        Ok(())
    }
}

/// The `q` quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn quantiles(mut v: Vec<f64>) -> Option<Quantiles> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(Quantiles {
        p50: quantile(&v, 0.5),
        p90: quantile(&v, 0.9),
        p99: quantile(&v, 0.99),
    })
}

impl Fitter {
    /// A fitter that has seen nothing yet.
    pub fn new() -> Fitter {
        Fitter::default()
    }

    /// Keeps `gap` in the sample: all of the first [`GAP_SAMPLE`], then each with the chance
    /// that keeps the sample uniform (Algorithm R).
    fn sample_gap(&mut self, gap: f64) {
        self.gaps_seen += 1;
        if self.gaps.len() < GAP_SAMPLE {
            self.gaps.push(gap);
            return;
        }
        if self.rng == 0 {
            self.rng = 0x2545_f491_4f6c_dd1d;
        }
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let j = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.gaps_seen;
        if let Some(slot) = self.gaps.get_mut(j as usize) {
            *slot = gap;
        }
    }

    /// The trace's duration in seconds (at least a millisecond, so one-instant traces have
    /// finite rates).
    fn duration_s(&self) -> f64 {
        let d = (self.last_ns - self.first_ns.unwrap_or(self.last_ns)) as f64 / 1e9;
        d.max(1e-3)
    }

    /// Each client's transport: the one most of its queries used.
    fn client_protos(&self) -> impl Iterator<Item = Proto> + '_ {
        self.clients.values().map(|c| {
            let i = (0..5).max_by_key(|&i| (c.by_proto[i], 5 - i)).unwrap_or(0);
            Proto::ALL[i]
        })
    }

    /// What the trace's clients did.
    pub fn stats(&self) -> FitStats {
        let duration = self.duration_s();
        let rates: Vec<f64> = self
            .clients
            .values()
            .map(|c| f64::from(c.queries) / duration)
            .collect();
        let logs: Vec<f64> = rates.iter().map(|r| r.ln()).collect();
        let n = logs.len() as f64;
        let (median, sigma) = if logs.is_empty() {
            (None, None)
        } else {
            let mean = logs.iter().sum::<f64>() / n;
            let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n;
            (Some(mean.exp()), Some(var.sqrt()))
        };
        let mut by_proto = [0u64; 5];
        for p in self.client_protos() {
            by_proto[Proto::ALL.iter().position(|x| *x == p).unwrap_or(0)] += 1;
        }
        FitStats {
            clients: self.clients.len() as u64,
            queries: self.queries,
            duration_s: duration,
            clients_by_proto: Proto::ALL
                .iter()
                .zip(by_proto)
                .filter(|(_, n)| *n > 0)
                .map(|(p, n)| (proto_to_name(*p).to_string(), n))
                .collect(),
            rate_qps: quantiles(rates),
            gap_s: quantiles(self.gaps.clone()),
            lognormal_median_qps: median,
            lognormal_sigma: sigma,
            gap_cv: self.gap_cv(),
        }
    }

    /// The pooled coefficient of variation of the clients' gaps, each gap taken over its
    /// client's mean gap (so that fast and slow clients compare); `None` without a client of
    /// two gaps or more.
    fn gap_cv(&self) -> Option<f64> {
        let (mut ratio_squares, mut gaps) = (0.0f64, 0u64);
        for c in self.clients.values().filter(|c| c.queries >= 3) {
            let n = f64::from(c.queries - 1);
            let mean = (c.last_ns - c.first_ns) as f64 / 1e9 / n;
            if mean <= 0.0 {
                continue;
            }
            ratio_squares += c.gap_squares / (mean * mean);
            gaps += u64::from(c.queries - 1);
        }
        (gaps > 0).then(|| (ratio_squares / gaps as f64 - 1.0).max(0.0).sqrt())
    }

    /// A population resembling the trace: one group per transport its clients used, with
    /// their share of the clients, log-normal rates fitted to the trace's per-client rates,
    /// and as many clients. The arrivals are Poisson, unless the clients' gaps are far from it
    /// ([`FitStats::gap_cv`] more than `RENEWAL_CV_MARGIN` from 1): then renewal arrivals
    /// with the measured gap variation. `None` for a trace without queries.
    pub fn population(&self, seed: u64) -> Option<Population> {
        let stats = self.stats();
        let (median, sigma) = (stats.lognormal_median_qps?, stats.lognormal_sigma?);
        let rate = RateDist::Lognormal { median, sigma };
        let arrivals = match stats.gap_cv {
            Some(cv) if (cv - 1.0).abs() > RENEWAL_CV_MARGIN => Arrivals::Renewal {
                rate,
                gap_cv: cv.clamp(0.01, 100.0),
            },
            _ => Arrivals::Poisson { rate },
        };
        let total = stats.clients as f64;
        let mut groups: Vec<Group> = stats
            .clients_by_proto
            .iter()
            .map(|(name, n)| Group {
                name: name.clone(),
                share: *n as f64 / total,
                proto: crate::file::proto_from_name(name).unwrap_or(Proto::Udp),
                idle_timeout: None,
                resumption: None,
                zero_rtt: None,
                doh_method: None,
                stack: None,
                timeout: None,
                retries: None,
                arrivals: arrivals.clone(),
            })
            .collect();
        // Shares that add up to 1 exactly, whatever the rounding.
        let rest: f64 = groups.iter().skip(1).map(|g| g.share).sum();
        if let Some(first) = groups.first_mut() {
            first.share = 1.0 - rest;
        }
        Some(Population {
            seed,
            clients: Some(stats.clients),
            groups,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn query(id: u16) -> Vec<u8> {
        let mut q = vec![0u8; 12];
        q[..2].copy_from_slice(&id.to_be_bytes());
        q
    }

    #[test]
    fn measures_clients_rates_gaps_and_the_transport_mix() {
        let mut f = Fitter::new();
        let q = query(1);
        let server: SocketAddr = "192.0.2.53:53".parse().unwrap();
        // Client 1: 10 queries over UDP, 1 s apart; client 2: 2 over TCP; client 3: 1 over TLS.
        let feed = |f: &mut Fitter, src: &str, t: i64, proto: Proto| {
            let r = Record {
                time_ns: t,
                src: src.parse().unwrap(),
                dst: server,
                proto,
                conn: 0,
                wire: &q,
            };
            f.record(&r).unwrap();
        };
        for i in 0..10 {
            feed(&mut f, "10.0.0.1:1000", i * 1_000_000_000, Proto::Udp);
        }
        feed(&mut f, "10.0.0.2:1000", 0, Proto::Tcp);
        feed(&mut f, "10.0.0.2:1001", 9_000_000_000, Proto::Tcp);
        feed(&mut f, "10.0.0.3:1000", 4_000_000_000, Proto::Tls);
        let mut response = query(2);
        response[2] = 0x80;
        let r = Record {
            time_ns: 5,
            src: server,
            dst: "10.0.0.1:1000".parse().unwrap(),
            proto: Proto::Udp,
            conn: 0,
            wire: &response,
        };
        f.record(&r).unwrap();
        let s = f.stats();
        assert_eq!((s.clients, s.queries), (3, 13));
        assert!((s.duration_s - 9.0).abs() < 1e-9);
        assert_eq!(
            s.clients_by_proto,
            [("udp".into(), 1), ("tcp".into(), 1), ("tls".into(), 1)]
        );
        let rate = s.rate_qps.unwrap();
        assert!((rate.p50 - 2.0 / 9.0).abs() < 1e-9, "{rate:?}");
        assert!((rate.p99 - 10.0 / 9.0).abs() < 1e-9, "{rate:?}");
        let gap = s.gap_s.unwrap();
        assert!(
            (gap.p50 - 1.0).abs() < 1e-9 && (gap.p99 - 9.0).abs() < 1e-9,
            "{gap:?}"
        );
        let p = f.population(3).unwrap();
        p.check().unwrap();
        assert_eq!(p.clients, Some(3));
        assert_eq!(p.groups.len(), 3);
        assert_eq!(p.groups[2].proto, Proto::Tls);
        let Some(&RateDist::Lognormal { median, .. }) = p.groups[0].arrivals.rate() else {
            panic!("a log-normal fit");
        };
        // The geometric mean of 10/9, 2/9 and 1/9 queries per second.
        assert!((median - (20.0f64).cbrt() / 9.0).abs() < 1e-9, "{median}");
        assert!(Fitter::new().population(0).is_none());
    }

    /// One client per trace, its queries at the gaps given (seconds).
    fn fitted(gaps: impl IntoIterator<Item = f64>) -> Fitter {
        let mut f = Fitter::new();
        let src: SocketAddr = "192.0.2.1:5353".parse().unwrap();
        let dst: SocketAddr = "192.0.2.53:53".parse().unwrap();
        let wire = query(1);
        let mut t = 0.0;
        for gap in std::iter::once(0.0).chain(gaps) {
            t += gap;
            let r = Record {
                time_ns: (t * 1e9) as i64,
                src,
                dst,
                proto: Proto::Udp,
                conn: 0,
                wire: &wire,
            };
            f.record(&r).unwrap();
        }
        f
    }

    /// A client whose queries come in bursts (a second apart) between long silences is fitted
    /// with renewal arrivals of its gap variation; a Poisson client keeps Poisson arrivals.
    #[test]
    fn bursty_clients_get_renewal_arrivals_poisson_ones_poisson() {
        // Bursts of 20 queries 1 s apart, then 120 s of silence, ten times.
        let bursty: Vec<f64> = (0..10)
            .flat_map(|_| std::iter::repeat_n(1.0, 19).chain([120.0]))
            .collect();
        let f = fitted(bursty.iter().copied());
        let mean = bursty.iter().sum::<f64>() / bursty.len() as f64;
        let var =
            bursty.iter().map(|g| (g / mean - 1.0).powi(2)).sum::<f64>() / bursty.len() as f64;
        let cv = f.stats().gap_cv.unwrap();
        assert!(
            (cv - var.sqrt()).abs() < 1e-6,
            "{cv} against {}",
            var.sqrt()
        );
        assert!(cv > 2.0, "{cv}");
        let p = f.population(1).unwrap();
        p.check().unwrap();
        assert!(
            matches!(p.groups[0].arrivals, Arrivals::Renewal { gap_cv, .. } if (gap_cv - cv).abs() < 1e-9),
            "{:?}",
            p.groups[0].arrivals
        );
        // Exponential gaps (a fixed sequence of quantiles): Poisson.
        let n = 400;
        let poisson = (1..=n).map(|i| -(1.0 - (i as f64 - 0.5) / n as f64).ln());
        let f = fitted(poisson);
        let cv = f.stats().gap_cv.unwrap();
        assert!((cv - 1.0).abs() < 0.1, "{cv}");
        assert!(matches!(
            f.population(1).unwrap().groups[0].arrivals,
            Arrivals::Poisson { .. }
        ));
    }
}
