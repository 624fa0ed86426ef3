//! NSD 4.6: `nsd -d` (foreground) as root, no database, no zone file write-back, the pid file,
//! xfrd state and zone list in the work directory, no control channel.
//!
//! * idle timeout: `tcp-timeout` (whole seconds; TLS connections too). NSD halves it for all
//!   connections once more than half of `tcp-count` are in use.
//! * connections: `tcp-count` is per server process, so `max_tcp_clients` is shared out.
//! * threads: `server-count` processes (with `reuseport` when more than one).
//! * TLS: an `ip-address` on `tls-port` with `tls-service-key` and `tls-service-pem`.
//!
//! NSD refuses a zone file with a second SOA record (the dumps of zone transfers, such as the
//! root zone files, end with one); such a file is served from a copy without the repeat.

use std::fmt::Write as _;

use super::{args, show, write_config, Check, Launch};
use crate::setup::{without_repeated_soa, Prepared};
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let workers = setup.threads.unwrap_or(1).max(1);
    let mut conf = String::from("server:\n");
    for ip in &setup.listen {
        let _ = writeln!(conf, "    ip-address: {ip}@{}", setup.port);
    }
    if let Some((port, files)) = &p.tls {
        for ip in &setup.listen {
            let _ = writeln!(conf, "    ip-address: {ip}@{port}");
        }
        let _ = writeln!(
            conf,
            "    tls-port: {port}\n    tls-service-key: \"{}\"\n    tls-service-pem: \"{}\"",
            show(&files.key),
            show(&files.cert)
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
        tcp_count = p.tcp_clients_per(workers),
        idle = p.idle_seconds(),
        log = show(&p.log),
    );
    conf.push_str(&p.extra());
    conf.push_str("remote-control:\n    control-enable: no\n");
    for (i, z) in p.zones.iter().enumerate() {
        // NSD refuses a zone file that repeats its SOA record, as a dump of a zone transfer
        // does: it serves a copy without the repeats.
        let file = if z.repeated_soa_lines.is_empty() {
            z.path.clone()
        } else {
            let copy = p.dir().join(format!("zone-{i}.zone"));
            without_repeated_soa(z, &copy)?;
            copy
        };
        let _ = write!(
            conf,
            "zone:\n    name: \"{}\"\n    zonefile: \"{}\"\n",
            z.origin,
            show(&file)
        );
    }
    let config = write_config(p, "nsd.conf", &conf)?;
    Ok(Launch {
        args: args([&"-d", &"-c", &config]),
        check: Some(Check {
            program: "nsd-checkconf",
            args: args([&config]),
        }),
        config,
        faketime: None,
    })
}
