//! The manifest of an emulated hierarchy: which zone files each nameserver address serves, and
//! the [`Views`] a split-horizon server answers from.
//!
//! The format is text, one nameserver address per line followed by the zone files it serves
//! (relative paths are relative to the manifest's directory); `#` starts a comment. An address
//! may appear on several lines (its zones add up) and a file under several addresses (it is
//! loaded once and shared):
//!
//! ```text
//! #ldplayer-manifest/1
//! 198.41.0.4            root.zone
//! 2001:503:ba3e::2:30   root.zone
//! 192.5.6.30            com.zone net.zone
//! ```
//!
//! A manifest whose first line is `#ldplayer-manifest/2` may also name one zone of a
//! [bundle](crate::bundle), a file of many zones, as `FILE@APEX` (the apex absolute, with its
//! final dot; the last `@` of the token splits it). `zones build` writes the root zone to
//! `root.zone` and every other zone into one bundle per level:
//!
//! ```text
//! #ldplayer-manifest/2
//! 198.41.0.4            root.zone
//! 192.5.6.30            level1.zones@com. level1.zones@net.
//! 10.0.0.53             level2.zones@example.com.
//! ```
//!
//! In a manifest without that first line (`/1`, or none) every token is a file name, `@` or
//! not, as before bundles were.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::bundle::Bundle;
use crate::set::ZoneSet;
use crate::zone::{Zone, ZoneError};

/// The first line `zones build` writes when every zone has a file of its own (optional when
/// reading).
pub const MANIFEST_TAG: &str = "#ldplayer-manifest/1";

/// The first line of a manifest that names zones of bundles (`FILE@APEX`): required for them.
pub const MANIFEST_TAG_BUNDLES: &str = "#ldplayer-manifest/2";

/// Nameserver addresses and the zone files each serves, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// One entry per address (lines of the same address merged, first appearance first).
    pub entries: Vec<ManifestEntry>,
}

/// One nameserver address and its zone files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The address queries are sent to.
    pub address: IpAddr,
    /// The zones served from it: files, as resolved (relative to the manifest's directory), or
    /// zones of bundles.
    pub zones: Vec<ZoneSource>,
}

/// Where a zone of a manifest is read from: a zone file, or one zone of a
/// [bundle](crate::bundle).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ZoneSource {
    /// The zone file, or the bundle.
    pub file: PathBuf,
    /// The zone's apex in the bundle (presentation format, with the final dot); `None` for a
    /// zone file.
    pub apex: Option<String>,
}

impl ZoneSource {
    /// A zone file.
    pub fn file(path: impl Into<PathBuf>) -> ZoneSource {
        ZoneSource {
            file: path.into(),
            apex: None,
        }
    }

    /// The zone at `apex` (presentation format, with the final dot) of the bundle `path`.
    pub fn bundled(path: impl Into<PathBuf>, apex: impl Into<String>) -> ZoneSource {
        ZoneSource {
            file: path.into(),
            apex: Some(apex.into()),
        }
    }
}

impl std::fmt::Display for ZoneSource {
    /// `FILE`, or `FILE@APEX`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.apex {
            None => write!(f, "{}", self.file.display()),
            Some(a) => write!(f, "{}@{a}", self.file.display()),
        }
    }
}

fn syntax(file: &str, line: usize, msg: String) -> ZoneError {
    ZoneError::at(file, line, None, msg)
}

impl Manifest {
    /// Reads a manifest file; zone paths are taken relative to its directory.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Manifest, ZoneError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        ldplayer_output::protect_input(path);
        let text = std::fs::read_to_string(path).map_err(|source| ZoneError::Io {
            file: file.clone(),
            source,
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let manifest = Manifest::parse(&text, &file, dir)?;
        // Its zone files are inputs too: nothing may be written over them.
        let files: std::collections::BTreeSet<&Path> = manifest
            .entries
            .iter()
            .flat_map(|e| &e.zones)
            .map(|z| z.file.as_path())
            .collect();
        for file in files {
            ldplayer_output::protect_input(file);
        }
        Ok(manifest)
    }

    /// Parses manifest text; `file` names it in errors, relative zone paths are joined to `dir`.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Manifest, ZoneError> {
        let mut entries: Vec<ManifestEntry> = Vec::new();
        let mut index: FxHashMap<IpAddr, usize> = FxHashMap::default();
        // `FILE@APEX` only under the tag that says so: an older manifest's file names stay.
        let bundles = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| l.trim_end() == MANIFEST_TAG_BUNDLES);
        // Each file is joined to `dir` once, however many zones name it.
        let mut joined: FxHashMap<&str, PathBuf> = FxHashMap::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("");
            let mut fields = line.split_whitespace();
            let Some(addr) = fields.next() else {
                continue;
            };
            let address: IpAddr = addr
                .parse()
                .map_err(|_| syntax(file, n + 1, format!("not an IP address: {addr:?}")))?;
            let address = canonical(address);
            let mut zones = Vec::new();
            for f in fields {
                let (name, apex) = match f.rsplit_once('@').filter(|_| bundles) {
                    Some((name, apex)) => {
                        if name.is_empty() || !apex.ends_with('.') {
                            return Err(syntax(
                                file,
                                n + 1,
                                format!(
                                    "{f:?}: a zone of a bundle is FILE@APEX, the apex with its \
                                     final dot"
                                ),
                            ));
                        }
                        (name, Some(apex.to_string()))
                    }
                    None => (f, None),
                };
                let path = joined.entry(name).or_insert_with(|| dir.join(name)).clone();
                zones.push(ZoneSource { file: path, apex });
            }
            if zones.is_empty() {
                return Err(syntax(
                    file,
                    n + 1,
                    format!("{address} serves no zone file"),
                ));
            }
            match index.get(&address) {
                Some(&i) => entries[i].zones.extend(zones),
                None => {
                    index.insert(address, entries.len());
                    entries.push(ManifestEntry { address, zones });
                }
            }
        }
        if entries.is_empty() {
            return Err(syntax(file, 0, "no nameserver address".into()));
        }
        Ok(Manifest { entries })
    }

    /// Writes the manifest; zone paths under `dir` are written relative to it. The first line
    /// is [`MANIFEST_TAG_BUNDLES`] when a zone is in a bundle, else [`MANIFEST_TAG`] (a
    /// manifest older readers read).
    pub fn write(&self, mut out: impl Write, dir: &Path) -> io::Result<()> {
        let zones = self.entries.iter().flat_map(|e| &e.zones);
        if zones.clone().any(|z| z.apex.is_some()) {
            writeln!(out, "{MANIFEST_TAG_BUNDLES}")?;
            writeln!(
                out,
                "# nameserver address, then the zones it serves: FILE, or FILE@APEX in a bundle"
            )?;
        } else {
            writeln!(out, "{MANIFEST_TAG}")?;
            writeln!(out, "# nameserver address, then the zone files it serves")?;
        }
        for e in &self.entries {
            write!(out, "{}", e.address)?;
            for z in &e.zones {
                write!(
                    out,
                    " {}",
                    z.file.strip_prefix(dir).unwrap_or(&z.file).display()
                )?;
                if let Some(apex) = &z.apex {
                    write!(out, "@{apex}")?;
                }
            }
            writeln!(out)?;
        }
        Ok(())
    }

    /// Loads every zone once (a zone named under many addresses is shared; a bundle is read
    /// once) and builds the views; errors name the file and line.
    pub fn load(&self) -> Result<Views, ZoneError> {
        let mut loaded: FxHashMap<&ZoneSource, Arc<Zone>> = FxHashMap::default();
        let mut bundles: BTreeMap<&Path, Bundle> = BTreeMap::new();
        let mut views = FxHashMap::default();
        for e in &self.entries {
            let mut set = ZoneSet::new();
            for source in &e.zones {
                let zone = match loaded.get(source) {
                    Some(z) => z.clone(),
                    None => {
                        let z = Arc::new(match &source.apex {
                            None => Zone::from_file(&source.file, None)?,
                            Some(apex) => {
                                let bundle = match bundles.entry(&source.file) {
                                    std::collections::btree_map::Entry::Occupied(b) => b.into_mut(),
                                    std::collections::btree_map::Entry::Vacant(v) => {
                                        v.insert(Bundle::from_file(&source.file)?)
                                    }
                                };
                                bundle.zone(apex)?
                            }
                        });
                        loaded.insert(source, z.clone());
                        z
                    }
                };
                set.insert_distinct(zone)?;
            }
            views.insert(e.address, Arc::new(set));
        }
        Ok(Views {
            by_address: views,
            everywhere: None,
        })
    }
}

/// IPv4-mapped IPv6 addresses (from dual-stack sockets) as the IPv4 address they carry.
pub fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Which zones answer a query, by the address it was sent to: the same set for every address
/// (plain mode), or one set per nameserver address (split horizon), where a query to any other
/// address finds no zones and is refused.
#[derive(Debug, Clone)]
pub struct Views {
    by_address: FxHashMap<IpAddr, Arc<ZoneSet>>,
    everywhere: Option<Arc<ZoneSet>>,
}

impl Views {
    /// Every destination answered from `zones`.
    pub fn plain(zones: Arc<ZoneSet>) -> Views {
        Views {
            by_address: FxHashMap::default(),
            everywhere: Some(zones),
        }
    }

    /// One zone set per nameserver address.
    pub fn by_address(views: impl IntoIterator<Item = (IpAddr, Arc<ZoneSet>)>) -> Views {
        Views {
            by_address: views.into_iter().map(|(a, z)| (canonical(a), z)).collect(),
            everywhere: None,
        }
    }

    /// True when answers depend on the destination address.
    pub fn is_split(&self) -> bool {
        self.everywhere.is_none()
    }

    /// The zones that answer queries sent to `destination` (unknown when the socket could not
    /// tell); `None` means the query is to be refused.
    pub fn for_destination(&self, destination: Option<IpAddr>) -> Option<&ZoneSet> {
        if let Some(all) = &self.everywhere {
            return Some(all);
        }
        let d = canonical(destination?);
        self.by_address.get(&d).map(|z| &**z)
    }

    /// The nameserver addresses of a split view, sorted.
    pub fn addresses(&self) -> Vec<IpAddr> {
        let mut v: Vec<IpAddr> = self.by_address.keys().copied().collect();
        v.sort();
        v
    }

    /// Distinct zones over all views (shared zones counted once).
    pub fn zones(&self) -> Vec<Arc<Zone>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        let sets = self.everywhere.iter().chain(self.by_address.values());
        for set in sets {
            for z in set.zones() {
                if seen.insert(Arc::as_ptr(z)) {
                    out.push(z.clone());
                }
            }
        }
        out
    }
}

impl From<Arc<ZoneSet>> for Views {
    fn from(zones: Arc<ZoneSet>) -> Views {
        Views::plain(zones)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_merge_per_address_and_paths_are_relative_to_the_manifest() {
        let m = Manifest::parse(
            "#ldplayer-manifest/1\n198.41.0.4 root.zone # a\n\n::ffff:192.5.6.30 com.zone\n192.5.6.30 net.zone\n2001:db8::1 /abs/x.zone\n",
            "m",
            Path::new("/d"),
        )
        .unwrap();
        assert_eq!(m.entries.len(), 3);
        assert_eq!(m.entries[0].zones, vec![ZoneSource::file("/d/root.zone")]);
        assert_eq!(
            m.entries[1].address,
            "192.5.6.30".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            m.entries[1].zones,
            vec![
                ZoneSource::file("/d/com.zone"),
                ZoneSource::file("/d/net.zone")
            ]
        );
        assert_eq!(m.entries[2].zones, vec![ZoneSource::file("/abs/x.zone")]);
        let mut out = Vec::new();
        m.write(&mut out, Path::new("/d")).unwrap();
        let again = Manifest::parse(std::str::from_utf8(&out).unwrap(), "m", Path::new("/d"));
        assert_eq!(again.unwrap(), m);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Manifest::parse(
            "198.41.0.4 a.zone\nnot-an-ip b.zone\n",
            "m.txt",
            Path::new(""),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("m.txt:2:"), "{e}");
        let e = Manifest::parse("198.41.0.4\n", "m.txt", Path::new(""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.txt:1:") && e.contains("no zone file"), "{e}");
        assert!(Manifest::parse("# nothing\n", "m", Path::new("")).is_err());
    }

    #[test]
    fn one_file_per_zone_at_an_address() {
        let dir = tempfile::tempdir().unwrap();
        let zone = "$ORIGIN example.\n@ 60 SOA ns h 1 2 3 4 5\n@ 60 NS ns\n";
        std::fs::write(dir.path().join("a.zone"), zone).unwrap();
        std::fs::write(dir.path().join("b.zone"), zone).unwrap();
        // Another version of the zone at another address: split horizon.
        let m = Manifest::parse(
            "192.0.2.1 a.zone\n192.0.2.2 b.zone\n192.0.2.3 a.zone a.zone\n",
            "m",
            dir.path(),
        )
        .unwrap();
        assert_eq!(m.load().unwrap().addresses().len(), 3);
        let m = Manifest::parse("192.0.2.1 a.zone b.zone\n", "m", dir.path()).unwrap();
        let e = m.load().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: zone example. is also loaded from {}: one file per zone",
                dir.path().join("b.zone").display(),
                dir.path().join("a.zone").display()
            )
        );
    }

    #[test]
    fn zones_of_bundles_under_the_second_tag_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("level1.zones"),
            "$ORIGIN a.\na. 60 IN SOA ns.a. h. 1 2 3 4 5\na. 60 IN NS ns.a.\n\
             $ORIGIN b.\nb. 60 IN SOA ns.b. h. 1 2 3 4 5\nb. 60 IN NS ns.b.\n",
        )
        .unwrap();
        let text = "#ldplayer-manifest/2\n192.0.2.1 level1.zones@a. level1.zones@b.\n\
                    192.0.2.2 level1.zones@b.\n";
        let m = Manifest::parse(text, "m", dir.path()).unwrap();
        assert_eq!(
            m.entries[0].zones[1],
            ZoneSource::bundled(dir.path().join("level1.zones"), "b.")
        );
        let views = m.load().unwrap();
        assert_eq!(
            views.zones().len(),
            2,
            "b. is loaded once for both addresses"
        );
        let mut out = Vec::new();
        m.write(&mut out, dir.path()).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("#ldplayer-manifest/2\n"), "{out}");
        assert!(
            out.contains("\n192.0.2.1 level1.zones@a. level1.zones@b.\n"),
            "{out}"
        );
        assert_eq!(Manifest::parse(&out, "m", dir.path()).unwrap(), m);
        // A zone the bundle does not hold; an apex without its final dot.
        let m = Manifest::parse(
            "#ldplayer-manifest/2\n192.0.2.1 level1.zones@c.\n",
            "m",
            dir.path(),
        );
        let e = m.unwrap().load().unwrap_err().to_string();
        assert!(e.ends_with("level1.zones: holds no zone c."), "{e}");
        let e = Manifest::parse("#ldplayer-manifest/2\n\n192.0.2.1 x@a\n", "m", dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m:3: \"x@a\""), "{e}");
        // Without the tag (an older manifest), `@` is part of a file name.
        let m = Manifest::parse("192.0.2.1 user@host.zone\n", "m", Path::new("/d")).unwrap();
        assert_eq!(
            m.entries[0].zones,
            vec![ZoneSource::file("/d/user@host.zone")]
        );
        let mut out = Vec::new();
        m.write(&mut out, Path::new("/d")).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("#ldplayer-manifest/1\n"));
    }

    #[test]
    fn views_pick_zones_by_destination() {
        let root = Arc::new(
            Zone::from_text(
                ". 3600 IN SOA a. b. 1 2 3 4 5\n. 3600 IN NS a.root-servers.net.\n",
                "root",
                None,
            )
            .unwrap(),
        );
        let set: Arc<ZoneSet> = Arc::new(std::iter::once(root).collect());
        let a: IpAddr = "198.41.0.4".parse().unwrap();
        let v = Views::by_address([(a, set.clone()), ("::ffff:1.2.3.4".parse().unwrap(), set)]);
        assert!(v.is_split());
        assert!(v.for_destination(Some(a)).is_some());
        assert!(v
            .for_destination(Some("::ffff:198.41.0.4".parse().unwrap()))
            .is_some());
        assert!(v
            .for_destination(Some("1.2.3.4".parse().unwrap()))
            .is_some());
        assert!(v
            .for_destination(Some("198.41.0.5".parse().unwrap()))
            .is_none());
        assert!(v.for_destination(None).is_none());
        assert_eq!(v.zones().len(), 1);
    }
}
