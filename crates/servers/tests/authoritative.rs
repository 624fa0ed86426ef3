//! Each authoritative kind, really started on loopback with the 2018 root zone: `kdig` gets the
//! root's SOA over UDP, TCP and (where the kind can) TLS with the CA made for it; an idle TCP
//! connection is closed by the server after the configured timeout; stop leaves no process.

mod server_checks;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ldplayer_servers::{start, RunningServer, ServerError, ServerKind, ServerSetup};
use ldplayer_testbed::{free_port, prerequisite, witness};

/// The SOA record of the root zone of 2018-03-12, as kdig prints it.
const ROOT_SOA: &str =
    "86400\tIN\tSOA\ta.root-servers.net. nstld.verisign-grs.com. 2018031200 1800 900 604800 86400";

/// The idle timeout the tests configure: short, and one every kind can express.
const IDLE: Duration = Duration::from_secs(2);

fn root_zone() -> Option<PathBuf> {
    prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), "zones/root-2018-03-12.zone")
}

/// The setup of `kind` serving the root zone on a free loopback port (and one for TLS).
fn root_setup(kind: ServerKind, zone: PathBuf, work: &std::path::Path) -> ServerSetup {
    let mut setup = ServerSetup::new(
        kind,
        vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        work.join("server"),
    );
    setup.port = free_port();
    setup.tls_port = kind.supports_tls().then(free_port);
    setup.https_port = kind.supports_https().then(free_port);
    setup.quic_port = kind.supports_quic().then(free_port);
    setup.zones = vec![zone];
    setup.threads = Some(1);
    setup.tcp_idle_timeout = IDLE;
    setup.max_tcp_clients = 1000;
    setup
}

fn serves_the_root_zone(kind: ServerKind) {
    let (Some(zone), Some(kdig)) = (root_zone(), server_checks::kdig()) else {
        return;
    };
    if !server_checks::server_installed(kind) {
        return;
    }
    let work = tempfile::tempdir().expect("scratch directory");
    let setup = root_setup(kind, zone, work.path());
    let server = start(&setup).unwrap_or_else(|e| panic!("{kind} did not start: {e}"));
    assert_eq!(server.kind(), kind);
    assert!(!server.version().is_empty(), "{kind} has a version");
    assert_eq!(server.pid().is_some(), !kind.is_embedded());
    let log = server.log_path().expect("a log").to_path_buf();
    assert!(log.starts_with(&setup.work_dir), "{}", log.display());

    let port = setup.port.to_string();
    let at = ["@127.0.0.1", "-p", &port, ".", "SOA", "+norec"];
    for transport in [None, Some("+tcp")] {
        let out = witness::run(&kdig, at.iter().copied().chain(transport));
        assert_answered(kind, &out, transport.unwrap_or("UDP"));
    }
    assert_eq!(
        server.tls().is_some(),
        kind.supports_tls(),
        "{kind}: a certificate exactly when the kind serves TLS"
    );
    if let (Some(tls_port), Some(files)) = (setup.tls_port, server.tls()) {
        let tls_port = tls_port.to_string();
        let ca = format!("+tls-ca={}", files.ca.display());
        let out = witness::run(
            &kdig,
            [
                "@127.0.0.1",
                "-p",
                &tls_port,
                ".",
                "SOA",
                "+norec",
                "+tls",
                &ca,
            ],
        );
        assert_answered(kind, &out, "TLS");
        assert!(out.contains("TLS session"), "{kind} over TLS:\n{out}");
    }
    let loopback = |port: Option<u16>| port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
    assert_eq!(server.https_address(), loopback(setup.https_port));
    assert_eq!(server.quic_address(), loopback(setup.quic_port));
    if let (Some(https_port), Some(files)) = (setup.https_port, server.tls()) {
        let https_port = https_port.to_string();
        let ca = format!("+tls-ca={}", files.ca.display());
        for method in ["+https", "+https-get"] {
            let out = witness::run(
                &kdig,
                [
                    "@127.0.0.1",
                    "-p",
                    &https_port,
                    ".",
                    "SOA",
                    "+norec",
                    "+https",
                    method,
                    &ca,
                ],
            );
            assert_answered(kind, &out, method);
            assert!(out.contains("(status: 200)"), "{kind} over DoH:\n{out}");
        }
    }

    server_checks::closes_idle_connections(kind, &server, IDLE, ".");
    stops_for_good(server);
}

fn assert_answered(kind: ServerKind, out: &str, transport: &str) {
    assert!(
        out.contains("status: NOERROR"),
        "{kind} over {transport}:\n{out}"
    );
    assert!(
        out.contains(" aa"),
        "{kind} over {transport}, authoritative:\n{out}"
    );
    assert!(
        out.contains(ROOT_SOA),
        "{kind} over {transport}, the SOA:\n{out}"
    );
}

/// After `stop`, the server's process is gone and its port free.
fn stops_for_good(server: RunningServer) {
    let kind = server.kind();
    let pid = server.pid();
    let addr: SocketAddr = server.address();
    server
        .stop()
        .unwrap_or_else(|e| panic!("{kind} stops: {e}"));
    if let Some(pid) = pid {
        assert!(
            !PathBuf::from(format!("/proc/{pid}")).exists(),
            "{kind} (pid {pid}) is gone after stop"
        );
    }
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err(),
        "{kind} no longer listens on {addr}"
    );
}

#[test]
fn nsd_serves_the_root_zone_over_udp_tcp_and_tls() {
    serves_the_root_zone(ServerKind::Nsd);
}

#[test]
fn knot_serves_the_root_zone_over_udp_and_tcp() {
    serves_the_root_zone(ServerKind::Knot);
}

#[test]
fn bind_serves_the_root_zone_over_udp_tcp_tls_and_https() {
    serves_the_root_zone(ServerKind::Bind);
}

#[test]
fn ldplayer_serves_the_root_zone_over_udp_tcp_tls_and_https() {
    serves_the_root_zone(ServerKind::Ldplayer);
}

#[test]
fn tls_on_a_kind_without_it_is_refused_before_anything_runs() {
    let work = tempfile::tempdir().expect("scratch directory");
    let mut setup = ServerSetup::new(
        ServerKind::Knot,
        vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        work.path().join("server"),
    );
    setup.zones = vec![work.path().join("never-read.zone")];
    setup.tls_port = Some(free_port());
    let err = start(&setup).expect_err("Knot DNS 3.2 has no DNS over TLS");
    assert!(
        matches!(
            err,
            ServerError::Unsupported {
                kind: ServerKind::Knot,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "knot cannot serve DNS over TLS");
    assert!(!setup.work_dir.exists(), "nothing written");
}

#[test]
fn a_configuration_the_checker_refuses_is_a_config_error_with_its_output() {
    let Some(zone) = root_zone() else {
        return;
    };
    if !server_checks::server_installed(ServerKind::Nsd) {
        return;
    }
    let work = tempfile::tempdir().expect("scratch directory");
    let mut setup = root_setup(ServerKind::Nsd, zone, work.path());
    setup.extra = vec!["    no-such-option: 1".into()];
    let err = start(&setup).expect_err("nsd-checkconf refuses an unknown option");
    let message = err.to_string();
    assert!(matches!(err, ServerError::Config { .. }), "{err:?}");
    assert!(message.contains("nsd-checkconf"), "{message}");
    assert!(message.contains("nsd.conf"), "{message}");
    assert!(message.contains("no-such-option"), "{message}");
}

#[test]
fn a_server_that_cannot_bind_fails_with_its_log() {
    let Some(zone) = root_zone() else {
        return;
    };
    if !server_checks::server_installed(ServerKind::Knot) {
        return;
    }
    let work = tempfile::tempdir().expect("scratch directory");
    let mut setup = root_setup(ServerKind::Knot, zone, work.path());
    // An address that is no interface's: Knot cannot bind it and answers nowhere.
    setup.listen = vec!["192.0.2.53".parse().expect("address")];
    let started = Instant::now();
    let err = ldplayer_servers::start_with_timeout(&setup, Duration::from_secs(3))
        .expect_err("nothing answers on 192.0.2.53");
    assert!(started.elapsed() < Duration::from_secs(15));
    let message = err.to_string();
    assert!(
        matches!(
            err,
            ServerError::NotReady { .. } | ServerError::Exited { .. }
        ),
        "{err:?}"
    );
    assert!(message.contains("knotd"), "the command line: {message}");
    assert!(message.contains("192.0.2.53"), "{message}");
}

/// `kind` as an experiment runs it: in a fresh network namespace that has only 10.53.0.1 and
/// fd53::1 (and loopback), on ports 53 and 853, answering on both addresses.
fn serves_in_a_namespace_of_its_own(kind: ServerKind) {
    let (Some(zone), Some(kdig)) = (root_zone(), server_checks::kdig()) else {
        return;
    };
    if !server_checks::server_installed(kind) || !server_checks::fresh_namespaces() {
        return;
    }
    server_checks::in_fresh_namespace(&["10.53.0.1/32", "fd53::1/128"], move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let mut setup = root_setup(kind, zone, work.path());
        setup.listen = vec![
            "10.53.0.1".parse().expect("v4"),
            "fd53::1".parse().expect("v6"),
        ];
        setup.port = 53;
        setup.tls_port = kind.supports_tls().then_some(853);
        setup.threads = Some(2);
        setup.max_tcp_clients = 60_000;
        let server = start(&setup).unwrap_or_else(|e| panic!("{kind} did not start: {e}"));
        server_checks::holds_what_it_can(&server, 60_000);
        for at in ["@10.53.0.1", "@fd53::1"] {
            for transport in [None, Some("+tcp")] {
                let args = [at, ".", "SOA", "+norec"];
                let out = witness::run(&kdig, args.into_iter().chain(transport));
                assert_answered(kind, &out, &format!("{at} {}", transport.unwrap_or("UDP")));
            }
            if let Some(files) = server.tls() {
                let ca = format!("+tls-ca={}", files.ca.display());
                let out = witness::run(&kdig, [at, ".", "SOA", "+norec", "+tls", &ca]);
                assert_answered(kind, &out, &format!("{at} TLS"));
            }
        }
        stops_for_good(server);
    });
}

#[test]
fn nsd_serves_in_a_namespace_of_its_own() {
    serves_in_a_namespace_of_its_own(ServerKind::Nsd);
}

#[test]
fn knot_serves_in_a_namespace_of_its_own() {
    serves_in_a_namespace_of_its_own(ServerKind::Knot);
}

#[test]
fn bind_serves_in_a_namespace_of_its_own() {
    serves_in_a_namespace_of_its_own(ServerKind::Bind);
}

#[test]
fn ldplayer_serves_in_a_namespace_of_its_own() {
    serves_in_a_namespace_of_its_own(ServerKind::Ldplayer);
}
