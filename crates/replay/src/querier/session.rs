//! The one seam between the querier and every transport: [`Transport`].
//!
//! The querier schedules: it takes the queries of its batches in order, keeps them to their
//! time (or to the `--fast` window), gives each a slot of the in-flight table
//! ([`super::inflight::Inflight`]) and hands it to the session set of its transport. A session
//! set owns that transport's sessions and everything that touches the system for them:
//!
//! - [`super::udp::UdpSessions`]: one connected socket per client, least recently used closed
//!   past the limit, sends in `sendmmsg`, answers by `recvmmsg`, the kernel's stamps;
//! - [`super::stream::StreamSessions`]: one TCP connection per client and transport, whose
//!   protocol (TCP, TLS, DoH, lean or reference) is a [`super::transport::StreamProtocol`];
//! - [`super::doq_glue::QuicSessions`]: the threads that run the QUIC connections (DoQ and DoH
//!   over HTTP/3, lean or reference).
//!
//! Each reacts to the readiness of its own poll tokens, times its queries out (UDP sends them
//! again first), closes its idle sessions and closes all at the end. Whatever ends a query goes
//! through the in-flight table into the [`Sink`], both handed in a [`Ctx`] by `&mut`: no set
//! sees the querier, nor another set (a UDP answer truncated goes back to the querier in
//! [`Ctx::retry_tcp`], which hands it to the stream sessions).

use super::clients::Clients;
use super::inflight::Inflight;
use super::sink::Sink;
use crate::config::ReplayConfig;
use mio::Registry;

/// Poll tokens of one transport: each has this many from its first on.
pub(super) const TOKEN_SPAN: usize = 1 << 40;

/// What a transport is handed with each call: the querier's shared state, borrowed.
pub(super) struct Ctx<'a> {
    /// The replay's settings.
    pub config: &'a ReplayConfig,
    /// Where sockets are registered for readiness.
    pub registry: &'a Registry,
    /// The queries in flight.
    pub inflight: &'a mut Inflight,
    /// Results and counters.
    pub sink: &'a mut Sink,
    /// The clients and their profiles.
    pub clients: &'a mut Clients,
    /// The replay is stopping: nothing is sent again.
    pub stopping: bool,
    /// Queries whose UDP answer came truncated, to send again over TCP
    /// ([`ReplayConfig::retry_truncated_over_tcp`]).
    pub retry_tcp: &'a mut Vec<u32>,
}

impl Ctx<'_> {
    /// When a query of `slot` sent at `now` times out.
    pub(super) fn deadline_of(&self, slot: u32, now: i64) -> i64 {
        let client = self.inflight.slots[slot as usize].client;
        // A timeout past the clock's end (`--timeout 1e12`) waits until then.
        now.saturating_add(self.clients.profile_of(client).timeout_ns)
    }
}

/// What a poll said of one token.
#[derive(Clone, Copy, Debug)]
pub(super) struct Readiness {
    /// Readable, or closed for reading.
    pub readable: bool,
    pub writable: bool,
    /// An error event (often the kernel's send stamps on the error queue).
    pub error: bool,
}

/// A transport's sessions, as the querier sees them.
pub(super) trait Transport {
    /// Takes the query in `slot` (its client known, its protocol set): sends it, or queues it
    /// until [`flush`](Self::flush) or its session is ready. A query that cannot go fails.
    fn submit(&mut self, slot: u32, ctx: &mut Ctx<'_>);

    /// Sends what [`submit`](Self::submit) queued: the querier calls it after the queries due
    /// together, so that they share system calls.
    fn flush(&mut self, ctx: &mut Ctx<'_>);

    /// Whether `token` of the querier's poll is one of this transport's.
    fn owns(&self, token: usize) -> bool;

    /// Reacts to the readiness of one of its tokens.
    fn ready(&mut self, token: usize, ready: Readiness, ctx: &mut Ctx<'_>);

    /// Takes what the transport's own threads said since (after every poll).
    fn events(&mut self, ctx: &mut Ctx<'_>) {
        let _ = ctx;
    }

    /// The deadline of its query in `slot` passed: sends it again, or ends it
    /// ([`Inflight::time_out`]).
    fn expired(&mut self, slot: u32, ctx: &mut Ctx<'_>);

    /// Periodic work at `now`: idle sessions closed.
    fn housekeeping(&mut self, now: i64, ctx: &mut Ctx<'_>) {
        let _ = (now, ctx);
    }

    /// Closes every session; the queries still in flight on them fail.
    fn close(&mut self, ctx: &mut Ctx<'_>);
}
