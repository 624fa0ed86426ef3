//! The lab of docs/library.md, driven from a program of one's own (the
//! `replay_through_resolver` example): a three-level hierarchy served by ldplayer's meta-server,
//! unbound resolving in front of it, and a small stub trace replayed at unbound. The example
//! plays all three parts itself (host, resolver side, server side), so this test checks that the
//! library calls the document shows are enough to run a lab.

use domain::base::iana::{Class, Rtype};
use domain::base::{MessageBuilder, Name};
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::{Proto, Record};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT_ZONE: &str = "\
$ORIGIN .
$TTL 86400
. SOA a.root-servers.net. nstld.verisign-grs.com. 2026112700 1800 900 604800 86400
. NS a.root-servers.net.
a.root-servers.net. A 198.41.0.4
com. NS a.gtld-servers.net.
a.gtld-servers.net. A 192.5.6.30
";

const COM_ZONE: &str = "\
$ORIGIN com.
$TTL 3600
@ SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
@ NS a.gtld-servers.net.
example NS ns1.example
ns1.example A 10.0.0.53
";

const EXAMPLE_COM: &str = "\
$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
ns1 A 10.0.0.53
www A 192.0.2.80
mail CNAME www
";

/// The names the stub trace asks, in turn; one of them does not exist.
const NAMES: &[&str] = &["www.example.com", "mail.example.com", "nope.example.com"];
/// Queries in the stub trace.
const QUERIES: usize = 30;

/// Writes the zones and the manifest into `d`.
fn hierarchy(d: &Path) -> PathBuf {
    for (file, text) in [
        ("root.zone", ROOT_ZONE),
        ("com.zone", COM_ZONE),
        ("example.com.zone", EXAMPLE_COM),
    ] {
        std::fs::write(d.join(file), text).expect("zone written");
    }
    let manifest = d.join("manifest");
    std::fs::write(
        &manifest,
        "#ldplayer-manifest/1\n\
         198.41.0.4 root.zone\n\
         192.5.6.30 com.zone\n\
         10.0.0.53 example.com.zone\n",
    )
    .expect("manifest written");
    manifest
}

/// A stub's trace (RD set): one client asking [`NAMES`] in turn, 20 ms apart.
fn stub_trace(path: &Path) {
    let file = std::fs::File::create(path).expect("trace created");
    let mut out = BinaryWriter::new(std::io::BufWriter::new(file)).expect("trace header");
    let src: SocketAddr = "192.0.2.10:40000".parse().expect("address");
    // The destination is the trace's: the replay sends to the lab's resolver.
    let dst: SocketAddr = "192.0.2.1:53".parse().expect("address");
    for i in 0..QUERIES {
        let name: Name<Vec<u8>> = NAMES[i % NAMES.len()].parse().expect("a name");
        let mut b = MessageBuilder::new_vec();
        b.header_mut().set_id(i as u16 + 1);
        b.header_mut().set_rd(true);
        let mut q = b.question();
        q.push((&name, Rtype::A, Class::IN)).expect("question");
        let wire = q.finish();
        out.write(&Record {
            time_ns: 1_700_000_000_000_000_000 + i as i64 * 20_000_000,
            src,
            dst,
            proto: Proto::Udp,
            conn: 0,
            wire: &wire,
        })
        .expect("record written");
    }
    out.into_inner().expect("trace flushed");
}

#[test]
fn a_lab_runs_from_a_program_of_ones_own() {
    // The lab lives in network namespaces (root); the resolver is unbound.
    if !ldplayer_testbed::prerequisite::netns()
        || ldplayer_testbed::prerequisite::tool("unbound", "unbound").is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch directory");
    let manifest = hierarchy(dir.path());
    let trace = dir.path().join("stub.bin");
    stub_trace(&trace);
    let out = Command::new(ldplayer_testbed::cargo_example("replay_through_resolver"))
        .arg(&manifest)
        .arg(&trace)
        .current_dir(dir.path())
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Every query answered, through the whole hierarchy: the names that exist with NOERROR and
    // the one that does not with NXDOMAIN.
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "{QUERIES} queries: {QUERIES} sent, {QUERIES} answered"
        )),
        "{stdout}"
    );
    let nxdomain = QUERIES / NAMES.len();
    assert!(
        first.contains(&format!("NOERROR {}", QUERIES - nxdomain))
            && first.contains(&format!("NXDOMAIN {nxdomain}")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("engine: {")),
        "{stdout}"
    );
}
