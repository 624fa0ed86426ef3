//! IPv4 and IPv6 fragment reassembly with bounded memory.

use crate::SkipReason;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::net::IpAddr;

/// Bookkeeping bytes charged per datagram on top of its data.
const OVERHEAD: usize = 96;
/// Largest reassembled payload (the IP total length field is 16 bits).
const MAX_DATAGRAM: usize = 65_535;

/// Identifies the fragments of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FragKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub id: u32,
    pub proto: u8,
}

struct Datagram {
    serial: u64,
    first_time: i64,
    data: Vec<u8>,
    /// Covered byte ranges, sorted and merged.
    ranges: Vec<(usize, usize)>,
    /// End of the datagram, known once the last fragment is seen.
    total: Option<usize>,
    cost: usize,
}

/// One fragment to add.
pub(crate) struct Fragment<'a> {
    pub key: FragKey,
    pub offset: usize,
    pub more: bool,
    pub payload: &'a [u8],
}

/// Reassembles datagrams from fragments. Memory is bounded by `max_bytes`; datagrams that do
/// not complete within `timeout_ns` of capture time are dropped.
pub(crate) struct Defrag {
    map: FxHashMap<FragKey, Datagram>,
    /// Datagrams by age (key, serial); entries whose serial no longer matches are stale.
    order: VecDeque<(FragKey, u64)>,
    serial: u64,
    bytes: usize,
    max_bytes: usize,
    timeout_ns: i64,
    spare: Vec<Vec<u8>>,
}

impl Defrag {
    pub(crate) fn new(max_bytes: usize, timeout_ns: i64) -> Self {
        Defrag {
            map: FxHashMap::default(),
            order: VecDeque::new(),
            serial: 0,
            bytes: 0,
            max_bytes,
            timeout_ns,
            spare: Vec::new(),
        }
    }

    /// Bytes currently buffered (data and bookkeeping).
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.bytes
    }

    /// Adds a fragment; returns the reassembled payload when it completes its datagram. Skips
    /// (this fragment, or older datagrams dropped to make room) are reported through `skip`.
    pub(crate) fn add(
        &mut self,
        frag: Fragment<'_>,
        time: i64,
        skip: &mut dyn FnMut(SkipReason),
    ) -> Option<Vec<u8>> {
        let start = frag.offset;
        let end = start + frag.payload.len();
        if end > MAX_DATAGRAM || (frag.more && frag.payload.is_empty()) {
            skip(SkipReason::MalformedIp);
            return None;
        }
        if end + OVERHEAD > self.max_bytes {
            skip(SkipReason::IpFragmentOverflow);
            return None;
        }
        if !self.map.contains_key(&frag.key) {
            self.serial += 1;
            let data = self.spare.pop().unwrap_or_default();
            self.map.insert(
                frag.key,
                Datagram {
                    serial: self.serial,
                    first_time: time,
                    data,
                    ranges: Vec::new(),
                    total: None,
                    cost: OVERHEAD,
                },
            );
            self.bytes += OVERHEAD;
            self.order.push_back((frag.key, self.serial));
            if self.order.len() > 2 * self.map.len() + 1024 {
                let map = &self.map;
                self.order
                    .retain(|(k, s)| map.get(k).is_some_and(|d| d.serial == *s));
            }
        }
        // Make room, never evicting the datagram being added to.
        let grow = {
            let d = &self.map[&frag.key];
            end.saturating_sub(d.data.len())
        };
        while self.bytes + grow > self.max_bytes {
            if !self.evict_oldest(&frag.key, skip) {
                break;
            }
        }
        let d = self.map.get_mut(&frag.key)?;
        if !frag.more {
            match d.total {
                Some(t) if t != end => {
                    // Two different ends: the datagram cannot be trusted.
                    let d = self.remove(&frag.key);
                    self.recycle_opt(d);
                    skip(SkipReason::MalformedIp);
                    return None;
                }
                _ => d.total = Some(end),
            }
        }
        if d.data.len() < end {
            d.data.resize(end, 0);
        }
        d.data[start..end].copy_from_slice(frag.payload);
        insert_range(&mut d.ranges, start, end);
        let new_cost = OVERHEAD + d.data.len();
        self.bytes = self.bytes + new_cost - d.cost;
        d.cost = new_cost;
        let complete = match d.total {
            Some(t) => d.ranges.len() == 1 && d.ranges[0] == (0, t),
            None => false,
        };
        if complete {
            let d = self.remove(&frag.key)?;
            let mut data = d.data;
            if let Some(t) = d.total {
                data.truncate(t);
            }
            return Some(data);
        }
        None
    }

    fn remove(&mut self, key: &FragKey) -> Option<Datagram> {
        let d = self.map.remove(key)?;
        self.bytes -= d.cost;
        Some(d)
    }

    fn recycle_opt(&mut self, d: Option<Datagram>) {
        if let Some(d) = d {
            self.recycle(d.data);
        }
    }

    /// Gives a reassembly buffer back for reuse.
    pub(crate) fn recycle(&mut self, mut data: Vec<u8>) {
        if self.spare.len() < 16 && data.capacity() <= MAX_DATAGRAM + 1 {
            data.clear();
            self.spare.push(data);
        }
    }

    fn evict_oldest(&mut self, keep: &FragKey, skip: &mut dyn FnMut(SkipReason)) -> bool {
        let mut kept = None;
        let mut evicted = false;
        while let Some((k, s)) = self.order.pop_front() {
            let live = self.map.get(&k).is_some_and(|d| d.serial == s);
            if !live {
                continue;
            }
            if &k == keep {
                kept = Some((k, s));
                continue;
            }
            let d = self.remove(&k);
            self.recycle_opt(d);
            skip(SkipReason::IpFragmentOverflow);
            evicted = true;
            break;
        }
        if let Some(e) = kept {
            self.order.push_front(e);
        }
        evicted
    }

    /// Drops datagrams older than the timeout at capture time `now`.
    pub(crate) fn expire(&mut self, now: i64, skip: &mut dyn FnMut(SkipReason)) {
        while let Some(&(k, s)) = self.order.front() {
            match self.map.get(&k) {
                Some(d) if d.serial == s => {
                    if now.saturating_sub(d.first_time) <= self.timeout_ns {
                        break;
                    }
                    let d = self.remove(&k);
                    self.recycle_opt(d);
                    skip(SkipReason::IpFragmentIncomplete);
                }
                _ => {}
            }
            self.order.pop_front();
        }
    }

    /// Drops every incomplete datagram (end of the capture).
    pub(crate) fn flush(&mut self, skip: &mut dyn FnMut(SkipReason)) {
        for _ in self.map.drain() {
            skip(SkipReason::IpFragmentIncomplete);
        }
        self.order.clear();
        self.bytes = 0;
    }
}

/// Adds [start, end) to a sorted list of disjoint ranges, merging touching ones.
fn insert_range(ranges: &mut Vec<(usize, usize)>, start: usize, end: usize) {
    if start >= end {
        return;
    }
    let mut s = start;
    let mut e = end;
    let mut i = 0;
    while i < ranges.len() && ranges[i].1 < s {
        i += 1;
    }
    let first = i;
    while i < ranges.len() && ranges[i].0 <= e {
        s = s.min(ranges[i].0);
        e = e.max(ranges[i].1);
        i += 1;
    }
    ranges.splice(first..i, [(s, e)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn key(id: u32) -> FragKey {
        FragKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            id,
            proto: 17,
        }
    }

    fn frag(id: u32, offset: usize, more: bool, payload: &[u8]) -> Fragment<'_> {
        Fragment {
            key: key(id),
            offset,
            more,
            payload,
        }
    }

    #[test]
    fn ranges_merge() {
        let mut r = Vec::new();
        insert_range(&mut r, 8, 16);
        insert_range(&mut r, 32, 40);
        insert_range(&mut r, 0, 8);
        assert_eq!(r, vec![(0, 16), (32, 40)]);
        insert_range(&mut r, 12, 33);
        assert_eq!(r, vec![(0, 40)]);
    }

    #[test]
    fn reassembles_in_any_order_with_duplicates() {
        let data: Vec<u8> = (0..100u8).collect();
        let pieces = [(0, 24), (24, 48), (48, 72), (72, 100)];
        let orders: [[usize; 5]; 3] = [[0, 0, 1, 2, 3], [3, 2, 1, 1, 0], [2, 0, 0, 3, 1]];
        for order in orders {
            let mut d = Defrag::new(1 << 20, 30_000_000_000);
            let mut skips = Vec::new();
            let mut out = None;
            for (n, &i) in order.iter().enumerate() {
                let (s, e) = pieces[i];
                let r = d.add(frag(7, s, e != 100, &data[s..e]), 0, &mut |r| skips.push(r));
                if r.is_some() {
                    assert_eq!(n, order.len() - 1, "completed early");
                    out = r;
                }
            }
            assert_eq!(out.as_deref(), Some(&data[..]));
            assert!(skips.is_empty());
            assert_eq!(d.buffered(), 0);
        }
    }

    #[test]
    fn timeout_and_flush_count_incomplete() {
        let mut d = Defrag::new(1 << 20, 30);
        let mut skips = Vec::new();
        assert!(d
            .add(frag(1, 0, true, &[0; 16]), 0, &mut |r| skips.push(r))
            .is_none());
        assert!(d
            .add(frag(2, 0, true, &[0; 16]), 20, &mut |r| skips.push(r))
            .is_none());
        d.expire(40, &mut |r| skips.push(r));
        assert_eq!(skips, vec![SkipReason::IpFragmentIncomplete]);
        d.flush(&mut |r| skips.push(r));
        assert_eq!(skips.len(), 2);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn memory_bound_evicts_oldest() {
        let mut d = Defrag::new(3 * (1000 + OVERHEAD), 30);
        let mut skips = Vec::new();
        for id in 0..10 {
            assert!(d
                .add(frag(id, 0, true, &[0; 1000]), 0, &mut |r| skips.push(r))
                .is_none());
            assert!(d.buffered() <= 3 * (1000 + OVERHEAD));
        }
        assert_eq!(skips.len(), 7);
        assert!(skips.iter().all(|r| *r == SkipReason::IpFragmentOverflow));
        // The newest datagrams are still there and can complete.
        let out = d.add(frag(9, 1000, false, &[1; 8]), 0, &mut |r| skips.push(r));
        assert_eq!(out.map(|v| v.len()), Some(1008));
    }

    #[test]
    fn oversized_and_inconsistent_fragments_are_dropped() {
        let mut d = Defrag::new(1 << 20, 30);
        let mut skips = Vec::new();
        assert!(d
            .add(frag(1, 65_528, false, &[0; 16]), 0, &mut |r| skips.push(r))
            .is_none());
        d.add(frag(3, 16, false, &[0; 8]), 0, &mut |r| skips.push(r));
        d.add(frag(3, 32, false, &[0; 8]), 0, &mut |r| skips.push(r));
        assert_eq!(
            skips,
            vec![SkipReason::MalformedIp, SkipReason::MalformedIp]
        );
        assert_eq!(d.buffered(), 0);
    }
}
