//! Many zones served together (e.g. every zone behind one nameserver address).

use rustc_hash::FxHashMap;
use std::sync::Arc;

use crate::name;
use crate::zone::{Zone, ZoneError};
use ldplayer_dns::Rtype;

/// A set of zones; queries go to the zone with the longest matching origin, except that a DS
/// query for a zone's apex goes to the parent zone when that is served too (RFC 4035 §3.1.4.1).
/// Zones are shared: the same zone (the root, say) can be in the sets of many nameservers.
#[derive(Debug, Default, Clone)]
pub struct ZoneSet {
    zones: Vec<Arc<Zone>>,
    index: FxHashMap<Box<[u8]>, usize>,
}

impl ZoneSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a zone, replacing any zone with the same origin.
    pub fn insert(&mut self, zone: impl Into<Arc<Zone>>) {
        let zone = zone.into();
        match self.index.get(&zone.origin) {
            Some(&i) => self.zones[i] = zone,
            None => {
                self.index.insert(zone.origin.clone(), self.zones.len());
                self.zones.push(zone);
            }
        }
    }

    /// Adds a zone unless another file's zone has the same origin: one file per zone, as a
    /// name server loads them (the same zone shared again is fine).
    pub fn insert_distinct(&mut self, zone: impl Into<Arc<Zone>>) -> Result<(), ZoneError> {
        let zone = zone.into();
        if let Some(&i) = self.index.get(&zone.origin) {
            let other = &self.zones[i];
            if !Arc::ptr_eq(other, &zone) {
                return Err(ZoneError::at(
                    &zone.file,
                    0,
                    None,
                    format!(
                        "zone {} is also loaded from {}: one file per zone",
                        zone.origin_text(),
                        other.file
                    ),
                ));
            }
        }
        self.insert(zone);
        Ok(())
    }

    /// The zones.
    pub fn zones(&self) -> &[Arc<Zone>] {
        &self.zones
    }

    /// The zone with this origin (lowercase wire format).
    pub fn get(&self, origin: &[u8]) -> Option<&Zone> {
        self.index.get(origin).map(|&i| &*self.zones[i])
    }

    /// The zone that answers `qname` (lowercase wire format) for `qtype`.
    pub fn find(&self, qname: &[u8], qtype: Rtype) -> Option<&Zone> {
        let mut cur = qname;
        let mut found: Option<&Zone> = None;
        loop {
            if let Some(&i) = self.index.get(cur) {
                let z = &self.zones[i];
                match found {
                    None if qtype == Rtype::DS && cur.len() == qname.len() && qname.len() > 1 => {
                        found = Some(z)
                    }
                    None => return Some(z),
                    // The parent of a zone whose apex DS was asked for.
                    Some(_) => return Some(z),
                }
            }
            match name::parent(cur) {
                Some(p) => cur = p,
                None => return found,
            }
        }
    }
}

impl<Z: Into<Arc<Zone>>> FromIterator<Z> for ZoneSet {
    fn from_iter<I: IntoIterator<Item = Z>>(iter: I) -> Self {
        let mut s = ZoneSet::new();
        for z in iter {
            s.insert(z);
        }
        s
    }
}
