//! A synthetic DNS hierarchy of any size, for experiments and benchmarks that need more zones
//! than a capture gives: a root delegating TLDs, each TLD delegating second-level domains
//! (`sld0`, `sld1`, ...), each of those answering `www` and, through a wildcard, every other
//! name below it (so unique names, as a load generator makes them, get answers).
//!
//! Every nameserver address is in 10.0.0.0/8 (private: the lab and the experiments make every
//! address local inside their network namespaces): the root at 10.0.0.1, TLD number `i` at
//! `10.1.(i / 250).(i % 250 + 1)`, and the second-level zones shared among `providers`
//! addresses `10.2.(p / 250).(p % 250 + 1)` (many zones per address, as at a hosting
//! provider). Nameserver names are in-bailiwick (`ns1.nic.TLD.`, `ns1.sldJ.TLD.`) with glue in
//! the parent; the root's is `a.root-servers.net.`, with glue in the root and, when `net` is
//! one of the TLDs, its address in the `net.` zone too, as on the Internet.
//!
//! The TLDs are the root-like workload's (`ldplayer_dns::BUSY_TLDS`, in their order)
//! and then `tld30`, `tld31`, ...: with the default 30, the existing-TLD names of a
//! root-like trace all resolve. Pure: [`hierarchy`] makes a [`Hierarchy`], which
//! [`Hierarchy::write`] writes like a rebuilt one.

use std::net::{IpAddr, Ipv4Addr};

use bytes::Bytes;
use domain::base::iana::Class;
use domain::base::{Name, Record, Serial, Ttl};
use domain::rdata::{AllRecordData, Ns, Soa, A};
use thiserror::Error;

use crate::exchange::Rr;
use crate::hierarchy::{BuildReport, BuiltZone, Hierarchy};

/// The root's nameserver address.
pub const ROOT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// The root's nameserver name.
pub const ROOT_SERVER: &str = "a.root-servers.net.";

/// Addresses per third octet (host bytes 1..=250 of each /24).
const PER_NET: usize = 250;

/// The most TLDs or providers one address block holds (10.1.0.0/16, 10.2.0.0/16).
pub const MAX_ADDRESSES: usize = PER_NET * 256;

/// TTL of delegations and their glue (as at the root and in `com`).
const DELEGATION_TTL: u32 = 172_800;
/// TTL of the root's own NS set and its address.
const ROOT_NS_TTL: u32 = 518_400;
/// TTL of the records of the zones below the root.
const RECORD_TTL: u32 = 3600;

/// The shape of a synthetic hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// TLDs delegated by the root.
    pub tlds: usize,
    /// Second-level zones delegated by each TLD.
    pub slds: usize,
    /// Addresses the second-level zones are shared among.
    pub providers: usize,
}

impl Default for Shape {
    /// 30 TLDs (the root-like workload's), 10 SLDs each, on 16 provider addresses.
    fn default() -> Shape {
        Shape {
            tlds: 30,
            slds: 10,
            providers: 16,
        }
    }
}

/// Why a hierarchy of that shape cannot be made.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ShapeError {
    /// More TLDs or providers than the address block holds.
    #[error("{what}: at most {MAX_ADDRESSES} (one address each in a /16), not {asked}")]
    TooMany {
        /// `--tlds` or `--providers`.
        what: &'static str,
        /// The number asked for.
        asked: usize,
    },
    /// Second-level zones but no provider address to serve them.
    #[error("--providers must be at least 1 when there are second-level zones")]
    NoProviders,
    /// A generated name is not a valid domain name (cannot happen for the names made here).
    #[error("bad name {name:?}: {message}")]
    Name {
        /// The name.
        name: String,
        /// Why.
        message: String,
    },
}

/// The TLD names of a hierarchy with `n` TLDs: the root-like workload's first, then `tld30`,
/// `tld31`, ...
pub fn tld_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match ldplayer_dns::BUSY_TLDS.get(i) {
            Some((t, _)) => (*t).to_string(),
            None => format!("tld{i}"),
        })
        .collect()
}

/// The address of TLD number `i`'s nameserver.
pub fn tld_address(i: usize) -> Ipv4Addr {
    block_address(1, i)
}

/// The address of provider `p`, which serves second-level zones.
pub fn provider_address(p: usize) -> Ipv4Addr {
    block_address(2, p)
}

/// The provider serving SLD `j` of TLD `i`: round robin over all SLDs.
pub fn provider_of(shape: &Shape, tld: usize, sld: usize) -> usize {
    (tld * shape.slds + sld) % shape.providers.max(1)
}

fn block_address(block: u8, i: usize) -> Ipv4Addr {
    let net = ((i / PER_NET) % 256) as u8;
    let host = (i % PER_NET + 1) as u8;
    Ipv4Addr::new(10, block, net, host)
}

fn name(text: &str) -> Result<Name<Bytes>, ShapeError> {
    text.parse()
        .map_err(|e: domain::base::name::FromStrError| ShapeError::Name {
            name: text.to_string(),
            message: e.to_string(),
        })
}

fn rr(owner: &Name<Bytes>, ttl: u32, data: AllRecordData<Bytes, Name<Bytes>>) -> Rr {
    Record::new(owner.clone(), Class::IN, Ttl::from_secs(ttl), data)
}

fn ns(owner: &Name<Bytes>, ttl: u32, target: &Name<Bytes>) -> Rr {
    rr(owner, ttl, AllRecordData::Ns(Ns::new(target.clone())))
}

fn a(owner: &Name<Bytes>, ttl: u32, addr: Ipv4Addr) -> Rr {
    rr(owner, ttl, AllRecordData::A(A::new(addr)))
}

/// An SOA with conventional timers; `negative` is its minimum (the negative-caching TTL).
fn soa(
    apex: &Name<Bytes>,
    primary: &Name<Bytes>,
    rname: &str,
    ttl: u32,
    negative: u32,
) -> Result<Rr, ShapeError> {
    Ok(rr(
        apex,
        ttl,
        AllRecordData::Soa(Soa::new(
            primary.clone(),
            name(rname)?,
            Serial(2026112600),
            Ttl::from_secs(1800),
            Ttl::from_secs(900),
            Ttl::from_secs(604_800),
            Ttl::from_secs(negative),
        )),
    ))
}

/// The hierarchy of `shape`: the root first, then the TLDs, then the second-level zones (in
/// the canonical order [`Hierarchy`] keeps). Its report counts the records.
pub fn hierarchy(shape: &Shape) -> Result<Hierarchy, ShapeError> {
    if shape.tlds > MAX_ADDRESSES {
        return Err(ShapeError::TooMany {
            what: "--tlds",
            asked: shape.tlds,
        });
    }
    if shape.providers > MAX_ADDRESSES {
        return Err(ShapeError::TooMany {
            what: "--providers",
            asked: shape.providers,
        });
    }
    if shape.providers == 0 && shape.slds > 0 && shape.tlds > 0 {
        return Err(ShapeError::NoProviders);
    }
    let root = Name::root_bytes();
    let root_ns = name(ROOT_SERVER)?;
    let mut root_records = vec![
        soa(&root, &root_ns, "nstld.verisign-grs.com.", 86400, 86400)?,
        ns(&root, ROOT_NS_TTL, &root_ns),
        a(&root_ns, ROOT_NS_TTL, ROOT_ADDRESS),
    ];
    let mut zones = Vec::with_capacity(1 + shape.tlds * (1 + shape.slds));
    for (i, tld) in tld_names(shape.tlds).iter().enumerate() {
        let apex = name(&format!("{tld}."))?;
        let server = name(&format!("ns1.nic.{tld}."))?;
        let address = tld_address(i);
        root_records.push(ns(&apex, DELEGATION_TTL, &server));
        root_records.push(a(&server, DELEGATION_TTL, address));
        let mut records = Vec::with_capacity(3 + 2 * shape.slds);
        records.push(soa(
            &apex,
            &server,
            &format!("hostmaster.nic.{tld}."),
            RECORD_TTL,
            RECORD_TTL,
        )?);
        records.push(ns(&apex, RECORD_TTL, &server));
        records.push(a(&server, RECORD_TTL, address));
        if tld == "net" {
            records.push(a(&root_ns, RECORD_TTL, ROOT_ADDRESS));
        }
        for j in 0..shape.slds {
            let sld = name(&format!("sld{j}.{tld}."))?;
            let sld_server = name(&format!("ns1.sld{j}.{tld}."))?;
            let v4 = provider_address(provider_of(shape, i, j));
            let provider = IpAddr::V4(v4);
            records.push(ns(&sld, DELEGATION_TTL, &sld_server));
            records.push(a(&sld_server, DELEGATION_TTL, v4));
            zones.push(BuiltZone {
                records: vec![
                    soa(
                        &sld,
                        &sld_server,
                        &format!("hostmaster.sld{j}.{tld}."),
                        RECORD_TTL,
                        RECORD_TTL,
                    )?,
                    ns(&sld, RECORD_TTL, &sld_server),
                    a(&sld_server, RECORD_TTL, v4),
                    a(
                        &name(&format!("www.sld{j}.{tld}."))?,
                        RECORD_TTL,
                        Ipv4Addr::new(192, 0, 2, 80),
                    ),
                    a(
                        &name(&format!("*.sld{j}.{tld}."))?,
                        RECORD_TTL,
                        Ipv4Addr::new(192, 0, 2, 1),
                    ),
                ],
                apex: sld,
                servers: vec![provider],
                soa_synthesized: false,
                apex_ns_from_parent: false,
            });
        }
        zones.push(BuiltZone {
            apex,
            records,
            servers: vec![IpAddr::V4(address)],
            soa_synthesized: false,
            apex_ns_from_parent: false,
        });
    }
    zones.push(BuiltZone {
        apex: root,
        records: root_records,
        servers: vec![IpAddr::V4(ROOT_ADDRESS)],
        soa_synthesized: false,
        apex_ns_from_parent: false,
    });
    let report = BuildReport {
        records: zones.iter().map(|z| z.records.len() as u64).sum(),
        ..BuildReport::default()
    };
    Ok(Hierarchy::new(zones, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::base::iana::Rtype;

    #[test]
    fn the_default_shape_has_the_root_like_tlds_and_their_slds() {
        let h = hierarchy(&Shape::default()).unwrap();
        assert_eq!(h.zones.len(), 1 + 30 + 30 * 10);
        assert!(h.zones[0].apex.is_root(), "the root first");
        let names: Vec<String> = h.zones.iter().map(|z| z.name()).collect();
        for (t, _) in ldplayer_dns::BUSY_TLDS {
            assert!(names.contains(&format!("{t}.")), "{t}");
            assert!(names.contains(&format!("sld9.{t}.")), "{t}");
            assert!(!names.contains(&format!("sld10.{t}.")), "{t}");
        }
        assert!(h.report.delegations_without_zone.is_empty());
        assert!(h.report.zones_without_servers.is_empty());
        // The root: SOA, NS, its glue, and an NS and glue per TLD.
        assert_eq!(h.zones[0].records.len(), 3 + 2 * 30);
        assert_eq!(h.zones[0].servers, [IpAddr::V4(ROOT_ADDRESS)]);
        let com = h.zones.iter().find(|z| z.name() == "com.").unwrap();
        assert_eq!(com.records.len(), 3 + 2 * 10);
        assert_eq!(com.servers, [IpAddr::V4(tld_address(0))]);
        let net = h.zones.iter().find(|z| z.name() == "net.").unwrap();
        assert_eq!(
            net.records.len(),
            3 + 2 * 10 + 1,
            "a.root-servers.net. in net."
        );
        let sld = h.zones.iter().find(|z| z.name() == "sld3.com.").unwrap();
        let types: Vec<Rtype> = sld.records.iter().map(|r| r.rtype()).collect();
        assert_eq!(types, [Rtype::SOA, Rtype::NS, Rtype::A, Rtype::A, Rtype::A]);
        assert_eq!(sld.servers, [IpAddr::V4(provider_address(3))]);
        // 300 SLDs on 16 addresses.
        let addresses: std::collections::BTreeSet<_> =
            h.zones.iter().flat_map(|z| z.servers.iter()).collect();
        assert_eq!(addresses.len(), 1 + 30 + 16);
        let total: u64 = h.zones.iter().map(|z| z.records.len() as u64).sum();
        assert_eq!(h.report.records, total);
        // Every zone is one zone as nsd and BIND see one.
        for z in &h.zones {
            ldplayer_zone::Zone::from_text(&z.to_text(), &z.name(), None)
                .unwrap_or_else(|e| panic!("{}: {e}", z.name()));
        }
    }

    #[test]
    fn tlds_past_the_root_like_ones_are_numbered_and_addresses_stay_distinct() {
        let names = tld_names(32);
        assert_eq!(names[0], "com");
        assert_eq!(names[30], "tld30");
        assert_eq!(names[31], "tld31");
        let shape = Shape {
            tlds: 600,
            slds: 0,
            providers: 0,
        };
        let h = hierarchy(&shape).unwrap();
        assert_eq!(h.zones.len(), 601);
        let addresses: std::collections::BTreeSet<_> =
            h.zones.iter().flat_map(|z| z.servers.iter()).collect();
        assert_eq!(addresses.len(), 601);
        assert_eq!(tld_address(249), Ipv4Addr::new(10, 1, 0, 250));
        assert_eq!(tld_address(250), Ipv4Addr::new(10, 1, 1, 1));
    }

    #[test]
    fn impossible_shapes_are_refused() {
        let too_many = Shape {
            tlds: MAX_ADDRESSES + 1,
            ..Shape::default()
        };
        assert!(matches!(
            hierarchy(&too_many),
            Err(ShapeError::TooMany { what: "--tlds", .. })
        ));
        let no_providers = Shape {
            providers: 0,
            ..Shape::default()
        };
        assert_eq!(
            hierarchy(&no_providers).unwrap_err(),
            ShapeError::NoProviders
        );
    }
}
