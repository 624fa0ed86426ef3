//! Recorded hierarchies (issue 25), on Deckard scenarios this test writes itself from a small
//! hierarchy it signs with ldns-signzone (a root whose DS for `example.` makes one chain of
//! trust), shaped like Deckard's world_mx_nic_www.rpl: the root's server is known only from
//! `stub-addr` (no NS RRset of the root in an authoritative answer), and answers the root's
//! DNSKEY RRset with `REPLY QR AA DO NOERROR`, its question written with tabs and its TTLs
//! counted down by a cache.
//!
//! - `zones build` keeps the root's keys, and a validating unbound in the lab answers the
//!   scenario's DO query with AD as recorded (it answered SERVFAIL when the keys were dropped);
//! - a query with CD (`REPLY RD CD DO`) goes to the lab with CD, and the bogus name gets
//!   NOERROR as recorded;
//! - the recipe `zones deckard-queries --help` prints, run exactly as printed, gives the
//!   recorded answers;
//! - what `zones build` still leaves out is counted by reason in its summary and its JSON.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::prerequisite::{self, tools};
use std::path::Path;
use std::process::Command;

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
bogus A 192.0.2.66
";

/// The TTL the recording gives the root's keys: what a cache had left of 86400 s.
const COUNTED_DOWN: &str = "16567";

/// The signed zones' records, by owner and type (RRSIGs under `RRSIG <covered>`), as
/// ldns-signzone writes them (tab-separated).
struct Signed {
    lines: Vec<String>,
    /// The root key's DS, for `trust-anchor`.
    root_ds: String,
}

impl Signed {
    /// The records of `owner` and `rtype` (`RRSIG A` for the signatures over A).
    fn records(&self, owner: &str, rtype: &str) -> Vec<String> {
        let found: Vec<String> = self
            .lines
            .iter()
            .filter(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                f.len() > 4 && f[0] == owner && {
                    let t = f[3];
                    let covered = f[4].split(' ').next().unwrap_or("");
                    rtype == t || rtype == format!("{t} {covered}")
                }
            })
            .cloned()
            .collect();
        assert!(!found.is_empty(), "no {owner} {rtype} in the signed zones");
        found
    }

    /// [`records`](Self::records) as the lines of a section.
    fn section(&self, sets: &[(&str, &str)]) -> String {
        sets.iter()
            .flat_map(|(o, t)| self.records(o, t))
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Signs the root and `example.` in `d` (one key each), `bogus.example.`'s signature altered.
fn sign(d: &Path) -> Signed {
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
    std::fs::write(d.join("root.zone"), format!("{ROOT_ZONE}{ds}")).unwrap();
    for (zone, file, key) in [("example.", "example.zone", &kx), (".", "root.zone", &kr)] {
        run(
            Command::new("ldns-signzone")
                .current_dir(d)
                .args(["-o", zone, file, key.as_str()]),
            "ldns-signzone",
        );
    }
    let mut lines = Vec::new();
    for f in ["root.zone.signed", "example.zone.signed"] {
        let text = std::fs::read_to_string(d.join(f)).unwrap();
        // Comments (`;{id = ...}`) and trailing blanks off.
        lines.extend(
            text.lines()
                .map(|l| l.split(';').next().unwrap_or("").trim_end().to_string())
                .filter(|l| !l.is_empty()),
        );
    }
    for l in &mut lines {
        if l.starts_with("bogus.example.\t") && l.contains("\tRRSIG\tA ") {
            // One character of the signature changed: a bogus answer.
            let at = l.len() - 10;
            let swapped = if &l[at..at + 1] == "A" { "B" } else { "A" };
            l.replace_range(at..at + 1, swapped);
        }
    }
    let root_ds = std::fs::read_to_string(d.join(format!("{kr}.ds")))
        .unwrap()
        .trim()
        .to_string();
    Signed { lines, root_ds }
}

/// One range entry.
fn entry(matching: &str, reply: &str, question: &str, sections: &str) -> String {
    format!(
        "ENTRY_BEGIN\nMATCH {matching}\nADJUST copy_id\nREPLY {reply}\nSECTION QUESTION\n\
         {question}\n{sections}ENTRY_END\n"
    )
}

/// The scenario: the root at 198.41.0.4 known from `stub-addr` only (and as a server of
/// `net.`), `example.` at
/// 10.0.0.53; `www.example. A` asked with DO (answered with AD), `bogus.example. A` with CD
/// and DO (answered NOERROR, without AD). `extra` goes into example.'s range.
fn scenario(z: &Signed, extra: &str) -> String {
    let keys = z
        .section(&[(".", "DNSKEY"), (".", "RRSIG DNSKEY")])
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.splitn(3, '\t').collect();
            format!("{}\t{COUNTED_DOWN}\t{}\n", f[0], f[2])
        })
        .collect::<String>();
    let root = [
        // The root's server serves net. too, which names it (as M.ROOT-SERVERS.NET. does in
        // world_mx_nic_www.rpl); no NS RRset of the root names it.
        entry(
            "opcode qtype qname",
            "QR AA NOERROR",
            "net. IN NS",
            "SECTION ANSWER\nnet. 3600 IN NS m.root-servers.net.\n\
             SECTION ADDITIONAL\nm.root-servers.net. 3600 IN A 198.41.0.4\n",
        ),
        entry(
            "opcode qtype qname",
            "QR AA DO NOERROR",
            ".\t\tIN\tDNSKEY",
            &format!("SECTION ANSWER\n{keys}"),
        ),
        entry(
            "opcode subdomain",
            "QR DO NOERROR",
            "example.\t\tIN\tNS",
            &format!(
                "SECTION AUTHORITY\n{}SECTION ADDITIONAL\n{}",
                z.section(&[
                    ("example.", "NS"),
                    ("example.", "DS"),
                    ("example.", "RRSIG DS")
                ]),
                z.section(&[("ns.example.", "A")])
            ),
        ),
    ]
    .concat();
    let answer = |name: &str, rtype: &str| {
        entry(
            "opcode qtype qname",
            "QR AA DO NOERROR",
            &format!("{name} IN {rtype}"),
            &format!(
                "SECTION ANSWER\n{}",
                z.section(&[(name, rtype), (name, &format!("RRSIG {rtype}"))])
            ),
        )
    };
    let example = [
        answer("example.", "DNSKEY"),
        answer("example.", "NS"),
        answer("example.", "SOA"),
        answer("www.example.", "A"),
        answer("bogus.example.", "A"),
        extra.to_string(),
    ]
    .concat();
    let check = |flags: &str, name: &str| {
        format!(
            "ENTRY_BEGIN\nMATCH all\nREPLY {flags}\nSECTION QUESTION\n{name} IN A\n\
             SECTION ANSWER\n{}ENTRY_END\n",
            z.section(&[(name, "A"), (name, "RRSIG A")])
        )
    };
    format!(
        "; written by the test: the shape of Deckard's world_mx_nic_www.rpl\n\
         trust-anchor: \"{ds}\"\n\
         stub-addr: 198.41.0.4\n\
         CONFIG_END\n\n\
         SCENARIO_BEGIN the root's keys recorded from a cache, a CD query for a bogus name\n\n\
         RANGE_BEGIN 0 100\n\tADDRESS 198.41.0.4\n{root}RANGE_END\n\n\
         RANGE_BEGIN 0 100\n\tADDRESS 10.0.0.53\n{example}RANGE_END\n\n\
         STEP 1 QUERY\nENTRY_BEGIN\nREPLY RD DO\nSECTION QUESTION\nwww.example. IN A\nENTRY_END\n\
         STEP 2 CHECK_ANSWER\n{}\
         STEP 3 QUERY\nENTRY_BEGIN\nREPLY RD CD DO\nSECTION QUESTION\nbogus.example. IN A\nENTRY_END\n\
         STEP 4 CHECK_ANSWER\n{}\
         SCENARIO_END\n",
        check("QR RD RA AD DO NOERROR", "www.example."),
        check("QR RD RA CD DO NOERROR", "bogus.example."),
        ds = z.root_ds,
    )
}

fn prerequisites() -> bool {
    tools(&[("ldns-keygen", "ldnsutils"), ("ldns-signzone", "ldnsutils")])
}

fn lab_prerequisites() -> bool {
    prerequisites() && prerequisite::netns() && tools(&[("unbound", "unbound")])
}

/// What the scenario in `dir/s.rpl` gave through the lab: the expected lines, the lab's,
/// the names file, and what the tools printed.
struct Outcome {
    expected: Vec<String>,
    got: Vec<String>,
    names: String,
    log: String,
}

/// Rebuilds the scenario's zones, writes its names, expected answers and lab options, and
/// resolves the names with a validating unbound in the lab.
fn through_the_lab(dir: &Path) -> Outcome {
    let rpl = s(&dir.join("s.rpl"));
    let zones = s(&dir.join("zones"));
    let build = ldplayer(&["zones", "build", &rpl, "-o", &zones]);
    let (names, expected, options, answers) = (
        dir.join("names"),
        dir.join("expected"),
        dir.join("opts"),
        dir.join("answers"),
    );
    let queries = ldplayer(&[
        "zones",
        "deckard-queries",
        &rpl,
        "-o",
        &s(&names),
        "--lab-options",
        &s(&options),
    ]);
    ldplayer(&[
        "zones",
        "deckard-queries",
        &rpl,
        "--expected",
        "-o",
        &s(&expected),
    ]);
    let options = std::fs::read_to_string(&options).expect("lab options");
    assert!(options.contains("--trust-anchor\n"), "{options}");
    let lab = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["lab", "--manifest", &format!("{zones}/manifest")])
        .args(["--names", &s(&names), "--answers", &s(&answers)])
        .args(options.lines())
        .output()
        .expect("ldplayer lab runs");
    let log = format!(
        "zones build:\n{}{}\ndeckard-queries:\n{}\nlab:\n{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr),
        String::from_utf8_lossy(&queries.stderr),
        String::from_utf8_lossy(&lab.stderr)
    );
    assert!(lab.status.success(), "the lab failed:\n{log}");
    let lines = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .lines()
            .map(str::to_string)
            .collect()
    };
    Outcome {
        expected: lines(&expected),
        got: lines(&answers),
        names: std::fs::read_to_string(&names).expect("names"),
        log,
    }
}

/// A signed hierarchy and its scenario in a new directory, as `s.rpl`.
fn written(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let signed = sign(dir.path());
    std::fs::write(dir.path().join("s.rpl"), scenario(&signed, extra)).expect("write");
    dir
}

/// The root's DNSKEY RRset answered with `REPLY QR AA DO NOERROR` by the `stub-addr` server
/// is kept, with the TTL its signature says the root served; a validating unbound then
/// answers the DO query with AD, as recorded.
#[test]
fn the_roots_keys_recorded_from_a_cache_validate_in_the_lab() {
    if !lab_prerequisites() {
        return;
    }
    let dir = written("");
    let o = through_the_lab(dir.path());
    assert_eq!(o.expected.len(), 2, "{:?}", o.expected);
    assert_eq!(o.got[0], o.expected[0], "{}", o.log);
    assert!(
        o.expected[0].starts_with("www.example. A NOERROR AD www.example. in a 192.0.2.80; "),
        "{:?}",
        o.expected
    );
    let root = std::fs::read_to_string(dir.path().join("zones/root.zone")).expect("root zone");
    assert!(root.contains(". 86400 IN DNSKEY 257 3 13 "), "{root}");
}

/// The bogus name asked with CD (`REPLY RD CD DO`) goes to the lab with CD: the validating
/// resolver answers NOERROR with the bogus record, as recorded; asked without CD it is a
/// SERVFAIL (the signature really is bogus).
#[test]
fn a_cd_query_for_a_bogus_name_gets_noerror_as_recorded() {
    if !lab_prerequisites() {
        return;
    }
    let dir = written("");
    let o = through_the_lab(dir.path());
    assert!(
        o.names
            .lines()
            .any(|l| l.starts_with("bogus.example. A +rd +noad +cd +do ")),
        "{}",
        o.names
    );
    assert!(
        o.expected[1].starts_with("bogus.example. A NOERROR bogus.example. in a 192.0.2.66; "),
        "{:?}",
        o.expected
    );
    assert_eq!(o.got, o.expected, "{}", o.log);
    // Without CD: SERVFAIL.
    let names = dir.path().join("names");
    std::fs::write(&names, "bogus.example. A +rd +noad +nocd +do\n").expect("write");
    let options = std::fs::read_to_string(dir.path().join("opts")).expect("options");
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["lab", "--manifest"])
        .arg(dir.path().join("zones/manifest"))
        .args(["--names", &s(&names), "-q"])
        .args(options.lines())
        .output()
        .expect("ldplayer lab runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "bogus.example. A SERVFAIL",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The recipe of `zones deckard-queries --help`, run line by line exactly as printed (the
/// scenario as `s.rpl`, `ldplayer` on the PATH), ends with a `diff` that finds no
/// difference.
#[test]
fn the_help_recipe_run_as_printed_gives_the_recorded_answers() {
    if !lab_prerequisites() {
        return;
    }
    let help = ldplayer(&["zones", "deckard-queries", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let recipe: Vec<&str> = help
        .lines()
        .filter(|l| l.starts_with("  ldplayer ") || l.starts_with("  diff "))
        .map(str::trim)
        .collect();
    assert!(
        recipe
            .first()
            .is_some_and(|l| l.starts_with("ldplayer zones build"))
            && recipe.iter().any(|l| l.starts_with("ldplayer lab "))
            && recipe.last().is_some_and(|l| l.starts_with("diff ")),
        "no recipe in the help:\n{help}"
    );
    let dir = written("");
    let bin = Path::new(env!("CARGO_BIN_EXE_ldplayer"))
        .parent()
        .expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut log = String::new();
    for line in &recipe {
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(dir.path())
            .env("PATH", &path)
            .output()
            .expect("sh runs");
        log.push_str(&format!(
            "$ {line}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        assert!(out.status.success(), "the recipe failed:\n{log}");
    }
}

/// What `zones build` cannot put in a zone is counted by reason, with examples, in the
/// summary and the JSON report: here an answer record outside every zone its server serves
/// (out of bailiwick), and an address given in the authority section.
#[test]
fn zones_build_counts_what_it_leaves_out_by_reason() {
    if !prerequisites() {
        return;
    }
    let extra = "ENTRY_BEGIN\nMATCH opcode qtype qname\nREPLY QR AA NOERROR\n\
                 SECTION QUESTION\nalias.example. IN A\nSECTION ANSWER\n\
                 alias.example. 3600 IN CNAME www.elsewhere.test.\n\
                 www.elsewhere.test. 3600 IN A 192.0.2.99\n\
                 SECTION AUTHORITY\nns.example. 3600 IN AAAA 2001:db8::53\nENTRY_END\n";
    let dir = written(extra);
    let rpl = s(&dir.path().join("s.rpl"));
    let out = ldplayer(&["zones", "build", &rpl, "-o", &s(&dir.path().join("z"))]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("records left out: "))
        .unwrap_or_else(|| panic!("no records left out line:\n{text}"));
    assert_eq!(
        line,
        "records left out: 1 out-of-zone (e.g. www.elsewhere.test. A from 10.0.0.53), \
         1 unexpected-in-section (e.g. ns.example. AAAA from 10.0.0.53)"
    );
    assert!(
        text.contains("TTLs restored: 1 signed RRsets"),
        "the root's keys: {text}"
    );
    let out = ldplayer(&[
        "zones",
        "build",
        &rpl,
        "-o",
        &s(&dir.path().join("j")),
        "--json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["records_left_out"],
        serde_json::json!({"out-of-zone": 1, "unexpected-in-section": 1})
    );
    assert_eq!(report["records_out_of_zone"], 1);
    assert_eq!(report["ttls_restored"], 1);
    assert_eq!(report["zones_without_servers"], serde_json::json!([]));
}
