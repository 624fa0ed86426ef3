//! One record as a zone file line, the way `domain` writes it
//! (`display_zonefile(DisplayKind::Simple)`), with the record types of a large hierarchy (A,
//! AAAA, NS in class IN) written directly: `domain` formats names one character at a time
//! through `core::fmt`, and formatting was a quarter of a million zones' output time.

use std::fmt::Write as _;

use domain::base::iana::Class;
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::rdata::AllRecordData;

use crate::exchange::Rr;

/// Appends `r` to `out` as one zone file line, without the newline: byte for byte what
/// `domain`'s `display_zonefile(DisplayKind::Simple)` writes.
pub(crate) fn write_record(out: &mut String, r: &Rr) {
    if r.class() == Class::IN {
        let fast = match r.data() {
            AllRecordData::A(a) => Some(("A", Data::Addr(a.addr().into()))),
            AllRecordData::Aaaa(a) => Some(("AAAA", Data::Addr(a.addr().into()))),
            AllRecordData::Ns(ns) => Some(("NS", Data::Name(ns.nsdname().as_slice()))),
            _ => None,
        };
        if let Some((rtype, data)) = fast {
            write_name(out, r.owner().as_slice());
            let _ = write!(out, " {} IN {rtype} ", r.ttl().as_secs());
            match data {
                Data::Addr(ip) => {
                    let _ = write!(out, "{ip}");
                }
                Data::Name(name) => write_name(out, name),
            }
            return;
        }
    }
    let _ = write!(out, "{}", r.display_zonefile(DisplayKind::Simple));
}

/// The data of a record written directly.
enum Data<'a> {
    Addr(std::net::IpAddr),
    Name(&'a [u8]),
}

/// Appends the uncompressed wire name `name` with its final dot, escaped as `domain`'s label
/// display escapes it: space, `.` and `\` as `\c`, bytes outside 0x20–0x7E as `\DDD`.
fn write_name(out: &mut String, name: &[u8]) {
    let mut pos = 0;
    let mut labels = 0;
    while let Some(&len) = name.get(pos) {
        if len == 0 {
            break;
        }
        let label = name.get(pos + 1..pos + 1 + usize::from(len)).unwrap_or(&[]);
        for &b in label {
            match b {
                b' ' | b'.' | b'\\' => {
                    out.push('\\');
                    out.push(char::from(b));
                }
                0x20..=0x7e => out.push(char::from(b)),
                _ => {
                    let _ = write!(out, "\\{b:03}");
                }
            }
        }
        out.push('.');
        labels += 1;
        pos += 1 + usize::from(len);
    }
    if labels == 0 {
        out.push('.');
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use domain::base::iana::Class;
    use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
    use domain::base::{Name, Record, Ttl};
    use domain::rdata::{Aaaa, AllRecordData, Mx, Ns, Txt, A};

    use super::write_record;
    use crate::exchange::Rr;

    fn name(labels: &[&[u8]]) -> Name<Bytes> {
        let mut wire = Vec::new();
        for l in labels {
            wire.push(u8::try_from(l.len()).expect("a label"));
            wire.extend_from_slice(l);
        }
        wire.push(0);
        Name::from_octets(Bytes::from(wire)).expect("a name")
    }

    /// Every record written directly reads as `domain` writes it, escapes and all, and the
    /// others are `domain`'s own.
    #[test]
    fn as_domain_writes_it() {
        let owners = [
            name(&[]),
            name(&[b"Sld7", b"tld-42"]),
            name(&[b"a b", b"c.d", b"e\\f", b"*"]),
            name(&[b"\x00\x01\x1f", b"\x7f\x80\xff", b"~!\"#;@()$"]),
            name(&[b"xn--bcher-kva", b"_tcp", b"example"]),
        ];
        let mut data: Vec<AllRecordData<Bytes, Name<Bytes>>> = vec![
            AllRecordData::A(A::new("192.0.2.1".parse().expect("v4"))),
            AllRecordData::A(A::new("0.0.0.0".parse().expect("v4"))),
            AllRecordData::Aaaa(Aaaa::new("2001:db8::1".parse().expect("v6"))),
            AllRecordData::Aaaa(Aaaa::new("::ffff:192.0.2.1".parse().expect("v6"))),
            AllRecordData::Mx(Mx::new(10, owners[1].clone())),
            AllRecordData::Txt(Txt::build_from_slice(b"a \"b\"").expect("txt")),
        ];
        data.extend(owners.iter().map(|o| AllRecordData::Ns(Ns::new(o.clone()))));
        let mut checked = 0;
        for owner in &owners {
            for d in &data {
                for class in [Class::IN, Class::CH] {
                    for ttl in [0, 3600, u32::MAX] {
                        let r: Rr =
                            Record::new(owner.clone(), class, Ttl::from_secs(ttl), d.clone());
                        let mut ours = String::new();
                        write_record(&mut ours, &r);
                        let theirs = r.display_zonefile(DisplayKind::Simple).to_string();
                        assert_eq!(ours, theirs);
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, owners.len() * data.len() * 6);
    }
}
