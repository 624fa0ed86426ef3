//! The configuration of Knot DNS 3.2 (`knotd -c FILE`, foreground): run directory, pid file,
//! control socket and databases in one directory; zone files loaded whole and never written
//! back, no journal, semantic checks off (servers serve zones as they are given).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::{write, ConfError, ZoneFile};

/// What a knotd configuration says; [`KnotConfig::write`] writes it.
#[derive(Debug, Clone)]
pub struct KnotConfig<'a> {
    /// The directory of every per-run file (`rundir`, pid file, control socket, `db/`).
    pub dir: &'a Path,
    /// The addresses it listens on, over UDP and TCP.
    pub listen: &'a [IpAddr],
    /// The port it listens on.
    pub port: u16,
    /// `tcp-idle-timeout`, in whole seconds (Knot sweeps idle connections periodically, so a
    /// connection may outlive it by up to about two seconds).
    pub tcp_idle_seconds: u64,
    /// `tcp-max-clients` for the whole server; `None` leaves Knot's own default.
    pub tcp_max_clients: Option<usize>,
    /// `udp-workers` and `tcp-workers`; `None` leaves Knot's own default (one per core).
    pub workers: Option<usize>,
    /// Raw lines added at the end of the `server:` section, each ending in a newline.
    pub extra: &'a str,
    /// The zones it serves.
    pub zones: &'a [ZoneFile<'a>],
}

impl KnotConfig<'_> {
    /// The configuration text.
    pub fn text(&self) -> String {
        let d = self.dir.display();
        let listen: Vec<String> = self
            .listen
            .iter()
            .map(|ip| format!("\"{ip}@{}\"", self.port))
            .collect();
        let mut conf = format!(
            "server:\n    rundir: \"{d}\"\n    pidfile: \"{d}/knot.pid\"\n    listen: [ {} ]\n\
             \x20   tcp-idle-timeout: {}s\n",
            listen.join(", "),
            self.tcp_idle_seconds,
        );
        if let Some(n) = self.tcp_max_clients {
            let _ = writeln!(conf, "    tcp-max-clients: {n}");
        }
        conf.push_str("    background-workers: 1\n");
        if let Some(n) = self.workers {
            let _ = write!(conf, "    udp-workers: {n}\n    tcp-workers: {n}\n");
        }
        conf.push_str(self.extra);
        let _ = write!(
            conf,
            "control:\n    listen: \"{d}/knot.sock\"\n\
             database:\n    storage: \"{d}/db\"\n\
             log:\n  - target: stderr\n    any: info\n\
             template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n\
             \x20   zonefile-load: whole\n    journal-content: none\n    semantic-checks: off\n\
             zone:\n"
        );
        for z in self.zones {
            let _ = write!(
                conf,
                "  - domain: \"{}\"\n    file: \"{}\"\n",
                z.origin,
                z.file.display()
            );
        }
        conf
    }

    /// Makes the database directory and writes [`text`](Self::text) to `knot.conf` in
    /// [`dir`](Self::dir); returns the file's path.
    pub fn write(&self) -> Result<PathBuf, ConfError> {
        let db = self.dir.join("db");
        std::fs::create_dir_all(&db).map_err(|e| ConfError::io("cannot create", &db, e))?;
        let path = self.dir.join("knot.conf");
        write(&path, &self.text())?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_address_zone_and_limit_is_in_the_text() {
        let zones = [
            ZoneFile {
                origin: "example.",
                file: Path::new("/z/example.zone"),
            },
            ZoneFile {
                origin: ".",
                file: Path::new("/z/root.zone"),
            },
        ];
        let listen = ["127.0.0.1".parse().expect("ip"), "::1".parse().expect("ip")];
        let config = KnotConfig {
            dir: Path::new("/run/k"),
            listen: &listen,
            port: 5300,
            tcp_idle_seconds: 7,
            tcp_max_clients: Some(99),
            workers: Some(3),
            extra: "    edns-client-subnet: on\n",
            zones: &zones,
        };
        let text = config.text();
        for line in [
            "listen: [ \"127.0.0.1@5300\", \"::1@5300\" ]",
            "tcp-idle-timeout: 7s",
            "tcp-max-clients: 99",
            "udp-workers: 3",
            "tcp-workers: 3",
            "    edns-client-subnet: on\ncontrol:",
            "storage: \"/run/k/db\"",
            "- domain: \"example.\"\n    file: \"/z/example.zone\"",
            "- domain: \".\"\n    file: \"/z/root.zone\"",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
    }

    #[test]
    fn unset_limits_are_left_to_knot() {
        let config = KnotConfig {
            dir: Path::new("/run/k"),
            listen: &["127.0.0.1".parse().expect("ip")],
            port: 53,
            tcp_idle_seconds: 5,
            tcp_max_clients: None,
            workers: None,
            extra: "",
            zones: &[],
        };
        let text = config.text();
        assert!(!text.contains("tcp-max-clients"), "{text}");
        assert!(!text.contains("udp-workers"), "{text}");
        assert!(!text.contains("tcp-workers"), "{text}");
        assert!(text.contains("background-workers: 1"), "{text}");
    }
}
