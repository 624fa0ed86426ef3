//! `ldplayer serve --manifest` in a network namespace where every address is local: queries to
//! the root, com and example.com nameserver addresses (IPv4 and IPv6, UDP and TCP) are answered
//! from the zones of that nameserver, queries to any other address are refused, and tcpdump (an
//! independent witness) shows every answer leaving from the address its query was sent to.
//!
//! The namespace is made with `unshare -n` as root, or `unshare -rn` (inside a user namespace)
//! otherwise, where tcpdump may refuse to drop its privileges; nothing in it has a route out.

use ldplayer_testbed::prerequisite;
use std::process::Command;

const COM_ZONE: &str = "\
$ORIGIN com.
$TTL 3600
@ SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
@ NS a.gtld-servers.net.
example NS ns1.example
ns1.example A 10.0.0.53
";

const EXAMPLE_ZONE: &str = "\
$ORIGIN example.com.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
ns1 A 10.0.0.53
www A 192.0.2.80
";

/// The queries: (output name, kdig arguments).
const QUERIES: &[(&str, &[&str])] = &[
    ("root_udp4", &["@198.41.0.4", "www.example.com.", "A"]),
    (
        "root_udp6",
        &["@2001:503:ba3e::2:30", "www.example.com.", "A"],
    ),
    (
        "root_tcp4",
        &["+tcp", "@199.9.14.201", "www.example.com.", "A"],
    ),
    ("com_udp4", &["@192.5.6.30", "www.example.com.", "A"]),
    ("com_asked_for_root", &["@192.5.6.30", ".", "SOA"]),
    ("example_udp4", &["@10.0.0.53", "www.example.com.", "A"]),
    (
        "example_tcp4",
        &["+tcp", "@10.0.0.53", "www.example.com.", "A"],
    ),
    ("nobody_udp4", &["@10.9.9.9", ".", "SOA"]),
    ("nobody_tcp6", &["+tcp", "@2001:db8::99", ".", "SOA"]),
];

#[test]
fn answers_per_nameserver_address_and_replies_from_it() {
    if !prerequisite::netns()
        || prerequisite::tool("kdig", "knot-dnsutils").is_none()
        || prerequisite::tool("tcpdump", "tcpdump").is_none()
        || prerequisite::tool("tshark", "tshark").is_none()
    {
        return;
    }
    let Some(root) =
        prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), "zones/root-2018-03-12.zone")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("com.zone"), COM_ZONE).unwrap();
    std::fs::write(d.join("example.com.zone"), EXAMPLE_ZONE).unwrap();
    std::fs::write(
        d.join("manifest"),
        format!(
            "#ldplayer-manifest/1\n198.41.0.4 {r}\n2001:503:ba3e::2:30 {r}\n199.9.14.201 {r}\n\
             192.5.6.30 com.zone\n10.0.0.53 example.com.zone\n",
            r = root.display()
        ),
    )
    .unwrap();
    let mut script = String::from(
        "set -eu\n\
         ip link set lo up\n\
         ip route add local 0.0.0.0/0 dev lo\n\
         ip -6 route add local ::/0 dev lo\n\
         tcpdump -i lo -n -U --immediate-mode -w \"$D/wire.pcap\" port 53 2>\"$D/tcpdump.err\" &\n\
         td=$!\n\
         \"$LDPLAYER\" serve --manifest \"$D/manifest\" --port 53 2>\"$D/serve.err\" &\n\
         sv=$!\n\
         for i in $(seq 100); do kdig @198.41.0.4 . SOA +short +timeout=1 +retry=0 >/dev/null 2>&1 && break; sleep 0.1; done\n\
         sleep 0.5\n",
    );
    for (name, args) in QUERIES {
        script.push_str(&format!(
            "kdig +timeout=2 +retry=0 {} > \"$D/{name}.out\" 2>&1 || true\n",
            args.join(" ")
        ));
    }
    script
        .push_str("sleep 0.5\nkill -INT $sv; wait $sv || true\nkill -INT $td; wait $td || true\n");
    std::fs::write(d.join("lab.sh"), script).unwrap();
    let root = ldplayer_system::process::is_root();
    let status = Command::new("unshare")
        .arg(if root { "-n" } else { "-rn" })
        .arg("sh")
        .arg(d.join("lab.sh"))
        .env("D", d)
        .env("LDPLAYER", env!("CARGO_BIN_EXE_ldplayer"))
        .status()
        .expect("unshare (util-linux) runs");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    assert!(
        status.success(),
        "lab script failed: {}{}",
        read("serve.err"),
        read("tcpdump.err")
    );

    // The root's addresses refer to com, whichever family and transport.
    for q in ["root_udp4", "root_udp6", "root_tcp4"] {
        let out = read(&format!("{q}.out"));
        assert!(out.contains("status: NOERROR"), "{q}: {out}");
        assert!(
            out.contains("a.gtld-servers.net."),
            "{q}: a referral to com: {out}"
        );
        assert!(
            !out.contains("Flags: qr aa"),
            "{q}: a referral is not authoritative: {out}"
        );
    }
    // com's address refers to example.com, and does not serve the root.
    let com = read("com_udp4.out");
    assert!(
        com.contains("ns1.example.com.") && com.contains("10.0.0.53"),
        "{com}"
    );
    let com_root = read("com_asked_for_root.out");
    assert!(com_root.contains("status: REFUSED"), "{com_root}");
    // example.com's address answers authoritatively.
    for q in ["example_udp4", "example_tcp4"] {
        let out = read(&format!("{q}.out"));
        assert!(
            out.contains("Flags: qr aa") && out.contains("192.0.2.80"),
            "{q}: {out}"
        );
    }
    // Addresses of no nameserver are refused and counted.
    for q in ["nobody_udp4", "nobody_tcp6"] {
        let out = read(&format!("{q}.out"));
        assert!(out.contains("status: REFUSED"), "{q}: {out}");
    }
    let serve_err = read("serve.err");
    assert!(
        serve_err.contains("2 to addresses of no nameserver"),
        "{serve_err}"
    );

    // The witness: every response leaves from the address its query went to, over both
    // families and transports.
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(d.join("wire.pcap"))
        .args(["-Y", "dns", "-T", "fields", "-E", "separator=|"])
        .args([
            "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src", "-e", "ipv6.dst",
        ])
        .args(["-e", "dns.flags.response", "-e", "dns.id"])
        .output()
        .expect("tshark must be installed (scripts/test.sh installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut queries = Vec::new();
    let mut responses = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 6 {
            continue;
        }
        let (src, dst) = if f[0].is_empty() {
            (f[2], f[3])
        } else {
            (f[0], f[1])
        };
        let entry = (src.to_string(), dst.to_string(), f[5].to_string());
        if f[4] == "1" || f[4] == "True" {
            responses.push(entry);
        } else {
            queries.push(entry);
        }
    }
    let mut nameservers_seen = std::collections::BTreeSet::new();
    for (src, dst, id) in &responses {
        assert!(
            queries
                .iter()
                .any(|(qs, qd, qid)| qs == dst && qd == src && qid == id),
            "response {id} from {src} to {dst} answers no query sent to {src}: {queries:?}"
        );
        nameservers_seen.insert(src.clone());
    }
    for ns in [
        "198.41.0.4",
        "2001:503:ba3e::2:30",
        "199.9.14.201",
        "192.5.6.30",
        "10.0.0.53",
        "10.9.9.9",
        "2001:db8::99",
    ] {
        assert!(
            nameservers_seen.contains(ns),
            "no response from {ns} on the wire: {nameservers_seen:?}"
        );
    }
}

/// The queries over TLS: (output name, kdig arguments); each names the server by `localhost`
/// (in the certificate with every nameserver address) since 10.9.9.9 and 2001:db8::99 are in
/// no view and so not in the certificate.
const TLS_QUERIES: &[(&str, &[&str])] = &[
    ("root_tls4", &["@198.41.0.4", "www.example.com.", "A"]),
    (
        "root_tls6",
        &["@2001:503:ba3e::2:30", "www.example.com.", "A"],
    ),
    ("com_tls4", &["@192.5.6.30", "www.example.com.", "A"]),
    ("com_tls4_asked_for_root", &["@192.5.6.30", ".", "SOA"]),
    ("example_tls4", &["@10.0.0.53", "www.example.com.", "A"]),
    ("nobody_tls4", &["@10.9.9.9", ".", "SOA"]),
    ("nobody_tls6", &["@2001:db8::99", ".", "SOA"]),
];

/// The same split horizon over DNS over TLS: `serve --manifest --tls-listen` on both wildcard
/// addresses with a self-signed certificate; kdig (checking the certificate against the CA
/// serve made) gets each nameserver's own answers, and addresses of no nameserver are refused
/// and counted. The certificate names every nameserver address, which kdig checks too.
#[test]
fn answers_per_nameserver_address_over_tls() {
    if !prerequisite::netns() || prerequisite::tool("kdig", "knot-dnsutils").is_none() {
        return;
    }
    let Some(root) =
        prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), "zones/root-2018-03-12.zone")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("com.zone"), COM_ZONE).unwrap();
    std::fs::write(d.join("example.com.zone"), EXAMPLE_ZONE).unwrap();
    std::fs::write(
        d.join("manifest"),
        format!(
            "#ldplayer-manifest/1\n198.41.0.4 {r}\n2001:503:ba3e::2:30 {r}\n\
             192.5.6.30 com.zone\n10.0.0.53 example.com.zone\n",
            r = root.display()
        ),
    )
    .unwrap();
    let tls = "+tls +tls-ca=\"$D/tls/ca.pem\" +tls-hostname=localhost";
    let mut script = format!(
        "set -eu\n\
         ip link set lo up\n\
         ip route add local 0.0.0.0/0 dev lo\n\
         ip -6 route add local ::/0 dev lo\n\
         \"$LDPLAYER\" serve --manifest \"$D/manifest\" --port 53 --tls-listen 0.0.0.0:853 \
         --tls-listen '[::]:853' --tls-self-signed \"$D/tls\" >\"$D/serve.json\" 2>\"$D/serve.err\" &\n\
         sv=$!\n\
         for i in $(seq 100); do kdig @198.41.0.4 . SOA +short +timeout=1 +retry=0 {tls} >/dev/null 2>&1 && break; sleep 0.1; done\n"
    );
    for (name, args) in TLS_QUERIES {
        script.push_str(&format!(
            "kdig +timeout=2 +retry=0 {tls} {} > \"$D/{name}.out\" 2>&1 || true\n",
            args.join(" ")
        ));
    }
    // The meta-server's certificate names the nameservers' addresses: checked by address.
    script.push_str(
        "kdig +timeout=2 +retry=0 +tls +tls-ca=\"$D/tls/ca.pem\" +tls-hostname=10.0.0.53 \
         @10.0.0.53 www.example.com. A > \"$D/example_by_address.out\" 2>&1 || true\n\
         kill -INT $sv; wait $sv || true\n",
    );
    std::fs::write(d.join("lab.sh"), script).unwrap();
    let root_user = ldplayer_system::process::is_root();
    let status = Command::new("unshare")
        .arg(if root_user { "-n" } else { "-rn" })
        .arg("sh")
        .arg(d.join("lab.sh"))
        .env("D", d)
        .env("LDPLAYER", env!("CARGO_BIN_EXE_ldplayer"))
        .status()
        .expect("unshare (util-linux) runs");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    assert!(status.success(), "lab script failed: {}", read("serve.err"));

    for q in ["root_tls4", "root_tls6"] {
        let out = read(&format!("{q}.out"));
        assert!(out.contains(";; TLS session"), "{q}: over TLS: {out}");
        assert!(out.contains("status: NOERROR"), "{q}: {out}");
        assert!(
            out.contains("a.gtld-servers.net."),
            "{q}: a referral to com: {out}"
        );
    }
    let com = read("com_tls4.out");
    assert!(
        com.contains("ns1.example.com.") && com.contains("10.0.0.53"),
        "{com}"
    );
    let com_root = read("com_tls4_asked_for_root.out");
    assert!(com_root.contains("status: REFUSED"), "{com_root}");
    for q in ["example_tls4", "example_by_address"] {
        let out = read(&format!("{q}.out"));
        assert!(
            out.contains("Flags: qr aa") && out.contains("192.0.2.80"),
            "{q}: {out}"
        );
    }
    for q in ["nobody_tls4", "nobody_tls6"] {
        let out = read(&format!("{q}.out"));
        assert!(out.contains(";; TLS session"), "{q}: over TLS: {out}");
        assert!(out.contains("status: REFUSED"), "{q}: {out}");
    }
    let v: serde_json::Value = serde_json::from_str(&read("serve.json"))
        .unwrap_or_else(|e| panic!("{e}: {}", read("serve.err")));
    assert_eq!(v["refused_by_address"], 2, "{v}");
    assert_eq!(v["udp_queries"], 0, "{v}");
    assert_eq!(v["tcp_queries"], 0, "{v}");
    // The readiness loop's queries come on top of the eight above.
    let tls_queries = v["tls_queries"].as_u64().expect("tls_queries");
    assert!(tls_queries >= 8, "{v}");
    assert_eq!(v["tls_handshakes"].as_u64(), Some(tls_queries), "{v}");
    assert_eq!(v["tls_errors"], 0, "{v}");
}
