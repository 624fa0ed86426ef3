//! The real hierarchies recorded as Deckard scenarios (shared/data/hierarchy/*.rpl) resolve
//! through the lab to their recorded answers (issue 4, must-show 3).
//!
//! For each scenario: `ldplayer zones build` imports every nameserver address's recorded
//! answers as zones; `ldplayer zones deckard-queries` writes the scenario's queries as a names
//! file, the answers its CHECK_ANSWER steps expect, and the lab options its CONFIG asks for
//! (its trust anchor, its val-override-date, its insecure domains: DNSSEC validation at the
//! time of the recording); `ldplayer lab` runs a real unbound in the lab's network namespaces
//! against the meta-server serving the rebuilt zones and resolves the names; the answers it
//! prints must equal the expected ones, line for line (question, rcode, the AD flag where the
//! check compares flags, and answer section; TTLs left out, RRSIGs left out since the lab
//! asks without DO). A recorded signature altered gives SERVFAIL and fails the comparison.
//!
//! deckard_iter_minim_a.rpl puts the root at 127.0.0.10: the lab routes 127/8 (but 127.0.0.1)
//! from the resolver side to the server side, and the capture of the link shows the resolver's
//! queries to 127.0.0.10 crossing it. A scenario whose recorded answer is altered must fail the
//! comparison (the test can fail).

mod binary;

use binary::ldplayer;
use ldplayer_testbed::prerequisite;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A recorded scenario of the shared test data; `None` only when it is missing and skipping is
/// allowed.
fn scenario(name: &str) -> Option<PathBuf> {
    prerequisite::shared_file(&format!("hierarchy/{name}"))
}

/// What the lab needs here: network namespaces and unbound.
fn lab_prerequisites() -> bool {
    prerequisite::netns() && prerequisite::tool("unbound", "unbound").is_some()
}

/// What one scenario gave: the expected lines, the lab's lines, and what the tools printed.
struct Outcome {
    expected: Vec<String>,
    got: Vec<String>,
    log: String,
}

impl Outcome {
    /// Every difference, one per line.
    fn differences(&self) -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..self.expected.len().max(self.got.len()) {
            let e = self.expected.get(i).map(String::as_str);
            let g = self.got.get(i).map(String::as_str);
            if e != g {
                out.push(format!(
                    "answer {}:\n  expected: {}\n  lab gave: {}",
                    i + 1,
                    e.unwrap_or("(nothing)"),
                    g.unwrap_or("(nothing)")
                ));
            }
        }
        out
    }
}

/// Rebuilds the scenario's zones, resolves its queries in the lab with unbound and returns the
/// expected and obtained answers; `capture` records the resolver's upstream link.
fn run_scenario(rpl: &Path, dir: &Path, capture: Option<&Path>) -> Outcome {
    let s = |p: &Path| p.to_str().expect("UTF-8 path").to_string();
    let zones = dir.join("zones");
    let names = dir.join("names");
    let expected = dir.join("expected");
    let answers = dir.join("answers");
    let options = dir.join("lab-options");
    let build = ldplayer(&["zones", "build", &s(rpl), "-o", &s(&zones)]);
    ldplayer(&[
        "zones",
        "deckard-queries",
        &s(rpl),
        "-o",
        &s(&names),
        "--lab-options",
        &s(&options),
    ]);
    ldplayer(&[
        "zones",
        "deckard-queries",
        &s(rpl),
        "--expected",
        "-o",
        &s(&expected),
    ]);
    let mut lab = Command::new(env!("CARGO_BIN_EXE_ldplayer"));
    lab.args(["lab", "--resolver", "unbound", "--manifest"])
        .arg(zones.join("manifest"))
        .arg("--names")
        .arg(&names)
        .arg("--answers")
        .arg(&answers)
        .arg("--work-dir")
        .arg(dir.join("lab"));
    let options = std::fs::read_to_string(&options).expect("lab options");
    lab.args(options.lines());
    if let Some(pcap) = capture {
        lab.arg("--capture").arg(pcap);
    }
    let out = lab.output().expect("ldplayer lab runs");
    let log = format!(
        "zones build:\n{}{}\nlab:\n{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ldplayer lab failed:\n{log}");
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
        log,
    }
}

/// The scenario resolves to its recorded answers.
fn resolves_to_recorded_answers(file: &str, capture: bool) -> Option<tempfile::TempDir> {
    if !lab_prerequisites() {
        return None;
    }
    let rpl = scenario(file)?;
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = dir.path().join("upstream.pcap");
    let o = run_scenario(&rpl, dir.path(), capture.then_some(pcap.as_path()));
    assert!(
        !o.expected.is_empty(),
        "{file}: no CHECK_ANSWER answers to compare"
    );
    for line in &o.expected {
        // `name type rcode record; ...`: every check of these scenarios expects records.
        assert!(
            line.split(' ').count() > 3,
            "{file}: expected answer without records: {line}"
        );
    }
    let diffs = o.differences();
    assert!(
        diffs.is_empty(),
        "{file}: {} of {} answers differ from the recording:\n{}\n\n{}",
        diffs.len(),
        o.expected.len(),
        diffs.join("\n"),
        o.log
    );
    Some(dir)
}

#[test]
fn iter_minim_a_resolves_to_its_recorded_answers_with_the_root_at_127_0_0_10() {
    let Some(dir) = resolves_to_recorded_answers("deckard_iter_minim_a.rpl", true) else {
        return;
    };
    // The witness: the resolver's queries to the root at 127.0.0.10 crossed the link to the
    // server side (not the resolver side's own loopback).
    let pcap = dir.path().join("upstream.pcap");
    let text = dir.path().join("upstream.txt");
    ldplayer(&[
        "convert",
        pcap.to_str().expect("UTF-8 path"),
        "--to",
        "text",
        "-o",
        text.to_str().expect("UTF-8 path"),
    ]);
    let text = std::fs::read_to_string(&text).expect("text trace");
    assert!(
        text.lines().any(|l| l.contains("127.0.0.10")),
        "no query to 127.0.0.10 on the link:\n{text}"
    );
}

/// Validated at the recording's time with its trust anchor: the second query (with DO) gets AD,
/// as the scenario expects, the first (without) does not.
#[test]
fn world_cz_vutbr_www_resolves_to_its_recorded_answers() {
    let Some(dir) = resolves_to_recorded_answers("deckard_world_cz_vutbr_www.rpl", false) else {
        return;
    };
    let options = std::fs::read_to_string(dir.path().join("lab-options")).expect("options");
    assert!(options.contains("--trust-anchor\n"), "{options}");
    assert!(options.contains("--time\n20170124180319\n"), "{options}");
    let answers = std::fs::read_to_string(dir.path().join("answers")).expect("answers");
    let ad: Vec<bool> = answers
        .lines()
        .map(|l| l.contains(" NOERROR AD "))
        .collect();
    assert_eq!(ad, [false, true], "{answers}");
}

/// Validated with its insecure `net.` and idnes.cz proven unsigned by the NSEC3 records the
/// recording carried (the rebuilt cz zone has no NSEC3PARAM).
#[test]
fn world_cz_lidovky_www_resolves_to_its_recorded_answers() {
    resolves_to_recorded_answers("deckard_world_cz_lidovky_www.rpl", false);
}

/// A signature of the recording altered (the RRSIG over www.vutbr.cz's CNAME, in the answer
/// of vutbr.cz's nameserver, not in the expected answer): the validating resolver answers
/// SERVFAIL and the comparison fails.
#[test]
fn an_altered_signature_gives_servfail_and_is_caught() {
    if !lab_prerequisites() {
        return;
    }
    let Some(scenario) = scenario("deckard_world_cz_vutbr_www.rpl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let original = std::fs::read_to_string(scenario).expect("scenario");
    let needle = "RRSIG\tCNAME 5 3 300 20170216060902 20170117060902 39756 vutbr.cz. ";
    let at = original
        .find(needle)
        .unwrap_or_else(|| panic!("the scenario changed: no {needle:?}"));
    let sig = at + needle.len();
    let mut altered = original.clone();
    let swapped = if &original[sig..sig + 1] == "A" {
        "B"
    } else {
        "A"
    };
    altered.replace_range(sig..sig + 1, swapped);
    let rpl = dir.path().join("altered.rpl");
    std::fs::write(&rpl, altered).expect("write");
    let o = run_scenario(&rpl, dir.path(), None);
    let diffs = o.differences();
    assert!(!diffs.is_empty(), "the altered signature went unnoticed");
    assert!(
        o.got.iter().any(|l| l.contains(" SERVFAIL")),
        "{:?}\n{}",
        o.got,
        o.log
    );
}

/// The comparison can fail: the same scenario with one recorded address altered in the
/// nameserver's answer (not in the expected answer) gives a difference.
#[test]
fn an_altered_recording_is_caught() {
    if !lab_prerequisites() {
        return;
    }
    let Some(scenario) = scenario("deckard_iter_minim_a.rpl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let original = std::fs::read_to_string(scenario).expect("scenario");
    // The first occurrence is the nameserver's answer in the RANGE; the CHECK_ANSWER keeps
    // 10.20.30.40.
    let needle = "www.example.com. IN A\t10.20.30.40";
    assert_eq!(original.matches(needle).count(), 2, "the scenario changed");
    let altered = original.replacen(needle, "www.example.com. IN A\t10.20.30.41", 1);
    let rpl = dir.path().join("altered.rpl");
    std::fs::write(&rpl, altered).expect("write");
    let o = run_scenario(&rpl, dir.path(), None);
    let diffs = o.differences();
    assert_eq!(diffs.len(), 1, "{diffs:?}\n{}", o.log);
    assert!(
        diffs[0].contains("10.20.30.40") && diffs[0].contains("10.20.30.41"),
        "{}",
        diffs[0]
    );
}
