//! Knot Resolver 5.6 as a resolver of the emulated hierarchy: `kresd -n` (no interactive
//! console) with a Lua configuration and the work directory as its run directory (cache,
//! control socket); root hints loaded into the `hints` module, the root trust anchor removed
//! and the modules that would reach for the real root (priming, trust-anchor signalling, time
//! skew) unloaded. kresd answers any address and has no rate limit unless told to.
//!
//! * idle timeout: `net.tcp_in_idle` (milliseconds).
//! * connections: no limit of its own beyond the file descriptor limit, which is raised.
//! * threads: one process is single-threaded; Knot Resolver scales by running several
//!   processes (systemd instances), which this crate does not do: more than one thread is
//!   refused.
//! * TLS: `net.tls` with the certificate and key, `net.listen` of kind `tls`.
//! * DoH: the same certificate, `net.listen` of kind `doh2` (`/dns-query`).

use std::fmt::Write as _;

use super::{args, show, write_config, Launch};
use crate::hints::hints_to_lua;
use crate::setup::Prepared;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let hints = p
        .root_hints
        .as_deref()
        .ok_or_else(|| p.config_error("no root hints"))?;
    let hints = hints_to_lua(hints)?;
    if hints.is_empty() {
        return Err(p.config_error("the root hints give no address"));
    }
    let addrs: Vec<String> = setup.listen.iter().map(|ip| format!("'{ip}'")).collect();
    let addrs = addrs.join(", ");
    let mut conf = format!(
        "-- written by ldplayer-servers\n\
         net.listen({{ {addrs} }}, {port}, {{ kind = 'dns' }})\n",
        port = setup.port
    );
    if let Some((_, files)) = p.tls.as_ref().or(p.https.as_ref()) {
        let _ = writeln!(
            conf,
            "net.tls('{}', '{}')",
            show(&files.cert),
            show(&files.key)
        );
    }
    if let Some((port, _)) = &p.tls {
        let _ = writeln!(
            conf,
            "net.listen({{ {addrs} }}, {port}, {{ kind = 'tls' }})"
        );
    }
    // `doh2` serves RFC 8484 at `/dns-query` over HTTP/2.
    if let Some((port, _)) = &p.https {
        let _ = writeln!(
            conf,
            "net.listen({{ {addrs} }}, {port}, {{ kind = 'doh2' }})"
        );
    }
    let _ = write!(
        conf,
        "net.tcp_in_idle({idle})\n\
         modules.unload('ta_signal_query')\nmodules.unload('priming')\n\
         modules.unload('detect_time_skew')\ntrust_anchors.remove('.')\n\
         modules.load('hints > iterate')\nhints.root({{ {hints} }})\n\
         cache.size = 100 * MB\n",
        idle = p.idle_millis(),
    );
    conf.push_str(&p.extra());
    let config = write_config(p, "kresd.conf", &conf)?;
    Ok(Launch {
        args: args([&"-n", &"-c", &config, &p.dir()]),
        check: None,
        config,
    })
}
