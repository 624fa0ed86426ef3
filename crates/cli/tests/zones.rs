//! `ldplayer zones build` on real captures of resolvers iterating from the root (shared/data):
//! the zones it writes (`--layout files`) are accepted by BIND's, NSD's and Knot's zone
//! checkers, the BIND export by `named-checkconf -z`, and `ldplayer serve --manifest` answers
//! from them per address, and from the default layout's bundles alike.

mod binary;

use binary::ldplayer;
use ldplayer_testbed::{prerequisite, witness};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A capture of the shared test data; `None` only when it is missing and skipping is allowed.
fn capture(name: &str) -> Option<PathBuf> {
    prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), &format!("pcap/{name}"))
}

#[test]
fn rebuilds_root_tld_and_sld_zones_that_zone_checkers_accept() {
    if !prerequisite::tools(&[
        ("kdig", "knot-dnsutils"),
        ("nsd-checkzone", "nsd"),
        ("kzonecheck", "knot-dnssecutils"),
        ("named-checkconf", "bind9-utils"),
    ]) {
        return;
    }
    let (Some(response), Some(edns)) = (
        capture("rfcdnscomp_response.pcap"),
        capture("dnscap_edns.pcap"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("zones");
    let out = ldplayer(&[
        "zones",
        "build",
        response.to_str().unwrap(),
        edns.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--layout",
        "files",
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    // The five recursive answers in dnscap_edns.pcap (a stub's lookups) are not zone data.
    assert_eq!(report["responses_unused"]["recursive"], 5, "{report}");
    assert_eq!(report["responses_used"], 10, "{report}");
    // H-root's 2018 address answered a referral but was not in the captured glue.
    assert_eq!(report["inferred_servers"][0], "198.97.190.53 .", "{report}");

    let zones = [
        (".", "root.zone"),
        ("cz", "cz.zone"),
        ("nic.cz", "nic.cz.zone"),
        ("net", "net.zone"),
        ("aaa", "aaa.zone"),
    ];
    for (origin, file) in zones {
        witness::checker_accepts(
            "named-checkzone",
            &["-q", "-i", "local", origin, file],
            &out_dir,
        );
        witness::checker_accepts("nsd-checkzone", &[origin, file], &out_dir);
        // The captured zones hold RRSIGs but never their DNSKEYs: no DNSSEC validation.
        witness::checker_accepts("kzonecheck", &["-d", "off", "-o", origin, file], &out_dir);
    }
    witness::checker_accepts("named-checkconf", &["-z", "named.conf"], &out_dir);

    // cz's SOA came from an NXDOMAIN answer, with the negative TTL (900 s, its MINIMUM);
    // its RRSIG gives the zone's TTL, which the SOA gets back (the server answers negatives
    // with the smaller of the two again); the root's was synthesized.
    let cz = std::fs::read_to_string(out_dir.join("cz.zone")).unwrap();
    assert!(
        cz.contains(
            "cz. 18000 IN SOA a.ns.nic.cz. hostmaster.nic.cz. 1427189922 900 300 604800 900"
        ),
        "{cz}"
    );
    assert!(cz.contains("IN NSEC3 1 0 10 BB8BF1F4BB02AFA6"), "{cz}");
    let root = std::fs::read_to_string(out_dir.join("root.zone")).unwrap();
    assert!(root.contains("SOA synthesized"), "{root}");
    assert!(
        root.contains("cz. 172800 IN NS a.ns.nic.cz."),
        "the delegation to cz: {root}"
    );
    assert!(
        root.contains("a.root-servers.net. 3600000 IN A 198.41.0.4"),
        "{root}"
    );
    assert!(
        root.contains("RRSIG NS 8 0 518400 2015"),
        "signature times as dates: {root}"
    );

    let manifest = std::fs::read_to_string(out_dir.join("manifest")).unwrap();
    for line in [
        "198.41.0.4 root.zone",
        "2001:503:ba3e::2:30 root.zone",
        "194.0.12.1 cz.zone nic.cz.zone",
        "192.5.6.30 net.zone",
    ] {
        assert!(
            manifest.lines().any(|l| l == line),
            "{line:?} in {manifest}"
        );
    }
    let hints = std::fs::read_to_string(out_dir.join("root.hints")).unwrap();
    assert!(
        hints.contains(".\t3600000\tNS\ta.root-servers.net."),
        "{hints}"
    );
    assert!(
        hints.contains("a.root-servers.net.\t3600000\tA\t198.41.0.4"),
        "{hints}"
    );
    let conf = std::fs::read_to_string(out_dir.join("named.conf")).unwrap();
    assert!(
        conf.contains("match-destinations {") && conf.contains("198.41.0.4;"),
        "{conf}"
    );

    // The manifest loads in the meta-server (split mode, on a free port so no root is needed).
    serve_refuses_others(&out_dir.join("manifest"));

    // The default layout: the root zone, a bundle per level, no BIND configuration; the same
    // zones and answers (crates/zonebuild/tests/layouts.rs compares them query by query).
    let bundles = dir.path().join("bundles");
    let out = ldplayer(&[
        "zones",
        "build",
        response.to_str().unwrap(),
        edns.to_str().unwrap(),
        "-o",
        bundles.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("BIND configuration: none") && text.contains("--layout files"),
        "{text}"
    );
    let mut listed: Vec<String> = std::fs::read_dir(&bundles)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "level1.zones",
            "level2.zones",
            "manifest",
            "root.hints",
            "root.zone"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(bundles.join("root.zone")).unwrap(),
        root,
        "root.zone is the same file in both layouts"
    );
    let level1 = std::fs::read_to_string(bundles.join("level1.zones")).unwrap();
    assert!(level1.contains(&format!("$ORIGIN cz.\n{cz}")), "{level1}");
    serve_refuses_others(&bundles.join("manifest"));
}

/// `serve --manifest` loads the five zones (on a free port, so no root is needed) and refuses
/// a query to an address that is no nameserver of the hierarchy.
fn serve_refuses_others(manifest: &Path) {
    let port = ldplayer_testbed::free_port().to_string();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["serve", "--manifest"])
        .arg(manifest)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // 127.0.0.1 is no nameserver of the hierarchy: refused.
    let dig = Command::new("kdig")
        .args(["@127.0.0.1", "-p", &port, "+timeout=2", "cz.", "NS"])
        .output()
        .unwrap();
    let _ = Command::new("kill")
        .args(["-INT", &serve.id().to_string()])
        .status();
    let status = serve.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(serve.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("5 zones for 71 nameserver addresses"), "{err}");
    let dig = String::from_utf8_lossy(&dig.stdout);
    assert!(dig.contains("status: REFUSED"), "{dig}");
}

/// The TLDs the root zone delegates, read from the file as text (an independent count).
fn delegated_tlds(root: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(root)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 5 && f[3] == "NS" && f[0] != ".").then(|| f[0].to_string())
        })
        .collect()
}

#[test]
fn root_zone_alone_warns_of_delegations_without_zones() {
    let Some(root) =
        prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), "zones/root-2018-03-12.zone")
    else {
        return;
    };
    let tlds = delegated_tlds(&root);
    assert!(tlds.len() > 1000 && tlds.contains("aaa."), "{}", tlds.len());
    let dir = tempfile::tempdir().unwrap();
    let out = ldplayer(&[
        "zones",
        "build",
        "--zone",
        root.to_str().unwrap(),
        "-o",
        dir.path().join("root-only").to_str().unwrap(),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let missing: std::collections::BTreeSet<String> = report["delegations_without_zone"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(missing, tlds);
    let warning = String::from_utf8_lossy(&out.stderr);
    assert!(
        warning.contains(&format!(
            "warning: {} delegations lead to no zone of this hierarchy (aaa. aarp. abarth. abb. abbott. and {} more)",
            tlds.len(),
            tlds.len() - 5
        )) && warning.contains("REFUSED")
            && warning.contains("--zone"),
        "{warning}"
    );

    // A zone for one TLD: one delegation fewer.
    let aaa = dir.path().join("aaa.zone");
    std::fs::write(
        &aaa,
        "$ORIGIN aaa.\n$TTL 3600\n@ SOA ns1.dns.nic.aaa. h 1 2 3 4 5\n@ NS ns1.dns.nic.aaa.\n",
    )
    .unwrap();
    let out = ldplayer(&[
        "zones",
        "build",
        "--zone",
        root.to_str().unwrap(),
        "--zone",
        aaa.to_str().unwrap(),
        "-o",
        dir.path().join("with-aaa").to_str().unwrap(),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let missing = report["delegations_without_zone"].as_array().unwrap();
    assert_eq!(missing.len(), tlds.len() - 1);
    assert!(!missing.iter().any(|v| v == "aaa."));
    let warning = String::from_utf8_lossy(&out.stderr);
    assert!(
        warning.contains("(aarp. abarth. abb. abbott. abbvie. and"),
        "{warning}"
    );
}
