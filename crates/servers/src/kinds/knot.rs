//! Knot DNS 3.2: `knotd` (foreground unless `-d`), with the configuration that
//! [`ldplayer_serverconf::KnotConfig`] writes: run directory, databases (journal, timers, KASP)
//! and control socket in the work directory; zone files loaded whole and never written back,
//! no journal, semantic checks off (experiments serve zones as they are).
//!
//! * idle timeout: `tcp-idle-timeout` (whole seconds). Knot sweeps idle connections
//!   periodically, so a connection may outlive it by up to about two seconds.
//! * connections: `tcp-max-clients` (for the whole server).
//! * threads: `udp-workers` and `tcp-workers`, one background worker.
//! * TLS: not in Knot DNS 3.2 (DNS over QUIC is; DNS over TLS came in 3.4).

use ldplayer_serverconf::{KnotConfig, ZoneFile};

use super::{args, Check, Launch};
use crate::setup::Prepared;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let zones: Vec<ZoneFile> = p
        .zones
        .iter()
        .map(|z| ZoneFile {
            origin: &z.origin,
            file: &z.path,
        })
        .collect();
    let config = KnotConfig {
        dir: p.dir(),
        listen: &setup.listen,
        port: setup.port,
        tcp_idle_seconds: p.idle_seconds(),
        tcp_max_clients: Some(p.tcp_clients),
        workers: setup.threads,
        extra: &p.extra(),
        zones: &zones,
    }
    .write()?;
    Ok(Launch {
        args: args([&"-c", &config]),
        check: Some(Check {
            program: "knotc",
            args: args([&"-c", &config, &"conf-check"]),
        }),
        config,
        faketime: None,
    })
}
