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

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::set::ZoneSet;
use crate::zone::{Zone, ZoneError};

/// The first line `zones build` writes (optional when reading).
pub const MANIFEST_TAG: &str = "#ldplayer-manifest/1";

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
    /// The zone files served from it (as resolved: relative to the manifest's directory).
    pub zones: Vec<PathBuf>,
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
        for zone in manifest.entries.iter().flat_map(|e| &e.zones) {
            ldplayer_output::protect_input(zone);
        }
        Ok(manifest)
    }

    /// Parses manifest text; `file` names it in errors, relative zone paths are joined to `dir`.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Manifest, ZoneError> {
        let mut entries: Vec<ManifestEntry> = Vec::new();
        let mut index: FxHashMap<IpAddr, usize> = FxHashMap::default();
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
            let zones: Vec<PathBuf> = fields.map(|f| dir.join(f)).collect();
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

    /// Writes the manifest; zone paths under `dir` are written relative to it.
    pub fn write(&self, mut out: impl Write, dir: &Path) -> io::Result<()> {
        writeln!(out, "{MANIFEST_TAG}")?;
        writeln!(out, "# nameserver address, then the zone files it serves")?;
        for e in &self.entries {
            write!(out, "{}", e.address)?;
            for z in &e.zones {
                write!(out, " {}", z.strip_prefix(dir).unwrap_or(z).display())?;
            }
            writeln!(out)?;
        }
        Ok(())
    }

    /// Loads every zone file once (a file named under many addresses is shared) and builds the
    /// views; errors name the file and line.
    pub fn load(&self) -> Result<Views, ZoneError> {
        let mut loaded: BTreeMap<&Path, Arc<Zone>> = BTreeMap::new();
        let mut views = FxHashMap::default();
        for e in &self.entries {
            let mut set = ZoneSet::new();
            for path in &e.zones {
                let zone = match loaded.get(path.as_path()) {
                    Some(z) => z.clone(),
                    None => {
                        let z = Arc::new(Zone::from_file(path, None)?);
                        loaded.insert(path, z.clone());
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
        assert_eq!(m.entries[0].zones, vec![PathBuf::from("/d/root.zone")]);
        assert_eq!(
            m.entries[1].address,
            "192.5.6.30".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            m.entries[1].zones,
            vec![PathBuf::from("/d/com.zone"), PathBuf::from("/d/net.zone")]
        );
        assert_eq!(m.entries[2].zones, vec![PathBuf::from("/abs/x.zone")]);
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
