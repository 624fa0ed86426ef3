//! Feeding a scenario's recorded answers to the zone constructor, and completing the rebuilt
//! root zone from the scenario's root hints.

use std::net::IpAddr;

use bytes::Bytes;
use domain::base::iana::{Class, Rtype};
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::base::{Name, Record, ToName, Ttl};
use domain::rdata::{Aaaa, AllRecordData, Ns, A};

use super::model::Scenario;
use crate::builder::ZoneBuilder;
use crate::exchange::Rr;
use crate::hierarchy::Hierarchy;

impl Scenario {
    /// Gives every recorded response to `builder` as answered by its address, the way
    /// captured responses are given, and the scenario's `stub-addr` addresses as the root's
    /// servers ([`ZoneBuilder::add_root_server`]: the resolver's root hints, so the root's
    /// records they answer with are kept when no NS RRset of the root was recorded); returns
    /// how many responses were given.
    pub fn feed(&self, builder: &mut ZoneBuilder) -> u64 {
        for address in self.stub_addrs() {
            builder.add_root_server(address);
        }
        let mut n = 0;
        for (address, entry) in self.responses() {
            builder.add_message(address, entry.message.as_slice());
            n += 1;
        }
        n
    }
}

/// Gives the root zone of `hierarchy` an NS set made from a scenario's root hints
/// (`stub-addr`, see [`Scenario::stub_addrs`]) when none was rebuilt; returns the records
/// added, in presentation format (empty when the root has NS records, or there is no root
/// zone or no hint).
///
/// A resolver starts by priming (`. NS` to a hinted address) and gives up when the root has
/// no NS records. Scenarios often do not record the root's NS set in an authoritative answer
/// (Deckard gives the resolver the hints itself, and hand-written entries leave AA out), so
/// the rebuilt root zone lacks it. This completes the root from the resolver's hints, as
/// [`ZoneBuilder`] completes a zone's apex NS set from its parent's referral: each hinted
/// address is named by a name the scenario records with that address (e.g.
/// `K.ROOT-SERVERS.NET.`), else `stub-addr-N.deckard.invalid.`, whose address record is added
/// to the root zone; the address is added to the root zone's servers.
pub fn complete_root(hierarchy: &mut Hierarchy, hints: &[IpAddr]) -> Vec<String> {
    let mut added = Vec::new();
    let Some(ri) = hierarchy.zones.iter().position(|z| z.apex.is_root()) else {
        return added;
    };
    let has_ns = hierarchy.zones[ri]
        .records
        .iter()
        .any(|r| r.owner().is_root() && r.rtype() == Rtype::NS);
    if has_ns || hints.is_empty() {
        return added;
    }
    let ttl = Ttl::from_secs(3600);
    for (i, ip) in hints.iter().enumerate() {
        // A recorded name with this address, the root zone's first.
        let order = std::iter::once(ri).chain((0..hierarchy.zones.len()).filter(|&z| z != ri));
        let recorded = order
            .flat_map(|z| hierarchy.zones[z].records.iter())
            .find(|r| address_of(r) == Some(*ip))
            .map(|r| r.owner().clone());
        let name = match recorded {
            Some(n) => n,
            None => match Name::<Bytes>::from_chars(
                format!("stub-addr-{}.deckard.invalid.", i + 1).chars(),
            ) {
                Ok(n) => n,
                Err(_) => continue,
            },
        };
        let root = &mut hierarchy.zones[ri];
        let ns: Rr = Record::new(
            Name::root_bytes(),
            Class::IN,
            ttl,
            AllRecordData::Ns(Ns::new(name.clone())),
        );
        added.push(ns.display_zonefile(DisplayKind::Simple).to_string());
        root.records.push(ns);
        let has_address = root
            .records
            .iter()
            .any(|r| address_of(r) == Some(*ip) && r.owner().name_eq(&name));
        if !has_address {
            let data = match ip {
                IpAddr::V4(a) => AllRecordData::A(A::new(*a)),
                IpAddr::V6(a) => AllRecordData::Aaaa(Aaaa::new(*a)),
            };
            let rr: Rr = Record::new(name, Class::IN, ttl, data);
            added.push(rr.display_zonefile(DisplayKind::Simple).to_string());
            root.records.push(rr);
        }
        if !root.servers.contains(ip) {
            root.servers.push(*ip);
        }
    }
    added
}

fn address_of(r: &Rr) -> Option<IpAddr> {
    match r.data() {
        AllRecordData::A(a) => Some(IpAddr::V4(a.addr())),
        AllRecordData::Aaaa(a) => Some(IpAddr::V6(a.addr())),
        _ => None,
    }
}
