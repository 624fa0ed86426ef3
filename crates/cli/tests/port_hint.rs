//! A capture whose DNS is on another port than `--dns-port` says where its traffic was instead of
//! a silent "0 messages": a shared capture is moved to port 5392 (its text form edited) and
//! written back as pcap.

mod binary;

use binary::ldplayer;
use ldplayer_testbed::prerequisite::shared_file;

#[test]
fn a_capture_on_another_port_names_it() {
    let Some(data) = shared_file("pcap/dnscap_dns.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    ldplayer(&[
        "convert",
        &data.to_string_lossy(),
        "--to",
        "text",
        "-o",
        &path("dns.txt"),
        "-q",
    ]);
    let text = std::fs::read_to_string(path("dns.txt")).expect("text");
    let mut moved = String::new();
    for (i, line) in text.lines().enumerate() {
        let mut f: Vec<&str> = line.split('\t').collect();
        if i >= 2 {
            for port in [2, 4] {
                if f[port] == "53" {
                    f[port] = "5392";
                }
            }
        }
        moved.push_str(&f.join("\t"));
        moved.push('\n');
    }
    std::fs::write(path("moved.txt"), moved).expect("write");
    ldplayer(&[
        "convert",
        &path("moved.txt"),
        "--to",
        "pcap",
        "-o",
        &path("moved.pcap"),
        "-q",
    ]);

    let out = ldplayer(&[
        "convert",
        &path("moved.pcap"),
        "--to",
        "text",
        "-o",
        &path("none.txt"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "ldplayer: no DNS on port 53; the busiest UDP/TCP ports were 5392 (82 packets), "
        ),
        "{err}"
    );
    assert!(err.contains("; try --dns-port 5392\n"), "{err}");
    assert!(err.contains("0 messages"), "{err}");
    // Inspect says it too; the JSON on standard output stays clean.
    let out = ldplayer(&["inspect", &path("moved.pcap"), "--json"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("try --dns-port 5392"));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(summary["messages"], 0);
    // On the port it names, the capture is DNS again, and nothing is hinted.
    let out = ldplayer(&[
        "convert",
        &path("moved.pcap"),
        "--to",
        "text",
        "-o",
        &path("found.txt"),
        "--dns-port",
        "5392",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("ldplayer: 82 messages"), "{err}");
    assert!(!err.contains("no DNS"), "{err}");
    // The original capture gives no hint.
    let out = ldplayer(&["inspect", &data.to_string_lossy()]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no DNS"));
}
