//! Loading the real zone files and answering real names.

mod responses;

use std::time::Instant;

use ldplayer_dns::{Rcode, Rtype};
use ldplayer_testbed::query;
use ldplayer_zone::{AnswerOptions, Zone, ZoneSet};
use responses::*;

fn ask(set: &ZoneSet, name: &str, t: Rtype, edns: Option<(u16, bool)>) -> Resp {
    parse(
        &set.answer(&query(9, name, t, edns), &AnswerOptions::default())
            .unwrap()
            .wire,
    )
}

#[test]
fn signed_root_loads_and_answers() {
    let t = Instant::now();
    let Some(root_signed) = root_signed() else {
        return;
    };
    let z = Zone::from_file(root_signed, None).unwrap();
    println!(
        "signed root: {} records, {} names in {:?}",
        z.record_count,
        z.name_count(),
        t.elapsed()
    );
    assert!(z.record_count > 20_000 && z.has_nsec());
    let s: ZoneSet = std::iter::once(z).collect();
    // com. NS: a referral with glue, DS + RRSIG with DO.
    let r = ask(&s, "com.", Rtype::NS, Some((4096, true)));
    assert!(!r.aa() && r.answer().is_empty());
    assert_eq!(r.count(1, Rtype::NS), 13);
    assert!(r.has(1, "com.", Rtype::DS) && r.has(1, "com.", Rtype::RRSIG));
    assert!(r.has(2, "a.gtld-servers.net.", Rtype::A));
    // NXDOMAIN with NSEC proofs.
    let r = ask(&s, "nonexistent-tld.", Rtype::A, Some((4096, true)));
    assert_eq!(r.rcode(), Rcode::NXDOMAIN);
    assert!(r.aa() && r.count(1, Rtype::NSEC) == 2 && r.count(1, Rtype::RRSIG) >= 2);
    let r = ask(&s, "nonexistent-tld.", Rtype::A, Some((4096, false)));
    assert!(r.count(1, Rtype::NSEC) == 0 && r.count(1, Rtype::SOA) == 1);
}

#[test]
fn unsigned_root_and_knot_example_load() {
    let t = Instant::now();
    let (Some(root_unsigned), Some(knot_example)) = (root_unsigned(), knot_example()) else {
        return;
    };
    let z = Zone::from_file(root_unsigned, None).unwrap();
    println!(
        "unsigned root: {} records in {:?}",
        z.record_count,
        t.elapsed()
    );
    assert!(z.record_count > 19_000);
    let s: ZoneSet = std::iter::once(z).collect();
    let r = ask(&s, "www.example.org.", Rtype::A, None);
    assert!(r.count(1, Rtype::NS) > 0 && !r.additional().is_empty());
    // Its SOA timers and TTLs have units (`6h`, `1w`), rewritten to seconds when loading.
    let k = Zone::from_file(knot_example, None).expect("knot's sample zone loads");
    let s: ZoneSet = std::iter::once(k).collect();
    let r = ask(&s, "example.com.", Rtype::MX, None);
    assert!(r.aa() && r.count(0, Rtype::MX) == 1);
}
