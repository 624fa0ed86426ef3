//! Zones taken as they are from existing zone files, with the addresses of their nameservers:
//! the root zone alone gives the root, served at the root servers' addresses from its own glue.
//!
//! Each file's zone is served by the addresses of its apex NS names, looked up among the
//! address records of every given file (a parent's glue or the zone's own records), plus any
//! given explicitly. The result is a [`Hierarchy`] like the one rebuilt from captures, so it
//! is written the same way: zone files, manifest, root hints and BIND views.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use domain::base::iana::{Class, Rtype};
use domain::base::name::FlattenInto as _;
use domain::base::rdata::{ComposeRecordData as _, ParseAnyRecordData as _};
use domain::base::{Name, ParsedName, Record, ToName};
use domain::dep::octseq::Parser;
use domain::rdata::AllRecordData;
use domain::zonefile::inplace::{Entry, Zonefile};
use thiserror::Error;

use crate::builder::key;
use crate::exchange::Rr;
use crate::hierarchy::{BuildReport, BuiltZone, Hierarchy};

/// Why a zone file could not be taken.
#[derive(Debug, Error)]
pub enum ZoneFileError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The zone file parser's complaint, with its position.
    #[error("{path}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// `line:column: message` as the parser reports it.
        message: String,
    },
    /// A `ZONE=ADDRESS` that is not one.
    #[error("{spec:?}: {message}")]
    Server {
        /// What was given.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// The file has no SOA record, or more than one zone's.
    #[error("{path}: {message}")]
    Zone {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// One zone file read into records.
#[derive(Debug, Clone)]
pub struct ZoneFile {
    /// The zone's apex (the SOA's owner).
    pub apex: Name<Bytes>,
    /// Every record of the file.
    pub records: Vec<Rr>,
}

impl ZoneFile {
    /// Reads a zone file; relative names are relative to `origin` if given, else to the
    /// file's `$ORIGIN` (names must be absolute before one). Time values with units are taken.
    pub fn read(path: &Path, origin: Option<&str>) -> Result<ZoneFile, ZoneFileError> {
        let text = std::fs::read(path).map_err(|source| ZoneFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = ldplayer_zone::expand_time_units(&text);
        let syntax = |message: String| ZoneFileError::Syntax {
            path: path.to_path_buf(),
            message,
        };
        let zone_err = |message: String| ZoneFileError::Zone {
            path: path.to_path_buf(),
            message,
        };
        let mut zf = Zonefile::from(&text[..]);
        zf.set_default_class(Class::IN);
        if let Some(o) = origin {
            let o = if o.ends_with('.') {
                o.to_string()
            } else {
                format!("{o}.")
            };
            let n: Name<Bytes> = o
                .parse()
                .map_err(|e| syntax(format!("bad origin {o:?}: {e}")))?;
            zf.set_origin(n);
        }
        let mut records = Vec::new();
        let mut apex: Option<Name<Bytes>> = None;
        let mut rdata = Vec::new();
        loop {
            let rec = match zf.next_entry() {
                Ok(Some(Entry::Record(rec))) => rec,
                Ok(Some(Entry::Include { path: inc, .. })) => {
                    return Err(syntax(format!(
                        "$INCLUDE {} is not followed here: inline it",
                        String::from_utf8_lossy(inc.as_slice())
                    )))
                }
                Ok(None) => break,
                Err(e) => return Err(syntax(e.to_string())),
            };
            rdata.clear();
            rec.data()
                .compose_rdata(&mut rdata)
                .map_err(|_| syntax("rdata too long".into()))?;
            let wire = Bytes::copy_from_slice(&rdata);
            let data = AllRecordData::<Bytes, ParsedName<Bytes>>::parse_any_rdata(
                rec.rtype(),
                &mut Parser::from_ref(&wire),
            )
            .map_err(|e| syntax(format!("{} {}: {e}", rec.owner(), rec.rtype())))?;
            let owner: Name<Bytes> = rec.owner().to_name();
            let parsed = Record::new(owner, rec.class(), rec.ttl(), data);
            let rr: Rr = parsed
                .try_flatten_into()
                .map_err(|e| syntax(format!("{}: {e}", rec.owner())))?;
            if rr.rtype() == Rtype::SOA {
                if let Some(a) = &apex {
                    if key(a) != key(rr.owner()) {
                        return Err(zone_err(format!(
                            "two SOA records, at {a} and {}: one zone per file",
                            rr.owner()
                        )));
                    }
                    continue;
                }
                apex = Some(rr.owner().clone());
            }
            records.push(rr);
        }
        let apex = apex.ok_or_else(|| zone_err("no SOA record".into()))?;
        Ok(ZoneFile { apex, records })
    }
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
/// without addresses in [`BuildReport::missing_addresses`].
pub fn hierarchy(zones: Vec<ZoneFile>, extra: &[(Name<Bytes>, IpAddr)]) -> Hierarchy {
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
    Hierarchy::new(built, report)
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
        let h = hierarchy(vec![example, root], &extra);
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
    }

    #[test]
    fn bad_files_are_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path(), "nosoa", "$ORIGIN x.\n@ 60 NS ns\n").unwrap_err();
        assert!(e.to_string().contains("no SOA record"), "{e}");
        let e = read(dir.path(), "bad", "$ORIGIN x.\n@ 60 SOA ns h one 2 3 4 5\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{}:", dir.path().join("bad").display())),
            "{e}"
        );
        let e = read(
            dir.path(),
            "two",
            "$ORIGIN x.\n@ 60 SOA ns h 1 2 3 4 5\ny. 60 SOA ns h 1 2 3 4 5\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("two SOA records"), "{e}");
        assert!(zone_server("example").is_err());
        assert!(zone_server("example=not-an-address").is_err());
    }
}
