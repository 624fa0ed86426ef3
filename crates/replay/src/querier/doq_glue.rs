//! The querier's side of DNS over QUIC: queries handed to the DoQ thread of the client's stack
//! ([`super::doq`], or the reference one, `crate::reference::quic`), their events turned into
//! sends, answers and failures of the in-flight table.

use super::answer;
use super::doq::{Doq, DoqEvent, DoqQuery, DoqSetup, H3Query};
use super::*;
use crate::cause::Cause;
use crate::config::{DohMethod, Stack};

impl Querier {
    /// Hands a DoQ query to the DoQ thread (started with the first one).
    pub(super) fn send_doq(&mut self, slot: u32) {
        let Some(base) = self.tls.clone() else {
            self.fail(slot, ErrorKind::Tls, &Cause::NoTlsConfig);
            return;
        };
        let stack = {
            let client = self.slots[slot as usize].client;
            self.profile_of(client).stack
        };
        let running = match stack {
            Stack::Lean => self.doq.is_some(),
            Stack::Reference => self.doq_reference.is_some(),
        };
        if !running {
            let https_server = self.config.https_server.unwrap_or(self.server);
            let setup = DoqSetup {
                server: self.config.quic_server.unwrap_or(self.server),
                https_server,
                authority: self.doh_authority(&base, https_server).to_string(),
                server_name: base.server_name.to_str().into_owned(),
                query_timeout: self
                    .profiles
                    .iter()
                    .map(|p| p.timeout_ns)
                    .max()
                    .map_or(self.config.timeout, |ns| {
                        std::time::Duration::from_nanos(ns.max(0) as u64)
                    }),
                verifier: base.verifier.clone(),
                key_update_packets: self.config.quic_key_update_packets,
            };
            let started = match stack {
                Stack::Lean => Doq::start(setup, self.waker.clone()).map(|d| self.doq = Some(d)),
                Stack::Reference => crate::reference::quic::start(setup, self.waker.clone())
                    .map(|d| self.doq_reference = Some(d)),
            };
            if let Err(e) = started {
                self.fail(slot, ErrorKind::Send, &Cause::Io(e));
                return;
            }
        }
        let s = &self.slots[slot as usize];
        let (client, gen) = (s.client, s.gen);
        let profile = self.profile_of(client);
        let (resume, zero_rtt, idle_timeout) =
            (profile.resume, profile.zero_rtt, profile.idle_timeout);
        // DoH over HTTP/3 goes this way too, on the same QUIC client.
        let h3 = (s.proto == Proto::Https).then(|| H3Query {
            get: profile.doh.method == DohMethod::Get,
            path: profile.doh.path.clone(),
        });
        let alpn: &[u8] = if h3.is_some() { b"h3" } else { b"doq" };
        let make = || base.for_quic_client_with(alpn, resume, zero_rtt);
        let (local, tls) = match self.clients.get_mut(&client) {
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
            wire: self.slots[slot as usize].wire.clone(),
        };
        let thread = match stack {
            Stack::Lean => self.doq.as_ref(),
            Stack::Reference => self.doq_reference.as_ref(),
        };
        let handed = thread.is_some_and(|d| d.send(query));
        if !handed {
            self.fail(slot, ErrorKind::Send, &Cause::ClosedLocally);
            return;
        }
        let deadline = self.deadline_of(slot, clock::now_ns());
        self.push_timeout(slot, deadline);
    }

    /// Takes what the DoQ threads have to say.
    pub(super) fn doq_events(&mut self) {
        let threads =
            [&self.doq, &self.doq_reference].map(|d| d.as_ref().map(|d| d.events.clone()));
        for events in threads.into_iter().flatten() {
            self.doq_events_of(&events);
        }
    }

    /// Takes the events of one DoQ thread.
    fn doq_events_of(&mut self, events: &crossbeam_channel::Receiver<DoqEvent>) {
        while let Ok(event) = events.try_recv() {
            match event {
                DoqEvent::Sent {
                    slot,
                    gen,
                    at,
                    new_connection,
                    handshake_ns,
                } => {
                    let s = &mut self.slots[slot as usize];
                    if s.live && s.gen == gen && s.sent_ns == 0 {
                        s.sent_ns = at;
                        s.new_connection = new_connection;
                        s.handshake_ns = handshake_ns;
                        self.first_sends += 1;
                    }
                }
                DoqEvent::Answer { slot, gen, at, msg } => {
                    let s = &self.slots[slot as usize];
                    if !(s.live && s.gen == gen) {
                        self.stats.unmatched_responses += 1;
                        continue;
                    }
                    // One response per stream: one that does not answer ends the query.
                    match answer::check(&s.wire, s.qlen, &msg) {
                        Ok(()) => self.complete(slot, Outcome::Answered, Some((&msg, at))),
                        Err(m) => {
                            self.stats.unmatched_responses += 1;
                            self.fail(slot, ErrorKind::BadResponse, &m.cause());
                        }
                    }
                }
                DoqEvent::Failed {
                    slot,
                    gen,
                    kind,
                    cause,
                } => {
                    let s = &self.slots[slot as usize];
                    if s.live && s.gen == gen {
                        self.fail(slot, kind, &cause);
                    }
                }
                DoqEvent::Opened { zero_rtt } => {
                    self.stats.connections_opened += 1;
                    if zero_rtt {
                        self.stats.quic_zero_rtt += 1;
                    }
                }
                DoqEvent::Handshake {
                    resumed,
                    zero_rtt_accepted,
                } => {
                    if resumed {
                        self.stats.tls_resumed += 1;
                    }
                    if zero_rtt_accepted == Some(true) {
                        self.stats.quic_zero_rtt_accepted += 1;
                    }
                }
                DoqEvent::Reused => self.stats.connections_reused += 1,
                DoqEvent::Lost { packets } => self.stats.quic_packets_lost += packets,
            }
        }
    }
}
