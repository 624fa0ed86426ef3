//! The querier's side of DNS over QUIC and DNS over HTTPS on HTTP/3 ([`QuicSessions`], one of
//! its [`Transport`]s): queries handed to the QUIC thread of the client's stack ([`super::doq`],
//! or the reference one, `crate::reference::quic`), their events turned into sends, answers and
//! failures of the in-flight table.

use super::answer;
use super::doq::{Doq, DoqEvent, DoqQuery, DoqSetup, H3Query};
use super::session::{Ctx, Readiness, Transport};
use super::stream_conn::doh_authority;
use crate::cause::Cause;
use crate::clock;
use crate::config::{DohMethod, Stack};
use crate::tls::TlsBase;
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_trace::Proto;
use std::sync::Arc;

/// The QUIC threads of one querier, each started with its stack's first query.
pub(super) struct QuicSessions {
    /// The lean stack's thread.
    lean: Option<Doq>,
    /// The reference stack's thread (quinn).
    reference: Option<Doq>,
    /// The replay's TLS settings.
    tls: Option<Arc<TlsBase>>,
    /// Wakes the querier's poll when a thread has events.
    waker: Arc<mio::Waker>,
}

impl QuicSessions {
    /// No thread yet; theirs will wake the querier through `waker`.
    pub(super) fn new(tls: Option<Arc<TlsBase>>, waker: Arc<mio::Waker>) -> QuicSessions {
        QuicSessions {
            lean: None,
            reference: None,
            tls,
            waker,
        }
    }

    /// Starts the thread of `stack`.
    fn start(&mut self, stack: Stack, base: &TlsBase, ctx: &Ctx<'_>) -> std::io::Result<()> {
        let server = ctx.config.server;
        let https_server = ctx.config.https_server.unwrap_or(server);
        let setup = DoqSetup {
            server: ctx.config.quic_server.unwrap_or(server),
            https_server,
            authority: doh_authority(base, https_server).to_string(),
            server_name: base.server_name.to_str().into_owned(),
            query_timeout: ctx
                .clients
                .longest_timeout_ns()
                .map_or(ctx.config.timeout, |ns| {
                    std::time::Duration::from_nanos(ns.max(0) as u64)
                }),
            verifier: base.verifier.clone(),
            key_update_packets: ctx.config.quic_key_update_packets,
            kernel_send_times: ctx.config.kernel_send_times,
        };
        let waker = self.waker.clone();
        match stack {
            Stack::Lean => Doq::start(setup, waker).map(|d| self.lean = Some(d)),
            Stack::Reference => {
                crate::reference::quic::start(setup, waker).map(|d| self.reference = Some(d))
            }
        }
    }
}

impl Transport for QuicSessions {
    /// Hands the query to the QUIC thread of its client's stack (started with the first one).
    fn submit(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        let Some(base) = self.tls.clone() else {
            ctx.inflight
                .fail(slot, ErrorKind::Tls, &Cause::NoTlsConfig, ctx.sink);
            return;
        };
        let stack = {
            let client = ctx.inflight.slots[slot as usize].client;
            ctx.clients.profile_of(client).stack
        };
        let running = match stack {
            Stack::Lean => self.lean.is_some(),
            Stack::Reference => self.reference.is_some(),
        };
        if !running {
            if let Err(e) = self.start(stack, &base, ctx) {
                ctx.inflight
                    .fail(slot, ErrorKind::Send, &Cause::Io(e), ctx.sink);
                return;
            }
        }
        let s = &ctx.inflight.slots[slot as usize];
        let (client, gen) = (s.client, s.gen);
        let profile = ctx.clients.profile_of(client);
        let (resume, zero_rtt, idle_timeout) =
            (profile.resume, profile.zero_rtt, profile.idle_timeout);
        // DoH over HTTP/3 goes this way too, on the same QUIC client.
        let h3 = (s.proto == Proto::Https).then(|| H3Query {
            get: profile.doh.method == DohMethod::Get,
            path: profile.doh.path.clone(),
        });
        let alpn: &[u8] = if h3.is_some() { b"h3" } else { b"doq" };
        let make = || base.for_quic_client_with(alpn, resume, zero_rtt);
        let (local, tls) = match ctx.clients.get_mut(client) {
            Some(c) => {
                let kept = if h3.is_some() {
                    &mut c.h3_tls
                } else {
                    &mut c.doq_tls
                };
                (c.local, kept.get_or_insert_with(make).clone())
            }
            None => (None, make()),
        };
        let query = DoqQuery {
            slot,
            gen,
            client,
            local,
            tls,
            zero_rtt,
            idle_timeout,
            h3,
            wire: ctx.inflight.slots[slot as usize].wire.clone(),
        };
        let thread = match stack {
            Stack::Lean => self.lean.as_ref(),
            Stack::Reference => self.reference.as_ref(),
        };
        let handed = thread.is_some_and(|d| d.send(query));
        if !handed {
            ctx.inflight
                .fail(slot, ErrorKind::Send, &Cause::ClosedLocally, ctx.sink);
            return;
        }
        let deadline = ctx.deadline_of(slot, clock::now_ns());
        ctx.inflight.push_timeout(slot, deadline);
    }

    /// Nothing to send: each query went to its thread as it came.
    fn flush(&mut self, _ctx: &mut Ctx<'_>) {}

    /// The threads have their own polls: no token of the querier's is theirs.
    fn owns(&self, _token: usize) -> bool {
        false
    }

    fn ready(&mut self, _token: usize, _ready: Readiness, _ctx: &mut Ctx<'_>) {}

    /// Takes what the QUIC threads have to say.
    fn events(&mut self, ctx: &mut Ctx<'_>) {
        for thread in [&self.lean, &self.reference].into_iter().flatten() {
            events_of(thread, ctx);
        }
    }

    fn expired(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        ctx.inflight.time_out(slot, ctx.sink);
    }

    /// Ends the threads: their connections are closed (told to the server) and their sockets
    /// go.
    fn close(&mut self, _ctx: &mut Ctx<'_>) {
        self.lean = None;
        self.reference = None;
    }
}

/// Takes the events of one QUIC thread.
fn events_of(thread: &Doq, ctx: &mut Ctx<'_>) {
    {
        while let Ok(event) = thread.events.try_recv() {
            match event {
                DoqEvent::Sent {
                    slot,
                    gen,
                    at,
                    new_connection,
                    handshake_ns,
                } => {
                    let s = &mut ctx.inflight.slots[slot as usize];
                    if s.live && s.gen == gen && s.sent_ns == 0 {
                        s.sent_ns = at;
                        s.new_connection = new_connection;
                        s.handshake_ns = handshake_ns;
                        ctx.sink.first_sends += 1;
                    }
                }
                DoqEvent::SendStamp { slot, gen, at } => {
                    // The kernel's time of the datagram that carried the query's first bytes,
                    // in place of the clock read it was first told.
                    let s = &mut ctx.inflight.slots[slot as usize];
                    if s.live && s.gen == gen && s.sent_ns != 0 {
                        s.sent_ns = at;
                    }
                }
                DoqEvent::Answer { slot, gen, at, msg } => {
                    let s = &ctx.inflight.slots[slot as usize];
                    if !(s.live && s.gen == gen) {
                        ctx.sink.stats.unmatched_responses += 1;
                        continue;
                    }
                    // One response per stream: one that does not answer ends the query.
                    match answer::check(&s.wire, s.qlen, &msg) {
                        Ok(()) => {
                            ctx.inflight.complete(
                                slot,
                                Outcome::Answered,
                                Some((&msg, at)),
                                ctx.sink,
                            );
                        }
                        Err(m) => {
                            ctx.sink.stats.unmatched_responses += 1;
                            let cause = m.cause();
                            ctx.inflight
                                .fail(slot, ErrorKind::BadResponse, &cause, ctx.sink);
                        }
                    }
                }
                DoqEvent::Failed {
                    slot,
                    gen,
                    kind,
                    cause,
                } => {
                    let s = &ctx.inflight.slots[slot as usize];
                    if s.live && s.gen == gen {
                        ctx.inflight.fail(slot, kind, &cause, ctx.sink);
                    }
                }
                DoqEvent::Opened { zero_rtt } => {
                    ctx.sink.stats.connections_opened += 1;
                    if zero_rtt {
                        ctx.sink.stats.quic_zero_rtt += 1;
                    }
                }
                DoqEvent::Handshake {
                    resumed,
                    zero_rtt_accepted,
                } => {
                    if resumed {
                        ctx.sink.stats.tls_resumed += 1;
                    }
                    if zero_rtt_accepted == Some(true) {
                        ctx.sink.stats.quic_zero_rtt_accepted += 1;
                    }
                }
                DoqEvent::Reused => ctx.sink.stats.connections_reused += 1,
                DoqEvent::Lost { packets } => ctx.sink.stats.quic_packets_lost += packets,
            }
        }
    }
}
