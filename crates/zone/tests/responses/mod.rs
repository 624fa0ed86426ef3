//! What the zone tests compare: responses decoded and normalised (names lowercased, RRset order
//! ignored), the differences between ldplayer's and a reference server's, and the shared zone
//! files. The queries and the reference servers (nsd, knotd) come from ldplayer-testbed.
#![allow(dead_code)]

use ldplayer_dns::{Rcode, Rtype};
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub fn wire(name: &str) -> Vec<u8> {
    ldplayer_dns::name_from_presentation(name).unwrap()
}

pub fn text(name: &[u8]) -> String {
    let mut s = String::new();
    ldplayer_dns::name_to_presentation(name, &mut s);
    s
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rr {
    pub owner: String,
    pub rtype: Rtype,
    pub class: u16,
    pub ttl: u32,
    pub rdata: Vec<u8>,
}

impl std::fmt::Display for Rr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut r = String::new();
        for b in self.rdata.iter().take(24) {
            let _ = write!(r, "{b:02x}");
        }
        if self.rdata.len() > 24 {
            r.push('…');
        }
        write!(
            f,
            "{} {} {} {} {}",
            self.owner,
            self.ttl,
            self.rtype,
            if self.rtype == Rtype::OPT {
                format!("class={}", self.class)
            } else {
                String::new()
            },
            r
        )
    }
}

/// A decoded response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub id: u16,
    pub flags: u16,
    pub qd: Vec<(String, u16, u16)>,
    pub sections: [Vec<Rr>; 3],
    pub opt: Option<Rr>,
    pub len: usize,
}

impl Resp {
    pub fn rcode(&self) -> Rcode {
        let hi = self.opt.as_ref().map_or(0, |o| (o.ttl >> 24) as u16);
        Rcode((hi << 4) | (self.flags & 0xF))
    }
    pub fn aa(&self) -> bool {
        self.flags & 0x0400 != 0
    }
    pub fn tc(&self) -> bool {
        self.flags & 0x0200 != 0
    }
    pub fn answer(&self) -> &[Rr] {
        &self.sections[0]
    }
    pub fn authority(&self) -> &[Rr] {
        &self.sections[1]
    }
    pub fn additional(&self) -> &[Rr] {
        &self.sections[2]
    }
    pub fn has(&self, section: usize, owner: &str, rtype: Rtype) -> bool {
        self.sections[section]
            .iter()
            .any(|r| r.owner == owner && r.rtype == rtype)
    }
    pub fn count(&self, section: usize, rtype: Rtype) -> usize {
        self.sections[section]
            .iter()
            .filter(|r| r.rtype == rtype)
            .count()
    }
}

fn lower_name_in(rd: &mut [u8], from: usize) -> usize {
    let mut p = from;
    while p < rd.len() && rd[p] != 0 {
        let l = rd[p] as usize;
        let end = (p + 1 + l).min(rd.len());
        rd[p + 1..end].make_ascii_lowercase();
        p += 1 + l;
    }
    p + 1
}

/// Lowercases the names of the RFC 1035 types whose names servers may compress (and so whose
/// case depends on compression targets).
fn normalise_rdata(t: Rtype, rd: &mut [u8]) {
    match t.0 {
        2..=5 | 7..=9 | 12 | 39 => {
            lower_name_in(rd, 0);
        }
        6 | 14 => {
            let a = lower_name_in(rd, 0);
            lower_name_in(rd, a);
        }
        15 => {
            lower_name_in(rd, 2);
        }
        _ => {}
    }
}

fn u16_at(b: &[u8], p: usize) -> u16 {
    u16::from_be_bytes([b[p], b[p + 1]])
}

fn read_name(b: &[u8], p: &mut usize) -> String {
    let start = *p;
    while b[*p] != 0 {
        *p += 1 + b[*p] as usize;
    }
    *p += 1;
    let mut n = b[start..*p].to_vec();
    n.make_ascii_lowercase();
    text(&n)
}

/// Decodes a response (names lowercased).
pub fn parse(wire: &[u8]) -> Resp {
    ldplayer_dns::Message::parse(wire).expect("response parses");
    let b = ldplayer_dns::decompress(wire).expect("decompress");
    let counts = [u16_at(&b, 4), u16_at(&b, 6), u16_at(&b, 8), u16_at(&b, 10)];
    let mut p = 12;
    let mut qd = Vec::new();
    for _ in 0..counts[0] {
        let n = read_name(&b, &mut p);
        qd.push((n, u16_at(&b, p), u16_at(&b, p + 2)));
        p += 4;
    }
    let mut sections: [Vec<Rr>; 3] = Default::default();
    let mut opt = None;
    for (s, &count) in counts[1..].iter().enumerate() {
        for _ in 0..count {
            let owner = read_name(&b, &mut p);
            let rtype = Rtype(u16_at(&b, p));
            let class = u16_at(&b, p + 2);
            let ttl = u32::from_be_bytes([b[p + 4], b[p + 5], b[p + 6], b[p + 7]]);
            let len = u16_at(&b, p + 8) as usize;
            let mut rdata = b[p + 10..p + 10 + len].to_vec();
            normalise_rdata(rtype, &mut rdata);
            p += 10 + len;
            let rr = Rr {
                owner,
                rtype,
                class,
                ttl,
                rdata,
            };
            if rtype == Rtype::OPT {
                opt = Some(rr);
            } else {
                sections[s].push(rr);
            }
        }
    }
    Resp {
        id: u16_at(&b, 0),
        flags: u16_at(&b, 2),
        qd,
        sections,
        opt,
        len: wire.len(),
    }
}

/// Section-by-section differences (RRset order ignored), one line each.
pub fn diff(ours: &Resp, theirs: &Resp) -> Vec<String> {
    let mut d = Vec::new();
    // Compare QR, AA, TC, RD, CD and RCODE.
    let mask = 0x8000 | 0x0400 | 0x0200 | 0x0100 | 0x0010 | 0x000F;
    if ours.flags & mask != theirs.flags & mask {
        d.push(format!(
            "flags ours {:04x} theirs {:04x}",
            ours.flags & mask,
            theirs.flags & mask
        ));
    }
    if ours.rcode() != theirs.rcode() {
        d.push(format!(
            "rcode ours {} theirs {}",
            ours.rcode(),
            theirs.rcode()
        ));
    }
    if ours.qd != theirs.qd {
        d.push(format!(
            "question ours {:?} theirs {:?}",
            ours.qd, theirs.qd
        ));
    }
    let names = ["answer", "authority", "additional"];
    for (s, section) in names.iter().enumerate() {
        let mut a: BTreeMap<&Rr, i32> = BTreeMap::new();
        for r in &ours.sections[s] {
            *a.entry(r).or_default() += 1;
        }
        for r in &theirs.sections[s] {
            *a.entry(r).or_default() -= 1;
        }
        for (r, c) in a {
            if c > 0 {
                d.push(format!("{section}: only ours: {r}"));
            } else if c < 0 {
                d.push(format!("{section}: only theirs: {r}"));
            }
        }
    }
    match (&ours.opt, &theirs.opt) {
        (Some(a), Some(b)) => {
            if a.ttl != b.ttl {
                d.push(format!("OPT flags ours {:08x} theirs {:08x}", a.ttl, b.ttl));
            }
        }
        (None, None) => {}
        _ => d.push(format!(
            "OPT presence ours {} theirs {}",
            ours.opt.is_some(),
            theirs.opt.is_some()
        )),
    }
    d
}

/// A query to send: name, type, EDNS (UDP size, DO).
pub type Q = (String, Rtype, Option<(u16, bool)>);

/// A zone file of the shared test data (`zones/FILE`); `None` only when it is missing and
/// `LDPLAYER_ALLOW_SKIP=1` (the caller then returns: the skip is listed).
pub fn shared_zone(file: &str) -> Option<String> {
    ldplayer_testbed::prerequisite::shared_file(&format!("zones/{file}"))
        .map(|p| p.to_string_lossy().into_owned())
}

/// The signed root zone of 2017-08-21.
pub fn root_signed() -> Option<String> {
    shared_zone("root-signed-2017-08-21.zone")
}

/// The unsigned root zone of 2018-03-12.
pub fn root_unsigned() -> Option<String> {
    shared_zone("root-2018-03-12.zone")
}

/// CZ-NIC's sample zone, with time units in its TTLs and SOA timers.
pub fn knot_example() -> Option<String> {
    shared_zone("knot_example.com.zone")
}
