//! Clients that each send on their own clock: a renewal process per client, with log-normal
//! gaps of a chosen variation (or exponential ones, Poisson, at a variation of 1), merged in
//! time order. A population fitted to a bursty trace (a client's gaps: p50 1 s, p99 42 s)
//! keeps its bursts this way, where Poisson arrivals would smooth them out.
//!
//! The next query of every client waits in a heap: O(clients) memory and O(log clients) per
//! query.

use crate::rng::{exponential, unit_open, Rng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How one client's gaps are drawn.
#[derive(Debug, Clone, Copy)]
enum Gap {
    /// Exponential with this mean (ns): Poisson arrivals.
    Exponential(f64),
    /// Log-normal: `exp(mu + sigma * z)` ns.
    Lognormal { mu: f64, sigma: f64 },
}

impl Gap {
    /// The gaps of a client sending `rate_qps` with variation `cv`; `None` for a silent one.
    fn new(rate_qps: f64, cv: f64) -> Option<Gap> {
        if rate_qps <= 0.0 {
            return None;
        }
        let mean = 1e9 / rate_qps;
        if cv == 1.0 {
            return Some(Gap::Exponential(mean));
        }
        // A log-normal's variation is sqrt(exp(sigma²) - 1).
        let sigma2 = libm::log(1.0 + cv * cv);
        Some(Gap::Lognormal {
            mu: libm::log(mean) - sigma2 / 2.0,
            sigma: sigma2.sqrt(),
        })
    }

    fn draw(self, rng: &mut Rng) -> f64 {
        match self {
            Gap::Exponential(mean) => exponential(rng, mean),
            Gap::Lognormal { mu, sigma } => libm::exp(mu + sigma * normal(rng)),
        }
    }
}

/// A standard normal number by Marsaglia's polar method: no trigonometry, so only the
/// portable `ln`, `exp` and the correctly rounded `sqrt` decide it.
fn normal(rng: &mut Rng) -> f64 {
    loop {
        let u = 2.0 * unit_open(rng) - 1.0;
        let v = 2.0 * unit_open(rng) - 1.0;
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * libm::log(s) / s).sqrt();
        }
    }
}

/// The merged schedule of every client's queries.
#[derive(Debug)]
pub(crate) struct Schedule {
    gaps: Vec<Option<Gap>>,
    /// (next time in ns as ordered bits, client).
    next: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Schedule {
    /// Every client's first query: a uniform share of one of its gaps after the start (a
    /// client caught in the middle of a gap).
    pub(crate) fn new(rates_qps: &[f64], gap_cvs: &[f64], rng: &mut Rng) -> Schedule {
        let gaps: Vec<Option<Gap>> = rates_qps
            .iter()
            .enumerate()
            .map(|(i, &r)| Gap::new(r, gap_cvs.get(i).copied().unwrap_or(1.0)))
            .collect();
        let mut next = BinaryHeap::with_capacity(gaps.len());
        for (client, gap) in gaps.iter().enumerate() {
            if let Some(gap) = gap {
                let first = unit_open(rng) * gap.draw(rng);
                next.push(Reverse((first.to_bits(), client as u32)));
            }
        }
        Schedule { gaps, next }
    }

    /// The next query: its time (ns after the start) and client; `None` when every client is
    /// silent.
    pub(crate) fn pop(&mut self, rng: &mut Rng) -> Option<(f64, u32)> {
        let Reverse((bits, client)) = self.next.pop()?;
        let at = f64::from_bits(bits);
        if let Some(Some(gap)) = self.gaps.get(client as usize) {
            let after = at + gap.draw(rng).max(1.0);
            self.next.push(Reverse((after.to_bits(), client)));
        }
        Some((at, client))
    }
}
