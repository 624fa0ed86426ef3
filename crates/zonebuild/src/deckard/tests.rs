//! The reader, the model's views and the feeding, on small scenarios written here.

use super::*;
use std::net::IpAddr;

use bytes::Bytes;
use domain::base::iana::Rcode;
use domain::base::ParsedName;
use domain::rdata::AllRecordData;

use crate::builder::ZoneBuilder;

const MINI: &str = "\
; config options
\tquery-minimization: on
\tstub-addr: 193.0.14.129 \t# K.ROOT-SERVERS.NET.
\ttrust-anchor: \". 3600 IN DS 10000 13 4 ABCDEF0123456789\"
CONFIG_END

SCENARIO_BEGIN Test www.example.com.

RANGE_BEGIN 0 100
\tADDRESS 193.0.14.129
\tADDRESS 2001:7fd::1
ENTRY_BEGIN
MATCH opcode qtype qname
ADJUST copy_id
REPLY QR NOERROR
SECTION QUESTION
. IN NS
SECTION ANSWER
. IN NS\tK.ROOT-SERVERS.NET.
SECTION ADDITIONAL
K.ROOT-SERVERS.NET.\tIN\tA\t193.0.14.129
ENTRY_END
ENTRY_BEGIN
MATCH opcode subdomain
REPLY QR DO NOERROR
SECTION QUESTION
\tcom IN NS
\tSECTION AUTHORITY
\tcom. 172800 IN NS a.gtld-servers.net.
\tcom. 86400 IN DS 30909 8 2 E2D3C916F6DEEAC73294E8268FB5885044A833FC5459588F4A9184CF C41A5766
\tSECTION ADDITIONAL
\ta.gtld-servers.net. 172800 IN A 192.5.6.30
ENTRY_END
RANGE_END

STEP 1 QUERY
ENTRY_BEGIN
REPLY RD
SECTION QUESTION
www.example.com IN A
ENTRY_END
STEP 5 TIME_PASSES ELAPSE 10
STEP 10 CHECK_ANSWER
ENTRY_BEGIN
MATCH all
REPLY QR RD RA NXDOMAIN
SECTION QUESTION
www.example.com. IN A
SECTION ANSWER
www.example.com. IN CNAME ( www.next.com.
  )
ENTRY_END
SCENARIO_END
";

#[test]
fn reads_config_ranges_and_steps() {
    let s = Scenario::parse(MINI).expect("parses");
    assert_eq!(s.title, "Test www.example.com.");
    assert_eq!(
        s.stub_addrs(),
        vec!["193.0.14.129".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(
        s.config_values("trust-anchor").collect::<Vec<_>>(),
        [". 3600 IN DS 10000 13 4 ABCDEF0123456789"]
    );
    assert_eq!(s.ranges.len(), 1);
    let r = &s.ranges[0];
    assert_eq!((r.first_step, r.last_step, r.addresses.len()), (0, 100, 2));
    assert_eq!(r.entries.len(), 2);
    assert!(
        r.entries[0].message.header().aa(),
        "an answer without AA gets it"
    );
    assert_eq!(s.aa_added, 1);
    let referral = &r.entries[1].message;
    assert!(referral.header().qr() && !referral.header().aa());
    assert_eq!(referral.header_counts().nscount(), 2);
    assert_eq!(referral.header_counts().arcount(), 2, "glue and OPT (DO)");
    assert_eq!(s.responses().count(), 4);

    assert_eq!(s.queries().count(), 1);
    assert_eq!(s.steps.len(), 3);
    assert_eq!(s.skipped.get("STEP TIME_PASSES"), Some(&1));
    let checks = s.checks();
    assert_eq!(checks.len(), 1);
    let q = checks[0]
        .query
        .entry
        .as_ref()
        .and_then(|e| e.question.clone());
    assert_eq!(q.map(|q| q.text()).as_deref(), Some("www.example.com. A"));
    let check = checks[0].check.entry.as_ref().expect("entry");
    assert!(check.matches_answer());
    assert_eq!(check.message.header().rcode(), Rcode::NXDOMAIN);
    let answer: Vec<String> = check
        .message
        .answer()
        .expect("answer")
        .limit_to::<AllRecordData<Bytes, ParsedName<Bytes>>>()
        .map(|r| r.expect("record").data().to_string())
        .collect();
    assert_eq!(answer, ["www.next.com."]);
    assert_eq!(
        checks[0].expected_line().as_deref(),
        Some("www.example.com. A NXDOMAIN www.example.com. in cname www.next.com.")
    );
    assert!(!checks[0].question_mismatch());
}

#[test]
fn feeds_the_builder_like_a_capture() {
    let s = Scenario::parse(MINI).expect("parses");
    let mut b = ZoneBuilder::new();
    assert_eq!(s.feed(&mut b), 4);
    assert_eq!(b.responses(), 4);
    let h = b.build();
    let names: Vec<String> = h.zones.iter().map(|z| z.name()).collect();
    assert_eq!(names, [".", "com."]);
    let root = &h.zones[0];
    assert_eq!(root.servers.len(), 2);
    assert!(
        root.to_text().contains("com. 86400 IN DS 30909 8 2"),
        "{}",
        root.to_text()
    );
}

#[test]
fn root_without_ns_is_completed_from_the_hints() {
    // The root's NS set is recorded: nothing to add.
    let s = Scenario::parse(MINI).expect("parses");
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    let mut h = b.build();
    assert!(complete_root(&mut h, &s.stub_addrs()).is_empty());
    // Without it, the hint's address is named by the recorded name that has it.
    let no_root_ns = MINI.replace(". IN NS\tK.ROOT-SERVERS.NET.\n", "");
    let s = Scenario::parse(&no_root_ns).expect("parses");
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    let mut h = b.build();
    let added = complete_root(&mut h, &s.stub_addrs());
    assert_eq!(added, [". 3600 IN NS K.ROOT-SERVERS.NET."]);
    assert!(
        complete_root(&mut h, &s.stub_addrs()).is_empty(),
        "only once"
    );
    // An address no record names gets a made-up name and its address record.
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    let mut h = b.build();
    let other: IpAddr = "2001:dc3::35".parse().unwrap();
    let added = complete_root(&mut h, &[other]);
    assert_eq!(
        added,
        [
            ". 3600 IN NS stub-addr-1.deckard.invalid.",
            "stub-addr-1.deckard.invalid. 3600 IN AAAA 2001:dc3::35"
        ]
    );
    assert!(h.zones[0].servers.contains(&other));
}

#[test]
fn errors_carry_line_numbers() {
    let bad_record = MINI.replace("192.5.6.30", "192.5.6.300");
    match Scenario::parse(&bad_record) {
        Err(DeckardError::Record { line: 32, .. }) => {}
        other => panic!("{other:?}"),
    }
    let bad_address = MINI.replace("ADDRESS 2001:7fd::1", "ADDRESS nowhere");
    match Scenario::parse(&bad_address) {
        Err(DeckardError::Syntax { line: 11, .. }) => {}
        other => panic!("{other:?}"),
    }
    let unclosed = MINI
        .replace("SCENARIO_END\n", "")
        .replace("RANGE_END\n", "");
    assert!(matches!(
        Scenario::parse(&unclosed),
        Err(DeckardError::Unclosed { .. })
    ));
    assert!(matches!(
        Scenario::parse("$ORIGIN .\n. NS a.\n"),
        Err(DeckardError::NotAScenario)
    ));
}

#[test]
fn unknown_keywords_and_raw_entries_are_counted() {
    let text = MINI.replace(
        "RANGE_END\n",
        "FROBNICATE 3\nENTRY_BEGIN\nRAW\nb5c9ca3d50104320f4120000000000000000\nENTRY_END\nRANGE_END\n",
    );
    let s = Scenario::parse(&text).expect("parses");
    assert_eq!(s.skipped.get("keyword FROBNICATE"), Some(&1));
    assert_eq!(s.skipped.get("entry with raw data"), Some(&1));
    assert_eq!(s.ranges[0].entries.len(), 2);
}

/// The shape of Deckard's world_mx_nic_www.rpl: the root's server is known only from
/// `stub-addr` (no NS RRset of the root in an authoritative answer), and answers the root's
/// DNSKEY RRset with AA, DO, a question written with tabs and TTLs counted down by a cache.
const ROOT_KEYS_FROM_A_CACHE: &str = "\
stub-addr: 2001:db8::35
CONFIG_END
SCENARIO_BEGIN the root's keys recorded from a cache
RANGE_BEGIN 0 100
\tADDRESS 2001:db8::35
ENTRY_BEGIN
MATCH opcode qtype qname
ADJUST copy_id
REPLY QR AA NOERROR
SECTION QUESTION
net. IN NS
SECTION ANSWER
net. 3600 IN NS m.root-servers.net.
SECTION ADDITIONAL
m.root-servers.net. 3600 IN AAAA 2001:db8::35
ENTRY_END
ENTRY_BEGIN
MATCH opcode qtype qname
ADJUST copy_id
REPLY QR AA DO NOERROR
SECTION QUESTION
.\t\tIN\tDNSKEY
SECTION ANSWER
.\t16567\tIN\tDNSKEY\t257 3 8 AwEAAagAIKlVZrpC6Ia7gEzahOR+9W29euxhJhVVLOyQbSEW0O8gcCjF
.\t16567\tIN\tRRSIG\tDNSKEY 8 0 172800 20170201000000 20170111000000 19036 . Sh+EpofvZgk3J9szMD2B94Fx
ENTRY_END
ENTRY_BEGIN
MATCH opcode subdomain
ADJUST copy_id copy_query
REPLY QR DO NOERROR
SECTION QUESTION
mx.\t\t\tIN\tNS
SECTION AUTHORITY
mx.\t\t172800\tIN\tNS\tc.mx-ns.mx.
mx.\t\t86400\tIN\tDS\t55955 8 2 3d7f3313e86341ec23a02f8ed837572d62cf74bf175ac8b2f19b1e2b8930b0d5
mx.\t\t86400\tIN\tRRSIG\tDS 8 1 86400 20170206050000 20170124040000 61045 . DYmv0z7EnlUOu081
SECTION ADDITIONAL
c.mx-ns.mx.\t172800\tIN\tA\t192.100.224.1
ENTRY_END
RANGE_END
SCENARIO_END
";

/// Every record of that root server's answers goes into the root zone: its keys (with the
/// TTL the signature says the root served) and the DS of its referral; none is left out.
#[test]
fn the_roots_keys_recorded_from_a_cache_are_kept() {
    let s = Scenario::parse(ROOT_KEYS_FROM_A_CACHE).expect("parses");
    let mut b = ZoneBuilder::new();
    s.feed(&mut b);
    let mut h = b.build();
    complete_root(&mut h, &s.stub_addrs());
    let root = h.zones.iter().find(|z| z.apex.is_root()).expect("root");
    let text = root.to_text();
    assert!(text.contains(". 172800 IN DNSKEY 257 3 8 "), "{text}");
    assert!(
        text.contains(". 172800 IN RRSIG DNSKEY 8 0 172800 "),
        "{text}"
    );
    assert!(text.contains("mx. 86400 IN DS 55955 8 2 "), "{text}");
    assert!(text.contains("mx. 86400 IN RRSIG DS 8 1 86400 "), "{text}");
    assert_eq!(h.report.records_out_of_zone, 0, "{:?}", h.report);
    assert!(h.report.zones_without_servers.is_empty(), "{:?}", h.report);
}

/// A query's flags are read from `REPLY` or its older name `FLAGS`; a query with DO expects
/// the RRSIGs of its check's answer (resolvers return them then), one without does not.
#[test]
fn query_flags_and_the_rrsigs_a_do_query_expects() {
    let steps = |flags: &str| {
        MINI.replace(
            "STEP 1 QUERY\nENTRY_BEGIN\nREPLY RD\n",
            &format!("STEP 1 QUERY\nENTRY_BEGIN\n{flags}\n"),
        )
        .replace(
            "www.example.com. IN CNAME ( www.next.com.\n  )\n",
            "www.example.com. IN CNAME www.next.com.\n\
             www.example.com. IN RRSIG CNAME 8 3 3600 20170201000000 20170111000000 1 example.com. AAAA\n",
        )
    };
    let s = Scenario::parse(&steps("FLAGS RD CD DO")).expect("parses");
    assert_eq!(s.skipped.get("keyword FLAGS"), None, "{:?}", s.skipped);
    let c = s.checks()[0];
    assert!(c.asks("RD") && c.asks("CD") && c.asks("DO") && !c.asks("AD"));
    let line = c.expected_line().expect("line");
    assert!(
        line.contains("; www.example.com. in rrsig CNAME 8 3 3600 "),
        "{line}"
    );
    let s = Scenario::parse(&steps("REPLY RD AD")).expect("parses");
    let c = s.checks()[0];
    assert!(c.asks("AD") && !c.asks("DO"));
    assert_eq!(
        c.expected_line().as_deref(),
        Some("www.example.com. A NXDOMAIN www.example.com. in cname www.next.com.")
    );
}
