//! The answer being written: RFC 1034 §4.3.2's lookup in a zone, with its referrals, CNAME and
//! DNAME chains, wildcards and the DNSSEC denial proofs (RFC 4035 §3.1.3, RFC 5155 §7.2) it
//! collects for the authority section.

use ldplayer_dns::{Class, Rcode, Rtype};

use super::parts::{next_closer, wildcard_of, Item, Items, NameBuf};
use super::Kind;
use crate::name::{self, MAX_NAME};
use crate::set::ZoneSet;
use crate::writer::Writer;
use crate::zone::{flags, Node, RRset, Zone, NONE};

/// The state of one answer while it is written.
pub(super) struct Ctx<'z, 'b> {
    w: Writer<'b, 'z>,
    limit: usize,
    dnssec: bool,
    minimal: bool,
    dname_seen: bool,
    /// RRsets already in the answer section (CNAME loop detection; no repeats in additional).
    answered: [*const RRset; 16],
    n_answered: usize,
    pub(super) an: u16,
    pub(super) aa: bool,
    pub(super) truncated: bool,
    pub(super) rcode: Rcode,
    pub(super) kind: Kind,
    auth: Items<'z, 12>,
    /// The zone's NS set beside a positive answer: nsd's optional authority, written after the
    /// authority proper and, like the additional section, as far as it fits without TC.
    opt_auth: Items<'z, 2>,
    addl: Items<'z, 64>,
}

impl<'z, 'b> Ctx<'z, 'b> {
    /// Starts an answer after the header and question already in `out`, within `limit` bytes.
    pub(super) fn new(out: &'b mut Vec<u8>, limit: usize, dnssec: bool, minimal: bool) -> Self {
        let mut ctx = Ctx {
            w: Writer::new(out),
            limit,
            dnssec,
            minimal,
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
        ctx
    }

    /// Writes the authority section, then nsd's optional authority and the additional section
    /// (all A RRsets, then all AAAA), and returns their record counts. The authority sets TC
    /// when it does not fit; the optional parts leave out what does not fit, never TC.
    pub(super) fn write_authority_and_additional(&mut self) -> (u16, u16) {
        // Authority.
        let mut ns = 0u16;
        if !self.truncated {
            for i in 0..self.auth.len {
                let Some(it) = self.auth.items[i] else {
                    continue;
                };
                match self.write_item(it) {
                    Some(n) => ns += n,
                    None => {
                        self.truncated = true;
                        break;
                    }
                }
            }
        }
        // Optional authority, then additional (all A RRsets, then all AAAA: nsd's sections):
        // each RRset with its RRSIGs if it fits, else left out; never TC.
        let mut ar = 0u16;
        if !self.truncated {
            for i in 0..self.opt_auth.len {
                if let Some(it) = self.opt_auth.items[i] {
                    ns += self.write_item(it).unwrap_or(0);
                }
            }
            for ty in [Rtype::A, Rtype::AAAA] {
                for i in 0..self.addl.len {
                    let Some(it) = self.addl.items[i] else {
                        continue;
                    };
                    if it.1.rtype != ty || self.in_answer(it.1) {
                        continue;
                    }
                    ar += self.write_item(it).unwrap_or(0);
                }
            }
        }
        (ns, ar)
    }
}

impl<'z> Ctx<'z, '_> {
    /// Writes an authority or additional RRset (linked to its zone's nodes when it has them)
    /// with its RRSIGs, if all of it fits within the limit: its record count, or `None` with
    /// nothing written when it does not fit. One place for the three sections after the answer.
    #[inline]
    fn write_item(&mut self, it: Item<'z>) -> Option<u16> {
        let mark = self.w.len();
        let mut n = match it.3 {
            Some(nodes) => self.w.linked_rrset(it.0, it.1, nodes),
            None => self.w.zone_rrset(it.0, it.1),
        };
        if let Some(s) = it.2 {
            n += self.w.zone_rrset(it.0, s);
        }
        if self.w.len() > self.limit {
            self.w.truncate(mark);
            None
        } else {
            Some(n)
        }
    }

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
    pub(super) fn resolve(
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
