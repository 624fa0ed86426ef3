//! The first pass over the responses: zone cuts from NS RRsets and nameserver addresses from
//! A/AAAA RRsets, the first seen winning. Made for runs of responses on several cores, then
//! merged in their order as if one pass had seen them all.

use bytes::Bytes;
use domain::base::iana::Rtype;
use domain::base::Name;
use rustc_hash::FxHashMap;

use super::{rrsets, Key};
use crate::exchange::{Exchange, Rr};

/// The zone cuts and addresses seen in a run of responses.
#[derive(Debug, Default)]
pub(super) struct Cuts {
    /// Zone apex → its NS names, from the first NS RRset seen for it anywhere.
    pub(super) delegations: FxHashMap<Key, (Name<Bytes>, Vec<Rr>)>,
    /// Name → its address records, from the first A/AAAA RRsets seen anywhere (the first
    /// A RRset and the first AAAA RRset, in the order they were seen).
    pub(super) addresses: FxHashMap<Key, Vec<Rr>>,
}

impl Cuts {
    /// The cuts and addresses of `exchanges`, in their order.
    pub(super) fn of<'a>(exchanges: impl IntoIterator<Item = &'a Exchange>) -> Cuts {
        let mut cuts = Cuts::default();
        for e in exchanges {
            cuts.add(e);
        }
        cuts
    }

    /// Every NS RRset makes a zone; every A/AAAA RRset gives addresses (the answer section
    /// only when authoritative; NS from the answer and authority sections).
    fn add(&mut self, e: &Exchange) {
        let trusted = |section: usize| section != 0 || e.authoritative;
        for (i, section) in [&e.answer, &e.authority, &e.additional].iter().enumerate() {
            if !trusted(i) {
                continue;
            }
            // Only NS and address records matter here: the others are not grouped.
            let wanted = |r: &Rr| match r.rtype() {
                Rtype::NS => i < 2,
                Rtype::A | Rtype::AAAA => true,
                _ => false,
            };
            if !section.iter().any(wanted) {
                continue;
            }
            for (k, set) in rrsets(section.iter().filter(|r| wanted(r))) {
                match set[0].rtype() {
                    Rtype::NS => {
                        self.delegations.entry(k.0).or_insert_with(|| {
                            (set[0].owner().clone(), set.into_iter().cloned().collect())
                        });
                    }
                    _ => {
                        let v = self.addresses.entry(k.0).or_default();
                        if !v.iter().any(|r| r.rtype() == set[0].rtype()) {
                            v.extend(set.into_iter().cloned());
                        }
                    }
                }
            }
        }
    }

    /// Adds what a later run of responses saw: what this run saw first stays.
    pub(super) fn merge(&mut self, later: Cuts) {
        self.delegations.reserve(later.delegations.len());
        self.addresses.reserve(later.addresses.len());
        for (k, d) in later.delegations {
            self.delegations.entry(k).or_insert(d);
        }
        for (k, rrs) in later.addresses {
            let v = self.addresses.entry(k).or_default();
            let had: Vec<Rtype> = v.iter().map(|r| r.rtype()).collect();
            v.extend(rrs.into_iter().filter(|r| !had.contains(&r.rtype())));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::Cuts;
    use crate::exchange::Exchange;

    /// A referral for `child` from 192.0.2.1 whose glue gives `ns.child` the address `glue`.
    fn referral(child: &str, glue: &str) -> Exchange {
        use domain::base::iana::Rtype;
        use domain::base::{MessageBuilder, Name, Ttl};
        use domain::rdata::{Ns, A};
        let name = |s: &str| Name::<Vec<u8>>::vec_from_str(s).expect("name");
        let mut b = MessageBuilder::new_vec().question();
        b.header_mut().set_qr(true);
        b.push((name(&format!("www.{child}")), Rtype::A))
            .expect("question");
        let mut b = b.authority();
        b.push((
            name(child),
            Ttl::from_secs(3600),
            Ns::new(name(&format!("ns.{child}"))),
        ))
        .expect("ns");
        let mut b = b.additional();
        b.push((
            name(&format!("ns.{child}")),
            Ttl::from_secs(3600),
            A::new(glue.parse().expect("address")),
        ))
        .expect("glue");
        let server: IpAddr = "192.0.2.1".parse().expect("address");
        Exchange::parse(server, b.as_slice()).expect("a referral")
    }

    /// Cuts made in two runs and merged are those of one pass: the first seen wins.
    #[test]
    fn merged_runs_are_one_pass() {
        let all = [
            referral("a.example.", "192.0.2.10"),
            referral("b.example.", "192.0.2.20"),
            referral("a.example.", "192.0.2.11"),
            referral("c.example.", "192.0.2.30"),
        ];
        let one = Cuts::of(&all);
        for split in 0..=all.len() {
            let mut merged = Cuts::of(&all[..split]);
            merged.merge(Cuts::of(&all[split..]));
            assert_eq!(merged.delegations.len(), one.delegations.len());
            for (k, (apex, set)) in &one.delegations {
                let (m_apex, m_set) = &merged.delegations[k];
                assert_eq!(m_apex, apex);
                assert_eq!(m_set, set);
            }
            assert_eq!(merged.addresses, one.addresses, "split at {split}");
        }
        let a = b"\x02ns\x01a\x07example\x00".to_vec();
        let first: Vec<String> = one.addresses[&a]
            .iter()
            .map(|r| r.data().to_string())
            .collect();
        assert_eq!(first, ["192.0.2.10"]);
    }
}
