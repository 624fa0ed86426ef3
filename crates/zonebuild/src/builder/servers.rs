//! Which addresses serve which zone: the addresses of each zone's NS names, the root hints
//! given, and what the responses themselves show (inferred, and reported).

use std::collections::BTreeSet;
use std::net::IpAddr;

use domain::base::iana::Rtype;
use domain::rdata::AllRecordData;
use ldplayer_zone::name::{is_subdomain, parent};
use rustc_hash::FxHashMap;

use super::{address, key, Assembler, Key};
use crate::exchange::Exchange;

impl Assembler {
    /// A zone's servers: the addresses of its NS names, and for the root the root hints given.
    /// Then every response that shows its server serving a zone the servers found so far do not
    /// give it (see [`Assembler::shown_zone`]) gives it that zone, reported in
    /// `inferred_servers`: its NS or glue was not captured, or names it otherwise.
    pub(super) fn assign_servers(&mut self, root_servers: &BTreeSet<IpAddr>) {
        for (k, (_, ns)) in &self.delegations {
            let Some(zone) = self.zones.get_mut(k) else {
                continue;
            };
            for rr in ns {
                if let AllRecordData::Ns(ns) = rr.data() {
                    for a in self.addresses.get(&key(ns.nsdname())).into_iter().flatten() {
                        if let Some(ip) = address(a) {
                            zone.servers.insert(ip);
                        }
                    }
                }
            }
        }
        if let Some(root) = self.zones.get_mut(&[0u8][..]) {
            root.servers.extend(root_servers.iter().copied());
        }
        let mut zones_of: FxHashMap<IpAddr, Vec<&[u8]>> = FxHashMap::default();
        for (k, z) in &self.zones {
            for ip in &z.servers {
                zones_of.entry(*ip).or_default().push(k);
            }
        }
        let mut inferred = BTreeSet::new();
        for e in &self.exchanges {
            let served = zones_of.get(&e.server).map_or(&[][..], Vec::as_slice);
            if let Some(z) = self.shown_zone(e, served) {
                inferred.insert((e.server, z));
            }
        }
        for (ip, z) in inferred {
            if let Some(zone) = self.zones.get_mut(&z) {
                zone.servers.insert(ip);
                self.report
                    .inferred_servers
                    .push(format!("{ip} {}", zone.apex.fmt_with_dot()));
            }
        }
    }

    /// The zone that response `e` shows its server serving, when the servers found so far do
    /// not give it that zone (or a deeper one holding the question); `served` are the zones the
    /// server serves so far.
    ///
    /// - A referral comes from a server of the zone above the child it delegates: the closest
    ///   zone of the child's parent, unless the server already serves a zone above the child,
    ///   or serves the child or a zone below it (an upward referral, a lame server's answer).
    /// - An authoritative answer (AA) comes from a server of the zone holding the question: the
    ///   zone its SOA names (negative answers; some recordings put it in the answer section),
    ///   else, for a question at a zone's apex, that zone (the parent's closest zone for a DS,
    ///   which the parent answers), unless the server already serves that zone or a deeper one
    ///   holding the question. So a server listed under another name than the zone's NS names
    ///   (a root server named only by the resolver's hints, a nameserver serving a zone it is
    ///   not listed for) keeps the answers it gave. Below an apex without an SOA, the zone is
    ///   only a guess (a cut may not have been seen), taken for a server serving nothing yet
    ///   (the closest zone of the question).
    /// - Any other response, from a server serving no zone at all: the closest zone of its
    ///   question.
    fn shown_zone(&self, e: &Exchange, served: &[&[u8]]) -> Option<Key> {
        let serves_some = !served.is_empty();
        if e.is_referral() {
            let child = e
                .authority
                .iter()
                .find(|r| r.rtype() == Rtype::NS)
                .map(|r| key(r.owner()))?;
            let upward = served.iter().any(|z| is_subdomain(z, &child));
            if serves_some && (upward || self.served_zone(&child, e.server, true).is_some()) {
                return None;
            }
            return self.closest_zone(parent(&child)?).map(<[u8]>::to_vec);
        }
        let qname = key(&e.qname);
        if !e.authoritative {
            return if serves_some {
                None
            } else {
                self.closest_zone(&qname).map(<[u8]>::to_vec)
            };
        }
        let ds = e.qtype == Rtype::DS && qname.len() > 1;
        let soa_zone = e
            .answer
            .iter()
            .chain(&e.authority)
            .filter(|r| r.rtype() == Rtype::SOA)
            .map(|r| key(r.owner()))
            .find(|z| self.zones.contains_key(z) && is_subdomain(&qname, z));
        // A DS answer without SOA is the parent's data, filed at the parent.
        let at_parent = ds && soa_zone.is_none();
        let zone = match soa_zone {
            Some(z) => z,
            // Below a zone's apex without an SOA, the zone is a guess (a cut may not have been
            // seen): taken only for a server that serves nothing yet.
            None if serves_some && !self.zones.contains_key(&qname) => return None,
            None if at_parent => self.closest_zone(parent(&qname)?)?.to_vec(),
            None => self.closest_zone(&qname)?.to_vec(),
        };
        match self.served_zone(&qname, e.server, at_parent) {
            Some(s) if s.len() >= zone.len() => None,
            _ => Some(zone),
        }
    }
}
