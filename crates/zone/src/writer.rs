//! Response encoding with name compression, without allocation: a 256-slot open-addressing table
//! maps hashes of name suffixes already in the message to their offsets; candidates are verified
//! against the message bytes, so a hash collision can never produce a wrong pointer.

use crate::name::MAX_NAME;
use crate::zone::RRset;

const SLOTS: usize = 256;
/// Deepest name (in labels) that is compressed.
const MAX_LABELS: usize = 32;

/// Appends to a message buffer, compressing names.
pub(crate) struct Writer<'b> {
    pub buf: &'b mut Vec<u8>,
    /// (suffix hash, offset + 1); offset 0 marks an empty slot.
    table: [(u32, u16); SLOTS],
    used: usize,
}

#[inline]
fn mix(h: u32, b: u8) -> u32 {
    (h.rotate_left(5) ^ b as u32).wrapping_mul(0x9E37_79B9)
}

impl<'b> Writer<'b> {
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        Writer {
            buf,
            table: [(0, 0); SLOTS],
            used: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    /// Whether the name at `off` in the message (following pointers) equals `suffix`
    /// (lowercase, uncompressed).
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
            if l > 63 || suffix.get(s) != Some(&l) {
                return false;
            }
            if l == 0 {
                return true;
            }
            let l = l as usize;
            let (Some(a), Some(b)) = (buf.get(off + 1..off + 1 + l), suffix.get(s + 1..s + 1 + l))
            else {
                return false;
            };
            if !a.iter().zip(b).all(|(x, y)| x.to_ascii_lowercase() == *y) {
                return false;
            }
            off += 1 + l;
            s += 1 + l;
        }
    }

    fn lookup(&self, h: u32, suffix: &[u8]) -> Option<u16> {
        let mut slot = h as usize % SLOTS;
        for _ in 0..SLOTS {
            let (eh, eo) = self.table[slot];
            if eo == 0 {
                return None;
            }
            if eh == h && self.verify(eo as usize - 1, suffix) {
                return Some(eo - 1);
            }
            slot = (slot + 1) % SLOTS;
        }
        None
    }

    fn register(&mut self, h: u32, off: usize) {
        if off >= 0x3FFF || self.used >= SLOTS * 3 / 4 {
            return;
        }
        let mut slot = h as usize % SLOTS;
        while self.table[slot].1 != 0 {
            slot = (slot + 1) % SLOTS;
        }
        self.table[slot] = (h, off as u16 + 1);
        self.used += 1;
    }

    /// Writes a (well-formed, uncompressed) name, compressing against names already written.
    pub fn name(&mut self, name: &[u8]) {
        let len = name.len().min(MAX_NAME);
        let mut lower = [0u8; MAX_NAME];
        lower[..len].copy_from_slice(&name[..len]);
        lower[..len].make_ascii_lowercase();
        let lower = &lower[..len];
        // Label starts and suffix hashes; names deeper than MAX_LABELS are written as they are.
        let mut starts = [0u8; MAX_LABELS];
        let mut n = 0;
        let mut pos = 0;
        while pos < len && lower[pos] != 0 {
            if n == MAX_LABELS {
                self.buf.extend_from_slice(&name[..len]);
                return;
            }
            starts[n] = pos as u8;
            n += 1;
            pos += 1 + lower[pos] as usize;
        }
        let mut hashes = [0u32; MAX_LABELS];
        let mut h: u32 = 0x5bd1_e995;
        for i in (0..n).rev() {
            let s = starts[i] as usize;
            let l = lower[s] as usize;
            for &b in &lower[s..s + 1 + l] {
                h = mix(h, b);
            }
            hashes[i] = h;
        }
        let base = self.buf.len();
        for i in 0..n {
            let s = starts[i] as usize;
            if let Some(off) = self.lookup(hashes[i], &lower[s..]) {
                self.buf.extend_from_slice(&name[..s]);
                self.buf.push(0xC0 | (off >> 8) as u8);
                self.buf.push(off as u8);
                for j in 0..i {
                    self.register(hashes[j], base + starts[j] as usize);
                }
                return;
            }
        }
        self.buf.extend_from_slice(&name[..len]);
        for j in 0..n {
            self.register(hashes[j], base + starts[j] as usize);
        }
    }

    /// Registers the (uncompressed) name at `off` for later compression.
    pub fn register_name_at(&mut self, off: usize) {
        let mut tmp = [0u8; MAX_NAME];
        let Some(len) = crate::name::wire_name_len(&self.buf[off..]) else {
            return;
        };
        tmp[..len].copy_from_slice(&self.buf[off..off + len]);
        tmp[..len].make_ascii_lowercase();
        let lower = &tmp[..len];
        let mut starts = [0u8; 128];
        let n = crate::name::label_starts(lower, &mut starts);
        let mut h: u32 = 0x5bd1_e995;
        let mut hashes = [0u32; 128];
        for i in (0..n).rev() {
            let s = starts[i] as usize;
            let l = lower[s] as usize;
            for &b in &lower[s..s + 1 + l] {
                h = mix(h, b);
            }
            hashes[i] = h;
        }
        for j in 0..n {
            self.register(hashes[j], off + starts[j] as usize);
        }
    }

    /// Writes every record of an RRset under `owner`; returns the number of records.
    pub fn rrset(&mut self, owner: &[u8], set: &RRset) -> u16 {
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
                    self.name(owner);
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
                self.compressed_rdata(set.rtype, &wire[pos + 10..end]);
                let rl = (self.buf.len() - len_at - 2) as u16;
                self.buf[len_at..len_at + 2].copy_from_slice(&rl.to_be_bytes());
            } else {
                self.buf.extend_from_slice(&wire[pos..end]);
            }
            pos = end;
        }
        set.count
    }

    /// Writes rdata whose names may be compressed (validated at load time).
    fn compressed_rdata(&mut self, t: u16, rd: &[u8]) {
        match t {
            6 | 14 => {
                let a = crate::name::wire_name_len(rd).unwrap_or(rd.len());
                self.name(&rd[..a]);
                let b = crate::name::wire_name_len(&rd[a..]).unwrap_or(rd.len() - a);
                self.name(&rd[a..a + b]);
                self.buf.extend_from_slice(&rd[a + b..]);
            }
            15 => {
                self.buf.extend_from_slice(&rd[..2]);
                self.name(&rd[2..]);
            }
            _ => self.name(rd),
        }
    }
}
