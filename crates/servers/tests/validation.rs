//! Each resolver validating the emulated hierarchy with its root's own key (`auto`), really
//! started in a fresh network namespace: a root and `example.` signed by ldns-signzone, served
//! by ldplayer's meta-server on 10.53.0.2 and 10.53.0.3 (Knot Resolver ignores loopback
//! addresses in glue). Answers carry AD; a name the root proves absent is
//! NXDOMAIN with AD; aggressive NSEC on and off changes how often the resolver asks the root
//! about absent names; and a resolver validates expired signatures at the moment it is given.

mod server_checks;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;

use ldplayer_servers::validation::{TrustAnchor, Validation};
use ldplayer_servers::{start, ResolverOptions, RunningServer, ServerKind, ServerSetup};
use ldplayer_testbed::{prerequisite, witness};

// The root's nameserver has a name in the root zone itself: under a signed child, its address
// would need the child's DS, which needs the root's nameserver (Knot Resolver gives up). The
// root and `example.` have addresses of their own, as on the Internet (a resolver that asks
// the root's address for a name under `example.` expects a referral).
const ROOT_ZONE: &str = "$ORIGIN .
$TTL 3600
. SOA a.root. admin.example. 1 3600 600 86400 300
. NS a.root.
a.root. A 10.53.0.2
example. NS ns.example.
ns.example. A 10.53.0.3
net. NS ns.example.
org. NS ns.example.
";

const EXAMPLE_ZONE: &str = "$ORIGIN example.
$TTL 3600
@ SOA ns admin 1 3600 600 86400 300
@ NS ns
ns A 10.53.0.3
www A 192.0.2.7
";

/// The root's nameserver address.
const ROOT: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 2);
/// The namespace's addresses besides loopback.
const ADDRESSES: &[&str] = &["10.53.0.2/32", "10.53.0.3/32"];
/// `example.`'s nameserver address.
const EXAMPLE: Ipv4Addr = Ipv4Addr::new(10, 53, 0, 3);

/// Signatures valid from `inception` to `expiration` (YYYYMMDD), or from now for four weeks.
type Validity<'a> = Option<(&'a str, &'a str)>;

/// Signs `zone` (origin `origin`) in `dir` with a new ECDSA P-256 key, with NSEC; returns the
/// signed file's name and the key's DS records.
fn sign(dir: &Path, origin: &str, file: &str, validity: Validity) -> (String, String) {
    let keygen = Command::new("ldns-keygen")
        .args(["-a", "ECDSAP256SHA256", "-k", origin])
        .current_dir(dir)
        .output()
        .expect("run ldns-keygen");
    assert!(keygen.status.success(), "{keygen:?}");
    let key = String::from_utf8_lossy(&keygen.stdout).trim().to_string();
    let mut signzone = Command::new("ldns-signzone");
    if let Some((inception, expiration)) = validity {
        signzone.args(["-i", inception, "-e", expiration]);
    }
    let out = signzone
        .args(["-o", origin, file, &key])
        .current_dir(dir)
        .output()
        .expect("run ldns-signzone");
    assert!(out.status.success(), "{out:?}");
    let ds = std::fs::read_to_string(dir.join(format!("{key}.ds"))).expect("the key's DS");
    (format!("{file}.signed"), ds)
}

/// The signed hierarchy and the meta-server serving it on [`ROOT`] and [`EXAMPLE`].
fn signed_hierarchy(dir: &Path, validity: Validity) -> (RunningServer, std::path::PathBuf) {
    std::fs::write(dir.join("example.zone"), EXAMPLE_ZONE).expect("write the TLD");
    let (example, ds) = sign(dir, "example.", "example.zone", validity);
    std::fs::write(dir.join("root.zone"), format!("{ROOT_ZONE}{ds}")).expect("write the root");
    let (root, _) = sign(dir, ".", "root.zone", validity);
    let manifest = dir.join("hierarchy.manifest");
    std::fs::write(&manifest, format!("{ROOT} {root}\n{EXAMPLE} {example}\n"))
        .expect("write the manifest");
    let mut setup = ServerSetup::new(
        ServerKind::Ldplayer,
        vec![ROOT.into(), EXAMPLE.into()],
        dir.join("meta"),
    );
    setup.manifest = Some(manifest.clone());
    let meta = start(&setup).unwrap_or_else(|e| panic!("the meta-server did not start: {e}"));
    (meta, manifest)
}

fn prerequisites(kind: ServerKind) -> Option<std::path::PathBuf> {
    let kdig = server_checks::kdig()?;
    let ldns = prerequisite::tool("ldns-signzone", "ldnsutils").is_some()
        && prerequisite::tool("ldns-keygen", "ldnsutils").is_some();
    (ldns && server_checks::server_installed(kind) && server_checks::fresh_namespaces())
        .then_some(kdig)
}

/// The resolver `kind` on 127.0.0.1 validating with the hierarchy's root key.
fn resolver(
    kind: ServerKind,
    work: &Path,
    manifest: &Path,
    time: Option<i64>,
    options: ResolverOptions,
) -> RunningServer {
    let mut setup = ServerSetup::new(
        kind,
        vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        work.join(format!("resolver-{:?}", options.aggressive_nsec)),
    );
    setup.manifest = Some(manifest.to_path_buf());
    setup.validation = Some(Validation {
        anchor: TrustAnchor::Auto,
        time,
        insecure: Vec::new(),
    });
    setup.resolver = options;
    start(&setup).unwrap_or_else(|e| panic!("{kind} did not start: {e}"))
}

/// What the server logged.
fn log(server: &RunningServer) -> String {
    server
        .log_path()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
}

fn dig(kdig: &Path, name: &str) -> String {
    witness::run(kdig, ["@127.0.0.1", name, "A", "+dnssec"])
}

fn validates(kind: ServerKind) {
    let Some(kdig) = prerequisites(kind) else {
        return;
    };
    server_checks::in_fresh_namespace(ADDRESSES, move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let (meta, manifest) = signed_hierarchy(work.path(), None);
        let r = resolver(
            kind,
            work.path(),
            &manifest,
            None,
            ResolverOptions::default(),
        );
        let out = dig(&kdig, "www.example.");
        assert!(
            out.contains("status: NOERROR") && out.contains(" ad") && out.contains("192.0.2.7"),
            "{kind}, a signed answer:\n{out}\nlog:\n{}",
            log(&r)
        );
        let out = dig(&kdig, "absent.");
        assert!(
            out.contains("status: NXDOMAIN") && out.contains(" ad"),
            "{kind}, a name the root proves absent:\n{out}"
        );
        r.stop().expect("the resolver stops");

        // Aggressive NSEC: absent names between `example.` and `net.` (and between `net.`
        // and `org.`) are answered from the first proof without asking the root again.
        let mut asked = Vec::new();
        let settings: &[bool] = if kind == ServerKind::Kresd {
            &[true]
        } else {
            &[false, true]
        };
        for &on in settings {
            let options = ResolverOptions {
                aggressive_nsec: Some(on),
                qname_minimisation: None,
            };
            let r = resolver(kind, work.path(), &manifest, None, options);
            let before = meta.embedded_stats().expect("counts").responses;
            for i in 0..20 {
                let out = dig(&kdig, &format!("missing{i}."));
                assert!(out.contains("status: NXDOMAIN"), "{kind}:\n{out}");
            }
            let after = meta.embedded_stats().expect("counts").responses;
            asked.push((on, after - before));
            r.stop().expect("the resolver stops");
        }
        eprintln!("{kind}: upstream responses for 20 absent names (aggressive NSEC, n): {asked:?}");
        for &(on, n) in &asked {
            if on {
                assert!(
                    n <= 6,
                    "{kind} with aggressive NSEC asked {n} times: {asked:?}"
                );
            } else {
                assert!(
                    n >= 20,
                    "{kind} without aggressive NSEC asked {n} times: {asked:?}"
                );
            }
        }
        meta.stop().expect("the meta-server stops");
    });
}

#[test]
fn unbound_validates_and_uses_nsec_aggressively_when_asked() {
    validates(ServerKind::Unbound);
}

#[test]
fn kresd_validates_and_uses_nsec_aggressively() {
    validates(ServerKind::Kresd);
}

#[test]
fn pdns_recursor_validates_and_uses_nsec_aggressively_when_asked() {
    validates(ServerKind::PdnsRecursor);
}

/// Signatures that expired in 2020 validate at a moment within their validity: Unbound with
/// `val-override-date`, PowerDNS Recursor under libfaketime.
fn validates_at_another_time(kind: ServerKind) {
    let Some(kdig) = prerequisites(kind) else {
        return;
    };
    if kind == ServerKind::PdnsRecursor && prerequisite::tool("faketime", "faketime").is_none() {
        return;
    }
    server_checks::in_fresh_namespace(ADDRESSES, move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let (meta, manifest) = signed_hierarchy(work.path(), Some(("20200101", "20200201")));
        // 2020-01-15T00:00:00Z.
        let r = resolver(
            kind,
            work.path(),
            &manifest,
            Some(1_579_046_400),
            ResolverOptions::default(),
        );
        let out = dig(&kdig, "www.example.");
        assert!(
            out.contains("status: NOERROR") && out.contains(" ad"),
            "{kind} at 2020-01-15:\n{out}"
        );
        r.stop().expect("the resolver stops");
        // Now, they have expired.
        let r = resolver(
            kind,
            work.path(),
            &manifest,
            None,
            ResolverOptions::default(),
        );
        let out = dig(&kdig, "www.example.");
        assert!(out.contains("status: SERVFAIL"), "{kind} now:\n{out}");
        r.stop().expect("the resolver stops");
        meta.stop().expect("the meta-server stops");
    });
}

#[test]
fn unbound_validates_at_another_time() {
    validates_at_another_time(ServerKind::Unbound);
}

#[test]
fn pdns_recursor_validates_at_another_time() {
    validates_at_another_time(ServerKind::PdnsRecursor);
}

/// QNAME minimisation on and off, with tcpdump as the witness of what the root was asked:
/// without it, a resolver sends the root the whole name; with it, only the next label
/// (`example.`).
fn qname_minimisation(kind: ServerKind) {
    let Some(kdig) = prerequisites(kind) else {
        return;
    };
    if prerequisite::tool("tcpdump", "tcpdump").is_none()
        || prerequisite::tool("tshark", "tshark").is_none()
    {
        return;
    }
    server_checks::in_fresh_namespace(ADDRESSES, move || {
        let work = tempfile::tempdir().expect("scratch directory");
        let (meta, manifest) = signed_hierarchy(work.path(), None);
        let mut whole_name_at_root = Vec::new();
        for on in [false, true] {
            let options = ResolverOptions {
                aggressive_nsec: None,
                qname_minimisation: Some(on),
            };
            let pcap = work.path().join(format!("root-{on}.pcap"));
            let tcpdump = Witness(
                Command::new("tcpdump")
                    .args(["-i", "lo", "-n", "-U", "--immediate-mode", "-w"])
                    .arg(&pcap)
                    .arg(format!("udp and dst host {ROOT} and dst port 53"))
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("run tcpdump"),
            );
            let start = std::time::Instant::now();
            while !pcap.exists() && start.elapsed().as_secs() < 10 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let r = resolver(kind, work.path(), &manifest, None, options);
            let out = dig(&kdig, "a.b.c.d.www.example.");
            assert!(
                out.contains("status: NXDOMAIN") && out.contains(" ad"),
                "{kind}:\n{out}\nlog:\n{}",
                log(&r)
            );
            r.stop().expect("the resolver stops");
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(tcpdump);
            let names = witness::run(
                Path::new("tshark"),
                [
                    "-r",
                    &pcap.display().to_string(),
                    "-T",
                    "fields",
                    "-e",
                    "dns.qry.name",
                ],
            );
            assert!(
                !names.trim().is_empty(),
                "{kind}: the root was asked nothing"
            );
            whole_name_at_root.push(names.to_lowercase().contains("a.b.c.d.www.example"));
        }
        assert_eq!(
            whole_name_at_root,
            [true, false],
            "{kind}: the root saw the whole name (minimisation off, on)"
        );
        meta.stop().expect("the meta-server stops");
    });
}

/// tcpdump, stopped (and its capture flushed) when dropped, also when a test fails.
struct Witness(std::process::Child);

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = ldplayer_system::process::signal(self.0.id(), ldplayer_system::Signal::INT);
        let _ = self.0.wait();
    }
}

#[test]
fn unbound_minimises_qnames_when_asked() {
    qname_minimisation(ServerKind::Unbound);
}

#[test]
fn kresd_minimises_qnames_when_asked() {
    qname_minimisation(ServerKind::Kresd);
}

#[test]
fn pdns_recursor_minimises_qnames_when_asked() {
    qname_minimisation(ServerKind::PdnsRecursor);
}

#[test]
fn bind_resolver_validates_and_uses_nsec_aggressively_when_asked() {
    validates(ServerKind::BindResolver);
}

#[test]
fn bind_resolver_minimises_qnames_when_asked() {
    qname_minimisation(ServerKind::BindResolver);
}
