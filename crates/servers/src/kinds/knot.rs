//! Knot DNS 3.2: `knotd` (foreground unless `-d`), run directory, databases (journal, timers,
//! KASP) and control socket in the work directory; zone files loaded whole and never written
//! back, no journal, semantic checks off (experiments serve zones as they are).
//!
//! * idle timeout: `tcp-idle-timeout` (whole seconds). Knot sweeps idle connections
//!   periodically, so a connection may outlive it by up to about two seconds.
//! * connections: `tcp-max-clients` (for the whole server).
//! * threads: `udp-workers` and `tcp-workers`, one background worker.
//! * TLS: not in Knot DNS 3.2 (DNS over QUIC is; DNS over TLS came in 3.4).

use std::fmt::Write as _;

use super::{args, show, write_config, Check, Launch};
use crate::setup::Prepared;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let listen: Vec<String> = setup
        .listen
        .iter()
        .map(|ip| format!("\"{ip}@{}\"", setup.port))
        .collect();
    let mut conf = format!(
        "server:\n    rundir: \"{d}\"\n    pidfile: \"{d}/knot.pid\"\n    listen: [ {} ]\n\
         \x20   tcp-idle-timeout: {}s\n    tcp-max-clients: {}\n    background-workers: 1\n",
        listen.join(", "),
        p.idle_seconds(),
        p.tcp_clients,
    );
    if let Some(n) = setup.threads {
        let _ = write!(conf, "    udp-workers: {n}\n    tcp-workers: {n}\n");
    }
    conf.push_str(&p.extra());
    let _ = write!(
        conf,
        "control:\n    listen: \"{d}/knot.sock\"\n\
         database:\n    storage: \"{d}/db\"\n\
         log:\n  - target: stderr\n    any: info\n\
         template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n\
         \x20   zonefile-load: whole\n    journal-content: none\n    semantic-checks: off\n\
         zone:\n"
    );
    for z in &p.zones {
        let _ = write!(
            conf,
            "  - domain: \"{}\"\n    file: \"{}\"\n",
            z.origin,
            show(&z.path)
        );
    }
    let db = p.dir().join("db");
    std::fs::create_dir_all(&db).map_err(ServerError::io("cannot create", &db))?;
    let config = write_config(p, "knot.conf", &conf)?;
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
