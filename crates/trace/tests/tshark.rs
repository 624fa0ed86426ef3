//! Every shared sample capture decodes to the same DNS messages as tshark finds in it: the same
//! well-formed messages (QR, question, transport), and as many malformed ones (see
//! [`agreement::TsharkMessages::malformed`] for how those are compared).

mod agreement;

use agreement::{data_dir, key, multiset, read, tshark_messages};
use ldplayer_trace::capture::CaptureOptions;

#[test]
fn every_sample_capture_agrees_with_tshark() {
    let dir = data_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sample captures in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let found = tshark_messages(path);
        let theirs = found.keys;
        let ours = read(path, CaptureOptions::default());
        let our_keys: Vec<_> = ours.records.iter().filter_map(key).collect();
        let our_malformed = ours.records.len() - our_keys.len();
        let (tq, tr) = count(&theirs);
        let (oq, or) = count(&our_keys);
        eprintln!(
            "{name}: tshark {tq} queries {tr} responses {} malformed; ours {oq} queries {or} responses {our_malformed} malformed; skipped {:?}",
            found.malformed, ours.skipped
        );
        if found.malformed != our_malformed {
            failures.push(format!(
                "{name}: tshark flags {} messages malformed, ldplayer keeps {our_malformed}",
                found.malformed
            ));
        }
        if multiset(theirs.clone()) != multiset(our_keys.clone()) {
            failures.push(format!(
                "{name}: tshark {:?}\n  ours {:?}",
                multiset(theirs),
                multiset(our_keys)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
}

fn count(keys: &[agreement::Key]) -> (usize, usize) {
    let r = keys.iter().filter(|k| k.0).count();
    (keys.len() - r, r)
}

/// Spot checks of what the files are known to hold.
#[test]
fn known_counts() {
    let dir = data_dir();
    let cases: &[(&str, usize, usize)] = &[
        ("dnscap_dns.pcap", 41, 41),
        ("dnscap_dnso1tcp.pcap", 41, 41),
        ("dnscap_dnso1tcp-midmiss.pcap", 3, 3),
        ("dnscap_frags.pcap", 41, 41),
        ("dnsjit_pellets.pcap", 91, 0),
    ];
    for &(file, q, r) in cases {
        let c = read(&dir.join(file), CaptureOptions::default());
        let resp = c.records.iter().filter(|r| r.wire[2] & 0x80 != 0).count();
        assert_eq!((c.records.len() - resp, resp), (q, r), "{file}");
    }
}
