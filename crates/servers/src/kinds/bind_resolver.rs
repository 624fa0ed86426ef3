//! BIND 9.18 as a resolver of the emulated hierarchy (`bind-resolver`): `named -g` (foreground,
//! log to standard error) as root, directory, pid file, session key and managed keys in the
//! work directory, no rndc control channel, recursion from the root hints (a `hint` zone),
//! queries from any address, no rate limits; DNSSEC validation off unless asked (then the
//! emulated root's trust anchor as a `trust-anchors` statement and `validate-except` for the
//! insecure domains; not at another time: BIND has no option for it, and Debian's named does
//! not start under libfaketime, so the setup refuses it).
//!
//! * resolver options: `synth-from-dnssec` (aggressive use of NSEC, RFC 8198),
//!   `qname-minimization` (`relaxed` on, `off` off).
//!
//! * idle timeout, connections, threads, TLS and DoH: as the authoritative kind's.

use std::fmt::Write as _;

use super::bind::{listen, named_launch, tcp_timeouts, tls_block};
use super::{show, Launch};
use crate::setup::Prepared;
use crate::validation::bind_trust_anchors;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let hints = p.required_root_hints()?;
    let mut conf = tls_block(p);
    let (validation, except) = match (&setup.validation, &p.trust_anchor) {
        (Some(v), Some(anchor)) => {
            conf.push_str(&bind_trust_anchors(anchor).map_err(|e| p.config_error(e.to_string()))?);
            let except = if v.insecure.is_empty() {
                String::new()
            } else {
                let list: String = v.insecure.iter().map(|d| format!("\"{d}\"; ")).collect();
                format!("    validate-except {{ {list}}};\n")
            };
            ("yes", except)
        }
        _ => ("no", String::new()),
    };
    let _ = write!(
        conf,
        "options {{\n    directory \"{d}\";\n    pid-file \"{d}/named.pid\";\n\
         \x20   session-keyfile \"{d}/session.key\";\n    managed-keys-directory \"{d}\";\n\
         \x20   recursion yes;\n    allow-query {{ any; }};\n    allow-recursion {{ any; }};\n\
         \x20   dnssec-validation {validation};\n{except}\
         \x20   notify no;\n    automatic-interface-scan no;\n",
    );
    conf.push_str(&tcp_timeouts(p)?);
    let options = &setup.resolver;
    if let Some(on) = options.aggressive_nsec {
        let _ = writeln!(
            conf,
            "    synth-from-dnssec {};",
            if on { "yes" } else { "no" }
        );
    }
    if let Some(on) = options.qname_minimisation {
        let _ = writeln!(
            conf,
            "    qname-minimization {};",
            if on { "relaxed" } else { "off" }
        );
    }
    listen(p, &mut conf);
    conf.push_str(&p.extra());
    let _ = write!(
        conf,
        "}};\ncontrols {{ }};\nzone \".\" {{ type hint; file \"{}\"; }};\n",
        show(hints)
    );
    named_launch(p, &conf)
}
