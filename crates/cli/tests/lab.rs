//! The hierarchy round trip (issue 4, must-show 2 and 4).
//!
//! A ground-truth hierarchy (a root, three TLDs, three second-level zones with CNAME chains that
//! cross zones, one of them signed with ldns-signzone) is served by real nsd, one instance per
//! nameserver address, inside the lab's server-side namespace. A cold unbound resolves a list of
//! names while tcpdump records its upstream traffic; `ldplayer zones build` rebuilds the zones
//! from that capture; the lab serves the rebuilt zones with ldplayer's meta-server, and a fresh
//! unbound resolving the same names must get the same answers, asking the same kinds of
//! questions of the same nameserver addresses, root first, then TLDs, then second level.
//! Meanwhile tcpdump on the host's own interfaces (the witness of must-show 4) must see none of
//! the lab's packets.

mod binary;

use ldplayer_testbed::{prerequisite, witness};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};

const ROOT_ZONE: &str = "\
$ORIGIN .
$TTL 86400
. SOA a.root-servers.net. nstld.verisign-grs.com. 2026112200 1800 900 604800 86400
. NS a.root-servers.net.
. NS b.root-servers.net.
a.root-servers.net. A 198.41.0.4
a.root-servers.net. AAAA 2001:503:ba3e::2:30
b.root-servers.net. A 199.9.14.201
com. NS a.gtld-servers.net.
net. NS a.gtld-servers.net.
a.gtld-servers.net. A 192.5.6.30
a.gtld-servers.net. AAAA 2001:503:a83e::2:30
org. NS a0.org-servers.org.
a0.org-servers.org. A 199.19.56.1
";

const COM_ZONE: &str = "\
$ORIGIN com.
$TTL 3600
@ SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
@ NS a.gtld-servers.net.
example NS ns1.example
ns1.example A 10.0.0.53
";

const NET_ZONE: &str = "\
$ORIGIN net.
$TTL 3600
@ SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
@ NS a.gtld-servers.net.
a.gtld-servers A 192.5.6.30
a.gtld-servers AAAA 2001:503:a83e::2:30
example NS ns.example
ns.example A 10.0.1.53
ns.example AAAA 2001:db8:1::53
";

const ORG_ZONE: &str = "\
$ORIGIN org.
$TTL 3600
@ SOA a0.org-servers.org. noc.org-servers.org. 1 1800 900 604800 86400
@ NS a0.org-servers.org.
a0.org-servers A 199.19.56.1
example NS ns1.example
ns1.example A 10.0.2.53
";

const EXAMPLE_COM: &str = "\
$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
@ MX 10 mail
ns1 A 10.0.0.53
www A 192.0.2.80
www AAAA 2001:db8::80
mail CNAME www
";

const EXAMPLE_NET: &str = "\
$ORIGIN example.net.
$TTL 300
@ SOA ns hostmaster 1 3600 600 86400 300
@ NS ns
ns A 10.0.1.53
ns AAAA 2001:db8:1::53
www CNAME www.example.com.
txt TXT \"v=spf1 -all\"
";

/// Signed with ldns-signzone by the test.
const EXAMPLE_ORG: &str = "\
$ORIGIN example.org.
$TTL 300
example.org. SOA ns1.example.org. hostmaster.example.org. 1 3600 600 86400 300
example.org. NS ns1.example.org.
ns1.example.org. A 10.0.2.53
alias.example.org. CNAME www.example.net.
www.example.org. A 192.0.2.81
";

/// Nameserver addresses, the zone files they serve, and their level in the hierarchy.
const SERVERS: &[(&str, &str, u8)] = &[
    ("198.41.0.4", "root.zone", 0),
    ("2001:503:ba3e::2:30", "root.zone", 0),
    ("199.9.14.201", "root.zone", 0),
    ("192.5.6.30", "com.zone net.zone", 1),
    ("2001:503:a83e::2:30", "com.zone net.zone", 1),
    ("199.19.56.1", "org.zone", 1),
    ("10.0.0.53", "example.com.zone", 2),
    ("10.0.1.53", "example.net.zone", 2),
    ("2001:db8:1::53", "example.net.zone", 2),
    ("10.0.2.53", "example.org.zone.signed", 2),
];

/// What the resolvers are asked: answers from one zone, CNAME chains across two and three
/// zones, NXDOMAIN, NODATA, and records of the signed zone.
const NAMES: &str = "\
www.example.com A
mail.example.com A
example.com MX
www.example.com AAAA
www.example.net A
txt.example.net TXT
example.net MX
nope.example.com A
alias.example.org A
www.example.org A
example.org DNSKEY
nothing.example.org AAAA
";

fn ldplayer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes the ground-truth zones, signs example.org and writes the manifest.
fn ground_truth(d: &Path) {
    for (file, text) in [
        ("root.zone", ROOT_ZONE),
        ("com.zone", COM_ZONE),
        ("net.zone", NET_ZONE),
        ("org.zone", ORG_ZONE),
        ("example.com.zone", EXAMPLE_COM),
        ("example.net.zone", EXAMPLE_NET),
        ("example.org.zone", EXAMPLE_ORG),
    ] {
        std::fs::write(d.join(file), text).unwrap();
    }
    run(
        Command::new("ldns-keygen").current_dir(d).args([
            "-a",
            "ECDSAP256SHA256",
            "-k",
            "example.org",
        ]),
        "ldns-keygen (ldnsutils)",
    );
    let key_name = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|f| f.starts_with("Kexample.org") && f.ends_with(".private"))
        .expect("ldns-keygen wrote a key")
        .trim_end_matches(".private")
        .to_string();
    run(
        Command::new("ldns-signzone")
            .current_dir(d)
            .args(["-n", "example.org.zone", &key_name]),
        "ldns-signzone",
    );
    // The DS goes into org, as a registry would put it.
    let ds = std::fs::read_to_string(d.join(format!("{key_name}.ds"))).unwrap();
    let mut org = ORG_ZONE.to_string();
    org.push_str(ds.trim());
    org.push('\n');
    std::fs::write(d.join("org.zone"), org).unwrap();
    let mut manifest = String::from("#ldplayer-manifest/1\n");
    for (addr, files, _) in SERVERS {
        manifest.push_str(&format!("{addr} {files}\n"));
    }
    std::fs::write(d.join("manifest"), manifest).unwrap();
    std::fs::write(d.join("names"), NAMES).unwrap();
}

/// One query the resolver sent upstream, as tshark decoded it from the capture.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Upstream {
    level: u8,
    address: String,
    qname: String,
    qtype: String,
}

/// The resolver's upstream queries in the order they were sent.
fn upstream_queries(pcap: &Path) -> Vec<Upstream> {
    let levels: BTreeMap<&str, u8> = SERVERS.iter().map(|(a, _, l)| (*a, *l)).collect();
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", "dns.flags.response == 0", "-T", "fields"])
        .args(["-E", "separator=|", "-e", "ip.dst", "-e", "ipv6.dst"])
        .args(["-e", "dns.qry.name", "-e", "dns.qry.type"])
        .output()
        .expect("tshark must be installed (scripts/test.sh installs it)");
    assert!(out.status.success(), "tshark -r {}", pcap.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('|').collect();
            let address = if f[0].is_empty() { f[1] } else { f[0] };
            let level = *levels
                .get(address)
                .unwrap_or_else(|| panic!("query to {address}, no nameserver of the lab"));
            Some(Upstream {
                level,
                address: address.to_string(),
                qname: f.get(2)?.to_ascii_lowercase(),
                qtype: f.get(3)?.to_string(),
            })
        })
        .collect()
}

/// tcpdump on every interface of the host, for packets of the lab's addresses.
fn host_witness(d: &Path) -> Option<Child> {
    let root = ldplayer_system::process::is_root();
    if !prerequisite::require(
        root,
        "root, for the host-wide tcpdump that checks that no packet leaves the lab",
        "run the tests as root",
    ) {
        return None;
    }
    let mut filter: Vec<String> = SERVERS
        .iter()
        .map(|(a, _, _)| format!("host {a}"))
        .collect();
    filter.push("net 10.53.0.0/30".into());
    filter.push("net fd53::/64".into());
    // A canary on loopback proves the witness sees what it is asked to see.
    filter.push(format!("(host 127.0.0.1 and udp port {CANARY_PORT})"));
    let child = Command::new("tcpdump")
        .args(["-i", "any", "-n", "-U", "--immediate-mode", "-w"])
        .arg(d.join("host.pcap"))
        .arg(filter.join(" or "))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump must be installed (scripts/test.sh installs it)");
    // tcpdump says "listening on" once its capture is open.
    let start = std::time::Instant::now();
    while !d.join("host.pcap").exists() && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let canary = std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    canary
        .send_to(b"canary", ("127.0.0.1", CANARY_PORT))
        .expect("a datagram to loopback");
    Some(child)
}

/// The loopback port of the witness's canary datagram.
const CANARY_PORT: u16 = 47_953;

/// What every lab test needs: network namespaces, ldns to sign the ground truth, unbound,
/// tshark and tcpdump (the witnesses), then each of the `resolvers` (program, Debian package).
fn lab_prerequisites(resolvers: &[(&str, &str)]) -> bool {
    let tools = [
        ("ldns-keygen", "ldnsutils"),
        ("ldns-signzone", "ldnsutils"),
        ("unbound", "unbound"),
        ("tshark", "tshark"),
        ("tcpdump", "tcpdump"),
    ];
    prerequisite::netns()
        && tools
            .iter()
            .chain(resolvers)
            .all(|(tool, package)| prerequisite::tool(tool, package).is_some())
}

#[test]
fn a_hierarchy_rebuilt_from_a_resolvers_capture_resolves_like_the_original() {
    if !lab_prerequisites(&[]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let gt = d.join("gt");
    std::fs::create_dir(&gt).unwrap();
    ground_truth(&gt);
    let witness = host_witness(d);

    // Ground truth: nsd per address, a cold unbound, its upstream traffic captured.
    let gt_log = run(
        ldplayer()
            .arg("lab")
            .arg("--manifest")
            .arg(gt.join("manifest"))
            .args(["--nameservers", "nsd", "--names"])
            .arg(gt.join("names"))
            .arg("--answers")
            .arg(d.join("gt.answers"))
            .arg("--capture")
            .arg(d.join("gt.pcap")),
        "ldplayer lab --nameservers nsd",
    );
    // Rebuild the zones from what the resolver saw.
    let report = ldplayer()
        .args(["zones", "build"])
        .arg(d.join("gt.pcap"))
        .arg("-o")
        .arg(d.join("rebuilt"))
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    // The rebuilt hierarchy, served by the meta-server, to a fresh unbound.
    let rb_log = run(
        ldplayer()
            .arg("lab")
            .arg("--manifest")
            .arg(d.join("rebuilt/manifest"))
            .arg("--names")
            .arg(gt.join("names"))
            .arg("--answers")
            .arg(d.join("rb.answers"))
            .arg("--capture")
            .arg(d.join("rb.pcap")),
        "ldplayer lab (meta-server)",
    );

    if let Some(mut td) = witness {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let _ = ldplayer_system::process::signal(td.id(), ldplayer_system::Signal::INT);
        let _ = td.wait();
        let host = d.join("host.pcap");
        let canary = format!("udp.port == {CANARY_PORT}");
        assert!(
            witness::packets_in(&host, &canary) >= 1,
            "the host witness did not even see its loopback canary"
        );
        let leaked = witness::packets_in(&host, &format!("!({canary})"));
        assert_eq!(
            leaked, 0,
            "the host's interfaces saw {leaked} packets of the lab's addresses"
        );
    }

    let gt_answers = std::fs::read_to_string(d.join("gt.answers")).unwrap();
    let rb_answers = std::fs::read_to_string(d.join("rb.answers")).unwrap();
    // The ground truth itself is what the zones say (the fixture works).
    for expected in [
        "www.example.com. A NOERROR www.example.com. in a 192.0.2.80",
        "www.example.net. A NOERROR www.example.com. in a 192.0.2.80; www.example.net. in cname www.example.com.",
        "alias.example.org. A NOERROR alias.example.org. in cname www.example.net.; www.example.com. in a 192.0.2.80; www.example.net. in cname www.example.com.",
        "nope.example.com. A NXDOMAIN",
    ] {
        assert!(
            gt_answers.lines().any(|l| l.trim_end() == expected),
            "ground truth lacks {expected:?}:\n{gt_answers}\n{gt_log}"
        );
    }
    assert!(!gt_answers.contains(" ERROR "), "{gt_answers}");
    let differences: Vec<String> = gt_answers
        .lines()
        .zip(rb_answers.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("  ground truth: {a}\n  rebuilt:      {b}"))
        .collect();
    assert!(
        differences.is_empty() && gt_answers.lines().count() == rb_answers.lines().count(),
        "answers differ:\n{}\nzones build: {}\nlab: {rb_log}",
        differences.join("\n"),
        String::from_utf8_lossy(&report.stdout)
    );

    // The same questions to the same nameservers, level by level.
    let gt_queries = upstream_queries(&d.join("gt.pcap"));
    let rb_queries = upstream_queries(&d.join("rb.pcap"));
    assert!(
        !gt_queries.is_empty(),
        "the capture holds the upstream queries"
    );
    let asked = |qs: &[Upstream]| -> BTreeSet<(u8, String, String)> {
        qs.iter()
            .map(|q| (q.level, q.qname.clone(), q.qtype.clone()))
            .collect()
    };
    let (gt_asked, rb_asked) = (asked(&gt_queries), asked(&rb_queries));
    assert_eq!(
        gt_asked,
        rb_asked,
        "different questions upstream: only ground truth {:?}, only rebuilt {:?}",
        gt_asked.difference(&rb_asked).collect::<Vec<_>>(),
        rb_asked.difference(&gt_asked).collect::<Vec<_>>()
    );
    // (Every query went to a ground-truth nameserver address: `upstream_queries` checks.)
    for (what, qs) in [("ground truth", &gt_queries), ("rebuilt", &rb_queries)] {
        let first_at = |level: u8| {
            qs.iter()
                .position(|q| q.level == level)
                .unwrap_or(usize::MAX)
        };
        assert!(
            first_at(0) < first_at(1) && first_at(1) < first_at(2) && first_at(2) < qs.len(),
            "{what}: the walk goes root, TLD, second level: {qs:?}"
        );
    }
}

/// The lab's other resolvers walk the same hierarchy, served by the meta-server, to the same
/// answers as unbound; and the lab replays a stub trace through unbound with the replay engine.
#[test]
fn every_resolver_kind_resolves_through_the_meta_server_and_a_trace_replays() {
    let resolvers = [
        ("kresd", "knot-resolver"),
        ("named", "bind9"),
        ("pdns_recursor", "pdns-recursor"),
    ];
    if !lab_prerequisites(&resolvers) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    ground_truth(d);
    let answers_of = |resolver: &str| -> String {
        let out = d.join(format!("{resolver}.answers"));
        run(
            ldplayer()
                .arg("lab")
                .arg("--manifest")
                .arg(d.join("manifest"))
                .args(["--resolver", resolver, "--names"])
                .arg(d.join("names"))
                .arg("--answers")
                .arg(&out)
                .arg("--work-dir")
                .arg(d.join(format!("work-{resolver}"))),
            &format!("ldplayer lab --resolver {resolver}"),
        );
        std::fs::read_to_string(out).unwrap()
    };
    let unbound = answers_of("unbound");
    assert_eq!(unbound.lines().count(), NAMES.lines().count(), "{unbound}");
    assert!(!unbound.contains(" ERROR "), "{unbound}");
    for resolver in ["knot-resolver", "bind9", "pdns-recursor"] {
        let theirs = answers_of(resolver);
        let differences: Vec<String> = unbound
            .lines()
            .zip(theirs.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("  unbound:   {a}\n  {resolver}: {b}"))
            .collect();
        assert!(
            differences.is_empty() && theirs.lines().count() == unbound.lines().count(),
            "{resolver} answers differently:\n{}\n{theirs}",
            differences.join("\n")
        );
    }

    // A stub trace (RD set) of names under example.com, replayed with its own timing.
    let trace = d.join("stub.bin");
    run(
        ldplayer()
            .args([
                "synth",
                "--workload",
                "poisson",
                "--rate",
                "200",
                "-n",
                "300",
            ])
            .args(["--zone", "example.com", "--rd", "-q", "-o"])
            .arg(&trace),
        "ldplayer synth",
    );
    let out = ldplayer()
        .arg("lab")
        .arg("--manifest")
        .arg(d.join("manifest"))
        .arg("--trace")
        .arg(&trace)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "--json prints one object ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(summary["sent"], 300, "{summary}");
    assert_eq!(summary["answered"], 300, "{summary}");
    assert_eq!(
        summary["rcodes"]["NXDOMAIN"], 300,
        "unique names under example.com do not exist: {summary}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("meta-server:") && !stderr.contains(" 0 UDP and 0 TCP queries"),
        "the resolver asked the meta-server: {stderr}"
    );

    // The same trace from stubs over DNS over TLS and DNS over HTTPS (POST), to the resolvers
    // that serve them: every query answered, over the transport asked for.
    for (resolver, proto, transport) in [
        ("unbound", "tls", "tls"),
        ("unbound", "doh", "https"),
        ("knot-resolver", "doh", "https"),
        ("bind9", "doh", "https"),
    ] {
        let out = ldplayer()
            .arg("lab")
            .arg("--manifest")
            .arg(d.join("manifest"))
            .args(["--resolver", resolver, "--proto", proto, "--trace"])
            .arg(&trace)
            .arg("--json")
            .output()
            .unwrap();
        let what = format!("{resolver} over {proto}");
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(summary["answered"], 300, "{what}: {summary}");
        // (A resolver may still fail one of the first queries while it primes: kresd
        // answered SERVFAIL once in 300.)
        let nxdomain = summary["rcodes"]["NXDOMAIN"].as_u64().unwrap_or(0);
        assert!(nxdomain >= 295, "{what}: {summary}");
        assert_eq!(
            summary["latency_ms"][transport]["count"], 300,
            "{what}: every answer came over {transport}: {summary}"
        );
    }
    // PowerDNS Recursor serves neither: the lab says so before it runs.
    let out = ldplayer()
        .arg("lab")
        .arg("--manifest")
        .arg(d.join("manifest"))
        .args(["--resolver", "pdns-recursor", "--proto", "doh", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("neither DNS over TLS nor DNS over HTTPS"),
        "{stderr}"
    );
}

/// Every file of `dir` (not recursing), by name, with its text, the folder's own path in it
/// (BIND's configuration names it) written `DIR`.
fn files_of(dir: &Path) -> BTreeMap<String, String> {
    let own = dir.to_string_lossy().into_owned();
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            let text =
                String::from_utf8_lossy(&std::fs::read(&p).expect("read")).replace(&own, "DIR");
            (name, text)
        })
        .collect()
}

#[test]
fn a_resolvers_dnstap_log_rebuilds_the_same_zones_as_its_capture() {
    if !lab_prerequisites(&[]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let gt = d.join("gt");
    std::fs::create_dir(&gt).unwrap();
    ground_truth(&gt);
    // One run, two witnesses of the resolver's upstream traffic: tcpdump on the link, and
    // unbound's own dnstap sent to the lab's collector.
    let log = run(
        ldplayer()
            .arg("lab")
            .arg("--manifest")
            .arg(gt.join("manifest"))
            .args(["--nameservers", "nsd", "--names"])
            .arg(gt.join("names"))
            .arg("--answers")
            .arg(d.join("gt.answers"))
            .arg("--capture")
            .arg(d.join("gt.pcap"))
            .arg("--dnstap")
            .arg(d.join("upstream.bin")),
        "ldplayer lab --capture --dnstap",
    );
    assert!(log.contains("the resolver's dnstap:"), "{log}");
    // The same upstream queries in both: tshark counts the capture's, inspect the trace's.
    let captured_queries = witness::packets_in(&d.join("gt.pcap"), "dns.flags.response == 0");
    let out = ldplayer()
        .arg("inspect")
        .arg(d.join("upstream.bin"))
        .arg("--json")
        .output()
        .expect("inspect runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(captured_queries > 0);
    assert_eq!(
        v["queries"].as_u64(),
        Some(captured_queries as u64),
        "dnstap and the capture hold different numbers of upstream queries: {log}"
    );
    // zones build from each: the same zones.
    for (input, out) in [("gt.pcap", "from-capture"), ("upstream.bin", "from-dnstap")] {
        run(
            ldplayer()
                .args(["zones", "build"])
                .arg(d.join(input))
                .arg("-o")
                .arg(d.join(out))
                .arg("-q"),
            "zones build",
        );
    }
    let (a, b) = (
        files_of(&d.join("from-capture")),
        files_of(&d.join("from-dnstap")),
    );
    assert!(a.len() > 3, "zones were rebuilt: {:?}", a.keys());
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, text) in &a {
        assert!(
            text == &b[name],
            "{name} differs:\n--- from the capture\n{text}\n--- from dnstap\n{}",
            b[name]
        );
    }
    // The hierarchy rebuilt from dnstap, served by the meta-server: the resolver's dnstap
    // counts the responses by zone level as the meta-server counts what it sent.
    let log = run(
        ldplayer()
            .arg("lab")
            .arg("--manifest")
            .arg(d.join("from-dnstap/manifest"))
            .arg("--names")
            .arg(gt.join("names"))
            .arg("--answers")
            .arg(d.join("rb.answers"))
            .arg("--dnstap")
            .arg(d.join("rb-upstream.bin")),
        "ldplayer lab --dnstap (meta-server)",
    );
    let levels = |prefix: &str| -> String {
        log.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split("by zone level: ").nth(1))
            .unwrap_or_else(|| panic!("no levels after {prefix:?}:\n{log}"))
            .to_string()
    };
    let (dnstap, meta) = (
        levels("ldplayer lab: the resolver's dnstap:"),
        levels("ldplayer lab: meta-server:"),
    );
    assert!(
        dnstap.starts_with("root ") && !dnstap.starts_with("root 0 "),
        "{log}"
    );
    assert_eq!(dnstap, meta, "{log}");
}
