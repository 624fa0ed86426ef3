//! From nameservers' responses to zones: zone cuts from NS records, nameserver addresses from
//! glue and answers, each response's records filed into the zone of the server that sent it.

use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::net::IpAddr;

use bytes::Bytes;
use domain::base::iana::{Class, Rtype};
use domain::base::{Name, Record, Serial, Ttl};
use domain::rdata::{AllRecordData, Soa};
use ldplayer_trace::{Record as TraceRecord, Sink, SinkError};
use ldplayer_zone::name::{is_subdomain, parent};
use rustc_hash::FxHashMap;

use crate::exchange::{Exchange, Rr, Unused};
use crate::hierarchy::{BuildReport, BuiltZone, Hierarchy};
use crate::left_out::LeftOut;
use crate::runs::in_runs;

mod cuts;
mod servers;
mod ttl;

use cuts::Cuts;

/// Lowercase wire form of a name: the key of zones, nodes and addresses.
pub(crate) type Key = Vec<u8>;

/// What an RRset is filed under in its zone: (owner's [`Key`], type, type covered by an RRSIG).
type SetKey = (Key, u16, u16);

pub(crate) fn key(name: &Name<Bytes>) -> Key {
    name.as_slice().to_ascii_lowercase()
}

/// The type an RRset is filed under: RRSIGs by the type they cover.
fn set_type(rr: &Rr) -> (u16, u16) {
    match rr.data() {
        AllRecordData::Rrsig(sig) => (Rtype::RRSIG.to_int(), sig.type_covered().to_int()),
        _ => (rr.rtype().to_int(), 0),
    }
}

/// A response taken: its bytes, parsed when the zones are built (on every core), or already
/// parsed.
#[derive(Debug)]
enum Taken {
    Wire(IpAddr, Bytes),
    Parsed(Exchange),
}

/// Collects nameservers' responses and builds the zones they came from.
#[derive(Debug, Default)]
pub struct ZoneBuilder {
    taken: Vec<Taken>,
    root_servers: BTreeSet<IpAddr>,
    unused: BTreeMap<&'static str, u64>,
    queries: u64,
}

impl ZoneBuilder {
    /// An empty builder.
    pub fn new() -> ZoneBuilder {
        ZoneBuilder::default()
    }

    /// Adds the response `wire` that nameserver `server` sent (a query, QR clear, is ignored).
    /// What its header rules out is counted now; the rest is parsed by [`build`](Self::build)
    /// (a response that does not parse is counted as malformed then).
    pub fn add_message(&mut self, server: IpAddr, wire: &[u8]) {
        if wire.len() >= 3 && wire[2] & 0x80 == 0 {
            self.queries += 1;
            return;
        }
        match Exchange::unused_by_header(wire) {
            Some(why) => self.skip(why),
            None => self
                .taken
                .push(Taken::Wire(server, Bytes::copy_from_slice(wire))),
        }
    }

    /// Gives `server` as an address of the root zone's nameservers, as a resolver's root hints
    /// do (a Deckard scenario's `stub-addr`): known before any record is filed, so that the
    /// root's records that address sends (its DNSKEY set, its referrals' DS records) are kept
    /// even when no NS RRset of the root names it.
    pub fn add_root_server(&mut self, server: IpAddr) {
        self.root_servers.insert(server);
    }

    /// Adds an already parsed response.
    pub fn add_exchange(&mut self, exchange: Exchange) {
        self.taken.push(Taken::Parsed(exchange));
    }

    fn skip(&mut self, why: Unused) {
        *self.unused.entry(why.name()).or_default() += 1;
    }

    /// Responses taken so far.
    pub fn responses(&self) -> usize {
        self.taken.len()
    }

    /// Rebuilds the zones.
    pub fn build(mut self) -> Hierarchy {
        let taken = std::mem::take(&mut self.taken);
        let (parsed, cuts) = parse_all(taken);
        let mut exchanges = Vec::with_capacity(parsed.len());
        for parsed in parsed {
            match parsed {
                Ok(e) => exchanges.push(e),
                Err(why) => self.skip(why),
            }
        }
        let root_servers = std::mem::take(&mut self.root_servers);
        Assembler::new(self, exchanges, cuts).run(&root_servers)
    }
}

/// A run of responses parsed, and the zone cuts and addresses they show.
type Parsed = (Vec<Result<Exchange, Unused>>, Cuts);

/// Parses the responses taken, in their order, and finds their zone cuts and addresses (the
/// first pass over them), on as many threads as there are cores: a million responses take
/// seconds on one.
fn parse_all(taken: Vec<Taken>) -> Parsed {
    let runs = in_runs(taken, 1024, |run| -> Parsed {
        let parsed: Vec<_> = run
            .into_iter()
            .map(|t| match t {
                Taken::Wire(server, wire) => Exchange::parse_bytes(server, wire),
                Taken::Parsed(e) => Ok(e),
            })
            .collect();
        let cuts = Cuts::of(parsed.iter().filter_map(|p| p.as_ref().ok()));
        (parsed, cuts)
    });
    let mut all = Vec::with_capacity(runs.iter().map(|(p, _)| p.len()).sum());
    let mut cuts = Cuts::default();
    for (parsed, later) in runs {
        all.extend(parsed);
        cuts.merge(later);
    }
    (all, cuts)
}

/// A capture's records go in as a [`Sink`]: responses are taken with their source address as
/// the nameserver.
impl Sink for ZoneBuilder {
    fn record(&mut self, record: &TraceRecord<'_>) -> Result<(), SinkError> {
        self.add_message(record.src.ip(), record.wire);
        Ok(())
    }
}

/// One zone under construction.
struct Draft {
    apex: Name<Bytes>,
    /// RRsets by (owner, type, covered type); the first one seen wins.
    sets: BTreeMap<SetKey, Vec<Rr>>,
    servers: BTreeSet<IpAddr>,
    soa_synthesized: bool,
    apex_ns_from_parent: bool,
}

struct Assembler {
    exchanges: Vec<Exchange>,
    report: BuildReport,
    /// Zone apex → its NS names, from the first NS RRset seen for it anywhere.
    delegations: FxHashMap<Key, (Name<Bytes>, Vec<Rr>)>,
    /// Name → its address records, from the first A/AAAA RRsets seen anywhere.
    addresses: FxHashMap<Key, Vec<Rr>>,
    /// The zones by apex (looked up for every record filed: hashed, with FxHash: the keys are
    /// names from the capture, and SipHash was 5% of a million responses' build).
    zones: FxHashMap<Key, Draft>,
}

impl Assembler {
    fn new(b: ZoneBuilder, exchanges: Vec<Exchange>, cuts: Cuts) -> Assembler {
        let report = BuildReport {
            responses_used: exchanges.len() as u64,
            queries_seen: b.queries,
            responses_unused: b.unused.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..BuildReport::default()
        };
        Assembler {
            exchanges,
            report,
            delegations: cuts.delegations,
            addresses: cuts.addresses,
            zones: FxHashMap::default(),
        }
    }

    fn run(mut self, root_servers: &BTreeSet<IpAddr>) -> Hierarchy {
        self.make_zones();
        self.assign_servers(root_servers);
        let exchanges = std::mem::take(&mut self.exchanges);
        for e in &exchanges {
            self.file_records(e);
        }
        // Freeing a million parsed responses takes a while: on another core, while the zones
        // are completed.
        let freeing = std::thread::spawn(move || drop(exchanges));
        self.complete_zones();
        self.restore_signed_ttls();
        let _ = freeing.join();
        // So are the first pass's maps, while the zones are made (a quarter of a second).
        let first_pass = (
            std::mem::take(&mut self.delegations),
            std::mem::take(&mut self.addresses),
        );
        let freeing = std::thread::spawn(move || drop(first_pass));
        let hierarchy = self.finish();
        let _ = freeing.join();
        hierarchy
    }

    /// A zone for the root and for every apex of a delegation seen.
    fn make_zones(&mut self) {
        let root = Name::root_bytes();
        let apexes: Vec<(Key, Name<Bytes>)> = std::iter::once((key(&root), root))
            .chain(
                self.delegations
                    .iter()
                    .map(|(k, (n, _))| (k.clone(), n.clone())),
            )
            .collect();
        for (k, apex) in apexes {
            self.zones.entry(k).or_insert_with(|| Draft {
                apex,
                sets: BTreeMap::new(),
                servers: BTreeSet::new(),
                soa_synthesized: false,
                apex_ns_from_parent: false,
            });
        }
    }

    /// The deepest zone containing `name` (the name itself included): its apex, a suffix of
    /// `name`.
    fn closest_zone<'n>(&self, name: &'n [u8]) -> Option<&'n [u8]> {
        let mut cur = name;
        loop {
            if self.zones.contains_key(cur) {
                return Some(cur);
            }
            cur = parent(cur)?;
        }
    }

    /// Files each RRset of a response into the deepest zone that the responding server serves
    /// and that contains the owner (a DS, or its RRSIG, at a zone's apex goes to the parent; an
    /// SOA, or its RRSIG, to the zone at its owner, if there is one).
    fn file_records(&mut self, e: &Exchange) {
        let sections: [(&Vec<Rr>, bool); 3] = [
            (&e.answer, e.authoritative),
            (&e.authority, true),
            (&e.additional, true),
        ];
        for (section, (records, trusted)) in sections.iter().enumerate() {
            if !trusted {
                for (_, set) in rrsets(records.iter()) {
                    self.report
                        .leave_out(LeftOut::NotAuthoritative, &set, e.server);
                }
                continue;
            }
            for ((owner, rtype, covered), set) in rrsets(records.iter()) {
                let wanted = match section {
                    1 => matches!(
                        Rtype::from_int(rtype),
                        Rtype::NS
                            | Rtype::SOA
                            | Rtype::DS
                            | Rtype::NSEC
                            | Rtype::NSEC3
                            | Rtype::RRSIG
                    ),
                    2 => {
                        let t = if rtype == Rtype::RRSIG.to_int() {
                            covered
                        } else {
                            rtype
                        };
                        t == Rtype::A.to_int() || t == Rtype::AAAA.to_int()
                    }
                    _ => true,
                };
                if !wanted {
                    self.report
                        .leave_out(LeftOut::UnexpectedInSection, &set, e.server);
                    continue;
                }
                let at_parent = rtype == Rtype::DS.to_int() || covered == Rtype::DS.to_int();
                let zone = if rtype == Rtype::SOA.to_int() || covered == Rtype::SOA.to_int() {
                    // An SOA names its zone: the zone at its owner, whoever sent it (a Deckard
                    // range answers for several zones' servers), never a parent, where it would
                    // stand below the apex.
                    self.zones
                        .contains_key(&owner)
                        .then_some(&owner[..])
                        .ok_or(LeftOut::SoaWithoutZone)
                } else {
                    self.served_zone(&owner, e.server, at_parent)
                        .ok_or(if section == 2 {
                            LeftOut::GlueOutOfZone
                        } else {
                            LeftOut::OutOfZone
                        })
                };
                let zone = match zone {
                    Ok(zone) => zone,
                    Err(why) => {
                        self.report.leave_out(why, &set, e.server);
                        continue;
                    }
                };
                let Some(draft) = self.zones.get_mut(zone) else {
                    continue;
                };
                match draft.sets.entry((owner, rtype, covered)) {
                    btree_map::Entry::Vacant(v) => {
                        self.report.records += set.len() as u64;
                        v.insert(set.into_iter().cloned().collect());
                    }
                    btree_map::Entry::Occupied(first) if !same_data(first.get(), &set) => {
                        self.report.conflicts += 1;
                        self.report.leave_out(LeftOut::Conflict, &set, e.server);
                    }
                    btree_map::Entry::Occupied(_) => {}
                }
            }
        }
    }

    /// The deepest zone that `server` serves and that contains `owner` (the owner itself
    /// left out when `at_parent` and it is not the root): the owner's ancestors looked up one
    /// by one, so the cost does not grow with the number of zones. Its apex, a suffix of
    /// `owner`.
    fn served_zone<'n>(
        &self,
        owner: &'n [u8],
        server: IpAddr,
        at_parent: bool,
    ) -> Option<&'n [u8]> {
        let mut cur = Some(owner);
        while let Some(name) = cur {
            let skip = at_parent && name.len() == owner.len() && name.len() > 1;
            if !skip {
                if let Some(z) = self.zones.get(name) {
                    if z.servers.contains(&server) {
                        return Some(name);
                    }
                }
            }
            cur = parent(name);
        }
        None
    }

    /// Every zone gets an SOA (synthesized when none was captured), its apex NS (from the
    /// parent's delegation when not captured at the apex), its parent the delegation, and every
    /// in-zone nameserver name its addresses where they are known.
    fn complete_zones(&mut self) {
        let mut keys: Vec<Key> = self.zones.keys().cloned().collect();
        keys.sort_unstable();
        for k in &keys {
            let ns_key = (k.clone(), Rtype::NS.to_int(), 0);
            // Cloned only where it is missing (most zones have their own apex NS, most parents
            // the delegation from their referrals).
            let delegation = self.delegations.get(k).map(|(_, s)| s);
            let Some(z) = self.zones.get_mut(k) else {
                continue;
            };
            if !z.sets.contains_key(&ns_key) {
                if let Some(set) = delegation {
                    z.sets.insert(ns_key.clone(), set.clone());
                    z.apex_ns_from_parent = true;
                }
            }
            let soa_key = (k.clone(), Rtype::SOA.to_int(), 0);
            if !z.sets.contains_key(&soa_key) {
                let first_ns = z
                    .sets
                    .get(&ns_key)
                    .and_then(|s| s.first())
                    .and_then(|r| match r.data() {
                        AllRecordData::Ns(ns) => Some(ns.nsdname().clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| z.apex.clone());
                z.sets
                    .insert(soa_key, vec![synthesized_soa(&z.apex, first_ns)]);
                z.soa_synthesized = true;
            }
            // The parent holds the delegation.
            if k.len() > 1 {
                if let (Some(p), Some(set)) =
                    (parent(k).and_then(|p| self.closest_zone(p)), delegation)
                {
                    if let Some(pz) = self.zones.get_mut(p) {
                        if let btree_map::Entry::Vacant(e) = pz.sets.entry(ns_key) {
                            e.insert(set.clone());
                            self.report.delegations_added += 1;
                        }
                    }
                }
            }
        }
        // Addresses of nameserver names inside each zone (glue below cuts, or zone data).
        for k in &keys {
            let Some(z) = self.zones.get(k) else { continue };
            let mut wanted: BTreeSet<(Key, Name<Bytes>)> = BTreeSet::new();
            for ((_, t, _), set) in &z.sets {
                if *t != Rtype::NS.to_int() {
                    continue;
                }
                for r in set {
                    if let AllRecordData::Ns(ns) = r.data() {
                        let nk = key(ns.nsdname());
                        if is_subdomain(&nk, k) {
                            wanted.insert((nk, ns.nsdname().clone()));
                        }
                    }
                }
            }
            let mut add = Vec::new();
            for (nk, name) in wanted {
                let has = [Rtype::A, Rtype::AAAA]
                    .iter()
                    .any(|t| z.sets.contains_key(&(nk.clone(), t.to_int(), 0)));
                if has {
                    continue;
                }
                match self.addresses.get(&nk) {
                    Some(rrs) if !rrs.is_empty() => add.push((nk, rrs.clone())),
                    _ => self.report.missing_addresses.push(format!(
                        "{} (in {})",
                        name.fmt_with_dot(),
                        z.apex.fmt_with_dot()
                    )),
                }
            }
            if let Some(z) = self.zones.get_mut(k) {
                for (nk, rrs) in add {
                    for (t, set) in split_by_type(rrs) {
                        z.sets.entry((nk.clone(), t, 0)).or_insert(set);
                        self.report.glue_added += 1;
                    }
                }
            }
        }
    }

    fn finish(mut self) -> Hierarchy {
        let mut drafts: Vec<(Key, Draft)> = std::mem::take(&mut self.zones).into_iter().collect();
        drafts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.report.zones_without_servers = drafts
            .iter()
            .filter(|(_, d)| d.servers.is_empty())
            .map(|(_, d)| d.apex.fmt_with_dot().to_string())
            .collect();
        let zones = built_zones(drafts);
        Hierarchy::new(zones, self.report)
    }
}

/// The zones made from their drafts, in order: on as many threads as there are cores, each a
/// run of zones (a quarter of a million zones took more than a second on one).
fn built_zones(drafts: Vec<(Key, Draft)>) -> Vec<BuiltZone> {
    let build = |(_, d): (Key, Draft)| {
        // Sized first: a flattened iterator does not say how long it is.
        let mut records = Vec::with_capacity(d.sets.values().map(Vec::len).sum());
        records.extend(d.sets.into_values().flatten());
        BuiltZone {
            apex: d.apex,
            records,
            servers: d.servers.into_iter().collect(),
            soa_synthesized: d.soa_synthesized,
            apex_ns_from_parent: d.apex_ns_from_parent,
        }
    };
    let runs = in_runs(drafts, 1024, |run| {
        run.into_iter().map(build).collect::<Vec<_>>()
    });
    let mut zones = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for run in runs {
        zones.extend(run);
    }
    zones
}

/// Groups a section's records into RRsets keyed by (owner, type, covered type), in order.
/// The records are borrowed: most RRsets of a large capture were seen before (the same
/// delegation in every referral), and are only cloned where they are kept.
fn rrsets<'a>(records: impl IntoIterator<Item = &'a Rr>) -> Vec<(SetKey, Vec<&'a Rr>)> {
    let mut out: Vec<(SetKey, Vec<&'a Rr>)> = Vec::new();
    for r in records {
        let (t, c) = set_type(r);
        let owner = r.owner().as_slice();
        // The key of an owner already seen is not made again (it is lowercased into a new
        // buffer).
        match out
            .iter_mut()
            .find(|(ok, _)| ok.1 == t && ok.2 == c && owner.eq_ignore_ascii_case(&ok.0))
        {
            Some((_, v)) => v.push(r),
            None => out.push(((key(r.owner()), t, c), vec![r])),
        }
    }
    out
}

fn split_by_type(rrs: Vec<Rr>) -> BTreeMap<u16, Vec<Rr>> {
    let mut m: BTreeMap<u16, Vec<Rr>> = BTreeMap::new();
    for r in rrs {
        m.entry(r.rtype().to_int()).or_default().push(r);
    }
    m
}

/// The same records regardless of order and TTL.
fn same_data(a: &[Rr], b: &[&Rr]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| x.data() == y.data()))
}

fn address(rr: &Rr) -> Option<IpAddr> {
    match rr.data() {
        AllRecordData::A(a) => Some(IpAddr::V4(a.addr())),
        AllRecordData::Aaaa(a) => Some(IpAddr::V6(a.addr())),
        _ => None,
    }
}

/// An SOA for a zone none was captured for: the first nameserver as primary, conventional
/// timers, a negative TTL of 300 s.
fn synthesized_soa(apex: &Name<Bytes>, primary: Name<Bytes>) -> Rr {
    let rname = Name::<Bytes>::from_chars(
        "hostmaster".chars().chain(".".chars()).chain(
            apex.fmt_with_dot()
                .to_string()
                .trim_start_matches('.')
                .chars(),
        ),
    )
    .unwrap_or_else(|_| apex.clone());
    Record::new(
        apex.clone(),
        Class::IN,
        Ttl::from_secs(3600),
        AllRecordData::Soa(Soa::new(
            primary,
            rname,
            Serial(1),
            Ttl::from_secs(3600),
            Ttl::from_secs(600),
            Ttl::from_secs(86400),
            Ttl::from_secs(300),
        )),
    )
}

#[cfg(test)]
mod tests;
