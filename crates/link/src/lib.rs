//! A userspace link emulator: packets read from one TUN device are delayed, jittered, lost
//! and rate-limited as configured, then written to the other, each direction on its own.
//!
//! It stands in for `netem`, which many kernels (this project's machines among them) lack.
//! An experiment puts the clients in one network namespace and the server in another; the
//! only path between them is a pair of TUN devices, one in each namespace, whose descriptors
//! are held by the process running the emulator ([`Tun::create`] in the host namespace, then
//! [`Tun::move_to_netns_of`]). Each namespace routes the other side's addresses through its
//! device; the emulator ([`Link::start`]) carries every IP packet (IPv4 or IPv6, any
//! protocol) across.
//!
//! # What is emulated
//! Per direction ([`LinkParams`]), in this order for each packet read:
//! 1. **Queue**: with a rate limit, packets wait for the serialiser in a queue bounded in
//!    bytes; one that would overflow it is dropped (tail drop, `dropped_queue`). An idle link
//!    always admits a packet.
//! 2. **Serialisation**: a packet of `n` bytes occupies the wire for `n·8/rate` seconds after
//!    the previous one leaves it (IP bytes only: no link-layer framing is added).
//! 3. **Loss** on the wire ([`LossModel`]): independent (Bernoulli) or bursty
//!    (Gilbert–Elliott), `dropped_loss`.
//! 4. **Propagation**: the base `delay` plus a jitter drawn uniformly in `[0, jitter]`.
//!
//! # Per-client round trips
//! The clients of an experiment share one namespace and one link, yet real clients are not
//! all equally far from the server. With [`LinkOptions::client_delay`] (an [`AddressDelay`]:
//! a function from a client's address to its extra round-trip time) and
//! [`LinkOptions::clients_on`] (the side the clients are on), each packet's client is read
//! from its IP header (the source address on the way from the clients, the destination on
//! the way back) and half the client's extra round trip is added to the propagation delay in
//! each direction, after the shared rate limiter: a client's round trip is the link's plus
//! its own extra. The extra of each address is asked once and cached. A packet that is not
//! IP, or too short for its addresses, gets no extra delay.
//!
//! # Ordering
//! Without `reorder`, packets leave in the order they came: a packet whose jitter would make
//! it overtake its predecessor leaves right after it instead (so jitter is applied to the
//! gaps, as on a real FIFO path, and the mean delay grows slightly above `delay + jitter/2`).
//! With `reorder`, each packet leaves at its own time. With per-client delays, the order kept
//! without `reorder` is each client's: packets of one client never overtake each other, but
//! a near client's packet overtakes a far client's sent just before it, as on separate paths.
//!
//! # Clock and precision
//! Times are `CLOCK_MONOTONIC` nanoseconds. A packet's arrival is when the emulator reads it
//! (microseconds after the sender's write). Each direction has its own thread, which sleeps in
//! `ppoll` until its next departure or input, with the timer slack set to 1 ns; by default it
//! never spins ([`Timing`]), so a departure is late by the kernel's wake-up latency (tens of
//! µs on a virtual machine; milliseconds now and then when the host takes the CPU away), never
//! early. Each direction counts its late departures and their total lateness, so a run can
//! show how faithful its link was.
//!
//! # Not emulated
//! No duplication, corruption or MTU changes; no link-layer framing overhead; the TUN
//! device's own transmit queue (500 packets by default) drops silently in the kernel, before
//! the emulator sees the packet, if the emulator falls behind. Every decision is drawn from a
//! ChaCha stream seeded by the caller, so the same traffic meets the same fate, but real
//! traffic's timing varies from run to run.
//!
//! # Example
//! ```no_run
//! use std::time::Duration;
//! use ldplayer_link::{Link, LinkParams, LossModel, Tun};
//! # fn main() -> Result<(), ldplayer_link::LinkError> {
//! # let (client_pid, server_pid) = (1, 2);
//! // In the host namespace; `client_pid` and `server_pid` live in the two namespaces.
//! let client_side = Tun::create("ldpc0")?;
//! let server_side = Tun::create("ldps0")?;
//! client_side.move_to_netns_of(client_pid)?;
//! server_side.move_to_netns_of(server_pid)?;
//! // Then, in each namespace (`nsenter -t PID -n ip ...`): addresses, `ip link set ldpc0 up`
//! // and routes. IPv4: `ip addr add 10.99.0.1 peer 10.99.0.2 dev ldpc0`. IPv6: an IPv6
//! // `peer` routes the local address, not the peer's, so `ip -6 addr add fd99::1 dev ldpc0
//! // nodad` and `ip -6 route add fd99::2 dev ldpc0`.
//! let each_way = LinkParams {
//!     delay: Duration::from_millis(10),
//!     loss: LossModel::Bernoulli { p: 0.02 },
//!     ..LinkParams::default()
//! };
//! let link = Link::start(client_side, server_side, each_way.clone(), each_way, 1)?;
//! let per_second = link.counters(); // a snapshot, as often as wanted
//! let totals = link.stop(); // both devices vanish
//! # let _ = (per_second, totals);
//! # Ok(())
//! # }
//! ```
//!
//! # Layers
//! - [`impair`]: the model without I/O ([`Impairment::offer`]: drop, or the departure time).
//! - [`client_delay`]: per-client extra delays and where a packet names its client.
//! - [`delay_line`]: the held packets in departure order, bounded in bytes.
//! - [`tun`]: TUN devices.
//! - [`emulator`]: the two threads, the counters and stopping.

pub mod client_delay;
pub mod counters;
pub mod delay_line;
pub mod emulator;
pub mod impair;
pub mod params;
pub mod tun;

pub use client_delay::{AddressDelay, Endpoint, Side};
pub use counters::{DirectionCounters, LinkCounters};
pub use emulator::{Link, LinkOptions, RunningLink, Timing, LATE_THRESHOLD};
pub use impair::{DropReason, Impairment, Verdict};
pub use params::{LinkParams, LossModel};
pub use tun::Tun;

/// What can go wrong setting up or running the link.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// A [`LinkParams`] value is out of range.
    #[error("invalid link parameters: {0}")]
    InvalidParams(String),
    /// A TUN device name the kernel would refuse.
    #[error("invalid TUN device name {0:?}: {1}")]
    InvalidName(String, String),
    /// A system call failed.
    #[error("{0}: {1}")]
    Os(&'static str, #[source] std::io::Error),
    /// A program could not be started.
    #[error("could not run {0}: {1}")]
    Spawn(&'static str, #[source] std::io::Error),
    /// A program failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it said on standard error.
        stderr: String,
    },
    /// A direction thread panicked (a bug).
    #[error("a link direction thread panicked")]
    ThreadPanicked,
}
