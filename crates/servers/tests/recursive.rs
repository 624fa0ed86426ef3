//! Each resolver, really started in a fresh network namespace (where port 53 of every loopback
//! address is free), resolving through a tiny emulated hierarchy: ldplayer's meta-server,
//! itself started as kind `ldplayer` from a manifest, serves a root and the TLD `example.` on
//! 127.0.0.2; the resolver listens on 127.0.0.1. One name resolves through it, over UDP, TCP
//! and (for Unbound and Knot Resolver) TLS; idle TCP connections close after the timeout
//! (except for PowerDNS Recursor, see below).

mod server_checks;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;

use ldplayer_servers::{start, RunningServer, ServerKind, ServerSetup};
use ldplayer_testbed::witness;

const ROOT_ZONE: &str = "$ORIGIN .
$TTL 3600
. SOA ns.example. admin.example. 1 3600 600 86400 300
. NS ns.example.
example. NS ns.example.
ns.example. A 127.0.0.2
";

const EXAMPLE_ZONE: &str = "$ORIGIN example.
$TTL 3600
@ SOA ns admin 1 3600 600 86400 300
@ NS ns
ns A 127.0.0.2
www A 192.0.2.7
";

/// The hierarchy's only nameserver address.
const NAMESERVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

const IDLE: Duration = Duration::from_secs(2);

/// The hierarchy: kind `ldplayer` serving the manifest on [`NAMESERVER`] port 53.
fn hierarchy(dir: &Path) -> RunningServer {
    std::fs::write(dir.join("root.zone"), ROOT_ZONE).expect("write the root zone");
    std::fs::write(dir.join("example.zone"), EXAMPLE_ZONE).expect("write the TLD");
    let manifest = dir.join("hierarchy.manifest");
    std::fs::write(&manifest, format!("{NAMESERVER} root.zone example.zone\n"))
        .expect("write the manifest");
    let mut setup = ServerSetup::new(
        ServerKind::Ldplayer,
        vec![NAMESERVER.into()],
        dir.join("meta"),
    );
    setup.manifest = Some(manifest);
    start(&setup).unwrap_or_else(|e| panic!("the meta-server did not start: {e}"))
}

fn resolves_through_the_hierarchy(kind: ServerKind, hints_from_manifest: bool) {
    let Some(kdig) = server_checks::kdig() else {
        return;
    };
    if !server_checks::server_installed(kind) || !server_checks::fresh_namespaces() {
        return;
    }
    server_checks::in_fresh_namespace(&[], move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let meta = hierarchy(work.path());
        let mut setup = ServerSetup::new(
            kind,
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            work.path().join("resolver"),
        );
        if hints_from_manifest {
            setup.manifest = Some(work.path().join("hierarchy.manifest"));
        } else {
            let hints = work.path().join("root.hints");
            std::fs::write(
                &hints,
                format!(".\t3600000\tNS\tns.example.\nns.example.\t3600000\tA\t{NAMESERVER}\n"),
            )
            .expect("write the hints");
            setup.root_hints = Some(hints);
        }
        setup.tls_port = kind.supports_tls().then_some(853);
        setup.https_port = kind.supports_https().then_some(443);
        setup.threads = Some(1);
        setup.tcp_idle_timeout = IDLE;
        // The experiments' default of 60,000 connections, whatever the file descriptor limit.
        setup.max_tcp_clients = 60_000;
        let resolver = start(&setup).unwrap_or_else(|e| panic!("{kind} did not start: {e}"));
        server_checks::holds_what_it_can(&resolver, 60_000);
        assert!(resolver.pid().is_some());
        assert!(!resolver.version().is_empty());

        for transport in [None, Some("+tcp")] {
            let args = ["@127.0.0.1", "www.example.", "A"];
            let out = witness::run(&kdig, args.into_iter().chain(transport));
            assert_resolved(kind, &out, transport.unwrap_or("UDP"));
        }
        if let Some(files) = resolver.tls() {
            let ca = format!("+tls-ca={}", files.ca.display());
            let out = witness::run(&kdig, ["@127.0.0.1", "www.example.", "A", "+tls", &ca]);
            assert_resolved(kind, &out, "TLS");
            if resolver.https_address().is_some() {
                for method in ["+https", "+https-get"] {
                    let out = witness::run(
                        &kdig,
                        ["@127.0.0.1", "www.example.", "A", "+https", method, &ca],
                    );
                    assert_resolved(kind, &out, method);
                    assert!(out.contains("(status: 200)"), "{kind} over DoH:\n{out}");
                }
            }
        }
        // PowerDNS Recursor looks for expired TCP connections only every so many turns of its
        // event loop, which an idle server makes slowly: with a 2 s client-tcp-timeout it
        // closed an idle connection after 24 s. A busy server checks more often; here its idle
        // check is left out.
        if kind != ServerKind::PdnsRecursor {
            server_checks::closes_idle_connections(kind, &resolver, IDLE, "example.");
        }
        let stats = meta.embedded_stats().expect("the meta-server counts");
        assert!(stats.responses > 0, "{kind} asked the hierarchy");
        resolver
            .stop()
            .unwrap_or_else(|e| panic!("{kind} stops: {e}"));
        meta.stop().expect("the meta-server stops");
    });
}

fn assert_resolved(kind: ServerKind, out: &str, transport: &str) {
    assert!(
        out.contains("status: NOERROR"),
        "{kind} over {transport}:\n{out}"
    );
    assert!(
        out.contains("www.example.") && out.contains("192.0.2.7"),
        "{kind} over {transport}, the address:\n{out}"
    );
}

#[test]
fn unbound_resolves_with_hints_made_from_the_manifest() {
    resolves_through_the_hierarchy(ServerKind::Unbound, true);
}

#[test]
fn kresd_resolves_through_the_hierarchy() {
    resolves_through_the_hierarchy(ServerKind::Kresd, false);
}

#[test]
fn pdns_recursor_resolves_through_the_hierarchy() {
    resolves_through_the_hierarchy(ServerKind::PdnsRecursor, false);
}

#[test]
fn bind_resolver_resolves_through_the_hierarchy() {
    resolves_through_the_hierarchy(ServerKind::BindResolver, false);
}

/// A zone with a wildcard: every unique name under it has an address.
const LOCAL_ZONE: &str = "$ORIGIN example.
$TTL 3600
@ SOA ns admin 1 3600 600 86400 300
@ NS ns
ns A 192.0.2.1
www A 192.0.2.7
* A 192.0.2.99
";

/// A resolver given zones and nothing to resolve through answers every name of them itself,
/// wildcards included, over UDP, TCP and TLS: in a fresh namespace with no other server, an
/// answer can only come from the zone.
fn answers_from_a_local_zone(kind: ServerKind) {
    let Some(kdig) = server_checks::kdig() else {
        return;
    };
    if !server_checks::server_installed(kind) || !server_checks::fresh_namespaces() {
        return;
    }
    server_checks::in_fresh_namespace(&[], move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let zone = work.path().join("example.zone");
        std::fs::write(&zone, LOCAL_ZONE).expect("write the zone");
        let mut setup = ServerSetup::new(
            kind,
            vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
            work.path().join("resolver"),
        );
        setup.zones = vec![zone];
        setup.tls_port = Some(853);
        let resolver = start(&setup).unwrap_or_else(|e| panic!("{kind} did not start: {e}"));
        let ca = resolver
            .tls()
            .map(|f| format!("+tls-ca={}", f.ca.display()));
        for transport in [None, Some("+tcp"), Some("+tls")] {
            let extra: Vec<&str> = match transport {
                Some("+tls") => vec!["+tls", ca.as_deref().expect("a certificate")],
                Some(t) => vec![t],
                None => vec![],
            };
            let words = transport.unwrap_or("UDP");
            let ask = |name: &str, qtype: &str| {
                let args = ["@127.0.0.1", name, qtype];
                witness::run(&kdig, args.into_iter().chain(extra.iter().copied()))
            };
            let out = ask("www.example.", "A");
            assert!(
                out.contains("status: NOERROR") && out.contains("192.0.2.7"),
                "{kind} over {words}, a name of the zone:\n{out}"
            );
            let out = ask("8f3a0c.example.", "A");
            assert!(
                out.contains("status: NOERROR") && out.contains("192.0.2.99"),
                "{kind} over {words}, a name under the wildcard:\n{out}"
            );
            let out = ask("example.", "SOA");
            assert!(
                out.contains("status: NOERROR") && out.contains("admin.example."),
                "{kind} over {words}, the apex:\n{out}"
            );
        }
        resolver
            .stop()
            .unwrap_or_else(|e| panic!("{kind} stops: {e}"));
    });
}

#[test]
fn unbound_answers_from_a_local_zone() {
    answers_from_a_local_zone(ServerKind::Unbound);
}

#[test]
fn kresd_answers_from_a_local_zone() {
    answers_from_a_local_zone(ServerKind::Kresd);
}
