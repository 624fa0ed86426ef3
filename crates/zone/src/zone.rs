//! A zone loaded into memory: nodes keyed by lowercase wire name, RRsets pre-encoded, the NSEC
//! chain in canonical order and the NSEC3 chain in hash order.

use std::path::Path;

use rustc_hash::FxHashMap;

use crate::check::check_zone;
use crate::name;
use crate::reader::{parse_origin, read_zone, read_zone_bytes, ZoneRecord, ZoneText};
use ldplayer_dns::{rdata_names, Class, RdataNames, Rtype};

/// An error while loading a zone, naming the file and line.
#[derive(Debug, thiserror::Error)]
pub enum ZoneError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text could not be parsed or the zone is inconsistent.
    #[error("{}: {msg}", place(file, *line, *column))]
    Syntax {
        /// The file.
        file: String,
        /// The line, from 1 (0 when the error concerns the whole zone).
        line: usize,
        /// The column, from 1, in bytes, where known.
        column: Option<usize>,
        /// What is wrong.
        msg: String,
    },
}

impl ZoneError {
    /// An error at a line (0: the whole file) and column of a file.
    pub fn at(file: &str, line: usize, column: Option<usize>, msg: impl Into<String>) -> Self {
        ZoneError::Syntax {
            file: file.to_string(),
            line,
            column: column.filter(|_| line > 0),
            msg: msg.into(),
        }
    }
}

/// `file:line:column`, `file:line` or `file`, as compilers and zone checkers write places.
fn place(file: &str, line: usize, column: Option<usize>) -> String {
    match (line, column) {
        (0, _) => file.to_string(),
        (l, Some(c)) => format!("{file}:{l}:{c}"),
        (l, None) => format!("{file}:{l}"),
    }
}

/// One RRset, pre-encoded: each record is `TYPE CLASS TTL RDLENGTH RDATA` in wire format,
/// uncompressed, so an answer writes the owner name and copies (or, for types with compressible
/// names, re-encodes) the rest.
#[derive(Debug, Clone)]
pub struct RRset {
    /// The type (for RRSIG sets, 46).
    pub rtype: Rtype,
    /// For RRSIG sets, the covered type.
    pub covered: Rtype,
    /// Number of records.
    pub count: u16,
    /// Whether rdata holds names that RFC 3597 allows to compress (NS, CNAME, SOA, MX, PTR…).
    pub compress: bool,
    /// The records.
    pub wire: Box<[u8]>,
    /// For NS, MX and SRV sets: per record, the node (index into [`Zone::nodes`]) of its target
    /// name when the zone holds it, else [`NONE`]; found at load time so that the additional
    /// section needs no name lookups. Empty for other types.
    pub targets: Box<[u32]>,
}

impl RRset {
    /// Iterates over the records' rdata.
    pub fn rdatas(&self) -> impl Iterator<Item = &[u8]> {
        let mut pos = 0;
        let wire = &self.wire;
        std::iter::from_fn(move || {
            if pos + 10 > wire.len() {
                return None;
            }
            let len = u16::from_be_bytes([wire[pos + 8], wire[pos + 9]]) as usize;
            let r = &wire[pos + 10..pos + 10 + len];
            pos += 10 + len;
            Some(r)
        })
    }

    /// TTL of the first record.
    pub fn ttl(&self) -> u32 {
        u32::from_be_bytes([self.wire[4], self.wire[5], self.wire[6], self.wire[7]])
    }

    /// Rdata of the first record.
    pub fn first_rdata(&self) -> &[u8] {
        self.rdatas().next().unwrap_or(&[])
    }
}

/// Node flags.
pub mod flags {
    /// The zone apex.
    pub const APEX: u8 = 1;
    /// A delegation point: NS below the apex.
    pub const CUT: u8 = 2;
    /// Owns a DNAME.
    pub const DNAME: u8 = 4;
    /// Owns a CNAME.
    pub const CNAME: u8 = 8;
}

/// Sentinel for "no node".
pub const NONE: u32 = u32::MAX;

/// A name in the zone, possibly an empty non-terminal.
#[derive(Debug)]
pub struct Node {
    /// The owner name as first seen in the zone file (original case), wire format.
    pub name: Box<[u8]>,
    /// RRsets in zone-file order of first appearance (RRSIG excluded).
    pub rrsets: Box<[RRset]>,
    /// RRSIG sets, by covered type.
    pub sigs: Box<[RRset]>,
    /// [`flags`].
    pub flags: u8,
    /// The highest strict ancestor that is a zone cut or owns a DNAME (which hides this name), or
    /// [`NONE`].
    pub occluder: u32,
}

impl Node {
    /// The RRset of a type.
    pub fn rrset(&self, t: Rtype) -> Option<&RRset> {
        self.rrsets.iter().find(|r| r.rtype == t)
    }
    /// The RRSIGs covering a type.
    pub fn sig(&self, t: Rtype) -> Option<&RRset> {
        self.sigs.iter().find(|r| r.covered == t)
    }
    /// True for a delegation point.
    pub fn is_cut(&self) -> bool {
        self.flags & flags::CUT != 0
    }
}

/// An NSEC3 record with its signatures.
#[derive(Debug)]
pub struct Nsec3Entry {
    /// The raw hash (decoded first label of the owner).
    pub hash: Box<[u8]>,
    /// The owner name.
    pub owner: Box<[u8]>,
    /// The NSEC3 RRset.
    pub rrset: RRset,
    /// Its RRSIGs.
    pub sig: Option<RRset>,
}

/// The NSEC3 chain of a zone.
#[derive(Debug)]
pub struct Nsec3Chain {
    /// Hash algorithm (1 = SHA-1).
    pub alg: u8,
    /// Extra iterations.
    pub iterations: u16,
    /// Salt.
    pub salt: Box<[u8]>,
    /// Entries sorted by hash.
    pub entries: Vec<Nsec3Entry>,
}

impl Nsec3Chain {
    /// Hashes a (lowercase) name per RFC 5155 §5.
    pub fn hash(&self, name: &[u8]) -> [u8; 20] {
        use ring::digest::{Context, SHA1_FOR_LEGACY_USE_ONLY};
        let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
        ctx.update(name);
        ctx.update(&self.salt);
        let mut h = [0u8; 20];
        h.copy_from_slice(ctx.finish().as_ref());
        for _ in 0..self.iterations {
            let mut ctx = Context::new(&SHA1_FOR_LEGACY_USE_ONLY);
            ctx.update(&h);
            ctx.update(&self.salt);
            h.copy_from_slice(ctx.finish().as_ref());
        }
        h
    }

    /// The entry whose hash equals `h`.
    pub fn matching(&self, h: &[u8]) -> Option<&Nsec3Entry> {
        self.entries
            .binary_search_by(|e| (*e.hash).cmp(h))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The entry covering `h` (the last with a smaller hash, wrapping around), or the matching
    /// one if there is one.
    pub fn covering(&self, h: &[u8]) -> Option<&Nsec3Entry> {
        match self.entries.binary_search_by(|e| (*e.hash).cmp(h)) {
            Ok(i) => Some(&self.entries[i]),
            Err(0) => self.entries.last(),
            Err(i) => Some(&self.entries[i - 1]),
        }
    }
}

/// A zone in memory.
#[derive(Debug)]
pub struct Zone {
    /// The origin, lowercase wire format.
    pub origin: Box<[u8]>,
    /// All nodes; index 0 is the apex.
    pub nodes: Vec<Node>,
    /// Lowercase wire name → node.
    pub index: FxHashMap<Box<[u8]>, u32>,
    /// Nodes owning an NSEC RRset, in canonical order, with their canonical keys.
    pub nsec: Vec<(Box<[u8]>, u32)>,
    /// The NSEC3 chain, if the apex has NSEC3PARAM (or, in a rebuilt zone, NSEC3 records).
    pub nsec3: Option<Nsec3Chain>,
    /// The SOA for negative answers: TTL = min(SOA TTL, MINIMUM) (RFC 2308 §3).
    pub soa_neg: RRset,
    /// The SOA's RRSIGs for negative answers, TTLs capped the same way (as nsd does).
    pub soa_sig_neg: Option<RRset>,
    /// Number of records loaded.
    pub record_count: usize,
    /// The file it was loaded from, as named in messages.
    pub file: String,
    /// What was taken otherwise than as written (a TTL of 2^31 or more, taken as 0), placed
    /// where it was written, for the loader to show.
    pub warnings: Vec<ZoneError>,
}

fn syntax(file: &str, line: usize, msg: impl Into<String>) -> ZoneError {
    ZoneError::at(file, line, None, msg)
}

/// Whether a type's rdata names may be compressed (RFC 3597 §4: the RFC 1035 types).
fn compressible(t: Rtype) -> bool {
    matches!(
        t,
        Rtype::NS
            | Rtype::MD
            | Rtype::MF
            | Rtype::CNAME
            | Rtype::SOA
            | Rtype::MB
            | Rtype::MG
            | Rtype::MR
            | Rtype::PTR
            | Rtype::MINFO
            | Rtype::MX
    )
}

/// Checks that compressible rdata holds well-formed names where the type puts them, and
/// nothing after them but SOA's five counters.
fn rdata_names_ok(t: Rtype, rdata: &[u8]) -> bool {
    let one = |r: &[u8]| name::wire_name_len(r) == Some(r.len());
    match rdata_names(t) {
        RdataNames::At(at) => rdata.len() > at && one(&rdata[at..]),
        RdataNames::Two => {
            let tail = if t == Rtype::SOA { 20 } else { 0 };
            match name::wire_name_len(rdata) {
                Some(a) => match name::wire_name_len(&rdata[a..]) {
                    Some(b) => rdata.len() == a + b + tail,
                    None => false,
                },
                None => false,
            }
        }
        RdataNames::None | RdataNames::Naptr => true,
    }
}

fn encode_rrset(rtype: Rtype, covered: Rtype, recs: &[(u32, &[u8])]) -> RRset {
    let mut wire = Vec::new();
    for (ttl, rd) in recs {
        let t = if rtype == Rtype::RRSIG {
            Rtype::RRSIG
        } else {
            rtype
        };
        wire.extend_from_slice(&t.0.to_be_bytes());
        wire.extend_from_slice(&Class::IN.0.to_be_bytes());
        wire.extend_from_slice(&ttl.to_be_bytes());
        wire.extend_from_slice(&(rd.len() as u16).to_be_bytes());
        wire.extend_from_slice(rd);
    }
    let compress = compressible(rtype) && recs.iter().all(|(_, rd)| rdata_names_ok(rtype, rd));
    RRset {
        rtype,
        covered,
        count: recs.len() as u16,
        compress,
        wire: wire.into_boxed_slice(),
        targets: Box::new([]),
    }
}

impl Zone {
    /// Loads a zone file. The origin is `origin` if given (presentation format), else the file's
    /// `$ORIGIN`/absolute names decide and the zone's origin is the SOA owner. The file must
    /// make one zone as BIND and nsd see one (see [`crate::check_zone`]); errors
    /// name the file, line and column.
    pub fn from_file(path: impl AsRef<Path>, origin: Option<&str>) -> Result<Zone, ZoneError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let origin = origin.map(|o| parse_origin(o, &file)).transpose()?;
        let read = read_zone(path, origin.as_deref())?;
        Self::from_records(read, origin.as_deref(), &file)
    }

    /// Loads a zone from text; `file` names it in errors and `$INCLUDE` paths are relative to
    /// the current directory.
    pub fn from_text(text: &str, file: &str, origin: Option<&str>) -> Result<Zone, ZoneError> {
        let origin = origin.map(|o| parse_origin(o, file)).transpose()?;
        let read = read_zone_bytes(text.as_bytes(), file, Path::new("."), origin.as_deref())?;
        Self::from_records(read, origin.as_deref(), file)
    }

    /// Loads one zone of a [bundle](crate::bundle): `text` is its section, starting with its
    /// `$ORIGIN` line, which is line `before + 1` of `file`, and `apex` (wire format) its apex;
    /// errors and records are placed at the bundle's lines. `$INCLUDE` paths are relative to
    /// `dir`.
    pub fn from_section(
        text: &[u8],
        file: &str,
        dir: &Path,
        apex: &[u8],
        before: usize,
    ) -> Result<Zone, ZoneError> {
        let shift = |e: ZoneError| match e {
            ZoneError::Syntax {
                file: f,
                line,
                column,
                msg,
            } if f == file && line > 0 => ZoneError::Syntax {
                file: f,
                line: line + before,
                column,
                msg,
            },
            e => e,
        };
        let mut read = read_zone_bytes(text, file, dir, None).map_err(shift)?;
        for r in &mut read.records {
            if &*r.file == file {
                r.line += before;
            }
        }
        read.warnings = read.warnings.into_iter().map(shift).collect();
        // The records are placed already; what concerns the whole zone goes to its $ORIGIN.
        Self::from_records(read, Some(apex), file).map_err(|e| match e {
            ZoneError::Syntax {
                file: f,
                line: 0,
                msg,
                ..
            } if f == file => ZoneError::Syntax {
                file: f,
                line: before + 1,
                column: None,
                msg: format!("zone {}: {msg}", name::to_text(apex)),
            },
            e => e,
        })
    }

    /// The zone of records read from `file` (the apex is `origin`, wire format, when given).
    fn from_records(read: ZoneText, origin: Option<&[u8]>, file: &str) -> Result<Zone, ZoneError> {
        let origin = check_zone(&read.records, origin, file)?;
        let mut zone = Self::build(origin, read.records, file)?;
        zone.warnings = read.warnings;
        Ok(zone)
    }

    fn build(origin: Box<[u8]>, raws: Vec<ZoneRecord>, file: &str) -> Result<Zone, ZoneError> {
        let record_count = raws.len();
        // Group records by owner (all at or below the origin: checked).
        let mut index: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        let mut names: Vec<Box<[u8]>> = Vec::new();
        let mut recs: Vec<Vec<ZoneRecord>> = Vec::new();
        index.insert(origin.clone(), 0);
        names.push(origin.clone());
        recs.push(Vec::new());
        for r in raws {
            let lower = name::lowercase(&r.owner);
            let i = match index.get(&lower) {
                Some(&i) => i,
                None => {
                    let i = names.len() as u32;
                    index.insert(lower, i);
                    names.push(r.owner.clone().into_boxed_slice());
                    recs.push(Vec::new());
                    i
                }
            };
            recs[i as usize].push(r);
        }
        // The apex keeps the SOA owner's spelling.
        if let Some(r) = recs[0].first() {
            names[0] = r.owner.clone().into_boxed_slice();
        }
        // NSEC3 chain: nodes holding only NSEC3 (and their RRSIGs) leave the tree.
        let mut nsec3_entries = Vec::new();
        let mut removed = vec![false; names.len()];
        for (i, rs) in recs.iter_mut().enumerate() {
            if i > 0
                && !rs.is_empty()
                && rs.iter().any(|r| r.rtype == Rtype::NSEC3)
                && rs.iter().all(|r| {
                    r.rtype == Rtype::NSEC3
                        || (r.rtype == Rtype::RRSIG
                            && r.rdata.len() >= 2
                            && Rtype(u16::from_be_bytes([r.rdata[0], r.rdata[1]])) == Rtype::NSEC3)
                })
            {
                let owner = names[i].clone();
                let label = &owner[1..1 + owner[0] as usize];
                let Some(hash) = name::base32hex_decode(label) else {
                    continue;
                };
                let (set, sig) = split_sets(std::mem::take(rs));
                let rrset = set.into_iter().find(|s| s.rtype == Rtype::NSEC3);
                if let Some(rrset) = rrset {
                    nsec3_entries.push(Nsec3Entry {
                        hash: hash.into_boxed_slice(),
                        owner,
                        rrset,
                        sig: sig.into_iter().next(),
                    });
                    removed[i] = true;
                }
            }
        }
        // Create empty non-terminals.
        let mut i = 0;
        while i < names.len() {
            if !removed[i] {
                let lower = name::lowercase(&names[i]);
                let mut cur: &[u8] = &lower;
                while let Some(p) = name::parent(cur) {
                    if p.len() < origin.len() {
                        break;
                    }
                    if !index.contains_key(p) {
                        index.insert(p.into(), names.len() as u32);
                        names.push(p.into());
                        recs.push(Vec::new());
                        removed.push(false);
                    }
                    cur = p;
                }
            }
            i += 1;
        }
        // Build nodes (index numbers must stay stable; removed nodes stay as empty tombstones
        // that are no longer indexed).
        let mut nodes: Vec<Node> = Vec::with_capacity(names.len());
        for (i, (nm, rs)) in names.into_iter().zip(recs).enumerate() {
            let (sets, sigs) = split_sets(rs);
            let mut fl = 0u8;
            if i == 0 {
                fl |= flags::APEX;
            } else if sets.iter().any(|s| s.rtype == Rtype::NS) {
                fl |= flags::CUT;
            }
            if sets.iter().any(|s| s.rtype == Rtype::DNAME) {
                fl |= flags::DNAME;
            }
            if sets.iter().any(|s| s.rtype == Rtype::CNAME) {
                fl |= flags::CNAME;
            }
            if removed[i] {
                index.remove(&*name::lowercase(&nm));
            }
            nodes.push(Node {
                name: nm,
                rrsets: sets.into_boxed_slice(),
                sigs: sigs.into_boxed_slice(),
                flags: fl,
                occluder: NONE,
            });
        }
        // Additional-section targets of NS, MX and SRV sets: the in-zone nodes their rdata
        // names (lowercased, as answering looked them up) lead to. Looking them up per answer was
        // 10% of answering the root query mix of bench/serve.sh (26 lookups per referral).
        for node in nodes.iter_mut() {
            for set in node.rrsets.iter_mut() {
                let skip = match set.rtype {
                    Rtype::NS => 0,
                    Rtype::MX => 2,
                    Rtype::SRV => 6,
                    _ => continue,
                };
                let targets: Vec<u32> = set
                    .rdatas()
                    .map(|rd| {
                        let Some(target) = rd.get(skip..) else {
                            return NONE;
                        };
                        let lower = name::lowercase(&target[..target.len().min(name::MAX_NAME)]);
                        if !name::is_subdomain(&lower, &origin) {
                            return NONE;
                        }
                        index.get(&lower).copied().unwrap_or(NONE)
                    })
                    .collect();
                set.targets = targets.into_boxed_slice();
            }
        }
        // Occluders, computed parents-first (by label count).
        let mut order: Vec<u32> = (0..nodes.len() as u32)
            .filter(|&i| !removed[i as usize])
            .collect();
        order.sort_by_key(|&i| name::label_count(&nodes[i as usize].name));
        for &i in &order {
            if i == 0 {
                continue;
            }
            let lower = name::lowercase(&nodes[i as usize].name);
            let Some(p) = name::parent(&lower) else {
                continue;
            };
            let Some(&pi) = index.get(p) else { continue };
            let pn = &nodes[pi as usize];
            let occ = if pn.occluder != NONE {
                pn.occluder
            } else if (pi != 0 && pn.flags & flags::CUT != 0) || pn.flags & flags::DNAME != 0 {
                pi
            } else {
                NONE
            };
            nodes[i as usize].occluder = occ;
        }
        // NSEC chain.
        let mut nsec: Vec<(Box<[u8]>, u32)> = order
            .iter()
            .filter(|&&i| nodes[i as usize].rrset(Rtype::NSEC).is_some())
            .map(|&i| {
                let mut k = Vec::new();
                name::canonical_key(&nodes[i as usize].name, &mut k);
                (k.into_boxed_slice(), i)
            })
            .collect();
        nsec.sort();
        // NSEC3 parameters from the apex NSEC3PARAM, or else from the NSEC3 records: a zone
        // rebuilt from captured responses has the NSEC3 records the answers carried but not
        // the NSEC3PARAM, which resolvers never ask for (the same algorithm, iterations and
        // salt are in every NSEC3 of the chain, RFC 5155 §4).
        let params: Option<Vec<u8>> = nodes[0]
            .rrset(Rtype::NSEC3PARAM)
            .map(|p| p.first_rdata().to_vec())
            .or_else(|| {
                nsec3_entries
                    .first()
                    .map(|e| e.rrset.first_rdata().to_vec())
            });
        let nsec3 = params.and_then(|rd| {
            if rd.len() < 5 || rd.len() < 5 + rd[4] as usize {
                return None;
            }
            let mut entries = std::mem::take(&mut nsec3_entries);
            entries.sort_by(|a, b| a.hash.cmp(&b.hash));
            Some(Nsec3Chain {
                alg: rd[0],
                iterations: u16::from_be_bytes([rd[2], rd[3]]),
                salt: rd[5..5 + rd[4] as usize].into(),
                entries,
            })
        });
        // Negative-answer SOA.
        let soa = nodes[0]
            .rrset(Rtype::SOA)
            .ok_or_else(|| syntax(file, 0, "no SOA at the apex"))?;
        let rd = soa.first_rdata();
        if rd.len() < 20 {
            return Err(syntax(file, 0, "bad SOA rdata"));
        }
        let minimum = u32::from_be_bytes([
            rd[rd.len() - 4],
            rd[rd.len() - 3],
            rd[rd.len() - 2],
            rd[rd.len() - 1],
        ]);
        let ttl = soa.ttl().min(minimum);
        let soa_neg = encode_rrset(Rtype::SOA, Rtype(0), &[(ttl, rd)]);
        let soa_sig_neg = nodes[0].sig(Rtype::SOA).map(|sig| {
            let mut recs: Vec<(u32, &[u8])> = Vec::new();
            let mut pos = 0;
            let w = &sig.wire;
            while pos + 10 <= w.len() {
                let t = u32::from_be_bytes([w[pos + 4], w[pos + 5], w[pos + 6], w[pos + 7]]);
                let len = u16::from_be_bytes([w[pos + 8], w[pos + 9]]) as usize;
                recs.push((t.min(minimum), &w[pos + 10..pos + 10 + len]));
                pos += 10 + len;
            }
            encode_rrset(Rtype::RRSIG, Rtype::SOA, &recs)
        });
        Ok(Zone {
            origin,
            nodes,
            index,
            nsec,
            nsec3,
            soa_neg,
            soa_sig_neg,
            record_count,
            file: file.to_string(),
            warnings: Vec::new(),
        })
    }

    /// The apex node.
    pub fn apex(&self) -> &Node {
        &self.nodes[0]
    }

    /// The node of a lowercase wire name.
    pub fn node(&self, lower: &[u8]) -> Option<&Node> {
        self.index.get(lower).map(|&i| &self.nodes[i as usize])
    }

    /// The node owning the NSEC that covers a (lowercase) name: the last NSEC owner before it in
    /// canonical order, wrapping around.
    pub fn nsec_covering(&self, name: &[u8]) -> Option<&Node> {
        if self.nsec.is_empty() {
            return None;
        }
        let mut key = Vec::with_capacity(name.len() + 8);
        name::canonical_key(name, &mut key);
        let i = match self.nsec.binary_search_by(|(k, _)| (**k).cmp(&key)) {
            Ok(i) => i,
            Err(0) => self.nsec.len() - 1,
            Err(i) => i - 1,
        };
        Some(&self.nodes[self.nsec[i].1 as usize])
    }

    /// True when the zone is signed with NSEC.
    pub fn has_nsec(&self) -> bool {
        !self.nsec.is_empty()
    }

    /// Origin in presentation format.
    pub fn origin_text(&self) -> String {
        name::to_text(&self.origin)
    }

    /// Number of names (including empty non-terminals, excluding NSEC3 owners).
    pub fn name_count(&self) -> usize {
        self.index.len()
    }
}

/// Splits records into RRsets (sorted by type, duplicates removed) and RRSIG sets by covered
/// type.
fn split_sets(mut rs: Vec<ZoneRecord>) -> (Vec<RRset>, Vec<RRset>) {
    let key = |r: &ZoneRecord| {
        if r.rtype == Rtype::RRSIG && r.rdata.len() >= 2 {
            (1u8, Rtype(u16::from_be_bytes([r.rdata[0], r.rdata[1]])))
        } else {
            (0u8, r.rtype)
        }
    };
    // Zone-file order of first appearance of each type (kept for the RRsets: a UDP ANY query
    // is answered with the first, as nsd does).
    let mut first: Vec<(u8, Rtype)> = Vec::new();
    for r in &rs {
        let k = key(r);
        if !first.contains(&k) {
            first.push(k);
        }
    }
    rs.sort_by_key(key);
    let mut sets = Vec::new();
    let mut sigs = Vec::new();
    let mut i = 0;
    while i < rs.len() {
        let k = key(&rs[i]);
        let mut j = i;
        let mut recs: Vec<(u32, &[u8])> = Vec::new();
        while j < rs.len() && key(&rs[j]) == k {
            if !recs.iter().any(|(_, rd)| *rd == &rs[j].rdata[..]) {
                recs.push((rs[j].ttl, &rs[j].rdata));
            }
            j += 1;
        }
        if k.0 == 1 {
            sigs.push(encode_rrset(Rtype::RRSIG, k.1, &recs));
        } else {
            sets.push(encode_rrset(k.1, Rtype(0), &recs));
        }
        i = j;
    }
    sets.sort_by_key(|s: &RRset| first.iter().position(|&k| k == (0, s.rtype)));
    (sets, sigs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a.b.` in wire form.
    const NAME: &[u8] = b"\x01a\x01b\x00";

    #[test]
    fn names_are_checked_where_each_type_puts_them() {
        assert!(rdata_names_ok(Rtype::NS, NAME));
        assert!(!rdata_names_ok(Rtype::NS, &NAME[..4]), "a cut name");
        let mx = [&[0, 10][..], NAME].concat();
        assert!(rdata_names_ok(Rtype::MX, &mx));
        assert!(!rdata_names_ok(Rtype::MX, &mx[..2]), "no exchange");
        let minfo = [NAME, NAME].concat();
        assert!(rdata_names_ok(Rtype::MINFO, &minfo));
        assert!(!rdata_names_ok(Rtype::MINFO, &[&minfo[..], &[0]].concat()));
        let soa = [NAME, NAME, &[0; 20]].concat();
        assert!(rdata_names_ok(Rtype::SOA, &soa));
        assert!(
            !rdata_names_ok(Rtype::SOA, &soa[..soa.len() - 1]),
            "a counter short"
        );
        assert!(
            rdata_names_ok(Rtype::A, &[192, 0, 2, 1]),
            "no names to check"
        );
    }
}
