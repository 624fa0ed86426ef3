//! `ldplayer serve` in plain mode, queried by kdig (an independent client) and replayed at by
//! `ldplayer replay`; the signed root zone from shared/data loads and answers referrals.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `ldplayer serve`, stopped with SIGINT on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// Starts `ldplayer serve` on a free loopback port and returns it with its address.
fn serve(zone_files: &[&std::path::Path]) -> (Serve, String) {
    let port = ldplayer_testbed::free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["serve", "--listen", &addr])
        .args(zone_files)
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer serve starts");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut lines = String::new();
    for _ in 0..2 {
        err.read_line(&mut lines).expect("read");
    }
    assert!(lines.contains("answering on"), "{lines}");
    std::thread::spawn(move || for _ in err.lines() {});
    (Serve(child), addr)
}

fn kdig(addr: &str, args: &[&str]) -> String {
    let (host, port) = addr.split_once(':').expect("addr");
    let out = Command::new("kdig")
        .arg(format!("@{host}"))
        .args(["-p", port, "+timeout=2", "+retry=1"])
        .args(args)
        .output()
        .expect("kdig must be installed (scripts/test.sh installs knot-dnsutils)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn serves_the_signed_root_zone_to_kdig_over_udp_and_tcp() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/zones/root-signed-2017-08-21.zone");
    let (_server, addr) = serve(&[&root]);
    let udp = kdig(&addr, &["www.example.com.", "A", "+dnssec"]);
    assert!(udp.contains("status: NOERROR"), "{udp}");
    assert!(
        udp.contains("com.") && udp.contains("NS"),
        "a referral to com: {udp}"
    );
    assert!(udp.contains("DS"), "DS with DO: {udp}");
    let tcp = kdig(&addr, &["nonexistent-tld-xyz.", "A", "+tcp"]);
    assert!(tcp.contains("status: NXDOMAIN"), "{tcp}");
    assert!(tcp.contains("Flags: qr aa"), "{tcp}");
}

#[test]
fn replay_against_ldplayer_serve() {
    let dir = tempfile::tempdir().expect("scratch");
    let zone = dir.path().join("example.zone");
    std::fs::write(&zone, "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.1\n")
        .expect("zone");
    let (_server, addr) = serve(&[&zone]);
    let trace = dir.path().join("t.bin");
    let status = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "synth",
            "--workload",
            "poisson",
            "--rate",
            "1000",
            "-n",
            "1000",
            "--clients",
            "30",
            "--tcp-share",
            "0.3",
        ])
        .args(["--zone", "example.", "-q", "-o"])
        .arg(&trace)
        .status()
        .expect("synth");
    assert!(status.success());
    std::thread::sleep(Duration::from_millis(100));
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("replay")
        .arg(&trace)
        .args(["--server", &addr, "--speed", "4", "--json"])
        .output()
        .expect("replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["sent"], 1000, "{summary}");
    assert_eq!(summary["answered"], 1000, "{summary}");
    assert_eq!(summary["rcodes"]["NOERROR"], 1000, "{summary}");
}
