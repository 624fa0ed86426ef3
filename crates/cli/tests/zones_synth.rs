//! `ldplayer zones synth`: the synthetic hierarchy it writes passes BIND's and Knot's zone
//! checkers, `serve --manifest` answers from it per nameserver address (a referral from the
//! root's, an answer and a wildcard answer from a provider's), and, signed with NSEC or NSEC3,
//! it validates through unbound in the lab with `--trust-anchor auto`.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use ldplayer_testbed::{prerequisite, witness};
use std::process::Command;

#[test]
fn the_synthetic_hierarchy_passes_zone_checkers() {
    if !prerequisite::tools(&[
        ("named-checkconf", "bind9-utils"),
        ("named-checkzone", "bind9-utils"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("h");
    let out = ldplayer(&[
        "zones",
        "synth",
        "-o",
        &s(&out_dir),
        "--tlds",
        "32",
        "--slds",
        "3",
        "--providers",
        "5",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(summary["zones"], 1 + 32 + 32 * 3, "{summary}");
    assert_eq!(summary["nameserver_addresses"], 1 + 32 + 5, "{summary}");
    assert_eq!(summary["signed"], serde_json::Value::Null, "{summary}");
    // BIND loads every zone of its configuration; a few are checked one by one too.
    witness::checker_accepts("named-checkconf", &["-z", "named.conf"], &out_dir);
    for (zone, file) in [
        (".", "root.zone"),
        ("com", "com.zone"),
        ("net", "net.zone"),
        ("tld31", "tld31.zone"),
        ("sld2.tld31", "sld2.tld31.zone"),
    ] {
        witness::checker_accepts("named-checkzone", &["-q", zone, file], &out_dir);
    }
    let manifest = std::fs::read_to_string(out_dir.join("manifest")).unwrap();
    assert!(manifest.contains("\n10.0.0.1 root.zone\n"), "{manifest}");
    assert!(manifest.contains("\n10.1.0.1 com.zone\n"), "{manifest}");
    // SLDs share the provider addresses: sld0.com is the first, sld0.net the fourth.
    let provider = manifest
        .lines()
        .find(|l| l.starts_with("10.2.0.1 "))
        .unwrap_or_else(|| panic!("{manifest}"));
    assert!(
        provider.contains(" sld0.com.zone") && provider.split(' ').count() > 2,
        "{provider}"
    );
    let hints = std::fs::read_to_string(out_dir.join("root.hints")).unwrap();
    assert!(
        hints.contains("a.root-servers.net.\t3600000\tA\t10.0.0.1"),
        "{hints}"
    );
    // The TLDs past the root-like workload's are numbered.
    let root = std::fs::read_to_string(out_dir.join("root.zone")).unwrap();
    assert!(
        root.contains("tld31. 172800 IN NS ns1.nic.tld31."),
        "{root}"
    );
}

#[test]
fn serve_answers_the_synthetic_hierarchy_per_nameserver_address() {
    if !prerequisite::netns() || !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ldplayer(&["zones", "synth", "-o", &s(&d.join("h")), "-q"]);
    // Inside a network namespace of its own where every address is local (as the lab does).
    let queries: [(&str, &str); 5] = [
        ("root", "@10.0.0.1 www.sld0.com. A"),
        ("com", "@10.1.0.1 www.sld0.com. A"),
        ("provider", "@10.2.0.1 www.sld0.com. A"),
        ("wildcard", "@10.2.0.1 unique-42.sld0.com. A"),
        ("other_provider", "@10.2.0.2 www.sld0.com. A"),
    ];
    let mut script = String::from(
        "set -eu\n\
         ip link set lo up\n\
         ip route add local 0.0.0.0/0 dev lo\n\
         \"$LDPLAYER\" serve --manifest \"$D/h/manifest\" --port 53 >/dev/null 2>\"$D/serve.err\" &\n\
         sv=$!\n\
         for i in $(seq 100); do kdig @10.0.0.1 . SOA +short +timeout=1 +retry=0 >/dev/null 2>&1 && break; sleep 0.1; done\n",
    );
    for (name, args) in queries {
        script.push_str(&format!(
            "kdig +timeout=2 +retry=0 {args} > \"$D/{name}.out\" 2>&1 || true\n"
        ));
    }
    script.push_str("kill -INT $sv; wait $sv || true\n");
    std::fs::write(d.join("run.sh"), script).unwrap();
    let root = prerequisite::effective_uid_is_root();
    let status = Command::new("unshare")
        .arg(if root { "-n" } else { "-rn" })
        .arg("sh")
        .arg(d.join("run.sh"))
        .env("D", d)
        .env("LDPLAYER", env!("CARGO_BIN_EXE_ldplayer"))
        .status()
        .expect("unshare (util-linux) runs");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    assert!(status.success(), "{}", read("serve.err"));
    let root_out = read("root.out");
    assert!(
        root_out.contains("status: NOERROR")
            && !root_out.contains("Flags: qr aa")
            && root_out.contains("ns1.nic.com.")
            && root_out.contains("10.1.0.1"),
        "the root refers to com with glue: {root_out}"
    );
    let com = read("com.out");
    assert!(
        com.contains("ns1.sld0.com.") && com.contains("10.2.0.1") && !com.contains("qr aa"),
        "com refers to sld0.com with glue: {com}"
    );
    let provider = read("provider.out");
    assert!(
        provider.contains("Flags: qr aa") && provider.contains("192.0.2.80"),
        "{provider}"
    );
    let wildcard = read("wildcard.out");
    assert!(
        wildcard.contains("Flags: qr aa")
            && wildcard.contains("unique-42.sld0.com.")
            && wildcard.contains("192.0.2.1"),
        "{wildcard}"
    );
    let other = read("other_provider.out");
    assert!(
        other.contains("status: REFUSED"),
        "sld0.com is not served at another provider's address: {other}"
    );
}

/// The lab's answers through a validating unbound for the hierarchy in `dir` (signed with
/// `sign`): an insecure delegation resolves without AD, a junk TLD is denied with AD, a TLD's
/// SOA validates.
fn validates_in_the_lab(sign: &str) {
    if !prerequisite::netns()
        || !prerequisite::tools(&[
            ("ldns-keygen", "ldnsutils"),
            ("ldns-signzone", "ldnsutils"),
            ("unbound", "unbound"),
            ("kzonecheck", "knot-dnssecutils"),
        ])
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = ldplayer(&["zones", "synth", "-o", &s(&d.join("h")), sign, "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    let how = sign.trim_start_matches("--").replace("sign", "nsec");
    assert_eq!(summary["signed"], how.as_str(), "{summary}");
    let h = d.join("h");
    assert!(
        std::fs::read_dir(h.join("keys"))
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().ends_with(".private")),
        "keys in DIR/keys"
    );
    // The files the manifest points at are the signed ones, and Knot's checker accepts them
    // (signatures included).
    let root = std::fs::read_to_string(h.join("root.zone")).unwrap();
    assert!(
        root.contains(" DNSKEY ") && root.contains("com. 172800 IN DS "),
        "{root}"
    );
    let com = std::fs::read_to_string(h.join("com.zone")).unwrap();
    let denial = if how == "nsec3" { " NSEC3 " } else { " NSEC " };
    assert!(
        com.contains(" RRSIG ") && com.contains(denial),
        "{how}: {com}"
    );
    let sld = std::fs::read_to_string(h.join("sld0.com.zone")).unwrap();
    assert!(!sld.contains("RRSIG"), "SLDs stay unsigned: {sld}");
    witness::checker_accepts("kzonecheck", &["-o", ".", "-d", "on", "root.zone"], &h);
    witness::checker_accepts("kzonecheck", &["-o", "com", "-d", "on", "com.zone"], &h);
    std::fs::write(
        d.join("names"),
        "www.sld0.com. A\nnonexistent-junk. A\ncom. SOA\nunique-7.sld4.net. A\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .current_dir(d)
        .args(["lab", "--manifest", "h/manifest", "--names", "names", "-q"])
        .args(["--resolver", "unbound", "--trust-anchor", "auto"])
        .output()
        .expect("ldplayer runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        lines,
        [
            "www.sld0.com. A NOERROR www.sld0.com. in a 192.0.2.80",
            "nonexistent-junk. A NXDOMAIN AD",
            "com. SOA NOERROR AD com. in soa ns1.nic.com. hostmaster.nic.com. 2026112600 1800 \
             900 604800 3600",
            "unique-7.sld4.net. A NOERROR unique-7.sld4.net. in a 192.0.2.1",
        ],
        "{how}"
    );
}

#[test]
fn the_signed_hierarchy_validates_in_the_lab_with_nsec() {
    validates_in_the_lab("--sign");
}

#[test]
fn the_signed_hierarchy_validates_in_the_lab_with_nsec3() {
    validates_in_the_lab("--nsec3");
}

#[test]
fn signing_without_ldnsutils_says_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("bin");
    std::fs::create_dir(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["zones", "synth", "--sign", "-o"])
        .arg(dir.path().join("h"))
        .env("PATH", &empty)
        .output()
        .expect("ldplayer runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ldns-keygen") && err.contains("apt-get install ldnsutils"),
        "{err}"
    );
    // And impossible shapes are refused with the reason.
    let out = ldplayer_fails(&[
        "zones",
        "synth",
        "-o",
        &s(&dir.path().join("x")),
        "--providers",
        "0",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--providers"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
