//! PowerDNS Recursor 4.8 as a resolver of the emulated hierarchy: `recursor.conf` in the work
//! directory (its `--config-dir`, also the socket directory), foreground, no pid file, no
//! syslog, root hints from the file, DNSSEC off, queries from any address, private and
//! loopback nameserver addresses allowed (`dont-query` empty), no per-client TCP limit.
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
use crate::setup::Prepared;
use crate::ServerError;

pub(super) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    let setup = p.setup;
    let d = p.dir_text();
    let hints = p
        .root_hints
        .as_deref()
        .ok_or_else(|| p.config_error("no root hints"))?;
    let listen: Vec<String> = setup.listen.iter().map(ToString::to_string).collect();
    let mut conf = format!(
        "local-address={}\nlocal-port={}\nhint-file={}\ndnssec=off\n\
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
    conf.push_str(&p.extra());
    let config = write_config(p, "recursor.conf", &conf)?;
    Ok(Launch {
        args: args([&format!("--config-dir={d}")]),
        check: None,
        config,
    })
}
