//! The link's model without any I/O: given when a packet arrived and how long it is, decide
//! whether it is dropped (and why) or when it leaves. Time is plain nanoseconds on any
//! monotonic clock, randomness a seeded ChaCha stream, so a run is reproducible and testable.

use std::net::IpAddr;

use chacha20::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use crate::client_delay::{AddressDelay, ClientPaths};
use crate::params::{LinkParams, LossModel};

/// Why a packet did not get through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// Lost on the wire by the loss model.
    Loss,
    /// The rate limiter's queue (or the emulator's memory bound) was full: tail drop.
    Queue,
}

/// What happens to one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The packet never arrives.
    Drop(DropReason),
    /// The packet leaves the link at this time (nanoseconds, same clock as the arrival).
    Deliver {
        /// Departure time in nanoseconds.
        at_ns: u64,
    },
}

/// The state of one direction of the link: the rate limiter's backlog, the loss model's
/// state, the last departure (for FIFO order), the clients' extra delays if any and the
/// random stream.
#[derive(Debug)]
pub struct Impairment {
    delay_ns: u64,
    jitter_ns: u64,
    reorder: bool,
    loss: LossModel,
    rate_bps: Option<u64>,
    queue_limit_bytes: u64,
    /// When the serialiser finishes the last admitted packet.
    busy_until_ns: u64,
    /// The latest departure handed out (FIFO order without `reorder`).
    last_departure_ns: u64,
    /// Gilbert–Elliott: whether the chain is in the bad state.
    bad_state: bool,
    /// Per-client extra delays and, without `reorder`, each client's last departure.
    clients: Option<ClientPaths>,
    rng: ChaCha8Rng,
}

impl Impairment {
    /// A direction with `params` (assumed validated) whose random stream is `stream` of the
    /// ChaCha generator seeded with `seed`: two directions of one link share the seed and
    /// differ by stream, so neither's draws depend on the other's traffic.
    pub fn new(params: &LinkParams, seed: u64, stream: u64) -> Impairment {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Impairment {
            delay_ns: duration_ns(params.delay),
            jitter_ns: duration_ns(params.jitter),
            reorder: params.reorder,
            loss: params.loss,
            rate_bps: params.rate_bps,
            queue_limit_bytes: u64::try_from(params.queue_limit_bytes).unwrap_or(u64::MAX),
            busy_until_ns: 0,
            last_departure_ns: 0,
            bad_state: false,
            clients: None,
            rng,
        }
    }

    /// This direction with each client's extra delay: half the round trip `delay` gives its
    /// address, added to the propagation delay of its packets. Without `reorder`, packets
    /// then keep their order per client instead of overall: a near client's packet may
    /// overtake a far client's.
    pub fn with_client_delay(mut self, delay: AddressDelay) -> Impairment {
        self.clients = Some(ClientPaths::new(delay));
        self
    }

    /// Whether this direction may hand out departures out of arrival order (`reorder` in
    /// its parameters).
    pub fn reorders(&self) -> bool {
        self.reorder
    }

    /// Whether departures may come out of arrival order, through `reorder` or through
    /// clients' different delays: the held packets then need a heap, not a queue.
    pub fn may_depart_out_of_order(&self) -> bool {
        self.reorder || self.clients.is_some()
    }

    /// Decides the fate of a packet of `len` bytes arriving at `now_ns`. Arrival times must
    /// not go backwards (a monotonic clock guarantees it).
    pub fn offer(&mut self, now_ns: u64, len: usize) -> Verdict {
        self.offer_from(now_ns, len, None)
    }

    /// [`Impairment::offer`] for a packet of `client` (`None` when it has none, or it is
    /// unknown): with [`Impairment::with_client_delay`], the client's extra delay is added,
    /// and without `reorder` the packet never leaves before the client's previous one.
    /// Without client delays the client is ignored.
    pub fn offer_from(&mut self, now_ns: u64, len: usize, client: Option<IpAddr>) -> Verdict {
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        let on_wire_ns = match self.rate_bps {
            None => now_ns,
            Some(rate) => {
                let backlog = self.backlog_bytes(now_ns, rate);
                if backlog > 0 && backlog.saturating_add(len) > self.queue_limit_bytes {
                    return Verdict::Drop(DropReason::Queue);
                }
                let start = self.busy_until_ns.max(now_ns);
                self.busy_until_ns = start.saturating_add(serialisation_ns(len, rate));
                self.busy_until_ns
            }
        };
        if self.lost() {
            return Verdict::Drop(DropReason::Loss);
        }
        let jitter = if self.jitter_ns == 0 {
            0
        } else {
            self.rng.random_range(0..=self.jitter_ns)
        };
        let mut at_ns = on_wire_ns
            .saturating_add(self.delay_ns)
            .saturating_add(jitter);
        match &mut self.clients {
            None if !self.reorder => at_ns = at_ns.max(self.last_departure_ns),
            None => {}
            Some(clients) => {
                let client = clients.client(client, now_ns);
                at_ns = at_ns.saturating_add(client.extra_ns);
                if !self.reorder {
                    at_ns = at_ns.max(client.last_departure_ns);
                }
                client.last_departure_ns = client.last_departure_ns.max(at_ns);
            }
        }
        self.last_departure_ns = self.last_departure_ns.max(at_ns);
        Verdict::Deliver { at_ns }
    }

    /// Bytes admitted but not yet serialised at `now_ns`, counting the packet on the wire by
    /// the part it has left (a fluid view of the serialiser), rounded up.
    fn backlog_bytes(&self, now_ns: u64, rate_bps: u64) -> u64 {
        let left_ns = u128::from(self.busy_until_ns.saturating_sub(now_ns));
        let bits = (left_ns * u128::from(rate_bps)).div_ceil(1_000_000_000);
        u64::try_from(bits.div_ceil(8)).unwrap_or(u64::MAX)
    }

    /// True with probability `p` (never for 0 or NaN, always for 1 or more): unlike
    /// `Rng::random_bool` it cannot panic on a probability that escaped validation.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random::<f64>() < p
    }

    /// Draws whether the next packet on the wire is lost, moving the loss model's state.
    fn lost(&mut self) -> bool {
        match self.loss {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.chance(p),
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let lost = self.chance(if self.bad_state { loss_bad } else { loss_good });
                let flip = if self.bad_state {
                    p_bad_to_good
                } else {
                    p_good_to_bad
                };
                if self.chance(flip) {
                    self.bad_state = !self.bad_state;
                }
                lost
            }
        }
    }
}

/// Nanoseconds needed to put `len` bytes on a wire of `rate_bps`, rounded up.
pub fn serialisation_ns(len: u64, rate_bps: u64) -> u64 {
    let ns = (u128::from(len) * 8 * 1_000_000_000).div_ceil(u128::from(rate_bps.max(1)));
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// A duration in nanoseconds, saturating (validated parameters are far below the limit).
fn duration_ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
