//! DNSSEC validation in the lab (issue 16): a hierarchy signed by ldns-signzone (a root whose
//! DS for `example.` makes one chain of trust), served by ldplayer's meta-server, resolved by
//! each real resolver the lab runs with `--trust-anchor auto` (the emulated root's key): the
//! answers carry AD; one signature altered gives SERVFAIL; signatures that expired validate
//! only at `--time` inside their validity, for the resolvers that can be given a moment.

use ldplayer_testbed::prerequisite;

use std::path::Path;
use std::process::{Command, Output};

const ROOT_ZONE: &str = "\
$ORIGIN .
$TTL 86400
. SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
. NS a.root-servers.net.
a.root-servers.net. A 198.41.0.4
example. NS ns.example.
ns.example. A 10.0.0.53
";

const EXAMPLE_ZONE: &str = "\
$ORIGIN example.
$TTL 3600
@ SOA ns hostmaster 1 1800 900 604800 300
@ NS ns
ns A 10.0.0.53
www A 192.0.2.80
";

const NAMES: &str = "www.example. A\nnope.example. A\n";

/// Names for the round trip: the answers, a denial, a DNSKEY set.
const ROUND_TRIP_NAMES: &str =
    "www.example. A\nnope.example. A\nwww.example. AAAA\nexample. DNSKEY\n";

/// Every resolver the lab runs: its name for `--resolver`, program, Debian package.
const RESOLVERS: [(&str, &str, &str); 4] = [
    ("unbound", "unbound", "unbound"),
    ("knot-resolver", "kresd", "knot-resolver"),
    ("bind9", "named", "bind9"),
    ("pdns-recursor", "pdns_recursor", "pdns-recursor"),
];

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Signs the two zones in `d` (within `validity`, ldns-signzone's `-i` and `-e`, when given),
/// the DS of example. in the root, and writes `manifest` (example.'s zone altered by `alter`).
fn signed_hierarchy(d: &Path, validity: Option<(&str, &str)>, alter: fn(&str) -> String) {
    signed_hierarchy_with(d, validity, alter, &[]);
}

/// [`signed_hierarchy`] with more ldns-signzone arguments (`-n` for NSEC3).
fn signed_hierarchy_with(
    d: &Path,
    validity: Option<(&str, &str)>,
    alter: fn(&str) -> String,
    sign_args: &[&str],
) {
    std::fs::write(d.join("root.zone"), ROOT_ZONE).unwrap();
    std::fs::write(d.join("example.zone"), EXAMPLE_ZONE).unwrap();
    let keygen = |zone: &str| {
        run(
            Command::new("ldns-keygen")
                .current_dir(d)
                .args(["-a", "ECDSAP256SHA256", "-k", zone]),
            "ldns-keygen (ldnsutils)",
        )
    };
    let (kx, kr) = (keygen("example"), keygen("."));
    let ds = std::fs::read_to_string(d.join(format!("{kx}.ds"))).unwrap();
    let mut root = ROOT_ZONE.to_string();
    root.push_str(&ds);
    std::fs::write(d.join("root.zone"), root).unwrap();
    for (zone, file, key) in [("example.", "example.zone", &kx), (".", "root.zone", &kr)] {
        let mut cmd = Command::new("ldns-signzone");
        cmd.current_dir(d);
        if let Some((inception, expiration)) = validity {
            cmd.args(["-i", inception, "-e", expiration]);
        }
        cmd.args(sign_args);
        run(cmd.args(["-o", zone, file, key.as_str()]), "ldns-signzone");
    }
    let signed = std::fs::read_to_string(d.join("example.zone.signed")).unwrap();
    std::fs::write(d.join("example.zone.signed"), alter(&signed)).unwrap();
    std::fs::write(
        d.join("manifest"),
        "#ldplayer-manifest/1\n198.41.0.4 root.zone.signed\n10.0.0.53 example.zone.signed\n",
    )
    .unwrap();
    std::fs::write(d.join("names"), NAMES).unwrap();
}

/// One character of the signature of www.example. A changed: a bogus answer.
fn alter_www_signature(zone: &str) -> String {
    zone.lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let covers_a = f.iter().position(|x| *x == "RRSIG").map(|i| f.get(i + 1));
            if f.first() == Some(&"www.example.") && covers_a == Some(Some(&"A")) {
                let sig = f[f.len() - 1];
                let swapped = if sig.as_bytes()[8] == b'A' { "B" } else { "A" };
                let sig = format!("{}{swapped}{}", &sig[..8], &sig[9..]);
                let mut f = f.clone();
                let last = f.len() - 1;
                f[last] = &sig;
                return f.join("\t") + "\n";
            }
            format!("{line}\n")
        })
        .collect()
}

/// `ldplayer lab` through `resolver` with `extra` arguments: the answer lines. The lab keeps
/// its files in a folder of `d`, and leaves no process behind that runs from it (a resolver
/// under faketime used to outlive the lab).
fn lab(d: &Path, resolver: &str, extra: &[&str]) -> Output {
    let work = tempfile::tempdir_in(d).expect("the lab's folder");
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .current_dir(d)
        .args(["lab", "--manifest", "manifest", "--names", "names", "-q"])
        .args(["--resolver", resolver, "--work-dir"])
        .arg(work.path())
        .args(extra)
        .output()
        .expect("ldplayer runs");
    let left = processes_mentioning(work.path());
    assert!(
        left.is_empty(),
        "{resolver} {extra:?}: processes left running: {left:?}"
    );
    out
}

/// The command lines of the live processes that name `path`.
fn processes_mentioning(path: &Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // A zombie has an empty command line: it runs nothing.
        if cmdline.contains(&needle) {
            found.push(cmdline);
        }
    }
    found
}

fn answers(out: &Output, what: &str) -> Vec<String> {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn prerequisites() -> bool {
    prerequisite::netns()
        && [("ldns-keygen", "ldnsutils"), ("ldns-signzone", "ldnsutils")]
            .into_iter()
            .chain(RESOLVERS.iter().map(|&(_, p, pkg)| (p, pkg)))
            .all(|(tool, package)| prerequisite::tool(tool, package).is_some())
}

#[test]
fn every_resolver_validates_the_emulated_hierarchy_and_refuses_a_bogus_signature() {
    if !prerequisites() {
        return;
    }
    let good = tempfile::tempdir().unwrap();
    signed_hierarchy(good.path(), None, str::to_string);
    let bogus = tempfile::tempdir().unwrap();
    signed_hierarchy(bogus.path(), None, alter_www_signature);
    for (resolver, _, _) in RESOLVERS {
        let lines = answers(
            &lab(good.path(), resolver, &["--trust-anchor", "auto"]),
            resolver,
        );
        assert_eq!(
            lines,
            [
                "www.example. A NOERROR AD www.example. in a 192.0.2.80",
                "nope.example. A NXDOMAIN AD",
            ],
            "{resolver}"
        );
        let lines = answers(
            &lab(bogus.path(), resolver, &["--trust-anchor", "auto"]),
            resolver,
        );
        assert_eq!(
            lines,
            ["www.example. A SERVFAIL", "nope.example. A NXDOMAIN AD"],
            "{resolver}: the altered signature"
        );
    }
    // Without a trust anchor nothing is validated, the bogus signature goes through.
    let lines = answers(&lab(bogus.path(), "unbound", &[]), "unbound");
    assert_eq!(
        lines[0],
        "www.example. A NOERROR www.example. in a 192.0.2.80"
    );
    // The meta-server counts the resolver's upstream queries by the level of the zone that
    // answered: the root's referral and keys, example.'s (a TLD) answers and its NXDOMAIN.
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .current_dir(good.path())
        .args(["lab", "--manifest", "manifest", "--names", "names"])
        .args(["--trust-anchor", "auto", "--answers", "answers"])
        .output()
        .expect("ldplayer runs");
    let err = String::from_utf8_lossy(&out.stderr);
    let levels = err
        .split("by zone level: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no count by level: {err}"));
    let numbers: Vec<u64> = levels
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    // root N (x NXDOMAIN), TLD N (1 NXDOMAIN), below 0 (0 NXDOMAIN)
    assert!(numbers.len() >= 6, "{levels}");
    assert!(
        numbers[0] >= 2,
        "root: the referral and its DNSKEY: {levels}"
    );
    assert!(
        numbers[2] >= 2,
        "TLD: www.example. and nope.example.: {levels}"
    );
    assert_eq!(numbers[3], 1, "one NXDOMAIN from example.: {levels}");
    assert_eq!((numbers[4], numbers[5]), (0, 0), "nothing below: {levels}");
}

/// A query with CD (`+cd` in the names file) for the name whose signature was altered: each
/// validating resolver answers NOERROR with the record (checking disabled, RFC 4035 §3.2.2),
/// where the same query without CD gets SERVFAIL; with `+do` the bogus signature comes along.
#[test]
fn a_cd_query_for_a_bogus_name_gets_noerror() {
    if !prerequisites() {
        return;
    }
    let bogus = tempfile::tempdir().unwrap();
    signed_hierarchy(bogus.path(), None, alter_www_signature);
    std::fs::write(
        bogus.path().join("names"),
        "www.example. A +cd\nwww.example. A +nocd\nwww.example. A +cd +do +noad\n",
    )
    .unwrap();
    for (resolver, _, _) in RESOLVERS {
        let lines = answers(
            &lab(bogus.path(), resolver, &["--trust-anchor", "auto"]),
            resolver,
        );
        assert_eq!(lines.len(), 3, "{resolver}: {lines:?}");
        assert_eq!(
            lines[..2],
            [
                "www.example. A NOERROR www.example. in a 192.0.2.80",
                "www.example. A SERVFAIL",
            ],
            "{resolver}"
        );
        assert!(
            lines[2].starts_with(
                "www.example. A NOERROR www.example. in a 192.0.2.80; www.example. in rrsig A "
            ),
            "{resolver}: {}",
            lines[2]
        );
    }
}

/// Signatures valid in January 2023 only: SERVFAIL now, AD at `--time` inside their window,
/// for the resolvers that can be given a moment; BIND and Knot Resolver are refused with the
/// reason.
#[test]
fn expired_signatures_validate_at_the_time_given() {
    if !prerequisites() || prerequisite::tool("faketime", "faketime").is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    signed_hierarchy(
        d.path(),
        Some(("20230101000000", "20230201000000")),
        str::to_string,
    );
    for resolver in ["unbound", "pdns-recursor"] {
        let now = answers(
            &lab(d.path(), resolver, &["--trust-anchor", "auto"]),
            resolver,
        );
        assert_eq!(now[0], "www.example. A SERVFAIL", "{resolver}: expired now");
        for time in ["20230115000000", "2023-01-15T00:00:00Z", "1673740800"] {
            let then = answers(
                &lab(
                    d.path(),
                    resolver,
                    &["--trust-anchor", "auto", "--time", time],
                ),
                resolver,
            );
            assert_eq!(
                then,
                [
                    "www.example. A NOERROR AD www.example. in a 192.0.2.80",
                    "nope.example. A NXDOMAIN AD",
                ],
                "{resolver} at {time}"
            );
        }
    }
    for resolver in ["bind9", "knot-resolver"] {
        let out = lab(
            d.path(),
            resolver,
            &["--trust-anchor", "auto", "--time", "20230115000000"],
        );
        assert!(!out.status.success(), "{resolver}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("jemalloc"), "{resolver}: {err}");
    }
    // An unsigned root has no anchor to take.
    std::fs::write(
        d.path().join("manifest"),
        "#ldplayer-manifest/1\n198.41.0.4 root.zone\n10.0.0.53 example.zone\n",
    )
    .unwrap();
    let out = lab(d.path(), "unbound", &["--trust-anchor", "auto"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not signed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The round trip: the signed hierarchy served by nsd (the ground truth), resolved by a
/// validating unbound whose upstream traffic (with DO) the lab captures; `zones build`
/// rebuilds the zones from that capture, and the meta-server serving them validates in the lab
/// with `--trust-anchor auto` (the rebuilt root's key): the same answers, with AD, from unbound
/// and Knot Resolver. Signed with NSEC and with NSEC3 (whose rebuilt zones have no NSEC3PARAM).
#[test]
fn a_hierarchy_captured_with_do_and_rebuilt_validates_in_the_lab() {
    if !prerequisites() || prerequisite::tool("nsd", "nsd").is_none() {
        return;
    }
    for sign_args in [&[][..], &["-n"][..]] {
        let d = tempfile::tempdir().unwrap();
        signed_hierarchy_with(d.path(), None, str::to_string, sign_args);
        std::fs::write(d.path().join("names"), ROUND_TRIP_NAMES).unwrap();
        let truth = answers(
            &lab(
                d.path(),
                "unbound",
                &[
                    "--nameservers",
                    "nsd",
                    "--trust-anchor",
                    "auto",
                    "--capture",
                    "up.pcap",
                ],
            ),
            "ground truth",
        );
        assert_eq!(truth.len(), 4, "{truth:?}");
        assert!(
            truth.iter().all(|l| l.contains(" AD")),
            "{sign_args:?}: the ground truth validates: {truth:?}"
        );
        let build = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .current_dir(d.path())
            .args(["zones", "build", "up.pcap", "-o", "rebuilt", "-q"])
            .output()
            .expect("ldplayer runs");
        assert!(
            build.status.success(),
            "{}",
            String::from_utf8_lossy(&build.stderr)
        );
        let rebuilt_root = std::fs::read_to_string(d.path().join("rebuilt/root.zone")).unwrap();
        assert!(rebuilt_root.contains("DNSKEY"), "{rebuilt_root}");
        for resolver in ["unbound", "knot-resolver"] {
            let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
                .current_dir(d.path())
                .args([
                    "lab",
                    "--manifest",
                    "rebuilt/manifest",
                    "--names",
                    "names",
                    "-q",
                ])
                .args(["--resolver", resolver, "--trust-anchor", "auto"])
                .output()
                .expect("ldplayer runs");
            assert_eq!(
                answers(&out, resolver),
                truth,
                "{resolver}, signed with {sign_args:?}: the rebuilt hierarchy"
            );
        }
    }
}
