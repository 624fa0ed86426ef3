//! Response encoding with name compression, without allocation: a 256-slot open-addressing table
//! maps hashes of name suffixes already in the message to their offsets; candidates are verified
//! against the message bytes, so a hash collision can never produce a wrong pointer. A small
//! memo by address lets a name from zone data that was written before (or that an NS record
//! named) become a pointer without hashing; the bytes written are the same either way.
//!
//! Hand-tuned: on the root query mix of bench/serve.sh (signed root zone, 200,000 queries,
//! answered in-process on one core; medians of 3, two sets) answering took 2.73–2.83 µs per
//! query without DO and 3.14–3.20 µs with DO, name compression well over half of it; with the
//! word-wise hash over the name itself, the memo, the NS-to-glue link and one-word table slots
//! it takes 1.05–1.10 and 1.38–1.43 µs, byte for byte the same responses. Under dnsperf the
//! server then spends 6.4 µs of CPU per query (kernel included; 6.9–7.4 before) against knotd's
//! 6.5–7.1 (docs/performance.md).

use crate::name::MAX_NAME;
use crate::zone::{Node, RRset, NONE};
use ldplayer_dns::Rtype;

const SLOTS: usize = 256;
/// Deepest name (in labels) that is compressed.
const MAX_LABELS: usize = 32;

/// Slots of the direct-mapped memo of zone-data names (see [`Writer::zone_name`]).
const MEMO: usize = 64;

/// Appends to a message buffer, compressing names.
pub(crate) struct Writer<'b, 'z> {
    pub buf: &'b mut Vec<u8>,
    /// Suffix hash tag << 16 | (offset + 1); 0 marks an empty slot. Packed in one word so the
    /// table starts as one memset: as (u32, u16) pairs it was zeroed element by element, 0.2 µs
    /// of the 1.5 µs an answer then took.
    table: [u64; SLOTS],
    used: usize,
    /// Names from zone data (immutable while the writer lives, see [`Writer::remember`])
    /// already written, by address: (address, length << 16 | offset a later copy points to),
    /// (0, 0) when empty. The cut name of a referral's NS, DS and RRSIG sets, glue owners after
    /// the NS records naming them, a glue name's AAAA after its A. A cache only: a name it
    /// misses takes the lookup, which finds the same offset.
    memo: [(usize, u64); MEMO],
    zone: std::marker::PhantomData<&'z [u8]>,
}

/// The memo slot of a name's address.
#[inline]
fn memo_slot(name: &[u8]) -> usize {
    let a = name.as_ptr() as usize;
    ((a >> 3) ^ (a >> 9)) % MEMO
}

/// Lowercases the ASCII letters of eight bytes at once: adds 0x20 to each byte in
/// b'A'..=b'Z' (bytes with the top bit set are left alone, as `make_ascii_lowercase` does).
#[inline]
fn lower_word(w: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low7 = w & !HIGH;
    let from_a = low7.wrapping_add(0x3F3F_3F3F_3F3F_3F3F); // top bit set where ≥ b'A'
    let past_z = low7.wrapping_add(0x2525_2525_2525_2525); // top bit set where > b'Z'
    w | ((from_a & !past_z & !w & HIGH) >> 2)
}

#[inline]
fn word_at(name: &[u8], p: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&name[p..p + 8]);
    u64::from_le_bytes(w)
}

/// Hash of the lowercased suffix of `name` from offset `s`, eight bytes at a time (FxHash's
/// step; the last word zero-padded), read from the name itself and lowercased in registers. The
/// slot comes from the top bits and the tag from the next ones, the well-mixed end of the last
/// multiply. A byte at a time (32-bit multiply) over a lowercased stack copy of every name, the
/// hashing was ≈ 25% of answering; reading the copy back as words stalled on store forwarding
/// (the copy gone, answering went from 1.27 to 1.10 µs).
#[inline]
fn suffix_hash(name: &[u8], s: usize) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let len = name.len();
    let mut h = (len - s) as u64;
    let mut p = s;
    while p + 8 <= len {
        h = (h.rotate_left(5) ^ lower_word(word_at(name, p))).wrapping_mul(K);
        p += 8;
    }
    if p < len {
        let rest = len - p;
        let w = if len >= 8 {
            // The last eight bytes of the name, shifted down to the `rest` wanted.
            word_at(name, len - 8) >> (8 * (8 - rest))
        } else {
            name[p..]
                .iter()
                .enumerate()
                .fold(0, |w, (i, &b)| w | (b as u64) << (8 * i))
        };
        h = (h.rotate_left(5) ^ lower_word(w)).wrapping_mul(K);
    }
    h
}

/// The table slot and tag of a suffix hash.
#[inline]
fn slot_tag(h: u64) -> (usize, u32) {
    ((h >> 56) as usize % SLOTS, (h >> 24) as u32)
}

impl<'b, 'z> Writer<'b, 'z> {
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        Writer {
            buf,
            table: [0; SLOTS],
            used: 0,
            memo: [(0, 0); MEMO],
            zone: std::marker::PhantomData,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        // Remembered names at or past the cut are gone (the table's entries there fail
        // verification).
        for m in self.memo.iter_mut() {
            if (m.1 & 0xFFFF) as usize >= len {
                *m = (0, 0);
            }
        }
    }

    /// Whether the name at `off` in the message (following pointers) equals `suffix`
    /// (uncompressed) ignoring ASCII case.
    fn verify(&self, mut off: usize, suffix: &[u8]) -> bool {
        let buf = &self.buf[..];
        let mut s = 0;
        let mut hops = 0;
        loop {
            let Some(&l) = buf.get(off) else { return false };
            if l & 0xC0 == 0xC0 {
                let Some(&lo) = buf.get(off + 1) else {
                    return false;
                };
                off = (((l & 0x3F) as usize) << 8) | lo as usize;
                hops += 1;
                if hops > 64 {
                    return false;
                }
                continue;
            }
            // The label with its length octet: equal bytes, or equal ignoring case (the
            // suffix's length octets are below 64, so a bad one here never matches). Zone data
            // is mostly in one case already: one comparison.
            let n = 1 + l as usize;
            let (Some(a), Some(b)) = (buf.get(off..off + n), suffix.get(s..s + n)) else {
                return false;
            };
            if a != b && !a.eq_ignore_ascii_case(b) {
                return false;
            }
            if l == 0 {
                return true;
            }
            off += n;
            s += n;
        }
    }

    fn lookup(&self, h: u64, suffix: &[u8]) -> Option<u16> {
        let (mut slot, tag) = slot_tag(h);
        for _ in 0..SLOTS {
            let e = self.table[slot];
            if e == 0 {
                return None;
            }
            let eo = e as u16;
            if (e >> 16) as u32 == tag && self.verify(eo as usize - 1, suffix) {
                return Some(eo - 1);
            }
            slot = (slot + 1) % SLOTS;
        }
        None
    }

    /// Adds a suffix at `off`; false when it cannot be a pointer target or the table is full.
    fn register(&mut self, h: u64, off: usize) -> bool {
        if off >= 0x3FFF || self.used >= SLOTS * 3 / 4 {
            return false;
        }
        let (mut slot, tag) = slot_tag(h);
        while self.table[slot] != 0 {
            slot = (slot + 1) % SLOTS;
        }
        self.table[slot] = (tag as u64) << 16 | (off as u64 + 1);
        self.used += 1;
        true
    }

    /// Writes a (well-formed, uncompressed) name, compressing against names already written.
    pub fn name(&mut self, name: &[u8]) {
        self.write_name(name);
    }

    /// Writes a name from zone data like [`name`](Self::name); the same slice written again
    /// becomes a pointer at once, with no lowercasing, hashing or lookup, and the same pointer
    /// the lookup would have found (each suffix is registered once, where first written).
    pub fn zone_name(&mut self, name: &'z [u8]) {
        let (addr, len_off) = self.memo[memo_slot(name)];
        if addr == name.as_ptr() as usize && len_off >> 16 == name.len() as u64 && addr != 0 {
            let off = len_off as u16;
            self.buf.push(0xC0 | (off >> 8) as u8);
            self.buf.push(off as u8);
            return;
        }
        if let Some(off) = self.write_name(name) {
            self.remember(name, off);
        }
    }

    /// Remembers that zone-data name `name` (or one equal to it ignoring case) was written at
    /// `off`. Only `'z` slices come here: their bytes cannot change while the writer lives, so
    /// the same address and length is the same name.
    #[inline]
    fn remember(&mut self, name: &'z [u8], off: u16) {
        if off != 0 && !name.is_empty() {
            self.memo[memo_slot(name)] = (
                name.as_ptr() as usize,
                (name.len() as u64) << 16 | off as u64,
            );
        }
    }

    /// Writes a name; returns the offset that a later copy of it points to, if there is one.
    /// Suffixes are hashed only as far as the lookups go: a name already in the message costs
    /// one hash.
    fn write_name(&mut self, name: &[u8]) -> Option<u16> {
        let len = name.len().min(MAX_NAME);
        let name = &name[..len];
        // Label starts; names deeper than MAX_LABELS are written as they are.
        let mut starts = [0u8; MAX_LABELS];
        let mut n = 0;
        let mut pos = 0;
        while pos < len && name[pos] != 0 {
            if n == MAX_LABELS {
                self.buf.extend_from_slice(name);
                return None;
            }
            starts[n] = pos as u8;
            n += 1;
            pos += 1 + name[pos] as usize;
        }
        let mut hashes = [0u64; MAX_LABELS];
        let base = self.buf.len();
        for i in 0..n {
            let s = starts[i] as usize;
            hashes[i] = suffix_hash(name, s);
            if let Some(off) = self.lookup(hashes[i], &name[s..]) {
                self.buf.extend_from_slice(&name[..s]);
                self.buf.push(0xC0 | (off >> 8) as u8);
                self.buf.push(off as u8);
                if i == 0 {
                    return Some(off);
                }
                let mut first = false;
                for j in 0..i {
                    let ok = self.register(hashes[j], base + starts[j] as usize);
                    first |= j == 0 && ok;
                }
                return first.then_some(base as u16);
            }
        }
        self.buf.extend_from_slice(&name[..len]);
        let mut first = false;
        for j in 0..n {
            let ok = self.register(hashes[j], base + starts[j] as usize);
            first |= j == 0 && ok;
        }
        first.then_some(base as u16)
    }

    /// Registers the (uncompressed) name at `off` for later compression.
    pub fn register_name_at(&mut self, off: usize) {
        let Some(len) = crate::name::wire_name_len(&self.buf[off..]) else {
            return;
        };
        let mut starts = [0u8; 128];
        let n = crate::name::label_starts(&self.buf[off..off + len], &mut starts);
        for &s in &starts[..n] {
            let h = suffix_hash(&self.buf[off..off + len], s as usize);
            self.register(h, off + s as usize);
        }
    }

    /// Writes every record of an RRset under `owner`; returns the number of records.
    pub fn rrset(&mut self, owner: &[u8], set: &RRset) -> u16 {
        self.records(set, |w| w.name(owner), None)
    }

    /// [`rrset`](Self::rrset) with an owner from zone data (see [`zone_name`](Self::zone_name)).
    pub fn zone_rrset(&mut self, owner: &'z [u8], set: &RRset) -> u16 {
        self.records(set, |w| w.zone_name(owner), None)
    }

    /// [`zone_rrset`](Self::zone_rrset) for an NS or MX set of the zone whose nodes are `nodes`:
    /// each record's target node (see [`RRset::targets`]) is remembered as written where the
    /// record names it, so its glue owner in the additional section costs no lookup (13 glue
    /// names per root referral: answering the bench/serve.sh mix went from ≈ 1.7 to ≈ 1.5 µs).
    pub fn linked_rrset(&mut self, owner: &'z [u8], set: &RRset, nodes: &'z [Node]) -> u16 {
        self.records(set, |w| w.zone_name(owner), Some(nodes))
    }

    fn records(
        &mut self,
        set: &RRset,
        owner: impl Fn(&mut Self),
        nodes: Option<&'z [Node]>,
    ) -> u16 {
        let mut record = 0;
        let wire = &set.wire[..];
        let mut pos = 0;
        // After the first record the owner is a pointer to where it was first written.
        let mut owner_ptr: Option<[u8; 2]> = None;
        while pos + 10 <= wire.len() {
            let rdlen = u16::from_be_bytes([wire[pos + 8], wire[pos + 9]]) as usize;
            let end = pos + 10 + rdlen;
            match owner_ptr {
                Some(p) => self.buf.extend_from_slice(&p),
                None => {
                    let at = self.buf.len();
                    owner(self);
                    if self.buf[at] & 0xC0 == 0xC0 {
                        owner_ptr = Some([self.buf[at], self.buf[at + 1]]);
                    } else if self.buf[at] != 0 && at < 0x3FFF {
                        owner_ptr = Some([0xC0 | (at >> 8) as u8, at as u8]);
                    }
                }
            }
            if set.compress {
                self.buf.extend_from_slice(&wire[pos..pos + 8]);
                let len_at = self.buf.len();
                self.buf.extend_from_slice(&[0, 0]);
                let named = self.compressed_rdata(set.rtype, &wire[pos + 10..end]);
                if let (Some(nodes), Some(off)) = (nodes, named) {
                    let target = set.targets.get(record).copied().unwrap_or(NONE);
                    if let Some(n) = nodes.get(target as usize) {
                        self.remember(&n.name, off);
                    }
                }
                let rl = (self.buf.len() - len_at - 2) as u16;
                self.buf[len_at..len_at + 2].copy_from_slice(&rl.to_be_bytes());
            } else {
                self.buf.extend_from_slice(&wire[pos..end]);
            }
            pos = end;
            record += 1;
        }
        set.count
    }

    /// Writes rdata whose names may be compressed (validated at load time); for NS, MX and the
    /// other one-name types returns where a later copy of that name points, if anywhere.
    fn compressed_rdata(&mut self, t: Rtype, rd: &[u8]) -> Option<u16> {
        match t {
            Rtype::SOA | Rtype::MINFO => {
                let a = crate::name::wire_name_len(rd).unwrap_or(rd.len());
                self.name(&rd[..a]);
                let b = crate::name::wire_name_len(&rd[a..]).unwrap_or(rd.len() - a);
                self.name(&rd[a..a + b]);
                self.buf.extend_from_slice(&rd[a + b..]);
                None
            }
            Rtype::MX => {
                self.buf.extend_from_slice(&rd[..2]);
                self.write_name(&rd[2..])
            }
            _ => self.write_name(rd),
        }
    }
}
