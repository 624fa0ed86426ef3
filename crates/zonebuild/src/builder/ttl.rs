//! TTLs below what the signatures say the zone gives, put back to it.

use domain::base::iana::Rtype;
use domain::base::Ttl;
use domain::rdata::AllRecordData;

use super::Assembler;

impl Assembler {
    /// Gives every signed RRset whose records (or signatures) have a TTL below the original TTL
    /// its signatures carry (RFC 4034 §3.1.4: the TTL the zone gives it) that original TTL
    /// again, signatures included; counted in `ttls_restored`. Answers recorded from a cache (a
    /// Deckard scenario's `. 16567 IN DNSKEY ...`) have such counted-down TTLs, and the SOA of
    /// a negative answer its MINIMUM when lower (RFC 2308 §3; the meta-server lowers it again
    /// in its own negative answers). Left as they are: unsigned RRsets (nothing tells their
    /// zone's TTL), and RRsets whose signatures disagree on the original TTL.
    pub(super) fn restore_signed_ttls(&mut self) {
        let rrsig = Rtype::RRSIG.to_int();
        let mut restored = 0;
        for z in self.zones.values_mut() {
            let signed: Vec<_> = z
                .sets
                .keys()
                .filter(|(_, t, covered)| *t == rrsig && *covered != 0)
                .cloned()
                .collect();
            for sig_key in signed {
                let Some(original) = z.sets.get(&sig_key).and_then(|sigs| original_ttl(sigs))
                else {
                    continue;
                };
                let set_key = (sig_key.0.clone(), sig_key.2, 0);
                let decayed = |rrs: Option<&Vec<crate::exchange::Rr>>| {
                    rrs.is_some_and(|rrs| rrs.iter().any(|r| r.ttl() < original))
                };
                if !decayed(z.sets.get(&set_key)) && !decayed(z.sets.get(&sig_key)) {
                    continue;
                }
                for k in [&set_key, &sig_key] {
                    for r in z.sets.get_mut(k).into_iter().flatten() {
                        if r.ttl() < original {
                            r.set_ttl(original);
                        }
                    }
                }
                restored += 1;
            }
        }
        self.report.ttls_restored += restored;
    }
}

/// The original TTL the signatures agree on.
fn original_ttl(sigs: &[crate::exchange::Rr]) -> Option<Ttl> {
    let mut ttls = sigs.iter().map(|r| match r.data() {
        AllRecordData::Rrsig(s) => Some(s.original_ttl()),
        _ => None,
    });
    let first = ttls.next()??;
    ttls.all(|t| t == Some(first)).then_some(first)
}
