//! The constructor on small hand-made exchanges.

use super::*;
use crate::hierarchy::BuiltZone;
use domain::base::iana::Rcode;
use domain::rdata::{Ns, A};

fn name(s: &str) -> Name<Bytes> {
    s.parse().unwrap()
}

fn rr(owner: &str, data: AllRecordData<Bytes, Name<Bytes>>) -> Rr {
    Record::new(name(owner), Class::IN, Ttl::from_secs(3600), data)
}

fn ns(owner: &str, target: &str) -> Rr {
    rr(owner, AllRecordData::Ns(Ns::new(name(target))))
}

fn a(owner: &str, addr: [u8; 4]) -> Rr {
    rr(
        owner,
        AllRecordData::A(A::from_octets(addr[0], addr[1], addr[2], addr[3])),
    )
}

fn exchange(
    server: [u8; 4],
    aa: bool,
    answer: Vec<Rr>,
    authority: Vec<Rr>,
    additional: Vec<Rr>,
) -> Exchange {
    Exchange {
        server: IpAddr::from(server),
        authoritative: aa,
        qname: name("x.child.net."),
        qtype: Rtype::A,
        rcode: Rcode::NXDOMAIN,
        answer,
        authority,
        additional,
    }
}

#[test]
fn an_soa_goes_to_the_zone_it_names_not_to_the_parent() {
    let net = [192, 0, 2, 1];
    let child_soa = synthesized_soa(&name("child.net."), name("ns.child.net."));
    let mut b = ZoneBuilder::new();
    // net.'s server gives its NS set and delegates child.net.
    b.add_exchange(exchange(
        net,
        true,
        vec![ns("net.", "ns.net.")],
        vec![],
        vec![a("ns.net.", net)],
    ));
    b.add_exchange(exchange(
        net,
        false,
        vec![],
        vec![ns("child.net.", "ns.child.net.")],
        vec![a("ns.child.net.", [192, 0, 2, 2])],
    ));
    // The same address answers with child.net.'s SOA (a Deckard range answering for both).
    b.add_exchange(exchange(net, true, vec![], vec![child_soa], vec![]));
    let h = b.build();
    let text: Vec<(String, String)> = h.zones.iter().map(|z| (z.name(), z.to_text())).collect();
    let (_, net_text) = text.iter().find(|(n, _)| n == "net.").unwrap();
    assert!(!net_text.contains("child.net. 3600 IN SOA"), "{net_text}");
    let child = h.zones.iter().find(|z| z.name() == "child.net.").unwrap();
    assert!(!child.soa_synthesized, "the captured SOA is used");
    // Every zone written loads and passes the zone checks.
    for (n, t) in &text {
        ldplayer_zone::Zone::from_text(t, n, None).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A builder fed the responses of a Deckard scenario made of `ranges` (and nothing else).
fn builder(ranges: &str) -> ZoneBuilder {
    let text = format!("CONFIG_END\nSCENARIO_BEGIN t\n{ranges}SCENARIO_END\n");
    let s = crate::deckard::Scenario::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    b
}

/// The hierarchy [`builder`] rebuilds.
fn build(ranges: &str) -> Hierarchy {
    builder(ranges).build()
}

/// One range entry: `reply` flags, the question, then `SECTION` lines and records.
fn entry(reply: &str, question: &str, sections: &str) -> String {
    format!(
        "ENTRY_BEGIN\nMATCH opcode qtype qname\nREPLY {reply}\nSECTION QUESTION\n{question}\n{sections}ENTRY_END\n"
    )
}

fn range(addresses: &[&str], entries: &[String]) -> String {
    let mut r = String::from("RANGE_BEGIN 0 100\n");
    for a in addresses {
        r.push_str(&format!("ADDRESS {a}\n"));
    }
    for e in entries {
        r.push_str(e);
    }
    r.push_str("RANGE_END\n");
    r
}

fn zone<'h>(h: &'h Hierarchy, apex: &str) -> &'h BuiltZone {
    h.zones
        .iter()
        .find(|z| z.name() == apex)
        .unwrap_or_else(|| panic!("no zone {apex}"))
}

const SIG: &str = "20170201000000 20170111000000 19036";

/// The root's keys answered with AA by a server that serves `net.` (its NS names say so) but
/// whom no NS RRset of the root names: the answer shows the server serving the root, so the
/// keys are kept in the root zone and the server serves it (reported as inferred).
#[test]
fn an_authoritative_answer_gives_its_server_the_zone_it_shows() {
    let root_server = range(
        &["192.0.2.1"],
        &[
            entry(
                "QR AA NOERROR",
                "net. IN NS",
                "SECTION ANSWER\nnet. 3600 IN NS m.root-servers.net.\n\
                 SECTION ADDITIONAL\nm.root-servers.net. 3600 IN A 192.0.2.1\n",
            ),
            entry(
                "QR AA DO NOERROR",
                ".\t\tIN\tDNSKEY",
                &format!(
                    "SECTION ANSWER\n.\t16567\tIN\tDNSKEY\t257 3 8 AwEAAQ==\n\
                     .\t16567\tIN\tRRSIG\tDNSKEY 8 0 172800 {SIG} . AAAA\n"
                ),
            ),
        ],
    );
    let h = build(&root_server);
    let root = zone(&h, ".");
    let text = root.to_text();
    assert!(text.contains(". 172800 IN DNSKEY 257 3 8"), "{text}");
    assert!(root.servers.contains(&IpAddr::from([192, 0, 2, 1])));
    assert_eq!(h.report.inferred_servers, ["192.0.2.1 ."]);
    assert!(h.report.records_left_out.is_empty(), "{:?}", h.report);
    assert_eq!(h.report.ttls_restored, 1);
}

/// A server that serves `ro.child.net.` (its NS names' addresses say so) answers for
/// `child.net.` too, at its apex and below, whose NS names do not list it (Deckard's
/// world_cz_vutbr_www: shark serves both): its answers for child.net. are kept, and it serves
/// child.net.
#[test]
fn a_server_not_listed_for_a_zone_it_answers_for_keeps_its_answers() {
    let net = range(
        &["192.0.2.1"],
        &[
            entry(
                "QR AA NOERROR",
                "net. IN NS",
                "SECTION ANSWER\nnet. NS ns.net.\nSECTION ADDITIONAL\nns.net. A 192.0.2.1\n",
            ),
            entry(
                "QR NOERROR",
                "child.net. IN NS",
                "SECTION AUTHORITY\nchild.net. NS ns.child.net.\n\
                 SECTION ADDITIONAL\nns.child.net. A 192.0.2.2\n",
            ),
        ],
    );
    let child = range(
        &["192.0.2.2"],
        &[entry(
            "QR NOERROR",
            "ro.child.net. IN NS",
            "SECTION AUTHORITY\nro.child.net. NS shark.ro.child.net.\n\
             SECTION ADDITIONAL\nshark.ro.child.net. A 192.0.2.3\n",
        )],
    );
    let shark = range(
        &["192.0.2.3"],
        &[
            entry(
                "QR AA NOERROR",
                "ro.child.net. IN NS",
                "SECTION ANSWER\nro.child.net. NS shark.ro.child.net.\n",
            ),
            entry(
                "QR AA NOERROR",
                "child.net. IN NS",
                "SECTION ANSWER\nchild.net. NS ns.child.net.\n",
            ),
            entry(
                "QR AA NOERROR",
                "www.child.net. IN A",
                "SECTION ANSWER\nwww.child.net. A 192.0.2.80\n",
            ),
        ],
    );
    let h = build(&format!("{net}{child}{shark}"));
    let child = zone(&h, "child.net.");
    assert!(
        child
            .to_text()
            .contains("www.child.net. 3600 IN A 192.0.2.80"),
        "{}",
        child.to_text()
    );
    assert!(child.servers.contains(&IpAddr::from([192, 0, 2, 3])));
    assert_eq!(h.report.inferred_servers, ["192.0.2.3 child.net."]);
    assert!(h.report.records_left_out.is_empty(), "{:?}", h.report);
}

/// An address given as a root server (a resolver's root hints) serves the root before any
/// record is filed: its referral's DS records go into the root zone, and no server is
/// inferred.
#[test]
fn root_hints_serve_the_root_before_records_are_filed() {
    let referral = range(
        &["192.0.2.1"],
        &[entry(
            "QR NOERROR",
            "example. IN NS",
            &format!(
                "SECTION AUTHORITY\nexample. NS ns.example.\n\
                 example. 86400 IN DS 1 8 2 ABCDEF\n\
                 example. 86400 IN RRSIG DS 8 1 86400 {SIG} . AAAA\n\
                 SECTION ADDITIONAL\nns.example. A 192.0.2.2\n"
            ),
        )],
    );
    let text = format!("CONFIG_END\nSCENARIO_BEGIN t\n{referral}SCENARIO_END\n");
    let s = crate::deckard::Scenario::parse(&text).expect("parses");
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    b.add_root_server(IpAddr::from([192, 0, 2, 1]));
    let h = b.build();
    let root = zone(&h, ".");
    assert!(
        root.to_text().contains("example. 86400 IN DS 1 8 2"),
        "{}",
        root.to_text()
    );
    assert_eq!(root.servers, [IpAddr::from([192, 0, 2, 1])]);
    assert!(h.report.inferred_servers.is_empty());
    assert!(h.report.records_left_out.is_empty(), "{:?}", h.report);
}

/// A DS question answered with the TLD's SOA in the answer section (as some recordings write
/// it): the SOA names the zone, so the TLD's server is not taken for a root server.
#[test]
fn a_ds_answer_with_the_zones_soa_shows_that_zone() {
    let root = range(
        &["192.0.2.1"],
        &[
            entry(
                "QR AA NOERROR",
                ". IN NS",
                "SECTION ANSWER\n. NS a.root.\nSECTION ADDITIONAL\na.root. A 192.0.2.1\n",
            ),
            entry(
                "QR NOERROR",
                "net. IN NS",
                "SECTION AUTHORITY\nnet. NS ns.net.\nSECTION ADDITIONAL\nns.net. A 192.0.2.2\n",
            ),
        ],
    );
    let net = range(
        &["192.0.2.2"],
        &[entry(
            "QR NOERROR",
            "net. IN DS",
            "SECTION ANSWER\nnet. 900 IN SOA ns.net. h.net. 1 2 3 4 5\n",
        )],
    );
    let h = build(&format!("{root}{net}"));
    assert!(h.report.inferred_servers.is_empty(), "{:?}", h.report);
    assert_eq!(zone(&h, ".").servers, [IpAddr::from([192, 0, 2, 1])]);
}

/// What still cannot go into a zone is counted by reason, with examples, and the two older
/// counters stay their sums.
#[test]
fn records_left_out_are_counted_by_reason() {
    let root = range(
        &["192.0.2.1"],
        &[
            entry(
                "QR AA NOERROR",
                ". IN NS",
                "SECTION ANSWER\n. NS a.root.\nSECTION ADDITIONAL\na.root. A 192.0.2.1\n",
            ),
            entry(
                "QR NOERROR",
                "example. IN NS",
                "SECTION AUTHORITY\nexample. NS ns.example.\n\
                 SECTION ADDITIONAL\nns.example. A 192.0.2.2\n",
            ),
            entry(
                "QR NOERROR",
                "org. IN NS",
                "SECTION AUTHORITY\norg. NS ns.org.\nSECTION ADDITIONAL\nns.org. A 192.0.2.3\n",
            ),
        ],
    );
    let example = range(
        &["192.0.2.2"],
        &[
            // Out of bailiwick: www.other.org. is in org., which this server does not serve.
            entry(
                "QR AA NOERROR",
                "www.example. IN A",
                "SECTION ANSWER\nwww.example. CNAME www.other.org.\n\
                 www.other.org. A 192.0.2.80\n\
                 SECTION ADDITIONAL\nns.other.org. A 192.0.2.9\n",
            ),
            // Below org.'s apex, without an SOA: which zone holds it is a guess (a cut may not
            // have been seen), so the server is not taken for org.'s.
            entry(
                "QR AA NOERROR",
                "host.org. IN A",
                "SECTION ANSWER\nhost.org. A 192.0.2.10\n",
            ),
            // An address in the authority section.
            entry(
                "QR AA NOERROR",
                "ns.example. IN AAAA",
                "SECTION AUTHORITY\nns.example. AAAA 2001:db8::2\n",
            ),
            // Two answers with different data: the first is kept.
            entry(
                "QR AA NOERROR",
                "ftp.example. IN A",
                "SECTION ANSWER\nftp.example. A 192.0.2.21\n",
            ),
            entry(
                "QR AA NOERROR",
                "ftp.example. IN A",
                "SECTION ANSWER\nftp.example. A 192.0.2.22\n",
            ),
        ],
    );
    let mut b = builder(&format!("{root}{example}"));
    // An answer without AA (a Deckard entry would be given AA).
    b.add_exchange(exchange(
        [192, 0, 2, 2],
        false,
        vec![a("x.example.", [192, 0, 2, 23])],
        vec![],
        vec![],
    ));
    let h = b.build();
    let r = &h.report;
    let counts: Vec<(&str, u64)> = r
        .records_left_out
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        counts,
        [
            ("conflict", 1),
            ("glue-out-of-zone", 1),
            ("not-authoritative", 1),
            ("out-of-zone", 2),
            ("unexpected-in-section", 1)
        ]
    );
    assert_eq!((r.records_out_of_zone, r.records_not_authoritative), (3, 1));
    assert_eq!(
        r.records_left_out_examples["out-of-zone"],
        [
            "www.other.org. A from 192.0.2.2",
            "host.org. A from 192.0.2.2"
        ]
    );
    assert!(r.inferred_servers.is_empty(), "{:?}", r.inferred_servers);
    assert_eq!(
        r.records_left_out_examples["unexpected-in-section"],
        ["ns.example. AAAA from 192.0.2.2"]
    );
}

/// Signed RRsets get their signatures' original TTL back when a cache counted theirs down;
/// unsigned ones, and those whose signatures disagree, stay as recorded.
#[test]
fn counted_down_ttls_of_signed_rrsets_are_restored() {
    let server = range(
        &["192.0.2.1"],
        &[
            entry(
                "QR AA NOERROR",
                ". IN NS",
                &format!(
                    "SECTION ANSWER\n. 100 NS a.root.\n. 100 RRSIG NS 8 0 518400 {SIG} . AAAA\n\
                     SECTION ADDITIONAL\na.root. 100 A 192.0.2.1\n"
                ),
            ),
            entry(
                "QR AA NOERROR",
                "a.root. IN AAAA",
                &format!(
                    "SECTION ANSWER\na.root. 100 AAAA 2001:db8::1\n\
                     a.root. 100 RRSIG AAAA 8 2 3600 {SIG} . AAAA\n\
                     a.root. 100 RRSIG AAAA 8 2 7200 {SIG} . BBBB\n"
                ),
            ),
        ],
    );
    let h = build(&server);
    let text = zone(&h, ".").to_text();
    assert!(text.contains(". 518400 IN NS a.root."), "{text}");
    assert!(text.contains(". 518400 IN RRSIG NS"), "{text}");
    assert!(
        text.contains("a.root. 100 IN A 192.0.2.1"),
        "unsigned: {text}"
    );
    assert!(text.contains("a.root. 100 IN AAAA"), "disagreeing: {text}");
    assert_eq!(h.report.ttls_restored, 1);
}
