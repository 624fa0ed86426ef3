//! Zone files given to `ldplayer serve` and to `ldplayer zones build --zone` are read the same
//! way: files BIND and nsd reject (the zone crate's `tests/data/not-one-zone`, where
//! `named-checkzone` and `nsd-checkzone` witness it) are rejected by both commands with the same
//! message, and a bad file gets the same file:line:column from both, right for lines that are
//! not UTF-8, CR-LF files, records in parentheses, `$INCLUDE`d files and time units, and naming
//! an unclosed parenthesis and a TTL out of range for what they are.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ldplayer_testbed::prerequisite;

/// How long a command that should fail at once may run before the test stops it.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Runs `ldplayer` with `args`, stopped (and the test failed) if it is still running after
/// [`HANG_GUARD`]: `serve` runs until stopped when it accepts its zones.
fn ldplayer_fails(args: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "ldplayer {args:?} accepted it and ran: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out: Output = child.wait_with_output().expect("output");
    assert!(!out.status.success(), "ldplayer {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What `serve` and `zones build --zone` say of a zone file (both fail), checked equal.
fn both_reject(file: &Path, scratch: &Path) -> String {
    let f = file.to_str().expect("UTF-8 path");
    let serve = ldplayer_fails(&["serve", "--listen", "127.0.0.1:0", f]);
    let out = scratch.join("built");
    let build = ldplayer_fails(&["zones", "build", "--zone", f, "-o", out.to_str().unwrap()]);
    assert_eq!(serve, build, "serve and zones build differ on {f}");
    serve
}

fn zone_data(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../zone/tests/data")
        .join(dir);
    ldplayer_testbed::files_with_extension(&dir, "zone")
}

#[test]
fn serve_and_zones_build_reject_what_bind_and_nsd_reject() {
    let scratch = tempfile::tempdir().unwrap();
    let files = zone_data("not-one-zone");
    assert!(files.len() >= 12, "{files:?}");
    for path in files {
        // `; ldplayer: LINE MESSAGE | ...`: the zone crate's test runs the checkers on it.
        let text = std::fs::read_to_string(&path).unwrap();
        let ours = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("; ldplayer: "))
            .and_then(|l| l.split(" | ").next())
            .unwrap_or_else(|| panic!("{}: no expectation", path.display()));
        let (line, message) = ours.split_once(' ').unwrap();
        let place = match line {
            "0" => path.display().to_string(),
            l => format!("{}:{l}:1", path.display()),
        };
        let said = both_reject(&path, scratch.path());
        assert!(
            said.starts_with(&format!("ldplayer: {place}: {message}")),
            "{said}"
        );
    }
    for path in zone_data("one-zone") {
        let out = scratch.path().join("good");
        let status = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .args(["zones", "build", "--zone"])
            .arg(&path)
            .arg("-o")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{}", path.display());
    }
}

/// The start of every file below: lines 1 to 5.
const HEAD: &[u8] = b"$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\nns A 192.0.2.1\n";

/// A bad file, where the error is, and the line `named-checkzone` names when it finds the same
/// error (it takes bytes that are not UTF-8, and its `$INCLUDE` paths are relative to where it
/// runs).
struct Case {
    name: &'static str,
    body: &'static [u8],
    at: &'static str,
    message: &'static str,
    bind_line: Option<usize>,
}

const CASES: &[Case] = &[
    Case {
        // The parser stops at the start of the next line: the error stays on this one.
        name: "last-token",
        body: b"www A 192.0.2.300\nnext A 192.0.2.2\n",
        at: "6:7",
        message: "expected IPv4 address",
        bind_line: Some(6),
    },
    Case {
        // Bytes that are not UTF-8 are taken as they are (as nsd and BIND take them), and
        // counted as bytes in columns.
        name: "not-utf8",
        body: b"www A 192.0.2.2\n\xe9x A 192.0.2.300\n",
        at: "7:6",
        message: "expected IPv4 address",
        bind_line: Some(7),
    },
    Case {
        // Placed on the parenthesis nothing closes, not on the next line's "trailing tokens"
        // (BIND names the end of the file: "unbalanced parentheses").
        name: "unclosed-parenthesis",
        body: b"www TXT ( \"a\"\nnext A 192.0.2.2\n",
        at: "6:9",
        message: "unclosed parenthesis: nothing closes this `(`",
        bind_line: None,
    },
    Case {
        // A TTL past 32 bits is no record type (BIND: "unknown RR type"; knotd: "number is
        // bigger than 32 bits").
        name: "ttl-past-32-bits",
        body: b"www 99999999999 A 192.0.2.2\n",
        at: "6:5",
        message: "TTL 99999999999 out of range: a TTL has 32 bits (at most 4294967295)",
        bind_line: Some(6),
    },
    Case {
        name: "parentheses",
        body: b"www MX (\n  10\n  host extra )\n",
        at: "8:8",
        message: "trailing tokens",
        bind_line: Some(8),
    },
    Case {
        // A record spread over lines is placed where it starts.
        name: "parentheses-cname",
        body: b"www CNAME x\nwww TXT (\n  \"a\" )\n",
        at: "7:1",
        message: "CNAME and other data at www.example.: TXT here, CNAME at",
        bind_line: Some(7),
    },
    Case {
        name: "units",
        body: b"www 1h A 192.0.2.300\n",
        at: "6:10",
        message: "expected IPv4 address",
        bind_line: Some(6),
    },
];

#[test]
fn serve_and_zones_build_place_errors_alike() {
    let bind = prerequisite::tool("named-checkzone", "bind9-utils");
    let dir = tempfile::tempdir().unwrap();
    for case in CASES {
        for crlf in [false, true] {
            let mut text = [HEAD, case.body].concat();
            if crlf {
                text = String::from_utf8_lossy(&text)
                    .replace('\n', "\r\n")
                    .into_bytes();
                if case.name == "not-utf8" {
                    continue; // the lossy conversion replaced the byte
                }
            }
            let path = dir.path().join(format!(
                "{}{}.zone",
                case.name,
                if crlf { "-crlf" } else { "" }
            ));
            std::fs::write(&path, &text).unwrap();
            let said = both_reject(&path, dir.path());
            let want = format!("ldplayer: {}:{}: {}", path.display(), case.at, case.message);
            assert!(said.starts_with(&want), "{said}\nexpected {want}");
            if let (Some(bind), Some(line)) = (&bind, case.bind_line) {
                let out = Command::new(bind)
                    .arg("example")
                    .arg(&path)
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    !out.status.success() && text.contains(&format!("{}:{line}:", path.display())),
                    "named-checkzone: {text}"
                );
            }
        }
    }
}

#[test]
fn included_files_are_placed_alike() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("inc.zone"),
        "; included\nok A 192.0.2.2\nbad A 1.2.3\n",
    )
    .unwrap();
    let main = dir.path().join("main.zone");
    std::fs::write(&main, [HEAD, b"$INCLUDE inc.zone\n"].concat()).unwrap();
    let said = both_reject(&main, dir.path());
    let inc = dir.path().join("inc.zone");
    assert_eq!(
        said,
        format!("ldplayer: {}:3:7: expected IPv4 address\n", inc.display())
    );
    // A conflict across files names both.
    std::fs::write(dir.path().join("inc.zone"), "www A 192.0.2.2\n").unwrap();
    std::fs::write(&main, [HEAD, b"www CNAME x\n$INCLUDE inc.zone\n"].concat()).unwrap();
    let said = both_reject(&main, dir.path());
    assert!(
        said.starts_with(&format!(
            "ldplayer: {}:1:1: CNAME and other data at www.example.: A here, CNAME at {}:6 ",
            inc.display(),
            main.display()
        )),
        "{said}"
    );
}

#[test]
fn a_second_file_of_one_zone_is_rejected_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.zone");
    let b = dir.path().join("b.zone");
    std::fs::write(&a, HEAD).unwrap();
    std::fs::write(&b, [b"; newer\n".as_slice(), HEAD].concat()).unwrap();
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = dir.path().join("out");
    let build = ldplayer_fails(&[
        "zones",
        "build",
        "--zone",
        a_s,
        "--zone",
        b_s,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        build,
        format!("ldplayer: {b_s}:4: zone example. again, already in {a_s}:3: one file per zone\n")
    );
    assert!(!out.join("example-2.zone").exists());
    let serve = ldplayer_fails(&["serve", "--listen", "127.0.0.1:0", a_s, b_s]);
    assert_eq!(
        serve,
        format!("ldplayer: {b_s}: zone example. is also loaded from {a_s}: one file per zone\n")
    );
}
