//! The server side's nameservers: ldplayer's meta-server for every address at once, or, as
//! ground truth, one real nsd per nameserver address.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ldplayer_server::{RunningServer, Server, ServerConfig, ServerStats};
use ldplayer_zone::{Bundle, Manifest, Views};

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
        let mut bundles = std::collections::BTreeMap::new();
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
            let mut copied = 0;
            for z in &e.zones {
                let file = match &z.apex {
                    None => z.file.clone(),
                    // nsd reads one zone per file: a zone of a bundle is copied out.
                    Some(apex) => {
                        let bundle = match bundles.entry(z.file.clone()) {
                            std::collections::btree_map::Entry::Occupied(b) => b.into_mut(),
                            std::collections::btree_map::Entry::Vacant(v) => v.insert(
                                Bundle::from_file(&z.file)
                                    .map_err(|err| LabError::Input(err.to_string()))?,
                            ),
                        };
                        let (text, _) = bundle.section(apex).ok_or_else(|| {
                            LabError::Input(format!("{}: holds no zone {apex}", z.file.display()))
                        })?;
                        copied += 1;
                        let copy = d.join(format!("bundled-{copied}.zone"));
                        ldplayer_output::write(&copy, text).map_err(|e| LabError::Io(e.into()))?;
                        copy
                    }
                };
                let zone = ldplayer_zone::Zone::from_file(&file, None)
                    .map_err(|err| LabError::Input(err.to_string()))?;
                let _ = write!(
                    conf,
                    "zone:\n    name: \"{}\"\n    zonefile: \"{}\"\n",
                    zone.origin_text(),
                    std::fs::canonicalize(&file)
                        .map_err(LabError::Io)?
                        .display()
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
                .map_err(|err| LabError::Spawn("nsd (apt-get install nsd)".into(), err))?;
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
                // SAFETY: kill with a pid we own and SIGTERM has no memory effects.
                unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
            }
            for c in children.iter_mut() {
                let _ = c.wait();
            }
        }
    }
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
