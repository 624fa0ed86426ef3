//! The checks that make a file's records one zone, as BIND's and nsd's zone loaders make them
//! (`named-checkzone` and `nsd-checkzone` reject the same files):
//!
//! * one SOA record, at the apex (a repeated identical one is a duplicate, dropped like any
//!   other: BIND accepts it, nsd does not);
//! * every name at or below the apex (BIND ignores out-of-zone data with a warning, nsd
//!   rejects it);
//! * a CNAME alone at its name (RFC 1034 §3.6.2, RFC 2181 §10.1): no other data beside it but
//!   DNSSEC's RRSIG, NSEC and NSEC3, and the old DNSSEC's SIG, NXT and KEY that RFC 2181 §10.1
//!   allows (BIND takes SIG and KEY there, nsd SIG and NXT); and one CNAME per name.
//!
//! An error is placed where the offending record starts: of two records in conflict, the later
//! one in the file, as both checkers do, naming the other.

use rustc_hash::FxHashMap;

use crate::name;
use crate::reader::ZoneRecord;
use crate::zone::ZoneError;
use ldplayer_dns::Rtype;

/// Types that may stand beside a CNAME: SIG, KEY, NXT, RRSIG, NSEC, NSEC3.
const BESIDE_CNAME: [Rtype; 6] = [
    Rtype::SIG,
    Rtype::KEY,
    Rtype::NXT,
    Rtype::RRSIG,
    Rtype::NSEC,
    Rtype::NSEC3,
];

/// Per name: the first CNAME and the first record of another type not allowed beside one
/// (indexes into the records).
#[derive(Default)]
struct AtName {
    cname: Option<usize>,
    other: Option<usize>,
}

/// Checks that `records` (read from `file`) make one zone and returns its apex (lowercase wire
/// format): `apex` when given (wire format), else the owner of the first SOA record.
pub fn check_zone(
    records: &[ZoneRecord],
    apex: Option<&[u8]>,
    file: &str,
) -> Result<Box<[u8]>, ZoneError> {
    let first_soa = records
        .iter()
        .find(|r| r.rtype == Rtype::SOA)
        .ok_or_else(|| ZoneError::at(file, 0, None, "no SOA record"))?;
    let origin = name::lowercase(apex.unwrap_or(&first_soa.owner));
    let mut soa: Option<usize> = None;
    let mut names: FxHashMap<Box<[u8]>, AtName> = FxHashMap::default();
    for (i, r) in records.iter().enumerate() {
        let owner = name::lowercase(&r.owner);
        if !name::is_subdomain(&owner, &origin) {
            return Err(r.error(format!(
                "{} is outside the zone {} (out-of-zone data)",
                name::to_text(&r.owner),
                name::to_text(&origin)
            )));
        }
        if r.rtype == Rtype::SOA {
            if owner != origin {
                return Err(r.error(format!(
                    "SOA record at {}, not at the zone's apex {}",
                    name::to_text(&r.owner),
                    name::to_text(&origin)
                )));
            }
            match soa {
                None => soa = Some(i),
                Some(first) if records[first].rdata != r.rdata => {
                    return Err(r.error(format!(
                        "a second SOA record at {}, unlike the one at {}: one per zone",
                        name::to_text(&r.owner),
                        records[first].place()
                    )))
                }
                Some(_) => {}
            }
        }
        let at = names.entry(owner).or_default();
        if r.rtype == Rtype::CNAME {
            if let Some(first) = at.cname {
                // Names compare without regard to case: the same target is a duplicate.
                if !records[first].rdata.eq_ignore_ascii_case(&r.rdata) {
                    return Err(r.error(format!(
                        "a second CNAME at {} (the first at {}): one per name (RFC 2181 §10.1)",
                        name::to_text(&r.owner),
                        records[first].place()
                    )));
                }
            } else if let Some(other) = at.other {
                return Err(cname_and_other_data(r, &records[other]));
            }
            at.cname.get_or_insert(i);
        } else if !BESIDE_CNAME.contains(&r.rtype) {
            if let Some(cname) = at.cname {
                return Err(cname_and_other_data(r, &records[cname]));
            }
            at.other.get_or_insert(i);
        }
    }
    Ok(origin)
}

/// The error for a CNAME beside other data, placed on the later of the two records.
fn cname_and_other_data(later: &ZoneRecord, earlier: &ZoneRecord) -> ZoneError {
    later.error(format!(
        "CNAME and other data at {}: {} here, {} at {} (a CNAME stands alone but for DNSSEC \
         records: RFC 1034 §3.6.2, RFC 2181 §10.1)",
        name::to_text(&later.owner),
        later.rtype,
        earlier.rtype,
        earlier.place()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_zone_text;
    use std::path::Path;

    fn check(body: &str) -> Result<String, String> {
        let text = format!("$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\n{body}");
        let records = read_zone_text(text.as_bytes(), "t.zone", Path::new("."), None)
            .map_err(|e| format!("read: {e}"))?;
        check_zone(&records, None, "t.zone")
            .map(|o| name::to_text(&o))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_cname_stands_alone_but_for_dnssec_records() {
        let e = check("www CNAME x\nwww A 192.0.2.1\n").unwrap_err();
        assert_eq!(
            e,
            "t.zone:6:1: CNAME and other data at www.example.: A here, CNAME at t.zone:5 \
             (a CNAME stands alone but for DNSSEC records: RFC 1034 §3.6.2, RFC 2181 §10.1)"
        );
        let e = check("WWW TXT \"t\"\n\nwww CNAME x\n").unwrap_err();
        assert!(
            e.starts_with(
                "t.zone:7:1: CNAME and other data at www.example.: CNAME here, TXT at t.zone:5"
            ),
            "{e}"
        );
        assert!(check("@ CNAME x\n")
            .unwrap_err()
            .contains("CNAME here, SOA at t.zone:3"));
        let e = check("www CNAME x\nwww CNAME y\n").unwrap_err();
        assert!(
            e.starts_with("t.zone:6:1: a second CNAME at www.example. (the first at t.zone:5)"),
            "{e}"
        );
        assert_eq!(
            check(
                "www CNAME x\nwww CNAME X\n\
                 www RRSIG CNAME 8 2 60 20300101000000 20200101000000 1 example. AAAA\n\
                 www NSEC x CNAME RRSIG NSEC\nwww TYPE24 \\# 0\nwww TYPE25 \\# 0\nwww TYPE30 \\# 0\n"
            ),
            Ok("example.".to_string())
        );
    }

    #[test]
    fn one_soa_at_the_apex() {
        let e = check("@ SOA ns h 2 2 3 4 5\n").unwrap_err();
        assert_eq!(
            e,
            "t.zone:5:1: a second SOA record at example., unlike the one at t.zone:3: one per zone"
        );
        assert!(check("@ SOA ns h 1 2 3 4 5\n").is_ok(), "a duplicate");
        let e = check("sub SOA ns h 1 2 3 4 5\n").unwrap_err();
        assert_eq!(
            e,
            "t.zone:5:1: SOA record at sub.example., not at the zone's apex example."
        );
        let e = check("other. A 192.0.2.1\n").unwrap_err();
        assert!(
            e.starts_with("t.zone:5:1: other. is outside the zone example."),
            "{e}"
        );
        let records =
            read_zone_text(b"$ORIGIN x.\n@ 60 NS ns\n", "t.zone", Path::new("."), None).unwrap();
        let e = check_zone(&records, None, "t.zone").unwrap_err();
        assert_eq!(e.to_string(), "t.zone: no SOA record");
    }
}
