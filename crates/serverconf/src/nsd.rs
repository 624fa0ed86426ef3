//! The configuration of NSD 4.6 (`nsd -d -c FILE`, foreground) as root: no database, no zone
//! file write-back, pid file, xfrd state and zone list in one directory, no control channel.
//! DNS over TLS is an `ip-address` on `tls-port` with `tls-service-key` and `tls-service-pem`.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::{write, ConfError, ZoneFile};

/// DNS over TLS for NSD: the port and the server's key and certificate (PEM).
#[derive(Debug, Clone, Copy)]
pub struct NsdTls<'a> {
    /// The port it answers TLS on, on every listen address.
    pub port: u16,
    /// The private key.
    pub key: &'a Path,
    /// The certificate (chain).
    pub cert: &'a Path,
}

/// What an nsd configuration says; [`NsdConfig::write`] writes it.
#[derive(Debug, Clone)]
pub struct NsdConfig<'a> {
    /// The directory of every per-run file (pid file, xfrd state, zone list).
    pub dir: &'a Path,
    /// The addresses it listens on, over UDP and TCP (and TLS when [`tls`](Self::tls) is set).
    pub listen: &'a [IpAddr],
    /// The port of plain DNS.
    pub port: u16,
    /// DNS over TLS, if wanted.
    pub tls: Option<NsdTls<'a>>,
    /// `server-count`: processes (with `reuseport` when more than one).
    pub workers: usize,
    /// `tcp-count`: TCP connections per process.
    pub tcp_count: usize,
    /// `tcp-timeout`, whole seconds (TLS connections too; NSD halves it for all connections
    /// once more than half of `tcp-count` are in use).
    pub tcp_idle_seconds: u64,
    /// Its log file.
    pub log: &'a Path,
    /// Raw lines added at the end of the `server:` section, each ending in a newline.
    pub extra: &'a str,
    /// The zones it serves (NSD refuses a zone file that repeats its SOA record).
    pub zones: &'a [ZoneFile<'a>],
}

impl NsdConfig<'_> {
    /// The configuration text.
    pub fn text(&self) -> String {
        let d = self.dir.display();
        let workers = self.workers.max(1);
        let mut conf = String::from("server:\n");
        for ip in self.listen {
            let _ = writeln!(conf, "    ip-address: {ip}@{}", self.port);
        }
        if let Some(tls) = &self.tls {
            for ip in self.listen {
                let _ = writeln!(conf, "    ip-address: {ip}@{}", tls.port);
            }
            let _ = writeln!(
                conf,
                "    tls-port: {}\n    tls-service-key: \"{}\"\n    tls-service-pem: \"{}\"",
                tls.port,
                tls.key.display(),
                tls.cert.display()
            );
        }
        let _ = write!(
            conf,
            "    server-count: {workers}\n    reuseport: {reuseport}\n\
             \x20   tcp-count: {tcp_count}\n    tcp-timeout: {idle}\n\
             \x20   username: \"\"\n    chroot: \"\"\n    zonesdir: \"{d}\"\n    database: \"\"\n\
             \x20   zonefiles-write: 0\n    pidfile: \"{d}/nsd.pid\"\n    xfrdfile: \"{d}/xfrd.state\"\n\
             \x20   zonelistfile: \"{d}/zone.list\"\n    xfrdir: \"{d}\"\n\
             \x20   logfile: \"{log}\"\n    verbosity: 1\n",
            reuseport = if workers > 1 { "yes" } else { "no" },
            tcp_count = self.tcp_count,
            idle = self.tcp_idle_seconds,
            log = self.log.display(),
        );
        conf.push_str(self.extra);
        conf.push_str("remote-control:\n    control-enable: no\n");
        for z in self.zones {
            let _ = write!(
                conf,
                "zone:\n    name: \"{}\"\n    zonefile: \"{}\"\n",
                z.origin,
                z.file.display()
            );
        }
        conf
    }

    /// Writes [`text`](Self::text) to `nsd.conf` in [`dir`](Self::dir); returns its path.
    pub fn write(&self) -> Result<PathBuf, ConfError> {
        let path = self.dir.join("nsd.conf");
        write(&path, &self.text())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_tls_addresses_workers_and_zones_are_in_the_text() {
        let zones = [ZoneFile {
            origin: "example.",
            file: Path::new("/z/example.zone"),
        }];
        let listen = ["127.0.0.1".parse().expect("ip")];
        let config = NsdConfig {
            dir: Path::new("/run/n"),
            listen: &listen,
            port: 5300,
            tls: Some(NsdTls {
                port: 8530,
                key: Path::new("/run/n/server.key"),
                cert: Path::new("/run/n/server.pem"),
            }),
            workers: 2,
            tcp_count: 50,
            tcp_idle_seconds: 9,
            log: Path::new("/run/n/nsd.log"),
            extra: "    hide-version: yes\n",
            zones: &zones,
        };
        let text = config.text();
        for line in [
            "ip-address: 127.0.0.1@5300\n",
            "ip-address: 127.0.0.1@8530\n",
            "tls-port: 8530\n",
            "tls-service-key: \"/run/n/server.key\"",
            "tls-service-pem: \"/run/n/server.pem\"",
            "server-count: 2\n    reuseport: yes",
            "tcp-count: 50",
            "tcp-timeout: 9",
            "logfile: \"/run/n/nsd.log\"",
            "    hide-version: yes\nremote-control:",
            "zone:\n    name: \"example.\"\n    zonefile: \"/z/example.zone\"",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
    }
}
