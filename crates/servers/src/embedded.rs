//! ldplayer's own server, started in this process: zone files as one set (like `ldplayer serve
//! ZONEFILE...`) or a manifest split by destination address (like `ldplayer serve --manifest`,
//! on every address when no listen address is given), and DNS over TLS, HTTPS and QUIC on their
//! ports with the setup's certificate. It writes a short `server.log` too, so that every kind leaves one.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use ldplayer_server::{
    DohConfig, DoqConfig, RunningServer, Server, ServerConfig, TlsConfig, TlsIdentity,
};
use ldplayer_zone::{Views, Zone, ZoneSet};

use crate::setup::{load_manifest, Prepared};
use crate::ServerError;

/// Loads the zones (or manifest) of `p`, sets the probe's name to the first zone's origin, and
/// starts the server.
pub(crate) fn start(p: &mut Prepared) -> Result<RunningServer, ServerError> {
    let setup = p.setup;
    let (views, listen, described) = match &setup.manifest {
        Some(manifest) => {
            let views = load_manifest(manifest)?;
            let listen = if setup.listen.is_empty() {
                vec![Ipv4Addr::UNSPECIFIED.into(), Ipv6Addr::UNSPECIFIED.into()]
            } else {
                setup.listen.clone()
            };
            let described = format!(
                "{} zones for {} nameserver addresses from {}",
                views.zones().len(),
                views.addresses().len(),
                manifest.display()
            );
            (views, listen, described)
        }
        None => {
            let mut set = ZoneSet::new();
            for path in &setup.zones {
                let zone = Zone::from_file(path, None)
                    .map_err(|e| ServerError::Embedded(format!("zone file: {e}")))?;
                if set.zones().is_empty() {
                    p.probe.qname = zone.origin_text();
                }
                set.insert_distinct(zone)
                    .map_err(|e| ServerError::Embedded(e.to_string()))?;
            }
            let names: Vec<String> = set.zones().iter().map(|z| z.origin_text()).collect();
            let described = format!("zones {}", names.join(" "));
            (Views::plain(Arc::new(set)), setup.listen.clone(), described)
        }
    };
    let addrs: Vec<SocketAddr> = listen
        .iter()
        .map(|&ip: &IpAddr| SocketAddr::new(ip, setup.port))
        .collect();
    crate::process::raise_own_file_limit(p.files);
    let mut config = ServerConfig::new(addrs);
    config.udp_workers = setup.threads.unwrap_or(1).max(1);
    config.tcp = true;
    config.tcp_idle_timeout = setup.tcp_idle_timeout;
    config.max_tcp_connections = p.tcp_clients;
    let on = |port: u16| -> Vec<SocketAddr> {
        listen.iter().map(|&ip| SocketAddr::new(ip, port)).collect()
    };
    let identity = |files: &crate::TlsFiles| {
        TlsIdentity::from_pem_files(&files.cert, &files.key)
            .map_err(|e| ServerError::Embedded(e.to_string()))
    };
    if let Some((port, files)) = &p.tls {
        config.tls = Some(TlsConfig {
            listen: on(*port),
            identity: identity(files)?,
        });
    }
    // DoH and DoQ connections count against the same budget as TCP's.
    if let Some((port, files)) = &p.https {
        let mut doh = DohConfig::new(on(*port), identity(files)?);
        doh.idle_timeout = setup.tcp_idle_timeout;
        doh.max_connections = p.tcp_clients;
        config.doh = Some(doh);
    }
    if let Some((port, files)) = &p.quic {
        let mut doq = DoqConfig::new(on(*port), identity(files)?);
        doq.idle_timeout = setup.tcp_idle_timeout;
        doq.max_connections = p.tcp_clients;
        config.doq = Some(doq);
    }
    let server = Server::start(config, views).map_err(|e| ServerError::Embedded(e.to_string()))?;
    let mut tls = String::new();
    if let Some((_, files)) = &p.tls {
        tls += &format!(
            "; DNS over TLS on {:?} with {}",
            server.tls_local_addrs(),
            files.cert.display()
        );
    }
    if p.https.is_some() {
        tls += &format!("; DNS over HTTPS on {:?}", server.doh_local_addrs());
    }
    if p.quic.is_some() {
        tls += &format!("; DNS over QUIC on {:?}", server.doq_local_addrs());
    }
    let line = format!(
        "ldplayer {}: {described}; listening on {:?}{tls} (UDP workers {}, TCP idle timeout \
         {:?}, at most {} TCP connections)\n",
        env!("CARGO_PKG_VERSION"),
        server.local_addrs(),
        setup.threads.unwrap_or(1).max(1),
        setup.tcp_idle_timeout,
        p.tcp_clients,
    );
    append_to(&p.log, &line);
    Ok(server)
}

/// Appends a line to the log, best effort (the log is for people; the server runs without it).
pub(crate) fn append_to(log: &Path, line: &str) {
    let _ = ldplayer_output::open_append(log)
        .map_err(std::io::Error::from)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}
