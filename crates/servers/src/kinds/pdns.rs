//! PowerDNS Recursor 4.8 as a resolver of the emulated hierarchy: `recursor.conf` in the work
//! directory (its `--config-dir`, also the socket directory), foreground, no pid file, no
//! syslog, root hints from the file, DNSSEC off unless asked to validate (then `validate`, the
//! emulated root's trust anchor as DS records in a Lua configuration, and libfaketime for
//! another time), queries from any address, private and loopback nameserver addresses allowed
//! (`dont-query` empty), no per-client TCP limit.
//!
//! * resolver options: `aggressive-nsec-cache-size` (0 turns aggressive NSEC off),
//!   `qname-minimization`.
//!
//! * idle timeout: `client-tcp-timeout` (whole seconds). The recursor looks for expired
//!   connections only every so many turns of its event loop, which turns slowly when idle: with
//!   2 s, an idle server closed an idle connection after 24 s (a busy one checks more often;
//!   not measured here).
//! * connections: `max-tcp-clients`.
//! * threads: `threads`.
//! * TLS: PowerDNS Recursor does not serve DNS over TLS.

use std::fmt::Write as _;

use super::{args, show, write_config, Launch};
use crate::options::yes_no;
use crate::setup::Prepared;
use crate::validation::{faketime_spec, pdns_trust_anchors};
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let hints = p.required_root_hints()?;
    let listen: Vec<String> = setup.listen.iter().map(ToString::to_string).collect();
    let mut conf = format!(
        "local-address={}\nlocal-port={}\nhint-file={}\n\
         daemon=no\nwrite-pid=no\nsocket-dir={d}\nsetuid=\nsetgid=\ndisable-syslog=yes\n\
         allow-from=0.0.0.0/0, ::/0\ndont-query=\nquery-local-address=0.0.0.0, ::\n\
         max-tcp-clients={}\nmax-tcp-per-client=0\nclient-tcp-timeout={}\n",
        listen.join(", "),
        setup.port,
        show(hints),
        p.tcp_clients,
        p.idle_seconds(),
    );
    if let Some(n) = setup.threads {
        let _ = writeln!(conf, "threads={n}");
    }
    let mut faketime = None;
    match (&setup.validation, &p.trust_anchor) {
        (Some(v), Some(anchor)) => {
            // Its trust anchors are DS records, set in its Lua configuration.
            let mut lua = pdns_trust_anchors(anchor).map_err(|e| p.config_error(e.to_string()))?;
            for domain in &v.insecure {
                let _ = writeln!(lua, "addNTA('{domain}')");
            }
            let lua_file = write_config(p, "recursor.lua", &lua)?;
            let _ = writeln!(conf, "dnssec=validate\nlua-config-file={}", show(&lua_file));
            if let Some(t) = v.time {
                faketime = Some(faketime_spec(t).map_err(|e| p.config_error(e.to_string()))?);
            }
        }
        _ => conf.push_str("dnssec=off\n"),
    }
    let options = &setup.resolver;
    if let Some(on) = options.aggressive_nsec {
        // Its default size (100,000 entries) when on.
        let _ = writeln!(
            conf,
            "aggressive-nsec-cache-size={}",
            if on { 100_000 } else { 0 }
        );
    }
    if let Some(on) = options.qname_minimisation {
        let _ = writeln!(conf, "qname-minimization={}", yes_no(on));
    }
    conf.push_str(&p.extra());
    let config = write_config(p, "recursor.conf", &conf)?;
    Ok(Launch {
        args: args([&format!("--config-dir={d}")]),
        check: None,
        config,
        faketime,
    })
}
