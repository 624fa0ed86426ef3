//! A trace replayed as a population: each client's records go over its group's transport.

use crate::Population;
use ldplayer_dns::DnsError;
use ldplayer_trace::{Proto, Record, Sink, SinkError, SkipReason};
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// A [`Sink`] wrapper that sets each query's transport to its client's group's (as
/// [`Population::group_of`] assigns it) and passes it on; counts the clients per group.
/// Responses pass unchanged.
pub struct AssignTransports<'p, S> {
    population: &'p Population,
    inner: S,
    groups: FxHashMap<IpAddr, usize>,
    clients: Vec<u64>,
}

impl<'p, S: Sink> AssignTransports<'p, S> {
    /// Passes records on to `inner`, over the transports of `population`'s groups.
    pub fn new(population: &'p Population, inner: S) -> Self {
        AssignTransports {
            population,
            inner,
            groups: FxHashMap::default(),
            clients: vec![0; population.groups.len()],
        }
    }

    /// Distinct clients seen per group, in the population's order.
    pub fn clients_per_group(&self) -> &[u64] {
        &self.clients
    }

    /// The wrapped sink.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The transport of a client, assigning its group the first time.
    fn proto_of(&mut self, client: IpAddr) -> Proto {
        let population = self.population;
        let clients = &mut self.clients;
        let group = *self.groups.entry(client).or_insert_with(|| {
            let g = population.group_of(client);
            clients[g] += 1;
            g
        });
        population.groups[group].proto
    }
}

impl<S: Sink> Sink for AssignTransports<'_, S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        // Responses (QR set) belong to the server: passed on as they are.
        if crate::fit::is_response(record.wire) {
            return self.inner.record(record);
        }
        let proto = self.proto_of(record.src.ip());
        let mut r = *record;
        r.proto = proto;
        self.inner.record(&r)
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.inner.skipped(reason, location)
    }
    fn malformed(&mut self, error: DnsError, location: u64) {
        self.inner.malformed(error, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}
