//! The server side's nameservers: ldplayer's meta-server for every address at once, or, as
//! ground truth, one real nsd per nameserver address.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ldplayer_server::{RunningServer, Server, ServerConfig, ServerStats};
use ldplayer_system::CommandError;
use ldplayer_zone::{Bundle, Manifest, Views, Zone, ZoneError, ZoneSource};

use crate::LabError;

/// Nameservers running on the server side; stopped on drop.
#[derive(Debug)]
pub enum Nameservers {
    /// `ldplayer serve --manifest` in this process, on `0.0.0.0:53` and `[::]:53`.
    Meta(RunningServer),
    /// One nsd per nameserver address.
    Nsd(Vec<Child>),
}

impl Nameservers {
    /// Starts the meta-server with `views` on port 53 of every address.
    pub fn meta(views: Views) -> Result<Nameservers, LabError> {
        let config = ServerConfig::new(vec![
            SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 53),
            SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 53),
        ]);
        let server = Server::start(config, views).map_err(|e| LabError::Server(e.to_string()))?;
        Ok(Nameservers::Meta(server))
    }

    /// Starts one nsd per address of `manifest`, each serving that address's zones (a zone of
    /// a bundle copied out into a file of its own), with its configuration and log in `dir`; waits until each accepts TCP (up to `wait`).
    pub fn nsd(manifest: &Manifest, dir: &Path, wait: Duration) -> Result<Nameservers, LabError> {
        let mut children = Vec::new();
        let mut bundles = BTreeMap::new();
        for (i, e) in manifest.entries.iter().enumerate() {
            let d = dir.join(format!("nsd-{i}"));
            std::fs::create_dir_all(&d).map_err(LabError::Io)?;
            let dd = d.display();
            let mut conf = format!(
                "server:\n    ip-address: {}@53\n    ip-freebind: yes\n    server-count: 1\n\
                 \x20   username: \"\"\n    chroot: \"\"\n    zonesdir: \"{dd}\"\n    database: \"\"\n\
                 \x20   pidfile: \"{dd}/nsd.pid\"\n    xfrdfile: \"{dd}/xfrd.state\"\n\
                 \x20   zonelistfile: \"{dd}/zone.list\"\n    xfrdir: \"{dd}\"\n\
                 \x20   logfile: \"{dd}/nsd.log\"\n    verbosity: 1\n    refuse-any: no\n\
                 remote-control:\n    control-enable: no\n",
                e.address
            );
            for (n, z) in e.zones.iter().enumerate() {
                let (file, origin) = nsd_zone_file(z, &d, n + 1, &mut bundles)?;
                let _ = write!(
                    conf,
                    "zone:\n    name: \"{origin}\"\n    zonefile: \"{}\"\n",
                    file.display()
                );
            }
            let path = d.join("nsd.conf");
            ldplayer_output::write(&path, conf).map_err(|e| LabError::Io(e.into()))?;
            let child = Command::new("nsd")
                .arg("-d")
                .arg("-c")
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|err| CommandError::spawn("nsd (apt-get install nsd)", err))?;
            children.push(child);
        }
        let servers = Nameservers::Nsd(children);
        for e in &manifest.entries {
            wait_tcp(SocketAddr::new(e.address, 53), wait)?;
        }
        Ok(servers)
    }

    /// The meta-server's counters (none for nsd).
    pub fn stats(&self) -> Option<ServerStats> {
        match self {
            Nameservers::Meta(s) => Some(s.stats()),
            Nameservers::Nsd(_) => None,
        }
    }
}

impl Drop for Nameservers {
    fn drop(&mut self) {
        if let Nameservers::Nsd(children) = self {
            for c in children.iter_mut() {
                let _ = ldplayer_system::process::signal(
                    c.id(),
                    ldplayer_system::process::Signal::TERM,
                );
            }
            for c in children.iter_mut() {
                let _ = c.wait();
            }
        }
    }
}

/// The zone file nsd reads for `source`, absolute, and the zone's origin: the file itself, or
/// for a zone of a bundle (read once into `bundles`) a copy of its text written into `dir` as
/// `bundled-N.zone`: nsd reads one zone per file. The zone is loaded first, so that a damaged
/// one is refused with its place in the file or bundle.
fn nsd_zone_file(
    source: &ZoneSource,
    dir: &Path,
    n: usize,
    bundles: &mut BTreeMap<PathBuf, Bundle>,
) -> Result<(PathBuf, String), LabError> {
    let input = |err: ZoneError| LabError::Input(err.to_string());
    let Some(apex) = &source.apex else {
        let zone = Zone::from_file(&source.file, None).map_err(input)?;
        let file = std::fs::canonicalize(&source.file).map_err(LabError::Io)?;
        return Ok((file, zone.origin_text()));
    };
    let bundle = match bundles.entry(source.file.clone()) {
        Entry::Occupied(b) => b.into_mut(),
        Entry::Vacant(v) => v.insert(Bundle::from_file(&source.file).map_err(input)?),
    };
    let zone = bundle.zone(apex).map_err(input)?;
    let (text, _) = bundle.section(apex).ok_or_else(|| {
        LabError::Input(format!("{}: holds no zone {apex}", source.file.display()))
    })?;
    let copy = dir.join(format!("bundled-{n}.zone"));
    ldplayer_output::write(&copy, text).map_err(|e| LabError::Io(e.into()))?;
    let copy = std::fs::canonicalize(&copy).map_err(LabError::Io)?;
    Ok((copy, zone.origin_text()))
}

fn wait_tcp(addr: SocketAddr, wait: Duration) -> Result<(), LabError> {
    let start = Instant::now();
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if start.elapsed() > wait {
            return Err(LabError::Timeout(format!("nsd to listen on {addr}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

pub use ldplayer_zone::hints::root_hints;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_of_a_bundle_is_copied_out_for_nsd() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("level1.zones");
        let text = "$ORIGIN a.\na. 60 IN SOA ns.a. h. 1 2 3 4 5\na. 60 IN NS ns.a.\n\
                    $ORIGIN b.\nb. 60 IN SOA ns.b. h. 1 2 3 4 5\nb. 60 IN NS ns.b.\n";
        std::fs::write(&bundle, text).unwrap();
        let mut bundles = BTreeMap::new();
        let (file, origin) = nsd_zone_file(
            &ZoneSource::bundled(&bundle, "b."),
            dir.path(),
            2,
            &mut bundles,
        )
        .unwrap();
        assert_eq!(origin, "b.");
        assert_eq!(
            file,
            dir.path().canonicalize().unwrap().join("bundled-2.zone")
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "$ORIGIN b.\nb. 60 IN SOA ns.b. h. 1 2 3 4 5\nb. 60 IN NS ns.b.\n"
        );
        // A zone file is served as it is.
        let (same, origin) =
            nsd_zone_file(&ZoneSource::file(&file), dir.path(), 3, &mut bundles).unwrap();
        assert_eq!((same, origin.as_str()), (file, "b."));
        // A damaged zone is placed in its bundle.
        std::fs::write(&bundle, text.replace("ns.b. h. 1", "ns.b. h. x")).unwrap();
        let e = nsd_zone_file(
            &ZoneSource::bundled(&bundle, "b."),
            dir.path(),
            2,
            &mut BTreeMap::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("level1.zones:5:"), "{e}");
    }
}
