//! What the trace tests compare: ldplayer's reading of a capture against tshark's (the keys of
//! the DNS messages each finds), and DNS messages built to size for the writer's tests.
#![allow(dead_code)]

use ldplayer_dns::{name_to_presentation, Message};
use ldplayer_trace::capture::{CaptureOptions, CaptureReader};
use ldplayer_trace::{Collect, Proto, RecordBuf, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shared sample captures (`pcap/` of the shared test data).
pub fn data_dir() -> PathBuf {
    ldplayer_testbed::prerequisite::shared_data_dir(env!("CARGO_MANIFEST_DIR")).join("pcap")
}

/// What the tests compare of a DNS message: QR, first question name (as tshark shows it), type,
/// transport.
pub type Key = (bool, String, u16, &'static str);

/// Reads a capture with our reader.
pub fn read(path: &Path, options: CaptureOptions) -> Collect {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut sink = Collect::default();
    CaptureReader::new(file, options)
        .unwrap()
        .run(&mut sink)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sink
}

/// The comparison key of one of our records; `None` for a malformed message kept for its bytes
/// (those are compared by number, see [`TsharkMessages::malformed`]).
pub fn key(r: &RecordBuf) -> Option<Key> {
    let m = Message::parse(&r.wire).ok()?;
    let mut wire = Vec::new();
    let mut name = String::new();
    if m.qname_wire(&mut wire) {
        name_to_presentation(&wire, &mut name);
    }
    let name = if name == "." {
        "<Root>".to_string()
    } else {
        name.trim_end_matches('.').to_string()
    };
    let transport = match r.proto {
        Proto::Udp => "udp",
        _ => "tcp",
    };
    Some((
        m.header().qr(),
        name,
        m.qtype().map_or(0, u16::from),
        transport,
    ))
}

/// Multiset of keys.
pub fn multiset(keys: impl IntoIterator<Item = Key>) -> BTreeMap<Key, usize> {
    let mut m = BTreeMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The DNS messages tshark finds in a capture.
#[derive(Debug, Default)]
pub struct TsharkMessages {
    /// The keys of the messages it decodes whole.
    pub keys: Vec<Key>,
    /// Messages in frames it flags as malformed (an exception while dissecting) or whose
    /// question name it cannot read (`<Name contains a pointer that loops>`, `<Name too long>`).
    /// ldplayer keeps such messages too (when their header reads) and the agreement tests
    /// compare their number with ldplayer's malformed count: a key needs a readable question.
    /// (tshark does not check the OPT rules of RFC 6891, so a message with two OPT records is
    /// malformed for ldplayer only; no shared capture has one.)
    pub malformed: usize,
}

/// Runs tshark and returns the DNS messages it decodes in `path`. Panics (failing the test)
/// when tshark is not installed.
pub fn tshark_messages(path: &Path) -> TsharkMessages {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-o", "tcp.desegment_tcp_streams:TRUE"])
        .args([
            "-Y",
            "dns",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
        ])
        .args([
            "-e",
            "frame.number",
            "-e",
            "dns.flags.response",
            "-e",
            "dns.qry.name",
        ])
        .args(["-e", "dns.qry.type", "-e", "ip.proto", "-e", "ipv6.nxt"])
        .args([
            "-e",
            "udp.srcport",
            "-e",
            "tcp.srcport",
            "-e",
            "_ws.malformed",
        ])
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "tshark is required by this test and could not be run ({e}); \
                 install it (apt-get install tshark) — the project's test script does"
            )
        });
    assert!(
        output.status.success(),
        "tshark failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("tshark output is UTF-8");
    let mut found = TsharkMessages::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert!(f.len() >= 9, "unexpected tshark line {line:?}");
        let transport = if !f[7].is_empty() { "tcp" } else { "udp" };
        let qrs: Vec<&str> = f[1].split(',').filter(|s| !s.is_empty()).collect();
        let names: Vec<&str> = f[2].split(',').collect();
        let unreadable = |n: &&str| n.starts_with('<') && n.ends_with('>') && *n != "<Root>";
        if !f[8].is_empty() || names.iter().any(unreadable) {
            found.malformed += qrs.len().max(1);
            continue;
        }
        let types: Vec<&str> = f[3].split(',').collect();
        assert!(
            names.len() == qrs.len() && types.len() == qrs.len(),
            "frame {}: messages without exactly one question are not compared: {line:?}",
            f[0]
        );
        for i in 0..qrs.len() {
            let qr = match qrs[i] {
                "1" | "True" => true,
                "0" | "False" => false,
                other => panic!("unexpected dns.flags.response {other:?}"),
            };
            let t: u16 = types[i].parse().expect("numeric qtype");
            found.keys.push((qr, names[i].to_string(), t, transport));
        }
    }
    found
}

/// A DNS message with one question `n<id>.example.` type A, and `extra` bytes of TXT answer.
pub fn message(id: u16, qr: bool, extra: usize) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(if qr { 0x8180u16 } else { 0x0100 }).to_be_bytes());
    m.extend_from_slice(&[0, 1, 0, u8::from(extra > 0), 0, 0, 0, 0]);
    let label = format!("n{id}");
    m.push(label.len() as u8);
    m.extend_from_slice(label.as_bytes());
    m.push(7);
    m.extend_from_slice(b"example");
    m.push(0);
    m.extend_from_slice(&[0, 1, 0, 1]);
    if extra > 0 {
        let mut rdata = Vec::new();
        while rdata.len() < extra {
            let n = (extra - rdata.len()).clamp(1, 256) - 1;
            rdata.push(n as u8);
            rdata.extend(std::iter::repeat_n(b'x', n));
        }
        m.extend_from_slice(&[0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60]);
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(&rdata);
    }
    m
}
