//! BIND 9.18 as an authoritative server: `named -g` (foreground, log to standard error) as
//! root, directory, pid file, session key and managed keys in the work directory, no rndc
//! control channel (which would bind 127.0.0.1:953 and collide between instances), no
//! recursion, no validation, zones of type primary.
//!
//! * idle timeout: `tcp-idle-timeout` after the first query, `tcp-initial-timeout` before it
//!   (BIND's floor is 2.5 s there), `tcp-keepalive-timeout` and `tcp-advertised-timeout` for
//!   clients using EDNS keepalive; in units of 100 ms, at most 2 minutes for the idle one.
//! * connections: `tcp-clients`.
//! * threads: `named -n`.
//! * TLS: `listen-on port 853 tls` with a `tls` block naming the key and certificate.
//! * DoH: `listen-on port 443 tls ... http default` (BIND's endpoint `/dns-query`).

use std::fmt::Write as _;
use std::net::IpAddr;

use super::{args, show, write_config, Check, Launch};
use crate::setup::Prepared;
use crate::ServerError;

/// BIND's ceiling on `tcp-idle-timeout` and `tcp-initial-timeout`, in 100 ms (2 minutes).
const MAX_TIMEOUT: u128 = 1200;
/// BIND's floor on `tcp-initial-timeout`, in 100 ms (2.5 s).
const MIN_INITIAL: u128 = 25;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let d = p.dir_text();
    let mut conf = tls_block(p);
    let _ = write!(
        conf,
        "options {{\n    directory \"{d}\";\n    pid-file \"{d}/named.pid\";\n\
         \x20   session-keyfile \"{d}/session.key\";\n    managed-keys-directory \"{d}\";\n\
         \x20   recursion no;\n    allow-query {{ any; }};\n    dnssec-validation no;\n\
         \x20   notify no;\n    automatic-interface-scan no;\n",
    );
    conf.push_str(&tcp_timeouts(p)?);
    listen(p, &mut conf);
    conf.push_str(&p.extra());
    conf.push_str("};\ncontrols { };\n");
    for z in &p.zones {
        let _ = writeln!(
            conf,
            "zone \"{}\" {{ type primary; file \"{}\"; }};",
            z.origin,
            show(&z.path)
        );
    }
    named_launch(p, &conf)
}

/// Writes `conf` as `named.conf` and launches `named -g` on it (with `-n` for the threads),
/// checked by `named-checkconf`: the same for BIND as an authoritative server and as a
/// resolver.
pub(super) fn named_launch(p: &Prepared, conf: &str) -> Result<Launch, ServerError> {
    let config = write_config(p, "named.conf", conf)?;
    let mut named = args([&"-g", &"-c", &config]);
    if let Some(n) = p.setup.threads {
        named.extend(args([&"-n", &n.to_string()]));
    }
    Ok(Launch {
        args: named,
        check: Some(Check {
            program: "named-checkconf",
            args: args([&config]),
        }),
        config,
        faketime: None,
    })
}

/// The `tls` block naming the key and certificate, when TLS or DoH is served.
pub(super) fn tls_block(p: &Prepared) -> String {
    let mut conf = String::new();
    if let Some((_, files)) = p.tls.as_ref().or(p.https.as_ref()) {
        let _ = writeln!(
            conf,
            "tls ldplayer-tls {{\n    key-file \"{}\";\n    cert-file \"{}\";\n}};",
            show(&files.key),
            show(&files.cert)
        );
    }
    conf
}

/// The options on TCP clients and timeouts (see the [module docs](self)).
pub(super) fn tcp_timeouts(p: &Prepared) -> Result<String, ServerError> {
    let idle = p.idle_millis().div_ceil(100);
    if idle > MAX_TIMEOUT {
        return Err(ServerError::Unsupported {
            kind: p.setup.kind,
            what: format!(
                "close idle TCP connections after {:?} (BIND's tcp-idle-timeout is at most 120 s)",
                p.setup.tcp_idle_timeout
            ),
        });
    }
    Ok(format!(
        "    tcp-clients {clients};\n    tcp-idle-timeout {idle};\n\
         \x20   tcp-initial-timeout {initial};\n    tcp-keepalive-timeout {idle};\n\
         \x20   tcp-advertised-timeout {idle};\n",
        clients = p.tcp_clients,
        initial = idle.clamp(MIN_INITIAL, MAX_TIMEOUT),
    ))
}

/// The `listen-on` statements: plain DNS, then TLS and DoH when served.
pub(super) fn listen(p: &Prepared, conf: &mut String) {
    let setup = p.setup;
    let v4: Vec<&IpAddr> = setup.listen.iter().filter(|ip| ip.is_ipv4()).collect();
    let v6: Vec<&IpAddr> = setup.listen.iter().filter(|ip| ip.is_ipv6()).collect();
    if v4.is_empty() {
        conf.push_str("    listen-on { none; };\n");
    } else {
        listen_on(conf, "listen-on", setup.port, "", &v4);
    }
    if v6.is_empty() {
        conf.push_str("    listen-on-v6 { none; };\n");
    } else {
        listen_on(conf, "listen-on-v6", setup.port, "", &v6);
    }
    if let Some((port, _)) = &p.tls {
        if !v4.is_empty() {
            listen_on(conf, "listen-on", *port, " tls ldplayer-tls", &v4);
        }
        if !v6.is_empty() {
            listen_on(conf, "listen-on-v6", *port, " tls ldplayer-tls", &v6);
        }
    }
    // BIND's built-in `default` endpoint serves `/dns-query`.
    if let Some((port, _)) = &p.https {
        let doh = " tls ldplayer-tls http default";
        if !v4.is_empty() {
            listen_on(conf, "listen-on", *port, doh, &v4);
        }
        if !v6.is_empty() {
            listen_on(conf, "listen-on-v6", *port, doh, &v6);
        }
    }
}

/// One `listen-on` (or `listen-on-v6`) statement for `ips` on `port`, `tls` naming the TLS block.
fn listen_on(conf: &mut String, directive: &str, port: u16, tls: &str, ips: &[&IpAddr]) {
    let list: String = ips.iter().map(|ip| format!("{ip}; ")).collect();
    let _ = writeln!(conf, "    {directive} port {port}{tls} {{ {list}}};");
}
