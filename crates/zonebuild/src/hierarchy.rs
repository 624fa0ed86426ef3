//! The rebuilt hierarchy and its outputs: zone files, the manifest for `ldplayer serve`, root
//! hints for a resolver, and a BIND configuration with one view per nameserver group.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use domain::base::iana::Rtype;
use domain::base::Name;
use domain::rdata::AllRecordData;
use ldplayer_zone::name::{canonical_key, parent};
use ldplayer_zone::{Manifest, ManifestEntry, ZoneSource};
use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::builder::key;
use crate::exchange::Rr;
use crate::runs::threads;

/// One rebuilt zone.
#[derive(Debug, Clone)]
pub struct BuiltZone {
    /// The apex.
    pub apex: Name<Bytes>,
    /// Every record (SOA and apex NS included).
    pub records: Vec<Rr>,
    /// Addresses of the nameservers that serve it.
    pub servers: Vec<IpAddr>,
    /// No SOA was captured; one was made up.
    pub soa_synthesized: bool,
    /// The apex NS set was not captured from the zone itself but from its parent's referral.
    pub apex_ns_from_parent: bool,
}

impl BuiltZone {
    /// The apex in presentation format, with the final dot.
    pub fn name(&self) -> String {
        self.apex.fmt_with_dot().to_string()
    }

    /// The zone as a zone file: the SOA first, then every record in canonical order (absolute
    /// names, one record per line).
    pub fn to_text(&self) -> String {
        let mut recs: Vec<(u8, Vec<u8>, u16, &Rr)> = self
            .records
            .iter()
            .map(|r| {
                // canonical_key lowercases: no lowercase copy first.
                let mut k = Vec::with_capacity(r.owner().as_slice().len() + 1);
                canonical_key(r.owner().as_slice(), &mut k);
                let first = u8::from(r.rtype() != Rtype::SOA);
                (first, k, r.rtype().to_int(), r)
            })
            .collect();
        recs.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
        let mut out = format!(
            "; {} rebuilt by ldplayer zones build{}\n",
            self.name(),
            if self.soa_synthesized {
                " (SOA synthesized: none was captured)"
            } else {
                ""
            }
        );
        for (.., r) in recs {
            match r.data() {
                AllRecordData::Rrsig(sig) => {
                    // domain prints signature times as integers, which nsd does not read; the
                    // YYYYMMDDHHmmSS form (RFC 4034 §3.2) is read by every zone checker.
                    let _ = writeln!(
                        out,
                        "{} {} {} RRSIG {} {} {} {} {} {} {} {} {}",
                        r.owner().fmt_with_dot(),
                        r.ttl().as_secs(),
                        r.class(),
                        sig.type_covered(),
                        sig.algorithm().to_int(),
                        sig.labels(),
                        sig.original_ttl().as_secs(),
                        rrsig_time(sig.expiration().into_int()),
                        rrsig_time(sig.inception().into_int()),
                        sig.key_tag(),
                        sig.signer_name().fmt_with_dot(),
                        base64::engine::general_purpose::STANDARD.encode(sig.signature()),
                    );
                }
                _ => {
                    crate::record_text::write_record(&mut out, r);
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// Seconds since 1970 (UTC) as YYYYMMDDHHmmSS.
pub(crate) fn rrsig_time(t: u32) -> String {
    let c = ldplayer_trace::civil_time(i64::from(t));
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_as_plain_tokens() {
        use domain::base::Name;
        let name = |s: &str| Name::<bytes::Bytes>::bytes_from_str(s).unwrap();
        assert_eq!(super::plain_name(&Name::root_bytes()), ".");
        assert_eq!(super::plain_name(&name("Sld7.tld-42.")), "Sld7.tld-42.");
        assert_eq!(
            super::plain_name(&name("a\\032b\\#\\;\\@c.x.")),
            "a\\032b\\035\\059\\064c.x."
        );
        let back = ldplayer_dns::name_from_presentation("a\\032b\\035\\059\\064c.x.").unwrap();
        assert_eq!(back, name("a\\032b\\#\\;\\@c.x.").as_slice());
    }

    #[test]
    fn rrsig_times_in_calendar_form() {
        assert_eq!(super::rrsig_time(0), "19700101000000");
        assert_eq!(super::rrsig_time(1_428_037_200), "20150403050000");
        assert_eq!(super::rrsig_time(951_782_400), "20000229000000");
        assert_eq!(super::rrsig_time(u32::MAX), "21060207062815");
    }
}

/// What the constructor did and what it could not rebuild.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BuildReport {
    /// Responses used.
    pub responses_used: u64,
    /// Queries seen (they carry no data).
    pub queries_seen: u64,
    /// Responses not used, by reason.
    pub responses_unused: BTreeMap<String, u64>,
    /// Records filed into zones.
    pub records: u64,
    /// RRsets seen again with different data (the first was kept).
    pub conflicts: u64,
    /// Records in no zone served by the server that sent them.
    pub records_out_of_zone: u64,
    /// Answer-section records of non-authoritative responses (not used).
    pub records_not_authoritative: u64,
    /// Every record of the responses used that no zone holds, by reason (see [`LeftOut`]:
    /// `not-authoritative`, `out-of-zone`, `glue-out-of-zone`, `soa-without-zone`,
    /// `unexpected-in-section`, `conflict`): each occurrence counts (a record repeated in
    /// several responses, or a Deckard entry given by each address of its range, counts each
    /// time). `records_not_authoritative` is the first, `records_out_of_zone` the next three
    /// together.
    ///
    /// [`LeftOut`]: crate::LeftOut
    pub records_left_out: BTreeMap<String, u64>,
    /// The first few records left out for each reason, as `OWNER TYPE from SERVER`.
    pub records_left_out_examples: BTreeMap<String, Vec<String>>,
    /// Delegations copied into a parent zone that had not been seen in its referrals.
    pub delegations_added: u64,
    /// Address RRsets of nameserver names added from elsewhere in the capture.
    pub glue_added: u64,
    /// Signed RRsets recorded with TTLs below their signatures' original TTL (counted down by
    /// a cache, or lowered to a negative answer's SOA MINIMUM) given that original TTL back:
    /// the TTL their zone gives them.
    pub ttls_restored: u64,
    /// Nameserver names inside a zone whose addresses were never seen (missing glue).
    pub missing_addresses: Vec<String>,
    /// Zones none of whose nameserver addresses is known (missing NS or glue).
    pub zones_without_servers: Vec<String>,
    /// Servers whose zone was inferred from their answers (`address zone`): their NS or glue
    /// was not captured.
    pub inferred_servers: Vec<String>,
    /// Delegations (NS records below a zone's apex, not below another delegation) to zones the
    /// hierarchy does not hold, in canonical order: no nameserver address serves them, so a
    /// resolver walking the hierarchy gets no answer below them (REFUSED). The root zone alone
    /// has one per TLD.
    pub delegations_without_zone: Vec<String>,
}

/// The delegations of `zones` to zones that are not among them (see
/// [`BuildReport::delegations_without_zone`]), in canonical order.
fn delegations_without_zone(zones: &[BuiltZone]) -> Vec<String> {
    let apexes: FxHashSet<Vec<u8>> = zones.iter().map(|z| key(&z.apex)).collect();
    let mut missing: BTreeMap<Vec<u8>, String> = BTreeMap::new();
    for z in zones {
        let apex = key(&z.apex);
        let cuts: BTreeMap<Vec<u8>, &Rr> = z
            .records
            .iter()
            .filter(|r| r.rtype() == Rtype::NS && !r.owner().as_slice().eq_ignore_ascii_case(&apex))
            .map(|r| (key(r.owner()), r))
            .collect();
        for (cut, r) in &cuts {
            let mut above = parent(cut);
            let mut occluded = false;
            while let Some(a) = above.filter(|a| a.len() > apex.len()) {
                occluded |= cuts.contains_key(a);
                above = parent(a);
            }
            if !occluded && !apexes.contains(cut) {
                let mut k = Vec::new();
                canonical_key(cut, &mut k);
                missing.insert(k, r.owner().fmt_with_dot().to_string());
            }
        }
    }
    missing.into_values().collect()
}

/// The rebuilt zones and the report.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    /// The zones, the root first, then in canonical order.
    pub zones: Vec<BuiltZone>,
    /// What was done and what is missing.
    pub report: BuildReport,
}

/// How [`Hierarchy::write_layout`] lays the zones out in its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// The root zone in `root.zone`, every other zone in one [bundle](ldplayer_zone::bundle)
    /// per level of the hierarchy (`level1.zones` for the TLDs, `level2.zones` below them…):
    /// a few files whatever the number of zones, which `serve --manifest` and the lab's
    /// meta-server read. No BIND configuration (BIND and nsd read one zone per file).
    #[default]
    Bundles,
    /// One zone file per zone (see [`Hierarchy::file_names`]) and a BIND configuration
    /// (`named.conf`) serving them, for BIND and nsd.
    Files,
}

impl Layout {
    /// The name of the level bundle of zones whose apex has `labels` labels (1 or more).
    pub fn bundle_name(labels: usize) -> String {
        format!("level{labels}.zones")
    }
}

/// Files written by [`Hierarchy::write`].
#[derive(Debug, Clone)]
pub struct Written {
    /// The file each zone is in, in [`Hierarchy::zones`] order: its own zone file, or its
    /// level's bundle.
    pub zone_files: Vec<PathBuf>,
    /// The manifest for `ldplayer serve --manifest`.
    pub manifest: PathBuf,
    /// Root hints (NS and addresses of the root's nameservers).
    pub root_hints: PathBuf,
    /// A BIND configuration serving the same views ([`Layout::Files`] only).
    pub named_conf: Option<PathBuf>,
}

impl Hierarchy {
    pub(crate) fn new(mut zones: Vec<BuiltZone>, mut report: BuildReport) -> Hierarchy {
        zones.sort_by_cached_key(|z| {
            // canonical_key lowercases: no lowercase copy first.
            let mut k = Vec::with_capacity(z.apex.as_slice().len() + 1);
            canonical_key(z.apex.as_slice(), &mut k);
            k
        });
        report.delegations_without_zone = delegations_without_zone(&zones);
        Hierarchy { zones, report }
    }

    /// This hierarchy with the zones of `other` added; a zone of `other` replaces one with the
    /// same apex here. Missing addresses are joined; zones without servers are counted anew.
    pub fn merge(mut self, other: Hierarchy) -> Hierarchy {
        let replaced: BTreeSet<Vec<u8>> = other.zones.iter().map(|z| key(&z.apex)).collect();
        self.zones.retain(|z| !replaced.contains(&key(&z.apex)));
        self.zones.extend(other.zones);
        let mut report = self.report;
        report.records += other.report.records;
        report
            .missing_addresses
            .extend(other.report.missing_addresses);
        report.missing_addresses.sort();
        report.missing_addresses.dedup();
        report.zones_without_servers = self
            .zones
            .iter()
            .filter(|z| z.servers.is_empty())
            .map(BuiltZone::name)
            .collect();
        Hierarchy::new(self.zones, report)
    }

    /// File names, one per zone: `root.zone`, else the apex without its final dot; characters
    /// that have no place in a file name become `_`.
    pub fn file_names(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::with_capacity(self.zones.len());
        self.zones
            .iter()
            .map(|z| {
                let base = if z.apex.is_root() {
                    "root".to_string()
                } else {
                    z.name()
                        .trim_end_matches('.')
                        .to_ascii_lowercase()
                        .chars()
                        .map(|c| {
                            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                                c
                            } else {
                                '_'
                            }
                        })
                        .collect()
                };
                let mut name = format!("{base}.zone");
                let mut n = 1;
                while !seen.insert(name.clone()) {
                    n += 1;
                    name = format!("{base}-{n}.zone");
                }
                name
            })
            .collect()
    }

    /// The manifest of [`Layout::Files`]: every nameserver address and the zone files it
    /// serves (in `dir`).
    pub fn manifest(&self, dir: &Path) -> Manifest {
        self.manifest_of(dir, &self.file_names())
    }

    /// [`manifest`](Self::manifest) with the [`file_names`](Self::file_names) known.
    fn manifest_of(&self, dir: &Path, files: &[String]) -> Manifest {
        self.manifest_from(
            files
                .iter()
                .map(|f| ZoneSource::file(dir.join(f)))
                .collect(),
        )
    }

    /// Root hints in the format of `named.root`: the root's NS set and its servers' addresses.
    pub fn root_hints(&self) -> String {
        let mut out =
            String::from("; root hints of the rebuilt hierarchy (ldplayer zones build)\n");
        let Some(root) = self.zones.iter().find(|z| z.apex.is_root()) else {
            return out;
        };
        let mut names = Vec::new();
        for r in &root.records {
            if let AllRecordData::Ns(ns) = r.data() {
                if r.owner().is_root() {
                    let _ = writeln!(out, ".\t3600000\tNS\t{}", ns.nsdname().fmt_with_dot());
                    names.push(key(ns.nsdname()));
                }
            }
        }
        for r in &root.records {
            if !names.contains(&key(r.owner())) {
                continue;
            }
            match r.data() {
                AllRecordData::A(a) => {
                    let _ = writeln!(
                        out,
                        "{}\t3600000\tA\t{}",
                        r.owner().fmt_with_dot(),
                        a.addr()
                    );
                }
                AllRecordData::Aaaa(a) => {
                    let _ = writeln!(
                        out,
                        "{}\t3600000\tAAAA\t{}",
                        r.owner().fmt_with_dot(),
                        a.addr()
                    );
                }
                _ => {}
            }
        }
        out
    }

    /// A BIND configuration answering like `ldplayer serve --manifest`: one view per group of
    /// nameserver addresses that serve the same zones (`match-destinations`), zone files in
    /// `dir`; queries to other addresses match no view and are refused.
    pub fn named_conf(&self, dir: &Path) -> String {
        self.named_conf_of(dir, &self.file_names())
    }

    /// [`named_conf`](Self::named_conf) with the [`file_names`](Self::file_names) known.
    fn named_conf_of(&self, dir: &Path, files: &[String]) -> String {
        let mut groups: BTreeMap<Vec<usize>, Vec<IpAddr>> = BTreeMap::new();
        let mut by_server: BTreeMap<IpAddr, Vec<usize>> = BTreeMap::new();
        for (i, z) in self.zones.iter().enumerate() {
            for ip in &z.servers {
                by_server.entry(*ip).or_default().push(i);
            }
        }
        for (ip, zones) in by_server {
            groups.entry(zones).or_default().push(ip);
        }
        let mut out = format!(
            "// BIND as the meta-server of a hierarchy rebuilt by ldplayer zones build.\n\
             options {{\n\
             \tdirectory \"{}\";\n\
             \tlisten-on {{ any; }};\n\
             \tlisten-on-v6 {{ any; }};\n\
             \trecursion no;\n\
             \tallow-query {{ any; }};\n\
             \tminimal-responses no;\n\
             \tpid-file none;\n\
             }};\n",
            dir.display()
        );
        for (n, (zones, ips)) in groups.iter().enumerate() {
            let _ = writeln!(out, "view \"ns{}\" {{", n + 1);
            let list: String = ips.iter().map(|ip| format!("{ip}; ")).collect();
            let _ = writeln!(out, "\tmatch-destinations {{ {list}}};");
            for &i in zones {
                let name = self.zones[i].name();
                let zname = if name == "." {
                    "."
                } else {
                    name.trim_end_matches('.')
                };
                let _ = writeln!(
                    out,
                    "\tzone \"{zname}\" {{ type primary; file \"{}\"; }};",
                    files[i]
                );
            }
            let _ = writeln!(out, "}};");
        }
        out
    }

    /// Writes the zone files, `manifest`, `root.hints` and `named.conf` into `dir` (created if
    /// missing): [`Layout::Files`].
    pub fn write(&self, dir: &Path) -> io::Result<Written> {
        self.write_layout(dir, Layout::Files)
    }

    /// The names of the files [`write_layout`](Self::write_layout) writes into its directory.
    pub fn output_names(&self, layout: Layout) -> Vec<String> {
        let mut names = match layout {
            Layout::Files => self.file_names(),
            Layout::Bundles => {
                let mut levels: BTreeSet<usize> = BTreeSet::new();
                let mut names = Vec::new();
                for z in &self.zones {
                    match z.apex.label_count() - 1 {
                        0 => names.push("root.zone".to_string()),
                        n => {
                            levels.insert(n);
                        }
                    }
                }
                names.dedup();
                names.extend(levels.into_iter().map(Layout::bundle_name));
                names
            }
        };
        names.extend(["manifest", "root.hints"].map(String::from));
        if layout == Layout::Files {
            names.push("named.conf".into());
        }
        names
    }

    /// Writes the zones as `layout` says, `manifest` and `root.hints` (and for
    /// [`Layout::Files`] `named.conf`) into `dir` (created if missing).
    pub fn write_layout(&self, dir: &Path, layout: Layout) -> io::Result<Written> {
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let (zone_files, manifest_text, named_conf) = match layout {
            Layout::Files => {
                let names = self.file_names();
                let zone_files: Vec<PathBuf> = names.iter().map(|f| dir.join(f)).collect();
                self.write_zone_files(&zone_files)?;
                let mut m = Vec::new();
                self.manifest_of(&dir, &names).write(&mut m, &dir)?;
                (zone_files, m, Some(self.named_conf_of(&dir, &names)))
            }
            Layout::Bundles => {
                let (zone_files, sources) = self.write_bundles(&dir)?;
                let mut m = Vec::new();
                self.manifest_from(sources).write(&mut m, &dir)?;
                (zone_files, m, None)
            }
        };
        let manifest = dir.join("manifest");
        ldplayer_output::write(&manifest, manifest_text)?;
        let root_hints = dir.join("root.hints");
        ldplayer_output::write(&root_hints, self.root_hints())?;
        let named_conf = match named_conf {
            Some(text) => {
                let path = dir.join("named.conf");
                ldplayer_output::write(&path, text)?;
                Some(path)
            }
            None => None,
        };
        Ok(Written {
            zone_files,
            manifest,
            root_hints,
            named_conf,
        })
    }

    /// Formatting and creating a few hundred thousand files is most of a large build's time:
    /// the zones are written by as many threads as there are cores, each taking every n-th zone.
    fn write_zone_files(&self, zone_files: &[PathBuf]) -> io::Result<()> {
        let threads = threads(self.zones.len());
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    scope.spawn(move || -> io::Result<()> {
                        for (z, p) in self.zones.iter().zip(zone_files).skip(t).step_by(threads) {
                            ldplayer_output::write(p, z.to_text())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            join_all(workers)
        })
    }

    /// Writes the root zone to `root.zone` and the others into their level's bundle; returns
    /// each zone's file and where the manifest finds it.
    fn write_bundles(&self, dir: &Path) -> io::Result<(Vec<PathBuf>, Vec<ZoneSource>)> {
        let mut levels: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut zone_files = Vec::with_capacity(self.zones.len());
        let mut sources = Vec::with_capacity(self.zones.len());
        let mut bundles: BTreeMap<usize, Arc<Path>> = BTreeMap::new();
        for (i, z) in self.zones.iter().enumerate() {
            let labels = z.apex.label_count() - 1;
            let file: PathBuf = if labels == 0 {
                let path = dir.join("root.zone");
                sources.push(ZoneSource::file(&path));
                path
            } else {
                levels.entry(labels).or_default().push(i);
                let path = bundles
                    .entry(labels)
                    .or_insert_with(|| dir.join(Layout::bundle_name(labels)).into());
                sources.push(ZoneSource::bundled(path.to_path_buf(), plain_name(&z.apex)));
                path.to_path_buf()
            };
            zone_files.push(file);
        }
        if let Some(root) = self.zones.iter().find(|z| z.apex.is_root()) {
            ldplayer_output::write(&dir.join("root.zone"), root.to_text())?;
        }
        for (labels, zones) in &levels {
            let path = &bundles[labels];
            // Formatted in order by as many threads as there are cores, each a run of zones,
            // then written one run after another.
            let threads = threads(zones.len());
            let per = zones.len().div_ceil(threads);
            let parts: Vec<io::Result<String>> = std::thread::scope(|scope| {
                let workers: Vec<_> = zones
                    .chunks(per)
                    .map(|run| {
                        scope.spawn(move || {
                            let mut text = String::new();
                            for &i in run {
                                let z = &self.zones[i];
                                let _ = writeln!(text, "$ORIGIN {}", plain_name(&z.apex));
                                text.push_str(&z.to_text());
                            }
                            text
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .map(|w| {
                        w.join()
                            .map_err(|_| io::Error::other("a zone bundle writer panicked"))
                    })
                    .collect()
            });
            let destination = ldplayer_output::create(path)?;
            let mut out = io::BufWriter::with_capacity(1 << 20, destination.writer()?);
            for part in parts {
                io::Write::write_all(&mut out, part?.as_bytes())?;
            }
            io::Write::flush(&mut out)?;
            drop(out);
            destination.commit()?;
        }
        Ok((zone_files, sources))
    }

    /// The manifest of zones found at `sources` (one per zone, in order).
    fn manifest_from(&self, sources: Vec<ZoneSource>) -> Manifest {
        let mut by_server: BTreeMap<IpAddr, Vec<ZoneSource>> = BTreeMap::new();
        for (z, source) in self.zones.iter().zip(sources) {
            for ip in &z.servers {
                by_server.entry(*ip).or_default().push(source.clone());
            }
        }
        Manifest {
            entries: by_server
                .into_iter()
                .map(|(address, zones)| ManifestEntry { address, zones })
                .collect(),
        }
    }
}

/// A name in presentation format (with the final dot) where every byte but letters, digits,
/// `-`, `_` and `*` is written `\DDD`: a token of the manifest and of a bundle's `$ORIGIN`
/// line, which a space, `#`, `;` or `@` in a label would otherwise cut.
pub(crate) fn plain_name(name: &Name<Bytes>) -> String {
    if name.is_root() {
        return ".".into();
    }
    let mut out = String::new();
    for label in name.iter().filter(|l| !l.is_root()) {
        for &b in label.as_slice() {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'*' {
                out.push(char::from(b));
            } else {
                let _ = write!(out, "\\{b:03}");
            }
        }
        out.push('.');
    }
    out
}

/// Waits for every writer; the first error, or a panic as one.
fn join_all(workers: Vec<std::thread::ScopedJoinHandle<'_, io::Result<()>>>) -> io::Result<()> {
    workers.into_iter().try_for_each(|w| {
        w.join()
            .unwrap_or_else(|_| Err(io::Error::other("a zone file writer panicked")))
    })
}
