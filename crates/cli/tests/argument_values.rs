//! Numeric options refuse values out of their range where they are parsed: a negative value is
//! a value (not "an unexpected argument"), a huge one is called too large (not "negative"), and
//! the message names the option, the value and the range, in the tool's words, never Rust's.

mod binary;

use binary::{ldplayer, s};
use std::process::Command;

/// Runs `ldplayer ARGS` expecting clap's usage error (status 2) about `flag` and `value`,
/// whose explanation contains `range`.
fn refused(args: &[&str], flag: &str, value: &str, range: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(&format!("invalid value '{value}' for '{flag}")),
        "{args:?}: the message should name {flag} and {value}: {err}"
    );
    assert!(
        err.contains(range),
        "{args:?}: the message should say {range:?}: {err}"
    );
    for words in [
        "unexpected argument",
        "cannot convert",
        "Duration",
        "non-negative",
    ] {
        assert!(!err.contains(words), "{args:?}: {err}");
    }
}

#[test]
fn replay_options_say_their_range_for_negative_and_huge_values() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "5", "-o", &s(&trace), "-q"]);
    let t = s(&trace);
    let replay = |extra: &[&str]| -> Vec<String> {
        ["replay", &t, "--server", "127.0.0.1:9"]
            .iter()
            .chain(extra)
            .map(|x| x.to_string())
            .collect()
    };
    let cases: &[(&str, &str, &str)] = &[
        ("--speed", "-1", "a factor from 0.001 to 1000000"),
        ("--speed", "1e300", "a factor from 0.001 to 1000000"),
        ("--timeout", "-1", "seconds above 0"),
        ("--timeout", "1e30", "up to 10000000"),
        ("--timeout", "nan", "seconds above 0"),
        ("--rate", "-5", "queries per second from 0.001"),
        ("--rate", "1e-300", "queries per second from 0.001"),
        ("--late-start", "-1", "seconds from 0 to 10000000"),
        ("--idle-timeout", "1e30", "seconds from 0 to 10000000"),
        ("--max-in-flight", "-3", "a whole number from 1"),
        ("--udp-retries", "-1", "a number of retries from 0 to 100"),
        ("--queriers", "2000", "querier threads from 1 to 1024"),
        ("--processes", "100000", "processes from 1 to 1024"),
    ];
    for (flag, value, range) in cases {
        let args = replay(&[flag, value]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, flag, value, range);
    }
}

#[test]
fn serve_synth_and_mutate_options_say_their_range() {
    refused(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--idle-timeout",
            "1e30",
            "z.zone",
        ],
        "--idle-timeout",
        "1e30",
        "seconds from 0 to 10000000",
    );
    refused(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tcp-idle-timeout",
            "-1",
            "z.zone",
        ],
        "--idle-timeout",
        "-1",
        "seconds from 0",
    );
    refused(
        &["synth", "--rate", "-5", "-o", "/dev/null"],
        "--rate",
        "-5",
        "queries per second",
    );
    refused(
        &["synth", "--do-share", "1.5", "-o", "/dev/null"],
        "--do-share",
        "1.5",
        "a share from 0 to 1",
    );
    refused(
        &["mutate", "-", "--time-scale", "-2", "-o", "/dev/null"],
        "--time-scale",
        "-2",
        "a factor from 0.001",
    );
    refused(
        &["mutate", "-", "--from", "-1", "-o", "/dev/null"],
        "--from",
        "-1",
        "a time in seconds from 0",
    );
}

/// The named choices of `replay` and `synth` keep their spellings, the ones population files and
/// plans use too: a value that is none of them is refused with the list, in declaration order.
#[test]
fn named_choices_keep_their_spellings() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "5", "-o", &s(&trace), "-q"]);
    let t = s(&trace);
    let cases: &[(&str, &str, &str)] = &[
        ("--stack", "Lean", "[possible values: lean, reference]"),
        ("--stack", "quinn", "[possible values: lean, reference]"),
        ("--doh-method", "put", "[possible values: post, get]"),
        (
            "--proto",
            "dot",
            "[possible values: keep, udp, tcp, tls, doh, doq]",
        ),
    ];
    for (flag, value, list) in cases {
        let args = ["replay", &t, "--server", "127.0.0.1:9", flag, value];
        refused(&args, flag, value, list);
    }
    let out = s(&dir.path().join("u.bin"));
    for value in ["rootlike", "Root"] {
        let args = ["synth", "-n", "5", "-o", &out, "--workload", value];
        refused(
            &args,
            "--workload",
            value,
            "[possible values: fixed, poisson, root]",
        );
    }
}

/// A negative shift is a value, and is applied.
#[test]
fn a_negative_time_shift_is_still_taken() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&[
        "synth",
        "-n",
        "5",
        "--start",
        "1000",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let shifted = dir.path().join("s.txt");
    ldplayer(&[
        "mutate",
        &s(&trace),
        "--time-shift",
        "-100",
        "-o",
        &s(&shifted),
        "-q",
    ]);
    let text = std::fs::read_to_string(&shifted).expect("text");
    let first = text
        .lines()
        .find(|l| !l.starts_with('#') && !l.starts_with("time\t"))
        .and_then(|l| l.split('\t').next())
        .expect("a record");
    assert!(first.starts_with("900."), "{first}");
}

/// Every numeric option of every command (found in its `--help` by the kind of value it takes)
/// reads `-1`, `1e30` and a number past 64 bits as values and answers in the tool's words:
/// either the value is taken, or clap says the option, the value and what it expects. Never
/// "unexpected argument '-1'", nor Rust's "invalid digit" or "number too large to fit".
#[test]
fn every_numeric_option_answers_negative_and_huge_values_in_its_own_words() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "5", "-o", &s(&trace), "-q"]);
    let t = s(&trace);
    // Commands with a positional input take the trace, so that only the option is at stake.
    let commands: &[(&str, bool)] = &[
        ("convert", true),
        ("inspect", true),
        ("synth", false),
        ("mutate", true),
        ("replay", true),
        ("serve", false),
        ("results export", true),
        ("zones build", true),
        ("zones synth", false),
        ("lab", false),
        ("demo", false),
        ("population fit", true),
        ("diff", true),
    ];
    let numeric = [
        "<SECONDS>",
        "<PORT>",
        "<N>",
        "<FRACTION>",
        "<SEED>",
        "<QPS>",
        "<TIME>",
        "<K>",
        "<COUNT>",
        "<UDP_WORKERS>",
        "<UDP_RETRIES>",
        "<QUERIERS>",
        "<P>",
        "<MAX_IN_FLIGHT>",
        "<CLIENTS>",
        "<BYTES>",
    ];
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (command, positional) in commands {
        let mut help_args: Vec<&str> = command.split(' ').collect();
        help_args.push("--help");
        let help = String::from_utf8(ldplayer(&help_args).stdout).expect("utf-8");
        for line in help.lines().map(str::trim_start) {
            let Some(placeholder) = numeric.iter().find(|p| line.contains(*p)) else {
                continue;
            };
            let Some(flag) = line.split([',', ' ']).find(|w| w.starts_with("--")) else {
                continue;
            };
            if !line.starts_with(&format!("{flag} {placeholder}"))
                && !line.contains(&format!(", {flag} {placeholder}"))
            {
                continue;
            }
            for value in ["-1", "1e30", "99999999999999999999"] {
                let mut args: Vec<&str> = command.split(' ').collect();
                if *positional {
                    args.push(&t);
                }
                args.extend([flag, value]);
                let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
                    .args(&args)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .expect("ldplayer runs");
                let err = String::from_utf8_lossy(&out.stderr);
                let first = err.lines().next().unwrap_or("");
                let parsed_or_explained = !first.contains("unexpected argument")
                    && !err.contains("invalid digit")
                    && !err.contains("too large to fit")
                    && !err.contains("is not in ")
                    && (!first.contains(&format!("invalid value '{value}'"))
                        || first.contains("expected"));
                if !parsed_or_explained {
                    wrong.push(format!("{command} {flag} {value}: {first}"));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 60, "only {checked} option values checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
