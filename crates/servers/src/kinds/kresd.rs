//! Knot Resolver 5.6 as a resolver of the emulated hierarchy: `kresd -n` (no interactive
//! console) with a Lua configuration and the work directory as its run directory (cache,
//! control socket); root hints loaded into the `hints` module, the Internet's root trust anchor
//! removed (replaced by the emulated root's when asked to validate) and the modules that would
//! reach for the real root (priming, trust-anchor signalling, time skew) unloaded. kresd
//! answers any address and has no rate limit unless told to.
//!
//! * resolver options: QNAME minimisation off with the `NO_MINIMIZE` flag; aggressive use of
//!   NSEC is always on (Knot Resolver 5 has no switch for it).
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
         modules.unload('detect_time_skew')\ntrust_anchors.remove('.')\n{anchors}\
         modules.load('hints > iterate')\nhints.root({{ {hints} }})\n\
         cache.size = 100 * MB\n",
        idle = p.idle_millis(),
        anchors = anchors(p),
    );
    if setup.resolver.qname_minimisation == Some(false) {
        conf.push_str("policy.add(policy.all(policy.FLAGS('NO_MINIMIZE')))\n");
    }
    conf.push_str(&p.extra());
    let config = write_config(p, "kresd.conf", &conf)?;
    Ok(Launch {
        args: args([&"-n", &"-c", &config, &p.dir()]),
        check: None,
        config,
        faketime: None,
    })
}

/// The emulated root's trust anchor and the insecure domains, when validating; nothing
/// otherwise (without an anchor kresd does not validate).
fn anchors(p: &Prepared) -> String {
    let (Some(v), Some(anchor)) = (&p.setup.validation, &p.trust_anchor) else {
        return String::new();
    };
    let mut text = format!("trust_anchors.add_file('{}', true)\n", show(anchor));
    if !v.insecure.is_empty() {
        let list: Vec<String> = v.insecure.iter().map(|d| format!("'{d}'")).collect();
        let _ = writeln!(
            text,
            "trust_anchors.set_insecure({{ {} }})",
            list.join(", ")
        );
    }
    text
}
