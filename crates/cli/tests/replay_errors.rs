//! `ldplayer replay` says why queries failed: each failure is counted by kind and cause, and the
//! first of each cause is printed with the way out. Real servers on loopback: nsd with a
//! certificate made as `openssl req -x509` makes it (CA:TRUE), nsd with a CA-signed one asked
//! for the wrong name; and local addresses that are not local. What cannot be replayed is
//! refused before anything is sent: a rate too slow to schedule, a server address nobody
//! means.

mod binary;

use binary::{ldplayer, ldplayer_unanswered};
use ldplayer_testbed::{nsd_tls, nsd_tls_self_signed_ca, prerequisite};
use std::path::Path;
use std::process::Command;

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// A trace of `n` queries 2 ms apart from 4 clients, in `dir`.
fn trace(dir: &Path, n: u32) -> String {
    let trace = s(&dir.join("t.bin"));
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.002",
        "-n",
        &n.to_string(),
        "--clients",
        "4",
        "--zone",
        "example.",
        "-o",
        &trace,
        "-q",
    ]);
    trace
}

/// Runs a replay in which every query fails (exit status 1, nothing answered, the summary
/// printed all the same); returns its text summary (printed without `-q`) and its JSON summary.
fn replay(args: &[&str]) -> (String, serde_json::Value) {
    let loud: Vec<&str> = args.iter().copied().filter(|a| *a != "-q").collect();
    let text = ldplayer_unanswered(&loud);
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let json = ldplayer_unanswered(&json_args);
    (
        String::from_utf8_lossy(&text.stdout).into_owned(),
        serde_json::from_slice(&json.stdout).expect("replay --json prints JSON"),
    )
}

/// The `replay.error_causes` entries of a JSON summary as (kind, cause, count).
fn causes(json: &serde_json::Value) -> Vec<(String, String, u64)> {
    json["replay"]["error_causes"]
        .as_array()
        .expect("error_causes")
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap_or("").to_string(),
                c["cause"].as_str().unwrap_or("").to_string(),
                c["count"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[test]
fn a_ca_certificate_used_as_the_servers_own_is_named_with_the_way_out() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let (server, cert) = nsd_tls_self_signed_ca();
    let tls = server.tls_addr.expect("tls").to_string();
    // kdig, the witness, accepts the certificate: the server works.
    let kdig = Command::new("kdig")
        .args([
            "@127.0.0.1",
            "-p",
            tls.rsplit(':').next().unwrap_or_default(),
        ])
        .args([
            &format!("+tls-ca={}", s(&cert)),
            "+tls-hostname=localhost",
            "www.example",
            "A",
        ])
        .output()
        .expect("kdig must be installed (scripts/test.sh installs knot-dnsutils)");
    assert!(
        String::from_utf8_lossy(&kdig.stdout).contains("192.0.2.1"),
        "kdig: {}",
        String::from_utf8_lossy(&kdig.stdout)
    );
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 20);
    let (text, json) = replay(&[
        "replay",
        &trace,
        "--server",
        &tls,
        "--proto",
        "tls",
        "--tls-ca",
        &s(&cert),
        "-q",
    ]);
    assert_eq!(
        causes(&json),
        [("tls".into(), "ca-used-as-end-entity".into(), 20)]
    );
    let line = text
        .lines()
        .find(|l| l.contains("ca-used-as-end-entity"))
        .unwrap_or_else(|| panic!("no cause line in:\n{text}"));
    assert!(line.contains("20 queries"), "{line}");
    assert!(
        line.contains("CA:FALSE") && line.contains("--tls-insecure"),
        "{line}"
    );
    // The way out works.
    let out = ldplayer(&[
        "replay",
        &trace,
        "--server",
        &tls,
        "--proto",
        "tls",
        "--tls-insecure",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["answered"], 20, "{json}");
}

#[test]
fn a_certificate_for_another_name_and_an_unknown_issuer_are_named() {
    let (server, ca) = nsd_tls();
    let tls = server.tls_addr.expect("tls").to_string();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 8);
    let (text, json) = replay(&[
        "replay",
        &trace,
        "--server",
        &tls,
        "--proto",
        "tls",
        "--tls-ca",
        &s(&ca),
        "--tls-name",
        "wrong.example",
        "-q",
    ]);
    assert_eq!(causes(&json), [("tls".into(), "name-mismatch".into(), 8)]);
    assert!(text.contains("--tls-name"), "{text}");
    let (text, json) = replay(&["replay", &trace, "--server", &tls, "--proto", "tls", "-q"]);
    assert_eq!(causes(&json), [("tls".into(), "unknown-issuer".into(), 8)]);
    assert!(text.contains("--tls-ca"), "{text}");
}

#[test]
fn source_addresses_that_are_not_local_are_named() {
    // TEST-NET-3: documentation addresses, not configured here (checked), so no packet goes out.
    let prefix = "203.0.113.0/24";
    for host in 1..=4u8 {
        let bound = std::net::UdpSocket::bind(("203.0.113.".to_string() + &host.to_string(), 0));
        assert!(
            bound.is_err(),
            "203.0.113.{host} is local on this machine: this test needs it not to be"
        );
    }
    let server = ldplayer_testbed::knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 12);
    for proto in ["udp", "tcp"] {
        let (text, json) = replay(&[
            "replay",
            &trace,
            "--server",
            &server.addr.to_string(),
            "--proto",
            proto,
            "--source-prefix",
            prefix,
            "-q",
        ]);
        assert_eq!(
            causes(&json),
            [("send".into(), "EADDRNOTAVAIL".into(), 12)],
            "{proto}"
        );
        assert!(text.contains("ip route add local"), "{text}");
    }
}

#[test]
fn bad_server_addresses_are_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 2);
    for (server, says) in [
        ("::1:5531", "[::1]:5531"),
        ("127.0.0.1:0", "port 0"),
        ("[::1]:x", "not a port"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .args(["replay", &trace, "--server", server, "-q"])
            .output()
            .expect("ldplayer runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(says),
            "{server}: {err}"
        );
    }
}

/// Runs `ldplayer args` in a network namespace of its own with nothing in it (`unshare -n` as
/// root, `unshare -rn` otherwise), so that whatever it sends stays there; kills it after
/// `limit` and says so. Returns its output and whether it ended by itself.
fn ldplayer_isolated(args: &[&str], limit: std::time::Duration) -> (std::process::Output, bool) {
    let root = Command::new("unshare")
        .args(["-n", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    let child = Command::new("unshare")
        .arg(if root { "-n" } else { "-rn" })
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("unshare (util-linux) runs ldplayer");
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output().expect("ldplayer output");
        let _ = done_tx.send(());
        out
    });
    let ended = done_rx.recv_timeout(limit).is_ok();
    if !ended {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    (waiter.join().expect("waiter"), ended)
}

/// `--rate 1e-300` sent one query and then waited for ever without a word; it is refused up
/// front, naming the slowest rate (the command line's bound; the engine refuses rates slower
/// than one query a day from any caller, `limits.rs`).
#[test]
fn a_rate_too_slow_to_schedule_is_refused_with_the_slowest_one() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 2);
    // Nothing answers in the namespace of its own: the old engine waited for ever.
    let server = "127.0.0.1:5300";
    for (flag, value, says) in [
        ("--rate", "1e-300", "expected queries per second from 0.001"),
        ("--speed", "1e-300", "expected a factor from 0.001"),
    ] {
        let (out, ended) = ldplayer_isolated(
            &[
                "replay",
                &trace,
                "--server",
                server,
                flag,
                value,
                "--timeout",
                "0.1",
            ],
            std::time::Duration::from_secs(60),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            ended,
            "{flag} {value}: still running after 60 s; stderr: {err}"
        );
        assert!(
            !out.status.success() && err.contains(says),
            "{flag} {value}: {err}"
        );
    }
}

/// `--server '[::1:5300]'` is the valid address ::0.1.83.0, off this host; it is refused,
/// naming the address meant, before anything is sent.
#[test]
fn an_ipv4_compatible_server_is_refused_with_the_address_meant() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 100);
    for (server, says) in [
        ("[::1:5300]", "did you mean [::1]:5300?"),
        ("[::127.0.0.1]:53", "127.0.0.1:PORT"),
    ] {
        let (out, ended) = ldplayer_isolated(
            &["replay", &trace, "--server", server, "--timeout", "0.1"],
            std::time::Duration::from_secs(60),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            ended && !out.status.success() && err.contains(says) && err.contains("::/96"),
            "{server}: {err}{stdout}"
        );
        assert!(
            !stdout.contains("queries"),
            "{server}: nothing replayed: {stdout}"
        );
    }
}
