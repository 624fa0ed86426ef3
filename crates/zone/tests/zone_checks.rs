//! Zone files that BIND and nsd reject are rejected by the loader too, at the line where the
//! offending record starts, with `named-checkzone` and `nsd-checkzone` as witnesses run on the
//! same files; files they accept (and every zone of the shared data, DNSSEC-signed ones
//! included) load.
//!
//! The files are in `tests/data/not-one-zone` and `tests/data/one-zone` (zones of `example.`);
//! the first line of each rejected file says where each checker places the error:
//! `; ldplayer: LINE MESSAGE | named-checkzone: LINE | nsd-checkzone: LINE`, where a checker's
//! LINE may be `rejects` (no line compared) or `accepts`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ldplayer_testbed::prerequisite;
use ldplayer_zone::Zone;

/// The zone files of a directory of `tests/data`, sorted.
fn zone_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(dir);
    ldplayer_testbed::files_with_extension(&dir, "zone")
}

/// What a rejected file's first line expects: ldplayer's line and message, and each checker's
/// verdict.
struct Expected {
    line: usize,
    message: String,
    bind: String,
    nsd: String,
}

fn expected(path: &Path) -> Expected {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or("");
    let fields: Vec<&str> = first.trim_start_matches("; ").split(" | ").collect();
    let value = |i: usize, key: &str| -> String {
        fields
            .get(i)
            .and_then(|f| f.strip_prefix(key))
            .unwrap_or_else(|| panic!("{}: expected `{key}` in {first:?}", path.display()))
            .trim()
            .to_string()
    };
    let ours = value(0, "ldplayer:");
    let (line, message) = ours.split_once(' ').expect("LINE MESSAGE");
    Expected {
        line: line.parse().expect("a line number"),
        message: message.to_string(),
        bind: value(1, "named-checkzone:"),
        nsd: value(2, "nsd-checkzone:"),
    }
}

/// A checker's verdict on a zone of `example.`: `accepts`, or the first line of the file its
/// complaint names (`rejects` when it names none).
fn witness(tool: &Path, file: &Path) -> String {
    let out = Command::new(tool)
        .arg("example")
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", tool.display()));
    if out.status.success() {
        return "accepts".into();
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let marker = format!("{}:", file.display());
    text.split(&marker)
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter(|n| !n.is_empty())
        .unwrap_or("rejects")
        .to_string()
}

fn checkers() -> Option<(PathBuf, PathBuf)> {
    Some((
        prerequisite::tool("named-checkzone", "bind9-utils")?,
        prerequisite::tool("nsd-checkzone", "nsd")?,
    ))
}

#[test]
fn zones_bind_and_nsd_reject_are_rejected_at_the_same_line() {
    let Some((bind, nsd)) = checkers() else {
        return;
    };
    let files = zone_files("not-one-zone");
    assert!(files.len() >= 12, "{files:?}");
    for path in files {
        let want = expected(&path);
        let e = Zone::from_file(&path, None)
            .err()
            .unwrap_or_else(|| panic!("{} loaded", path.display()))
            .to_string();
        let place = match want.line {
            0 => format!("{}: ", path.display()),
            l => format!("{}:{l}:1: ", path.display()),
        };
        assert!(
            e.starts_with(&place) && e.contains(&want.message),
            "{}: {e}",
            path.display()
        );
        for (tool, verdict) in [(&bind, &want.bind), (&nsd, &want.nsd)] {
            let got = witness(tool, &path);
            let agrees = match verdict.as_str() {
                "rejects" => got != "accepts",
                v => got == v,
            };
            assert!(
                agrees,
                "{}: {} {got}, expected {verdict}",
                path.display(),
                tool.display()
            );
        }
    }
}

#[test]
fn zones_bind_and_nsd_accept_load() {
    let Some((bind, nsd)) = checkers() else {
        return;
    };
    let files = zone_files("one-zone");
    assert!(files.len() >= 3, "{files:?}");
    for path in files {
        for tool in [&bind, &nsd] {
            let got = witness(tool, &path);
            assert_eq!(got, "accepts", "{}: {}", path.display(), tool.display());
        }
        let zone = Zone::from_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(zone.origin_text(), "example.");
    }
}

#[test]
fn every_shared_zone_loads() {
    let Some(dir) = prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), "zones") else {
        return;
    };
    let mut loaded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "zone") {
            let zone = Zone::from_file(&path, None).unwrap_or_else(|e| panic!("{e}"));
            assert!(zone.record_count > 0, "{}", path.display());
            loaded += 1;
        }
    }
    // The signed and unsigned root zones and CZ-NIC's sample zone, at least.
    assert!(loaded >= 3, "{loaded} zones in {}", dir.display());
}
