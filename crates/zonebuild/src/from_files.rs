//! Zones taken as they are from existing zone files, with the addresses of their nameservers:
//! the root zone alone gives the root, served at the root servers' addresses from its own glue.
//!
//! Each file's zone is served by the addresses of its apex NS names, looked up among the
//! address records of every given file (a parent's glue or the zone's own records), plus any
//! given explicitly. The result is a [`Hierarchy`] like the one rebuilt from captures, so it
//! is written the same way: zone files, manifest, root hints and BIND views.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use bytes::Bytes;
use domain::base::iana::{Class, Rtype};
use domain::base::name::FlattenInto as _;
use domain::base::rdata::ParseAnyRecordData as _;
use domain::base::{Name, ParsedName, Record, Ttl};
use domain::dep::octseq::Parser;
use domain::rdata::AllRecordData;
use ldplayer_zone::reader::{parse_origin, read_zone_file, ZoneRecord};
use ldplayer_zone::{check_zone, ZoneError};
use thiserror::Error;

use crate::builder::key;
use crate::exchange::Rr;
use crate::hierarchy::{BuildReport, BuiltZone, Hierarchy};

/// Why zone files could not be taken.
#[derive(Debug, Error)]
pub enum ZoneFileError {
    /// A file could not be read, or is not one zone as BIND and nsd see one (out-of-zone
    /// data, a CNAME beside other data, two SOA records...); the error names the file, line
    /// and column, as `serve` reports the same file.
    #[error(transparent)]
    Load(#[from] ZoneError),
    /// A `ZONE=ADDRESS` that is not one.
    #[error("{spec:?}: {message}")]
    Server {
        /// What was given.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// Two files hold the same zone.
    #[error("{second}: zone {zone} again, already in {first}: one file per zone")]
    SameZone {
        /// The zone's apex.
        zone: String,
        /// Where the first file's SOA record is (`file:line`).
        first: String,
        /// Where the second file's SOA record is.
        second: String,
    },
}

/// One zone file read into records.
#[derive(Debug, Clone)]
pub struct ZoneFile {
    /// The zone's apex (the SOA's owner).
    pub apex: Name<Bytes>,
    /// Every record of the file (a repeated SOA record once).
    pub records: Vec<Rr>,
    /// Where its SOA record is (`file:line`), to name the file in messages.
    pub source: String,
}

impl ZoneFile {
    /// Reads a zone file; relative names are relative to `origin` if given, else to the
    /// file's `$ORIGIN` (names must be absolute before one). Time values with units are taken
    /// and `$INCLUDE` is followed. The file must make one zone as BIND and nsd see one (see
    /// [`check_zone`]).
    pub fn read(path: &Path, origin: Option<&str>) -> Result<ZoneFile, ZoneFileError> {
        let file = path.display().to_string();
        let origin = origin.map(|o| parse_origin(o, &file)).transpose()?;
        let records = read_zone_file(path, origin.as_deref())?;
        check_zone(&records, None, &file)?;
        let mut soa: Option<&ZoneRecord> = None;
        let mut rrs = Vec::with_capacity(records.len());
        for r in &records {
            if r.rtype == ldplayer_dns::Rtype::SOA {
                if soa.is_some() {
                    continue; // the same SOA again (checked)
                }
                soa = Some(r);
            }
            rrs.push(to_rr(r)?);
        }
        let soa = soa.ok_or_else(|| ZoneError::at(&file, 0, None, "no SOA record"))?;
        let apex = owner_name(soa)?;
        Ok(ZoneFile {
            apex,
            records: rrs,
            source: soa.place(),
        })
    }
}

fn owner_name(r: &ZoneRecord) -> Result<Name<Bytes>, ZoneError> {
    Name::from_octets(Bytes::copy_from_slice(&r.owner))
        .map_err(|e| r.error(format!("bad owner name: {e}")))
}

/// A record read from a zone file as the constructor keeps records.
fn to_rr(r: &ZoneRecord) -> Result<Rr, ZoneError> {
    let rtype = Rtype::from_int(r.rtype.0);
    let wire = Bytes::copy_from_slice(&r.rdata);
    let data = AllRecordData::<Bytes, ParsedName<Bytes>>::parse_any_rdata(
        rtype,
        &mut Parser::from_ref(&wire),
    )
    .map_err(|e| r.error(format!("{rtype} record: {e}")))?;
    let parsed = Record::new(owner_name(r)?, Class::IN, Ttl::from_secs(r.ttl), data);
    parsed
        .try_flatten_into()
        .map_err(|e| r.error(format!("{rtype} record: {e}")))
}

/// Reads `ZONE=ADDRESS` (`example.com=192.0.2.53`): one more address serving a zone.
pub fn zone_server(spec: &str) -> Result<(Name<Bytes>, IpAddr), ZoneFileError> {
    let bad = |message: String| ZoneFileError::Server {
        spec: spec.to_string(),
        message,
    };
    let (zone, addr) = spec
        .split_once('=')
        .ok_or_else(|| bad("expected ZONE=ADDRESS".into()))?;
    let zone = if zone.ends_with('.') {
        zone.to_string()
    } else {
        format!("{zone}.")
    };
    let name: Name<Bytes> = zone
        .parse()
        .map_err(|e| bad(format!("bad zone name: {e}")))?;
    let ip: IpAddr = addr.parse().map_err(|e| bad(format!("bad address: {e}")))?;
    Ok((name, ip))
}

/// The hierarchy of the given zones: each served by the addresses of its apex NS names found in
/// any of the zones, and by `extra` (apex, address) pairs. Zones with no known address are
/// reported in [`BuildReport::zones_without_servers`] (and written without servers), NS names
/// without addresses in [`BuildReport::missing_addresses`]. Two files of the same zone are an
/// error that names both: a name server loads one file per zone.
pub fn hierarchy(
    zones: Vec<ZoneFile>,
    extra: &[(Name<Bytes>, IpAddr)],
) -> Result<Hierarchy, ZoneFileError> {
    let mut first_of: BTreeMap<Vec<u8>, &ZoneFile> = BTreeMap::new();
    for z in &zones {
        if let Some(first) = first_of.insert(key(&z.apex), z) {
            return Err(ZoneFileError::SameZone {
                zone: z.apex.fmt_with_dot().to_string(),
                first: first.source.clone(),
                second: z.source.clone(),
            });
        }
    }
    let mut addresses: BTreeMap<Vec<u8>, Vec<IpAddr>> = BTreeMap::new();
    for z in &zones {
        for r in &z.records {
            let ip = match r.data() {
                AllRecordData::A(a) => IpAddr::V4(a.addr()),
                AllRecordData::Aaaa(a) => IpAddr::V6(a.addr()),
                _ => continue,
            };
            let list = addresses.entry(key(r.owner())).or_default();
            if !list.contains(&ip) {
                list.push(ip);
            }
        }
    }
    let mut report = BuildReport::default();
    let mut built = Vec::new();
    for z in zones {
        let apex = key(&z.apex);
        let mut servers = Vec::new();
        for r in &z.records {
            let AllRecordData::Ns(ns) = r.data() else {
                continue;
            };
            if key(r.owner()) != apex {
                continue;
            }
            match addresses.get(&key(ns.nsdname())) {
                Some(ips) => {
                    for ip in ips {
                        if !servers.contains(ip) {
                            servers.push(*ip);
                        }
                    }
                }
                None => report
                    .missing_addresses
                    .push(ns.nsdname().fmt_with_dot().to_string()),
            }
        }
        for (name, ip) in extra {
            if key(name) == apex && !servers.contains(ip) {
                servers.push(*ip);
            }
        }
        servers.sort();
        if servers.is_empty() {
            report
                .zones_without_servers
                .push(z.apex.fmt_with_dot().to_string());
        }
        report.records += z.records.len() as u64;
        built.push(BuiltZone {
            apex: z.apex,
            records: z.records,
            servers,
            soa_synthesized: false,
            apex_ns_from_parent: false,
        });
    }
    report.missing_addresses.sort();
    report.missing_addresses.dedup();
    Ok(Hierarchy::new(built, report))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path, name: &str, text: &str) -> Result<ZoneFile, ZoneFileError> {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        ZoneFile::read(&path, None)
    }

    #[test]
    fn servers_come_from_glue_in_zone_records_and_extra_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let root = read(
            dir.path(),
            "root",
            "$ORIGIN .\n$TTL 1d\n@ SOA a.root. h.root. 1 1h 15m 1w 1d\n@ NS a.root.\n\
             a.root. A 192.0.2.1\nexample. NS ns.example.\nns.example. AAAA 2001:db8::53\n\
             other. NS ns.elsewhere.\n",
        )
        .unwrap();
        let example = read(
            dir.path(),
            "example",
            "$ORIGIN example.\n@ 3600 SOA ns h 1 7200 3600 1209600 300\n@ 3600 NS ns\n\
             @ 3600 NS ns2\nns 3600 A 192.0.2.53\nns2 3600 A 192.0.2.54\n",
        )
        .unwrap();
        assert!(root.apex.is_root());
        assert_eq!(root.records[0].ttl().as_secs(), 86_400, "units read");
        let extra = [zone_server("example=198.51.100.7").unwrap()];
        let h = hierarchy(vec![example, root], &extra).unwrap();
        let servers: Vec<(String, Vec<String>)> = h
            .zones
            .iter()
            .map(|z| {
                let ips = z.servers.iter().map(|ip| ip.to_string()).collect();
                (z.name(), ips)
            })
            .collect();
        assert_eq!(
            servers,
            [
                (".".to_string(), vec!["192.0.2.1".to_string()]),
                (
                    "example.".to_string(),
                    vec![
                        "192.0.2.53".to_string(),
                        "192.0.2.54".to_string(),
                        "198.51.100.7".to_string(),
                        "2001:db8::53".to_string(),
                    ]
                ),
            ]
        );
        assert!(h.report.missing_addresses.is_empty());
        assert_eq!(h.report.delegations_without_zone, ["other."]);
    }

    #[test]
    fn delegations_without_zone_are_reported_in_canonical_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = read(
            dir.path(),
            "root",
            "$ORIGIN .\n$TTL 1d\n@ SOA a.root. h.root. 1 1h 15m 1w 1d\n@ NS a.root.\n\
             a.root. A 192.0.2.1\nzz. NS ns.zz.\nexample. NS ns.example.\nb. NS ns.b.\n\
             deep.b. NS ns.b.\nns.b. A 192.0.2.9\n",
        )
        .unwrap();
        let example = read(
            dir.path(),
            "example",
            "$ORIGIN example.\n@ 3600 SOA ns h 1 7200 3600 1209600 300\n@ 3600 NS ns\n\
             ns 3600 A 192.0.2.53\nsub 3600 NS ns.sub\nns.sub 3600 A 192.0.2.54\n",
        )
        .unwrap();
        let h = hierarchy(vec![root, example], &[]).unwrap();
        // deep.b. is below the delegation to b.: not one of the root's.
        assert_eq!(
            h.report.delegations_without_zone,
            ["b.", "sub.example.", "zz."]
        );
    }

    #[test]
    fn bad_files_are_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).display().to_string();
        let e = read(dir.path(), "nosoa", "$ORIGIN x.\n@ 60 NS ns\n").unwrap_err();
        assert_eq!(e.to_string(), format!("{}: no SOA record", path("nosoa")));
        let e = read(dir.path(), "bad", "$ORIGIN x.\n@ 60 SOA ns h one 2 3 4 5\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}:2:15: expected decimal number", path("bad"))
        );
        let e = read(
            dir.path(),
            "two",
            "$ORIGIN x.\n@ 60 SOA ns h 1 2 3 4 5\nsub 60 SOA ns h 1 2 3 4 5\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:3:1: SOA record at sub.x., not at the zone's apex x.",
                path("two")
            )
        );
        assert!(zone_server("example").is_err());
        assert!(zone_server("example=not-an-address").is_err());
    }

    #[test]
    fn out_of_zone_records_are_rejected_at_their_line_and_glue_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let head = "$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n";
        // Glue below a delegation is in the zone.
        let z = read(
            dir.path(),
            "glue",
            &format!("{head}sub NS ns.sub\nns.sub A 192.0.2.2\n"),
        )
        .unwrap();
        assert_eq!(z.records.len(), 5);
        let e = read(
            dir.path(),
            "ooz",
            &format!("{head}sub NS ns.sub\nwww.other. A 192.0.2.3\nns.sub A 192.0.2.2\n"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:7:1: www.other. is outside the zone example. (out-of-zone data)",
                dir.path().join("ooz").display()
            )
        );
    }

    #[test]
    fn two_files_of_one_zone_are_rejected_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let a = read(
            dir.path(),
            "a",
            "$ORIGIN example.\n@ 60 SOA ns h 1 2 3 4 5\n@ 60 NS ns\n",
        )
        .unwrap();
        let b = read(
            dir.path(),
            "b",
            "; a newer version\n$ORIGIN example.\n@ 60 SOA ns h 2 2 3 4 5\n@ 60 NS ns\n",
        )
        .unwrap();
        let e = hierarchy(vec![a, b], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:3: zone example. again, already in {}:2: one file per zone",
                dir.path().join("b").display(),
                dir.path().join("a").display()
            )
        );
    }
}
