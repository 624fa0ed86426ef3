//! Authoritative answering (RFC 1034 §4.3.2, RFC 4035 §3.1, RFC 5155 §7.2, RFC 6672, RFC 4592).

use ldplayer_dns::{flag, Class, Message, Rcode, Rtype};

use crate::name::{self, MAX_NAME};
use crate::set::ZoneSet;
use crate::writer::Writer;
use crate::zone::{flags, Node, RRset, Zone, NONE};

/// Options of the answering server.
#[derive(Debug, Clone, Copy)]
pub struct AnswerOptions {
    /// The server's EDNS UDP payload size, echoed in the OPT record and capping the client's.
    pub edns_size: u16,
    /// The query came over TCP: no size limit below 65535.
    pub tcp: bool,
    /// Minimal responses (knot's behaviour): no apex NS in the authority section of positive
    /// answers. The default, off, is nsd's. (Additional addresses for NS/MX/SRV targets are
    /// added either way.)
    pub minimal: bool,
    /// Longest CNAME/DNAME chain followed inside a zone.
    pub max_chain: u8,
}

impl Default for AnswerOptions {
    fn default() -> Self {
        AnswerOptions {
            edns_size: 1232,
            tcp: false,
            minimal: false,
            max_chain: 8,
        }
    }
}

/// What kind of response was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Authoritative data in the answer section (possibly after CNAME/DNAME).
    Answer,
    /// The name exists but not the type.
    NoData,
    /// The name does not exist.
    NxDomain,
    /// A delegation to a child zone.
    Referral,
    /// The name is in no served zone.
    Refused,
    /// Malformed query (or QDCOUNT ≠ 1).
    FormErr,
    /// Opcode or type not implemented.
    NotImp,
    /// Unsupported EDNS version.
    BadVers,
    /// A DNAME substitution produced a name that is too long.
    YxDomain,
}

/// Summary of a response written by [`ZoneSet::answer_into`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The full response code.
    pub rcode: Rcode,
    /// The kind.
    pub kind: Kind,
    /// TC was set.
    pub truncated: bool,
    /// How many labels the origin of the zone that answered has (0 the root, 1 a TLD);
    /// `None` when no zone did. A recursive resolver's upstream queries count by level so.
    pub zone_labels: Option<u8>,
}

/// A response with its bytes.
#[derive(Debug, Clone)]
pub struct Response {
    /// The message.
    pub wire: Vec<u8>,
    /// Its summary.
    pub outcome: Outcome,
}

/// Owner, RRset, its RRSIGs, and for an NS/MX set the nodes of its zone (its targets' owners
/// then count as written where the records name them, see [`Writer::linked_rrset`]).
type Item<'z> = (&'z [u8], &'z RRset, Option<&'z RRset>, Option<&'z [Node]>);

/// A fixed-capacity list of RRsets to write (no allocation).
struct Items<'z, const N: usize> {
    items: [Option<Item<'z>>; N],
    len: usize,
}

impl<'z, const N: usize> Items<'z, N> {
    fn new() -> Self {
        Items {
            items: [None; N],
            len: 0,
        }
    }
    fn push(&mut self, owner: &'z [u8], set: &'z RRset, sig: Option<&'z RRset>) {
        self.push_linked(owner, set, sig, None);
    }
    fn push_linked(
        &mut self,
        owner: &'z [u8],
        set: &'z RRset,
        sig: Option<&'z RRset>,
        nodes: Option<&'z [Node]>,
    ) {
        if self.items[..self.len]
            .iter()
            .any(|i| matches!(i, Some((_, s, _, _)) if std::ptr::eq(*s, set)))
        {
            return;
        }
        if self.len < N {
            self.items[self.len] = Some((owner, set, sig, nodes));
            self.len += 1;
        }
    }
}

struct Ctx<'z, 'b> {
    w: Writer<'b, 'z>,
    limit: usize,
    dnssec: bool,
    minimal: bool,
    dname_seen: bool,
    /// RRsets already in the answer section (CNAME loop detection; no repeats in additional).
    answered: [*const RRset; 16],
    n_answered: usize,
    an: u16,
    aa: bool,
    truncated: bool,
    rcode: Rcode,
    kind: Kind,
    auth: Items<'z, 12>,
    /// The zone's NS set beside a positive answer: nsd's optional authority, written after the
    /// authority proper and, like the additional section, as far as it fits without TC.
    opt_auth: Items<'z, 2>,
    addl: Items<'z, 64>,
}

/// A lowercase name in a stack buffer.
#[derive(Clone, Copy)]
struct NameBuf {
    b: [u8; MAX_NAME],
    len: usize,
}

impl NameBuf {
    fn from(n: &[u8]) -> Self {
        let mut b = [0u8; MAX_NAME];
        let len = n.len().min(MAX_NAME);
        b[..len].copy_from_slice(&n[..len]);
        b[..len].make_ascii_lowercase();
        NameBuf { b, len }
    }
    fn get(&self) -> &[u8] {
        &self.b[..self.len]
    }
}

/// `*.` + name, if it fits.
fn wildcard_of(ce: &[u8]) -> Option<NameBuf> {
    if ce.len() + 2 > MAX_NAME {
        return None;
    }
    let mut b = [0u8; MAX_NAME];
    b[0] = 1;
    b[1] = b'*';
    b[2..2 + ce.len()].copy_from_slice(ce);
    Some(NameBuf {
        b,
        len: ce.len() + 2,
    })
}

/// The ancestor of `name` (or itself) with one label more than `ce`.
fn next_closer<'a>(name: &'a [u8], ce: &[u8]) -> &'a [u8] {
    let want = name::label_count(ce) + 1;
    let mut cur = name;
    while name::label_count(cur) > want {
        match name::parent(cur) {
            Some(p) => cur = p,
            None => break,
        }
    }
    cur
}

impl<'z> Ctx<'z, '_> {
    fn in_answer(&self, set: &RRset) -> bool {
        self.answered[..self.n_answered].contains(&(set as *const RRset))
    }

    /// Writes an answer-section RRset (with its RRSIGs when DO is set).
    fn answer(&mut self, owner: &[u8], set: &RRset, sig: Option<&RRset>) {
        if self.n_answered < self.answered.len() {
            self.answered[self.n_answered] = set;
            self.n_answered += 1;
        }
        if self.truncated {
            return;
        }
        let mark = self.w.len();
        let mut n = self.w.rrset(owner, set);
        if self.dnssec {
            if let Some(s) = sig {
                n += self.w.rrset(owner, s);
            }
        }
        if self.w.len() > self.limit {
            self.w.truncate(mark);
            self.truncated = true;
        } else {
            self.an += n;
        }
    }

    fn auth_set(&mut self, owner: &'z [u8], set: &'z RRset, sig: Option<&'z RRset>) {
        self.auth
            .push(owner, set, if self.dnssec { sig } else { None });
    }

    fn auth_node(&mut self, n: &'z Node, t: Rtype) -> bool {
        match n.rrset(t) {
            Some(s) => {
                self.auth_set(&n.name, s, n.sig(t));
                true
            }
            None => false,
        }
    }

    fn soa(&mut self, z: &'z Zone) {
        self.auth_set(&z.apex().name, &z.soa_neg, z.soa_sig_neg.as_ref());
    }

    fn nsec_cover(&mut self, z: &'z Zone, name: &[u8]) {
        if let Some(n) = z.nsec_covering(name) {
            self.auth_node(n, Rtype::NSEC);
        }
    }

    fn nsec3_match(&mut self, z: &'z Zone, name: &[u8]) -> bool {
        let Some(c) = &z.nsec3 else { return false };
        let h = c.hash(name);
        match c.matching(&h) {
            Some(e) => {
                self.auth_set(&e.owner, &e.rrset, e.sig.as_ref());
                true
            }
            None => false,
        }
    }

    fn nsec3_cover(&mut self, z: &'z Zone, name: &[u8]) {
        let Some(c) = &z.nsec3 else { return };
        let h = c.hash(name);
        if let Some(e) = c.covering(&h) {
            self.auth_set(&e.owner, &e.rrset, e.sig.as_ref());
        }
    }

    /// Closest (provable) encloser proof for `name`: the NSEC3 matching the closest ancestor
    /// that has one, and the one covering the next closer name. Returns the encloser.
    fn nsec3_ce_proof<'n>(&mut self, z: &'z Zone, name: &'n [u8], start: &'n [u8]) -> &'n [u8] {
        let mut ce = start;
        loop {
            if self.nsec3_match(z, ce) || ce.len() <= z.origin.len() {
                break;
            }
            match name::parent(ce) {
                Some(p) => ce = p,
                None => break,
            }
        }
        if ce.len() < name.len() {
            self.nsec3_cover(z, next_closer(name, ce));
        }
        ce
    }

    /// Denial of DS at a delegation (RFC 4035 §3.1.4, RFC 5155 §7.2.7).
    fn no_ds_proof(&mut self, z: &'z Zone, cut: &'z Node, cut_lower: &[u8]) {
        if z.has_nsec() {
            self.auth_node(cut, Rtype::NSEC);
        } else if z.nsec3.is_some() && !self.nsec3_match(z, cut_lower) {
            if let Some(p) = name::parent(cut_lower) {
                self.nsec3_ce_proof(z, cut_lower, p);
            }
        }
    }

    /// Addresses of the in-zone targets of an NS, MX or SRV set (found at load time, see
    /// [`RRset::targets`]).
    fn additional_for(&mut self, z: &'z Zone, set: &'z RRset) {
        // All A RRsets first, then all AAAA (nsd's order, which decides what fits).
        for ty in [Rtype::A, Rtype::AAAA] {
            for &i in set.targets.iter() {
                // NONE (the target is not in the zone) is out of range too.
                let Some(n) = z.nodes.get(i as usize) else {
                    continue;
                };
                if let Some(s) = n.rrset(ty) {
                    let sig = if self.dnssec { n.sig(ty) } else { None };
                    self.addl.push(&n.name, s, sig);
                }
            }
        }
    }

    fn referral(&mut self, z: &'z Zone, cut: &'z Node) {
        let Some(ns) = cut.rrset(Rtype::NS) else {
            return;
        };
        self.kind = Kind::Referral;
        self.aa = self.an > 0;
        self.auth.push_linked(&cut.name, ns, None, Some(&z.nodes));
        if self.dnssec && !self.auth_node(cut, Rtype::DS) {
            let lower = NameBuf::from(&cut.name);
            self.no_ds_proof(z, cut, lower.get());
        }
        self.additional_for(z, ns);
    }

    /// Answers from node `n` for `cur` (the node itself, or a wildcard node when `wild` gives
    /// the closest encloser). Returns the CNAME target to follow, if any.
    fn at_node(
        &mut self,
        z: &'z Zone,
        n: &'z Node,
        cur: &[u8],
        qtype: Rtype,
        wild: Option<&[u8]>,
    ) -> Option<NameBuf> {
        self.aa = true;
        let wildcard_proof = |ctx: &mut Self| {
            if let (true, Some(ce)) = (ctx.dnssec, wild) {
                if z.has_nsec() {
                    ctx.nsec_cover(z, cur);
                } else if z.nsec3.is_some() {
                    ctx.nsec3_cover(z, next_closer(cur, ce));
                }
            }
        };
        if qtype == Rtype::ANY && !n.rrsets.is_empty() {
            // One RRset (RFC 8482 §4.1), chosen as nsd does: the first of A, AAAA, SOA, MX,
            // PTR; else the last other type; else the last of DNSKEY, RRSIG, NSEC.
            let class = |t: Rtype| match t {
                Rtype::A | Rtype::AAAA | Rtype::SOA | Rtype::MX | Rtype::PTR => 0,
                Rtype::DNSKEY | Rtype::RRSIG | Rtype::NSEC => 2,
                _ => 1,
            };
            let pick = n
                .rrsets
                .iter()
                .find(|s| class(s.rtype) == 0)
                .or_else(|| n.rrsets.iter().rev().find(|s| class(s.rtype) == 1))
                .or_else(|| n.rrsets.last());
            if let Some(s) = pick {
                self.answer(cur, s, n.sig(s.rtype));
                self.additional_for(z, s);
            }
            if self.kind != Kind::Referral {
                self.kind = Kind::Answer;
            }
            wildcard_proof(self);
            return None;
        }
        if qtype == Rtype::NSEC3 {
            // nsd answers NODATA to NSEC3 queries at names that exist (NSEC3 records live at
            // hashed names outside the zone's namespace) and follows no CNAME for them.
            return self.nodata(z, n, cur, wild);
        }
        if let Some(s) = n.rrset(qtype) {
            self.answer(cur, s, n.sig(qtype));
            self.kind = Kind::Answer;
            wildcard_proof(self);
            // The answer's additional addresses come before the NS set's (nsd's order).
            self.additional_for(z, s);
            if !self.minimal
                && !matches!(qtype, Rtype::DNSKEY | Rtype::DS)
                && (qtype != Rtype::NS || n.flags & flags::APEX == 0)
            {
                let apex = z.apex();
                if let Some(ns) = apex.rrset(Rtype::NS) {
                    let sig = if self.dnssec {
                        apex.sig(Rtype::NS)
                    } else {
                        None
                    };
                    self.opt_auth
                        .push_linked(&apex.name, ns, sig, Some(&z.nodes));
                    self.additional_for(z, ns);
                }
            }
            return None;
        }
        if qtype == Rtype::RRSIG && !n.sigs.is_empty() {
            // All RRSIGs at the name are one RRset: all fit or TC.
            if !self.truncated {
                let mark = self.w.len();
                let mut count = 0;
                for s in n.sigs.iter() {
                    count += self.w.rrset(cur, s);
                }
                if self.w.len() > self.limit {
                    self.w.truncate(mark);
                    self.truncated = true;
                } else {
                    self.an += count;
                }
            }
            self.kind = Kind::Answer;
            return None;
        }
        if let Some(c) = n.rrset(Rtype::CNAME) {
            if self.in_answer(c) {
                // A loop: nsd stops when the CNAME is already in the answer.
                return None;
            }
            self.answer(cur, c, n.sig(Rtype::CNAME));
            self.kind = Kind::Answer;
            wildcard_proof(self);
            return Some(NameBuf::from(c.first_rdata()));
        }
        self.nodata(z, n, cur, wild)
    }

    /// NODATA at node `n` for `cur` (through a wildcard when `wild` gives the closest encloser):
    /// the SOA and, with DO, the proof that the type does not exist.
    fn nodata(
        &mut self,
        z: &'z Zone,
        n: &'z Node,
        cur: &[u8],
        wild: Option<&[u8]>,
    ) -> Option<NameBuf> {
        self.kind = Kind::NoData;
        let nsec3 = self.dnssec && !z.has_nsec() && z.nsec3.is_some();
        if let (true, Some(ce)) = (nsec3, wild) {
            // nsd adds the next closer name's cover when it matches the wildcard, before the SOA.
            self.nsec3_cover(z, next_closer(cur, ce));
        }
        self.soa(z);
        if !self.dnssec {
            return None;
        }
        if z.has_nsec() {
            if wild.is_some() {
                self.nsec_cover(z, cur);
                self.auth_node(n, Rtype::NSEC);
            } else if !self.auth_node(n, Rtype::NSEC) {
                self.nsec_cover(z, cur);
            }
        } else if nsec3 {
            match wild {
                Some(ce) => {
                    self.nsec3_match(z, ce);
                    if let Some(w) = wildcard_of(ce) {
                        self.nsec3_match(z, w.get());
                    }
                }
                // A query for a wildcard owner itself is answered as a wildcard NODATA too:
                // its parent's NSEC3, then its own (nsd's `nsec3_answer_nodata`).
                None if cur.first() == Some(&1) && cur.get(1) == Some(&b'*') => {
                    if let Some(p) = name::parent(cur) {
                        self.nsec3_match(z, p);
                    }
                    self.nsec3_match(z, cur);
                }
                None => {
                    if !self.nsec3_match(z, cur) {
                        if let Some(p) = name::parent(cur) {
                            self.nsec3_ce_proof(z, cur, p);
                        }
                    }
                }
            }
        }
        None
    }

    fn nxdomain(&mut self, z: &'z Zone, cur: &[u8], ce: &[u8]) {
        self.aa = true;
        self.kind = Kind::NxDomain;
        self.rcode = Rcode::NXDOMAIN;
        // The proofs come before the SOA, as nsd adds them (what fits when truncating).
        if self.dnssec {
            self.nxdomain_proofs(z, cur, ce);
        }
        self.soa(z);
    }

    /// The NSEC or NSEC3 records proving that `cur` (below closest encloser `ce`) and the
    /// wildcard that could have matched it do not exist.
    fn nxdomain_proofs(&mut self, z: &'z Zone, cur: &[u8], ce: &[u8]) {
        let w = wildcard_of(ce);
        if z.has_nsec() {
            // After a DNAME, nsd proves the synthesized name's absence with the NSEC covering
            // its closest encloser (a name it makes up under the encloser stands in for it),
            // not the one covering the name itself.
            self.nsec_cover(z, if self.dname_seen { ce } else { cur });
            if let Some(w) = w {
                self.nsec_cover(z, w.get());
            }
        } else if z.nsec3.is_some() {
            let ce = self.nsec3_ce_proof(z, cur, ce);
            if let Some(w) = wildcard_of(ce) {
                self.nsec3_cover(z, w.get());
            }
        }
    }

    /// DNAME substitution at node `d` for `cur`; returns the new name to follow.
    fn dname(&mut self, d: &'z Node, cur: &[u8]) -> Option<NameBuf> {
        let set = d.rrset(Rtype::DNAME)?;
        self.aa = true;
        self.kind = Kind::Answer;
        self.answer(&d.name, set, d.sig(Rtype::DNAME));
        self.dname_seen = true;
        let target = set.first_rdata();
        let prefix = cur.len() - d.name.len();
        if prefix + target.len() > MAX_NAME {
            self.rcode = Rcode::YXDOMAIN;
            self.kind = Kind::YxDomain;
            return None;
        }
        let mut nb = [0u8; MAX_NAME];
        nb[..prefix].copy_from_slice(&cur[..prefix]);
        nb[prefix..prefix + target.len()].copy_from_slice(target);
        let new = &nb[..prefix + target.len()];
        // The synthesized CNAME (RFC 6672 §3.3), TTL of the DNAME, unsigned.
        if !self.truncated {
            let mark = self.w.len();
            self.w.name(cur);
            self.w.buf.extend_from_slice(&Rtype::CNAME.0.to_be_bytes());
            self.w.buf.extend_from_slice(&Class::IN.0.to_be_bytes());
            self.w.buf.extend_from_slice(&set.ttl().to_be_bytes());
            let len_at = self.w.len();
            self.w.buf.extend_from_slice(&[0, 0]);
            self.w.name(new);
            let rl = (self.w.len() - len_at - 2) as u16;
            self.w.buf[len_at..len_at + 2].copy_from_slice(&rl.to_be_bytes());
            if self.w.len() > self.limit {
                self.w.truncate(mark);
                self.truncated = true;
            } else {
                self.an += 1;
            }
        }
        Some(NameBuf::from(new))
    }

    /// Handles a hiding ancestor (cut or DNAME); returns a name to follow.
    fn occluded(&mut self, z: &'z Zone, o: &'z Node, cur: &[u8]) -> Option<NameBuf> {
        if o.is_cut() {
            self.referral(z, o);
            None
        } else {
            self.dname(o, cur)
        }
    }

    /// RFC 1034 §4.3.2 step 3 in zone `z`, following CNAME/DNAME inside the zone.
    fn resolve(
        &mut self,
        set: &'z ZoneSet,
        zone: &'z Zone,
        qname: &[u8],
        qtype: Rtype,
        max_chain: u8,
    ) {
        let mut cur = NameBuf::from(qname);
        let mut z = zone;
        for _ in 0..=max_chain {
            let c = cur.get();
            let next = match z.index.get(c) {
                Some(&i) => {
                    let n = &z.nodes[i as usize];
                    if n.occluder != NONE {
                        self.occluded(z, &z.nodes[n.occluder as usize], c)
                    } else if n.is_cut() && qtype != Rtype::DS {
                        self.referral(z, n);
                        None
                    } else {
                        self.at_node(z, n, c, qtype, None)
                    }
                }
                None => {
                    // Closest encloser.
                    let mut ce = c;
                    let mut node = None;
                    while let Some(p) = name::parent(ce) {
                        ce = p;
                        if let Some(&i) = z.index.get(ce) {
                            node = Some(&z.nodes[i as usize]);
                            break;
                        }
                    }
                    let Some(n) = node else { return };
                    if n.occluder != NONE {
                        self.occluded(z, &z.nodes[n.occluder as usize], c)
                    } else if n.is_cut() {
                        self.referral(z, n);
                        None
                    } else if n.flags & flags::DNAME != 0 {
                        self.dname(n, c)
                    } else {
                        match wildcard_of(ce).and_then(|w| z.node(w.get())) {
                            Some(w) => self.at_node(z, w, c, qtype, Some(ce)),
                            None => {
                                self.nxdomain(z, c, ce);
                                None
                            }
                        }
                    }
                }
            };
            // Follow into whichever served zone holds the target (nsd does; knot stays in the
            // zone). A DNAME answers a CNAME query by itself.
            let Some(t) = next else { return };
            if t.get() == cur.get() || (self.dname_seen && qtype == Rtype::CNAME) {
                return;
            }
            match set.find(t.get(), Rtype(0)) {
                Some(nz) => z = nz,
                None => return,
            }
            cur = t;
        }
    }
}

/// Appends the OPT record.
fn push_opt(buf: &mut Vec<u8>, size: u16, ext_rcode: u8, dnssec: bool) {
    buf.push(0);
    buf.extend_from_slice(&Rtype::OPT.0.to_be_bytes());
    buf.extend_from_slice(&size.max(512).to_be_bytes());
    buf.push(ext_rcode);
    buf.push(0);
    buf.extend_from_slice(&(if dnssec { 0x8000u16 } else { 0 }).to_be_bytes());
    buf.extend_from_slice(&[0, 0]);
}

fn set_counts(buf: &mut [u8], qd: u16, an: u16, ns: u16, ar: u16) {
    buf[4..6].copy_from_slice(&qd.to_be_bytes());
    buf[6..8].copy_from_slice(&an.to_be_bytes());
    buf[8..10].copy_from_slice(&ns.to_be_bytes());
    buf[10..12].copy_from_slice(&ar.to_be_bytes());
}

/// A response carrying only the header, the question (when there is exactly one) and OPT.
fn error_response(
    msg: Option<&Message<'_>>,
    query: &[u8],
    rcode: Rcode,
    kind: Kind,
    opts: &AnswerOptions,
    out: &mut Vec<u8>,
) -> Outcome {
    out.clear();
    let fl = u16::from_be_bytes([query[2], query[3]]);
    let flags =
        flag::QR | (fl & (0xF << 11)) | (fl & (flag::RD | flag::CD)) | rcode.header_bits() as u16;
    out.extend_from_slice(&query[0..2]);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0; 8]);
    let mut qd = 0;
    let mut ar = 0;
    if let Some(m) = msg {
        if m.header().qdcount == 1 {
            out.extend_from_slice(&query[12..m.question_end()]);
            qd = 1;
        }
        if let Some(e) = m.edns() {
            push_opt(out, opts.edns_size, rcode.extended_bits(), e.dnssec_ok());
            ar = 1;
        }
    }
    set_counts(out, qd, 0, 0, ar);
    Outcome {
        rcode,
        kind,
        truncated: false,
        zone_labels: None,
    }
}

impl ZoneSet {
    /// Answers a query (wire format) into `out`, which is cleared first. Returns `None` when no
    /// response is due (shorter than a header, or QR set).
    pub fn answer_into(
        &self,
        query: &[u8],
        opts: &AnswerOptions,
        out: &mut Vec<u8>,
    ) -> Option<Outcome> {
        out.clear();
        if query.len() < 12 || query[2] & 0x80 != 0 {
            return None;
        }
        let Ok(msg) = Message::parse(query) else {
            return Some(error_response(
                None,
                query,
                Rcode::FORMERR,
                Kind::FormErr,
                opts,
                out,
            ));
        };
        let h = msg.header();
        if h.opcode() != 0 {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::NOTIMP,
                Kind::NotImp,
                opts,
                out,
            ));
        }
        if h.qdcount != 1 || h.ancount != 0 || h.nscount != 0 {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::FORMERR,
                Kind::FormErr,
                opts,
                out,
            ));
        }
        let edns = msg.edns().copied();
        if let Some(e) = edns {
            if e.version != 0 {
                return Some(error_response(
                    Some(&msg),
                    query,
                    Rcode::BADVERS,
                    Kind::BadVers,
                    opts,
                    out,
                ));
            }
        }
        let qtype = msg.qtype().unwrap_or_default();
        let qclass = msg.qclass().unwrap_or_default();
        if matches!(
            qtype,
            Rtype::AXFR | Rtype::IXFR | Rtype::MAILA | Rtype::MAILB
        ) || qtype == Rtype::OPT
        {
            let rc = if qtype == Rtype::OPT {
                Rcode::FORMERR
            } else {
                Rcode::NOTIMP
            };
            let k = if qtype == Rtype::OPT {
                Kind::FormErr
            } else {
                Kind::NotImp
            };
            return Some(error_response(Some(&msg), query, rc, k, opts, out));
        }
        let qend = msg.question_end();
        let qname_raw = &query[12..qend - 4];
        let qn = NameBuf::from(qname_raw);
        let zone = if qclass == Class::IN || qclass == Class::ANY {
            self.find(qn.get(), qtype)
        } else {
            None
        };
        let Some(zone) = zone else {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::REFUSED,
                Kind::Refused,
                opts,
                out,
            ));
        };
        let zone_labels = crate::name::label_count(&zone.origin).min(255) as u8;
        let dnssec = edns.is_some_and(|e| e.dnssec_ok());
        let mut limit = if opts.tcp {
            65535
        } else {
            match edns {
                Some(e) => (e.udp_size.min(opts.edns_size) as usize).max(512),
                None => 512,
            }
        };
        if edns.is_some() {
            limit -= 11;
        }
        // Header and question.
        out.extend_from_slice(&query[0..12]);
        out.extend_from_slice(&query[12..qend]);
        let mut ctx = Ctx {
            w: Writer::new(out),
            limit,
            dnssec,
            minimal: opts.minimal,
            dname_seen: false,
            answered: [std::ptr::null(); 16],
            n_answered: 0,
            an: 0,
            aa: false,
            truncated: false,
            rcode: Rcode::NOERROR,
            kind: Kind::Answer,
            auth: Items::new(),
            opt_auth: Items::new(),
            addl: Items::new(),
        };
        ctx.w.register_name_at(12);
        ctx.resolve(self, zone, qn.get(), qtype, opts.max_chain);
        // Authority.
        let mut ns = 0u16;
        if !ctx.truncated {
            for it in ctx.auth.items[..ctx.auth.len].iter().flatten() {
                let mark = ctx.w.len();
                let mut n = match it.3 {
                    Some(nodes) => ctx.w.linked_rrset(it.0, it.1, nodes),
                    None => ctx.w.zone_rrset(it.0, it.1),
                };
                if let Some(s) = it.2 {
                    n += ctx.w.zone_rrset(it.0, s);
                }
                if ctx.w.len() > ctx.limit {
                    ctx.w.truncate(mark);
                    ctx.truncated = true;
                    break;
                }
                ns += n;
            }
        }
        // Optional authority, then additional (all A RRsets, then all AAAA: nsd's sections):
        // each RRset with its RRSIGs if it fits, else left out; never TC.
        let mut ar = 0u16;
        if !ctx.truncated {
            for it in ctx.opt_auth.items[..ctx.opt_auth.len].iter().flatten() {
                let mark = ctx.w.len();
                let mut n = match it.3 {
                    Some(nodes) => ctx.w.linked_rrset(it.0, it.1, nodes),
                    None => ctx.w.zone_rrset(it.0, it.1),
                };
                if let Some(s) = it.2 {
                    n += ctx.w.zone_rrset(it.0, s);
                }
                if ctx.w.len() > ctx.limit {
                    ctx.w.truncate(mark);
                } else {
                    ns += n;
                }
            }
            for ty in [Rtype::A, Rtype::AAAA] {
                for it in ctx.addl.items[..ctx.addl.len].iter().flatten() {
                    if it.1.rtype != ty || ctx.in_answer(it.1) {
                        continue;
                    }
                    let mark = ctx.w.len();
                    let mut n = ctx.w.zone_rrset(it.0, it.1);
                    if let Some(s) = it.2 {
                        n += ctx.w.zone_rrset(it.0, s);
                    }
                    if ctx.w.len() > ctx.limit {
                        ctx.w.truncate(mark);
                    } else {
                        ar += n;
                    }
                }
            }
        }
        let an = ctx.an;
        let truncated = ctx.truncated;
        let rcode = ctx.rcode;
        let kind = ctx.kind;
        let aa = ctx.aa;
        let fl = h.flags;
        let mut flags = flag::QR | (fl & (flag::RD | flag::CD)) | rcode.header_bits() as u16;
        if aa {
            flags |= flag::AA;
        }
        if truncated {
            flags |= flag::TC;
        }
        out[2..4].copy_from_slice(&flags.to_be_bytes());
        if let Some(e) = edns {
            push_opt(out, opts.edns_size, rcode.extended_bits(), e.dnssec_ok());
            ar += 1;
        }
        set_counts(out, 1, an, ns, ar);
        Some(Outcome {
            rcode,
            kind,
            truncated,
            zone_labels: Some(zone_labels),
        })
    }

    /// Answers a query into a new buffer; `None` when no response is due.
    pub fn answer(&self, query: &[u8], opts: &AnswerOptions) -> Option<Response> {
        let mut wire = Vec::with_capacity(512);
        let outcome = self.answer_into(query, opts, &mut wire)?;
        Some(Response { wire, outcome })
    }
}

/// Answers a query from a set of zones (see [`ZoneSet::answer`]).
pub fn answer(set: &ZoneSet, query: &[u8], opts: &AnswerOptions) -> Option<Response> {
    set.answer(query, opts)
}
