//! Unbound 1.17 as a resolver of the emulated hierarchy: `unbound -d` (foreground) as root, no
//! chroot, pid file in the work directory, log to standard error, the iterator alone unless
//! asked to validate (then the validator with the emulated root's trust anchor, and
//! `val-override-date` for another time), queries from any address, nameservers on loopback
//! allowed, no rate limits, no control channel.
//!
//! * resolver options: `aggressive-nsec`, `qname-minimisation`.
//!
//! * idle timeout: `tcp-idle-timeout` (milliseconds), also advertised with EDNS keepalive.
//!   Unbound shortens it progressively once fewer than half of its TCP buffers are free.
//! * connections: `incoming-num-tcp` is per thread, so `max_tcp_clients` is shared out; each
//!   TCP listener (address, and address for TLS) has that many, set aside at start, file
//!   descriptors included (see `connection_budget`).
//! * threads: `num-threads` with `so-reuseport`.
//! * TLS: an `interface` on `tls-port` with `tls-service-key` and `tls-service-pem`.
//! * DoH: an `interface` on `https-port` (HTTP/2 at `/dns-query`, needs Unbound built with
//!   nghttp2, as Debian's is), the same key and certificate.
//! * zones: each an `auth-zone` answered to clients (`for-downstream`), without falling back
//!   to resolution; with zones alone (no root hints) Unbound answers from them only.

use std::fmt::Write as _;

use super::{args, show, write_config, Check, Launch};
use crate::options::yes_no;
use crate::setup::Prepared;
use crate::validation::unbound_date;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let threads = setup.threads.unwrap_or(1).max(1);
    let hints = match (p.root_hints.as_deref(), p.zones.is_empty()) {
        (Some(h), _) => format!("    root-hints: \"{}\"\n", show(h)),
        (None, false) => String::new(),
        (None, true) => return Err(p.config_error("no root hints")),
    };
    let mut conf = format!("server:\n    port: {}\n", setup.port);
    for ip in &setup.listen {
        let _ = writeln!(conf, "    interface: {ip}@{}", setup.port);
    }
    for (port, _) in [&p.tls, &p.https].into_iter().flatten() {
        for ip in &setup.listen {
            let _ = writeln!(conf, "    interface: {ip}@{port}");
        }
    }
    if let Some((port, _)) = &p.tls {
        let _ = writeln!(conf, "    tls-port: {port}");
    }
    if let Some((port, _)) = &p.https {
        let _ = writeln!(
            conf,
            "    https-port: {port}\n    http-endpoint: \"/dns-query\"\n    http-notls-downstream: no"
        );
    }
    if let Some((_, files)) = p.tls.as_ref().or(p.https.as_ref()) {
        let _ = writeln!(
            conf,
            "    tls-service-key: \"{}\"\n    tls-service-pem: \"{}\"",
            show(&files.key),
            show(&files.cert)
        );
    }
    let idle = p.idle_millis();
    let _ = write!(
        conf,
        "    do-ip4: yes\n    do-ip6: yes\n{hints}\
         \x20   username: \"\"\n    chroot: \"\"\n    directory: \"{d}\"\n    pidfile: \"{d}/unbound.pid\"\n\
         \x20   use-syslog: no\n    logfile: \"\"\n    verbosity: 1\n\
         \x20   num-threads: {threads}\n    so-reuseport: yes\n\
         \x20   incoming-num-tcp: {tcp}\n    tcp-idle-timeout: {idle}\n\
         \x20   edns-tcp-keepalive-timeout: {idle}\n\
         \x20   access-control: 0.0.0.0/0 allow\n    access-control: ::/0 allow\n\
         \x20   ratelimit: 0\n    ip-ratelimit: 0\n\
         \x20   harden-referral-path: no\n    prefetch: no\n    do-not-query-localhost: no\n",
        tcp = p.tcp_clients_per(threads),
    );
    conf.push_str(&dnssec(p)?);
    let options = &setup.resolver;
    if let Some(on) = options.aggressive_nsec {
        let _ = writeln!(conf, "    aggressive-nsec: {}", yes_no(on));
    }
    if let Some(on) = options.qname_minimisation {
        let _ = writeln!(conf, "    qname-minimisation: {}", yes_no(on));
    }
    conf.push_str(&p.extra());
    for zone in &p.zones {
        let _ = write!(
            conf,
            "auth-zone:\n    name: \"{}\"\n    zonefile: \"{}\"\n    for-downstream: yes\n\
             \x20   for-upstream: yes\n    fallback-enabled: no\n",
            zone.origin,
            show(&zone.path)
        );
    }
    conf.push_str("remote-control:\n    control-enable: no\n");
    let config = write_config(p, "unbound.conf", &conf)?;
    Ok(Launch {
        args: args([&"-d", &"-c", &config]),
        check: Some(Check {
            program: "unbound-checkconf",
            args: args([&config]),
        }),
        config,
        faketime: None,
    })
}

/// The modules and, when validating, the trust anchor, the moment and the insecure domains.
fn dnssec(p: &Prepared) -> Result<String, ServerError> {
    let (Some(v), Some(anchor)) = (&p.setup.validation, &p.trust_anchor) else {
        return Ok("    module-config: \"iterator\"\n".into());
    };
    let mut conf = format!(
        "    module-config: \"validator iterator\"\n    trust-anchor-file: \"{}\"\n\
         \x20   val-log-level: 2\n",
        show(anchor)
    );
    if let Some(t) = v.time {
        let date = unbound_date(t).map_err(|e| p.config_error(e.to_string()))?;
        let _ = writeln!(conf, "    val-override-date: \"{date}\"");
    }
    for d in &v.insecure {
        let _ = writeln!(conf, "    domain-insecure: \"{d}\"");
    }
    Ok(conf)
}
