//! The two layouts of a written hierarchy (`zones build --layout bundles|files`): the
//! meta-server's views loaded from each answer every query alike, for hierarchies rebuilt from
//! real captures (shared/data) and a synthetic one; a manifest of per-zone files (the format
//! older builds wrote) still loads; a damaged bundle is refused with its file and line.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::Path;

use ldplayer_dns::{
    build, name_from_presentation, Class, EdnsFields, Fields, Question, Rcode, Rtype,
};
use ldplayer_trace::open::{open, ReadOptions};
use ldplayer_zone::{AnswerOptions, Manifest, Views};
use ldplayer_zonebuild::{synthetic, Hierarchy, Layout, ZoneBuilder};

fn query(name: &str, qtype: Rtype, dnssec_ok: bool) -> Option<Vec<u8>> {
    build(&Fields {
        id: 7,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation(name).ok()?,
            qtype,
            qclass: Class::IN,
        }),
        edns: Some(EdnsFields {
            version: 0,
            udp_size: 4096,
            dnssec_ok,
            options: Vec::new(),
        }),
    })
    .ok()
}

/// The hierarchy rebuilt from captures of the shared test data.
fn from_captures(names: &[&str]) -> Option<Hierarchy> {
    let mut builder = ZoneBuilder::new();
    for name in names {
        let path = ldplayer_testbed::prerequisite::shared_data(
            env!("CARGO_MANIFEST_DIR"),
            &format!("pcap/{name}"),
        )?;
        let mut input = open(&path, &ReadOptions::default()).expect("the capture opens");
        input.source.run(&mut builder).expect("the capture reads");
    }
    Some(builder.build())
}

/// Writes `h` in both layouts under `dir` and loads each manifest as the meta-server does.
fn both(h: &Hierarchy, dir: &Path) -> (Manifest, Views, Manifest, Views) {
    let files = h.write_layout(&dir.join("files"), Layout::Files).unwrap();
    let bundles = h
        .write_layout(&dir.join("bundles"), Layout::Bundles)
        .unwrap();
    assert!(files.named_conf.is_some() && bundles.named_conf.is_none());
    let mf = Manifest::from_file(&files.manifest).expect("the files layout loads");
    let mb = Manifest::from_file(&bundles.manifest).expect("the bundles layout loads");
    let (vf, vb) = (mf.load().unwrap(), mb.load().unwrap());
    (mf, vf, mb, vb)
}

/// Asks every address of the manifests every sample name of `h` (each owner, a name below
/// it, one below each apex) for several types, with and without DO, and compares the answers
/// of the two layouts byte for byte; returns how many answers held records.
fn compare(h: &Hierarchy, dir: &Path) -> usize {
    let (mf, vf, mb, vb) = both(h, dir);
    let addresses: Vec<IpAddr> = mf.entries.iter().map(|e| e.address).collect();
    assert_eq!(
        addresses,
        mb.entries.iter().map(|e| e.address).collect::<Vec<_>>()
    );
    assert_eq!(vf.addresses(), vb.addresses());
    assert_eq!(vf.zones().len(), h.zones.len());
    assert_eq!(vb.zones().len(), h.zones.len());
    let mut names = BTreeSet::new();
    for z in &h.zones {
        names.insert(format!("nx-{}", z.name()).replace("nx-.", "nx."));
        names.insert(format!("a.b.{}", z.name()).replace("..", "."));
        for r in &z.records {
            let owner = r.owner().to_string();
            let owner = if owner.ends_with('.') {
                owner
            } else {
                format!("{owner}.")
            };
            names.insert(format!("below.{owner}").replace("..", "."));
            names.insert(owner);
        }
    }
    let opts = AnswerOptions::default();
    let (mut compared, mut with_records) = (0, 0);
    for name in &names {
        for qtype in [
            Rtype::A,
            Rtype::AAAA,
            Rtype::NS,
            Rtype::SOA,
            Rtype::DS,
            Rtype::TXT,
        ] {
            for dnssec_ok in [false, true] {
                let Some(q) = query(name, qtype, dnssec_ok) else {
                    continue;
                };
                for a in &addresses {
                    let f = vf.for_destination(Some(*a)).expect("a view per address");
                    let b = vb.for_destination(Some(*a)).expect("a view per address");
                    let (rf, rb) = (f.answer(&q, &opts), b.answer(&q, &opts));
                    let (rf, rb) = (rf.map(|r| r.wire), rb.map(|r| r.wire));
                    assert_eq!(rf, rb, "{name} {qtype:?} DO={dnssec_ok} at {a}");
                    compared += 1;
                    // ANCOUNT or NSCOUNT: an answer or a referral, not just a refusal.
                    if rf.is_some_and(|w| w.len() > 12 && (w[7] > 0 || w[9] > 0)) {
                        with_records += 1;
                    }
                }
            }
        }
    }
    assert!(compared > 1000, "{compared} answers compared");
    with_records
}

#[test]
fn both_layouts_answer_alike_from_real_captures() {
    let Some(h) = from_captures(&["rfcdnscomp_response.pcap", "dnscap_edns.pcap"]) else {
        return;
    };
    // The root, TLDs (cz, net, aaa) and an SLD (nic.cz): three levels, two bundles.
    assert_eq!(h.zones.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let with_records = compare(&h, dir.path());
    assert!(with_records > 500, "{with_records} answers with records");
    let mut listed: Vec<_> = std::fs::read_dir(dir.path().join("bundles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "level1.zones",
            "level2.zones",
            "manifest",
            "root.hints",
            "root.zone"
        ]
    );
    let manifest = std::fs::read_to_string(dir.path().join("bundles/manifest")).unwrap();
    assert!(manifest.starts_with("#ldplayer-manifest/2\n"), "{manifest}");
    assert!(
        manifest
            .lines()
            .any(|l| l == "194.0.12.1 level1.zones@cz. level2.zones@nic.cz."),
        "{manifest}"
    );
    // The per-zone layout writes the manifest older builds wrote, which loads as it did.
    let manifest = std::fs::read_to_string(dir.path().join("files/manifest")).unwrap();
    assert!(manifest.starts_with("#ldplayer-manifest/1\n"), "{manifest}");
    assert!(
        manifest
            .lines()
            .any(|l| l == "194.0.12.1 cz.zone nic.cz.zone"),
        "{manifest}"
    );
}

#[test]
fn both_layouts_answer_alike_for_a_synthetic_hierarchy() {
    let h = synthetic::hierarchy(&synthetic::Shape {
        tlds: 4,
        slds: 25,
        providers: 3,
    })
    .unwrap();
    assert_eq!(h.zones.len(), 105);
    let dir = tempfile::tempdir().unwrap();
    let with_records = compare(&h, dir.path());
    assert!(with_records > 1000, "{with_records} answers with records");
}

#[test]
fn an_older_manifest_loads() {
    // As builds before bundles wrote it (its tag, comment, and per-zone files).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("root.zone"),
        ". 86400 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400\n\
         . 518400 IN NS a.root-servers.net.\n\
         a.root-servers.net. 3600000 IN A 198.41.0.4\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("manifest"),
        "#ldplayer-manifest/1\n# nameserver address, then the zone files it serves\n\
         198.41.0.4 root.zone\n",
    )
    .unwrap();
    let m = Manifest::from_file(dir.path().join("manifest")).unwrap();
    let views = m.load().unwrap();
    let q = query(".", Rtype::NS, false).unwrap();
    let set = views
        .for_destination(Some("198.41.0.4".parse().unwrap()))
        .unwrap();
    let r = set.answer(&q, &AnswerOptions::default()).unwrap().wire;
    assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1, "one NS record");
}

#[test]
fn a_damaged_bundle_is_refused_at_its_line() {
    let h = synthetic::hierarchy(&synthetic::Shape {
        tlds: 2,
        slds: 3,
        providers: 2,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let written = h.write_layout(dir.path(), Layout::Bundles).unwrap();
    let bundle = dir.path().join("level2.zones");
    let text = std::fs::read_to_string(&bundle).unwrap();
    // A broken address in the third zone, and the line it is on.
    let lines: Vec<&str> = text.lines().collect();
    let third = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("$ORIGIN "))
        .nth(2)
        .map(|(i, _)| i)
        .unwrap();
    let (n, line) = lines
        .iter()
        .enumerate()
        .skip(third)
        .find(|(_, l)| l.contains(" IN A "))
        .unwrap();
    let mut damaged: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    damaged[n] = line.replace(" IN A ", " IN A 300.");
    std::fs::write(&bundle, damaged.join("\n") + "\n").unwrap();
    let e = Manifest::from_file(&written.manifest)
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    let place = format!("{}:{}:", bundle.canonicalize().unwrap().display(), n + 1);
    assert!(e.starts_with(&place), "{e} (expected at {place})");
    // A record before the first zone.
    std::fs::write(&bundle, format!("x. 60 IN A 192.0.2.1\n{text}")).unwrap();
    let e = Manifest::from_file(&written.manifest)
        .unwrap()
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("level2.zones:1:1: ") && e.contains("$ORIGIN"),
        "{e}"
    );
}
