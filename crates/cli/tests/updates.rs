//! Dynamic updates as Windows clients send them (prerequisites and deletes with empty RDATA of
//! class NONE and ANY, GSS-TSIG signatures, the TKEY key exchange with a long token over TCP),
//! built by dnspython into a capture: ldplayer decodes every message, and tshark, reading the
//! same capture, finds the same messages with the same fields.

mod binary;

use binary::ldplayer;
use ldplayer_dns::{name_to_presentation, Message};
use ldplayer_testbed::prerequisite::{self, DEBIAN_PYTHON};
use ldplayer_trace::capture::{CaptureOptions, CaptureReader};
use ldplayer_trace::{Collect, Proto, RecordBuf, Source};
use std::path::Path;
use std::process::Command;

/// What both decoders say about one message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Decoded {
    tcp: bool,
    id: u16,
    qr: bool,
    opcode: u8,
    /// Only for responses (tshark shows no RCODE for queries).
    rcode: Option<u8>,
    counts: [u16; 4],
    /// The zone of an UPDATE, the question of the others: name, type, class.
    question: (String, u16, u16),
    /// Types and classes of every record after the question section, in order.
    records: Vec<(u16, u16)>,
    /// TSIG algorithm, MAC size, original ID, error.
    tsig: Option<(String, usize, u16, u16)>,
    /// TKEY algorithm, mode, key size.
    tkey: Option<(String, u16, usize)>,
}

fn presentation(wire_name: &[u8]) -> String {
    let mut s = String::new();
    name_to_presentation(wire_name, &mut s);
    s.trim_end_matches('.').to_string()
}

fn ours(r: &RecordBuf) -> Decoded {
    let m = Message::parse(&r.wire).unwrap_or_else(|e| panic!("{e}: {:?}", r.wire));
    let h = m.header();
    let mut qname = Vec::new();
    m.qname_wire(&mut qname);
    let rrs: Vec<_> = m.records().collect();
    let tsig = m.tsig().map(|t| {
        let t = t.expect("TSIG RDATA reads");
        (
            presentation(&t.algorithm),
            t.mac.len(),
            t.original_id,
            t.error,
        )
    });
    let tkey = rrs.iter().find_map(|rr| rr.tkey()).map(|t| {
        let t = t.expect("TKEY RDATA reads");
        (presentation(&t.algorithm), t.mode, t.key.len())
    });
    Decoded {
        tcp: r.proto == Proto::Tcp,
        id: h.id,
        qr: h.qr(),
        opcode: h.opcode(),
        rcode: h.qr().then_some(h.rcode_low()),
        counts: [h.qdcount, h.ancount, h.nscount, h.arcount],
        question: (
            presentation(&qname),
            m.qtype().map_or(0, u16::from),
            m.qclass().map_or(0, u16::from),
        ),
        records: rrs.iter().map(|rr| (rr.rtype.0, rr.class.0)).collect(),
        tsig,
        tkey,
    }
}

const TSHARK_FIELDS: [&str; 22] = [
    "tcp.srcport",
    "dns.id",
    "dns.flags.response",
    "dns.flags.opcode",
    "dns.flags.rcode",
    "dns.count.queries",
    "dns.count.zones",
    "dns.count.answers",
    "dns.count.prerequisites",
    "dns.count.auth_rr",
    "dns.count.updates",
    "dns.count.add_rr",
    "dns.qry.name",
    "dns.qry.type",
    "dns.qry.class",
    "dns.resp.type",
    "dns.resp.class",
    "dns.tsig.algorithm_name",
    "dns.tsig.mac_size",
    "dns.tsig.original_id",
    "dns.tsig.error",
    "dns.tkey.algo_name",
];
const TSHARK_TKEY: [&str; 2] = ["dns.tkey.mode", "dns.tkey.key_size"];

/// A number as tshark prints it: decimal or 0x-hexadecimal.
fn num<T: TryFrom<u64>>(s: &str) -> T {
    let v = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|e| panic!("tshark value {s:?}: {e}"));
    T::try_from(v).unwrap_or_else(|_| panic!("tshark value {s:?} out of range"))
}

fn theirs(pcap: &Path) -> Vec<Decoded> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(pcap)
        .args(["-o", "tcp.desegment_tcp_streams:TRUE", "-Y", "dns"])
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"])
        .args(["-E", "aggregator=,"])
        .env("LC_ALL", "C");
    for f in TSHARK_FIELDS.iter().chain(&TSHARK_TKEY) {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), TSHARK_FIELDS.len() + TSHARK_TKEY.len(), "{line}");
            let either = |a: &str, b: &str| -> u16 { num(if a.is_empty() { b } else { a }) };
            let list =
                |s: &str| -> Vec<u16> { s.split(',').filter(|v| !v.is_empty()).map(num).collect() };
            let qr = matches!(f[2], "1" | "True");
            let types = list(f[15]);
            let classes = list(f[16]);
            assert_eq!(types.len(), classes.len(), "{line}");
            Decoded {
                tcp: !f[0].is_empty(),
                id: num(f[1]),
                qr,
                opcode: num(f[3]),
                rcode: qr.then(|| num(f[4])),
                counts: [
                    either(f[5], f[6]),
                    either(f[7], f[8]),
                    either(f[9], f[10]),
                    num(f[11]),
                ],
                question: (f[12].to_string(), num(f[13]), num(f[14])),
                records: types.into_iter().zip(classes).collect(),
                tsig: (!f[17].is_empty())
                    .then(|| (f[17].to_string(), num(f[18]), num(f[19]), num(f[20]))),
                tkey: (!f[21].is_empty()).then(|| (f[21].to_string(), num(f[22]), num(f[23]))),
            }
        })
        .collect()
}

#[test]
fn windows_dynamic_updates_decode_as_tshark_decodes_them() {
    if !prerequisite::debian_python(&["dns.update", "dns.tsig"], "python3-dnspython")
        || prerequisite::tool("tshark", "tshark").is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let pcap = dir.path().join("updates.pcap");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/windows_updates.py");
    let made = Command::new(DEBIAN_PYTHON)
        .arg(&script)
        .arg(&pcap)
        .output()
        .expect("python runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let written: usize = String::from_utf8_lossy(&made.stdout)
        .trim()
        .parse()
        .expect("the script prints how many messages it wrote");

    let mut read = Collect::default();
    CaptureReader::new(
        std::fs::File::open(&pcap).expect("pcap"),
        CaptureOptions::default(),
    )
    .expect("a capture")
    .run(&mut read)
    .expect("reads");
    assert_eq!(
        (read.skipped.total(), read.malformed.total()),
        (0, 0),
        "skipped {:?}, malformed {:?}",
        read.skipped,
        read.malformed
    );
    let mut ours: Vec<Decoded> = read.records.iter().map(ours).collect();
    let mut theirs = theirs(&pcap);
    assert_eq!(ours.len(), written, "every message the script wrote");
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
    // What the capture holds: the TKEY exchange over TCP with its long token, prerequisites
    // and deletes with class NONE and ANY, GSS-TSIG signatures.
    let tkey = ours.iter().find(|d| !d.qr && d.tkey.is_some());
    assert_eq!(
        tkey.and_then(|d| d.tkey.clone()),
        Some(("gss-tsig".to_string(), 3, 2600))
    );
    assert!(tkey.is_some_and(|d| d.tcp));
    assert!(ours
        .iter()
        .any(|d| d.opcode == 5 && d.records.contains(&(5, 254))));
    assert_eq!(ours.iter().filter(|d| d.tsig.is_some()).count(), 9);

    // The command line says the same.
    let json = ldplayer(&["inspect", &pcap.to_string_lossy(), "--json"]).stdout;
    let summary: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
    assert_eq!(summary["messages"], written);
    assert_eq!(summary["tsig_signed"], 9);
    assert_eq!(summary["opcodes"][0]["name"], "UPDATE");
    assert_eq!(summary["opcodes"][0]["count"], 10);
    assert_eq!(summary["malformed"], serde_json::json!([]));
    assert_eq!(summary["skipped"], serde_json::json!([]));
}
