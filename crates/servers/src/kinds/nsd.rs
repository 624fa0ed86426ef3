//! NSD 4.6: `nsd -d` (foreground) with the configuration that
//! [`ldplayer_serverconf::NsdConfig`] writes: as root, no database, no zone file write-back, the pid file,
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

use ldplayer_serverconf::{NsdConfig, NsdTls, ZoneFile};

use super::{args, Check, Launch};
use crate::setup::{without_repeated_soa, Prepared};
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let workers = setup.threads.unwrap_or(1).max(1);
    // NSD refuses a zone file that repeats its SOA record, as a dump of a zone transfer does:
    // it serves a copy without the repeats.
    let mut files = Vec::with_capacity(p.zones.len());
    for (i, z) in p.zones.iter().enumerate() {
        if z.repeated_soa_lines.is_empty() {
            files.push(z.path.clone());
        } else {
            let copy = p.dir().join(format!("zone-{i}.zone"));
            without_repeated_soa(z, &copy)?;
            files.push(copy);
        }
    }
    let zones: Vec<ZoneFile> = p
        .zones
        .iter()
        .zip(&files)
        .map(|(z, file)| ZoneFile {
            origin: &z.origin,
            file,
        })
        .collect();
    let config = NsdConfig {
        dir: p.dir(),
        listen: &setup.listen,
        port: setup.port,
        tls: p.tls.as_ref().map(|(port, files)| NsdTls {
            port: *port,
            key: &files.key,
            cert: &files.cert,
        }),
        workers,
        tcp_count: p.tcp_clients_per(workers),
        tcp_idle_seconds: p.idle_seconds(),
        log: &p.log,
        extra: &p.extra(),
        zones: &zones,
    }
    .write()?;
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
