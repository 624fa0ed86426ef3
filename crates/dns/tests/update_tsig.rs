//! Dynamic updates (RFC 2136) with their TSIG and TKEY records parse and decode; malformed
//! messages still give their header and question.

use ldplayer_dns::{
    decompress, Class, DnsError, Fields, Message, Partial, Question, Rcode, Rtype, Section,
    HEADER_LEN,
};
use proptest::prelude::*;

const NONE: Class = Class::NONE;
const ANY: Class = Class::ANY;
const IN: Class = Class::IN;

/// A message under construction: a header with the given opcode and counts, then sections.
struct Builder(Vec<u8>);

impl Builder {
    fn new(id: u16, flags: u16, counts: [u16; 4]) -> Self {
        let mut m = id.to_be_bytes().to_vec();
        m.extend_from_slice(&flags.to_be_bytes());
        for c in counts {
            m.extend_from_slice(&c.to_be_bytes());
        }
        Builder(m)
    }
    fn name(&mut self, dotted: &str) -> &mut Self {
        for label in dotted.split('.').filter(|l| !l.is_empty()) {
            self.0.push(label.len() as u8);
            self.0.extend_from_slice(label.as_bytes());
        }
        self.0.push(0);
        self
    }
    fn question(&mut self, name: &str, qtype: Rtype, qclass: Class) -> &mut Self {
        self.name(name);
        self.0.extend_from_slice(&qtype.0.to_be_bytes());
        self.0.extend_from_slice(&qclass.0.to_be_bytes());
        self
    }
    fn rr(
        &mut self,
        name: &str,
        rr_type: Rtype,
        class: Class,
        ttl: u32,
        rdata: &[u8],
    ) -> &mut Self {
        self.name(name);
        self.0.extend_from_slice(&rr_type.0.to_be_bytes());
        self.0.extend_from_slice(&class.0.to_be_bytes());
        self.0.extend_from_slice(&ttl.to_be_bytes());
        self.0
            .extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        self.0.extend_from_slice(rdata);
        self
    }
}

fn wire_name(dotted: &str) -> Vec<u8> {
    let mut b = Builder(Vec::new());
    b.name(dotted);
    b.0
}

const UPDATE: u16 = 5 << 11;

fn tsig_rdata(algorithm: &str, mac: &[u8], original_id: u16, error: u16) -> Vec<u8> {
    let mut r = wire_name(algorithm);
    r.extend_from_slice(&[0x00, 0x00, 0x65, 0x4f, 0x1a, 0x2b]); // time signed
    r.extend_from_slice(&300u16.to_be_bytes()); // fudge
    r.extend_from_slice(&(mac.len() as u16).to_be_bytes());
    r.extend_from_slice(mac);
    r.extend_from_slice(&original_id.to_be_bytes());
    r.extend_from_slice(&error.to_be_bytes());
    r.extend_from_slice(&[0, 0]); // other len
    r
}

fn tkey_rdata(key: &[u8]) -> Vec<u8> {
    let mut r = wire_name("gss-tsig");
    r.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    r.extend_from_slice(&1_700_086_400u32.to_be_bytes());
    r.extend_from_slice(&3u16.to_be_bytes()); // GSS-API negotiation
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&(key.len() as u16).to_be_bytes());
    r.extend_from_slice(key);
    r.extend_from_slice(&[0, 0]);
    r
}

/// An UPDATE shaped as Windows sends them: zone `corp.example.`, prerequisite "no CNAME at the
/// name" (class NONE, empty RDATA), then deletes of the A RRset (class ANY, empty RDATA) and of
/// one PTR (class NONE with RDATA), an add, and a GSS-TSIG signature.
fn windows_update() -> Vec<u8> {
    let mut b = Builder::new(0x4a21, UPDATE, [1, 1, 3, 1]);
    b.question("corp.example", Rtype::SOA, IN)
        .rr("host7.corp.example", Rtype::CNAME, NONE, 0, &[])
        .rr("host7.corp.example", Rtype::A, ANY, 0, &[])
        .rr(
            "host7.corp.example",
            Rtype::PTR,
            NONE,
            0,
            &wire_name("old.corp.example"),
        )
        .rr("host7.corp.example", Rtype::A, IN, 1200, &[10, 1, 2, 7])
        .rr(
            "1234.sig-dc1.corp.example",
            Rtype::TSIG,
            ANY,
            0,
            &tsig_rdata("gss-tsig", &[0xAB; 28], 0x4a21, 0),
        );
    b.0
}

#[test]
fn a_windows_update_parses_and_its_sections_read() {
    let wire = windows_update();
    let m = Message::parse(&wire).expect("an UPDATE with empty RDATA parses");
    let f = Fields::of(&m);
    assert_eq!(f.opcode, 5);
    assert_eq!(
        f.question,
        Some(Question {
            name: wire_name("corp.example"),
            qtype: Rtype::SOA,
            qclass: IN
        })
    );
    let rrs: Vec<_> = m.records().collect();
    let shape: Vec<(Section, Rtype, Class, usize)> = rrs
        .iter()
        .map(|r| (r.section, r.rtype, r.class, r.rdata().len()))
        .collect();
    assert_eq!(
        shape,
        [
            (Section::Answer, Rtype::CNAME, NONE, 0),
            (Section::Authority, Rtype::A, ANY, 0),
            (Section::Authority, Rtype::PTR, NONE, 18),
            (Section::Authority, Rtype::A, IN, 4),
            (Section::Additional, Rtype::TSIG, ANY, 54),
        ]
    );
    let mut owner = Vec::new();
    rrs[0].owner(&mut owner);
    assert_eq!(owner, wire_name("host7.corp.example"));
    assert_eq!(rrs[3].ttl, 1200);
    let tsig = m.tsig().expect("a TSIG record").expect("its RDATA reads");
    assert_eq!(tsig.algorithm, wire_name("gss-tsig"));
    assert_eq!(tsig.time_signed, 0x654f_1a2b);
    assert_eq!((tsig.fudge, tsig.mac.len()), (300, 28));
    assert_eq!((tsig.original_id, tsig.error), (0x4a21, 0));
    assert!(tsig.other.is_empty());
    // Expansion keeps the message and its records.
    let expanded = decompress(&wire).expect("expands");
    assert_eq!(expanded, wire, "nothing was compressed");
}

#[test]
fn empty_rdata_parses_for_every_name_holding_type() {
    for t in [
        Rtype::NS,
        Rtype::CNAME,
        Rtype::SOA,
        Rtype::PTR,
        Rtype::MX,
        Rtype::SRV,
        Rtype::NAPTR,
        Rtype::DNAME,
        Rtype::TSIG,
        Rtype::TKEY,
    ] {
        for class in [NONE, ANY, IN] {
            let mut b = Builder::new(1, UPDATE, [1, 1, 0, 0]);
            b.question("example", Rtype::SOA, IN)
                .rr("a.example", t, class, 0, &[]);
            let m = Message::parse(&b.0).unwrap_or_else(|e| panic!("type {t} class {class}: {e}"));
            let rr = m.records().next().expect("one record");
            assert_eq!((rr.rtype, rr.rdata().len()), (t, 0));
        }
    }
    // A name-holding RDATA that is not empty is still checked.
    let mut b = Builder::new(1, 0x8180, [1, 1, 0, 0]);
    b.question("example", Rtype::CNAME, IN)
        .rr("example", Rtype::CNAME, IN, 0, &[3, b'a', b'b']);
    assert_eq!(Message::parse(&b.0).unwrap_err(), DnsError::Truncated);
}

#[test]
fn gss_tsig_key_exchange_decodes() {
    // TKEY query (in the additional section, as Windows sends it) with a long SPNEGO token.
    let token: Vec<u8> = (0..1800u32).map(|i| (i * 7) as u8).collect();
    let mut b = Builder::new(7, 0, [1, 0, 0, 1]);
    b.question("1234.sig-dc1.corp.example", Rtype::TKEY, ANY)
        .rr(
            "1234.sig-dc1.corp.example",
            Rtype::TKEY,
            ANY,
            0,
            &tkey_rdata(&token),
        );
    let m = Message::parse(&b.0).expect("TKEY query parses");
    assert_eq!(m.qtype(), Some(Rtype::TKEY));
    let rr = m.records().next().expect("the TKEY record");
    let tkey = rr.tkey().expect("a TKEY").expect("reads");
    assert_eq!(tkey.algorithm, wire_name("gss-tsig"));
    assert_eq!(
        (tkey.inception, tkey.expiration),
        (1_700_000_000, 1_700_086_400)
    );
    assert_eq!((tkey.mode, tkey.error), (3, 0));
    assert_eq!(tkey.key, &token[..]);
    assert!(rr.tsig().is_none(), "not a TSIG record");
    assert!(m.tsig().is_none(), "the last record is not a TSIG");
}

#[test]
fn short_tsig_and_tkey_rdata_is_an_error_not_a_panic() {
    let full = tsig_rdata("gss-tsig", &[1; 16], 9, 0);
    for cut in 0..full.len() {
        let mut b = Builder::new(1, UPDATE, [1, 0, 0, 1]);
        b.question("example", Rtype::SOA, IN)
            .rr("k.example", Rtype::TSIG, ANY, 0, &full[..cut]);
        // The algorithm name is checked by the parser; the fields after it by the decoder.
        if let Ok(m) = Message::parse(&b.0) {
            let got = m.tsig().expect("a TSIG record");
            assert_eq!(got.unwrap_err(), DnsError::Truncated, "cut at {cut}");
        }
    }
    let full = tkey_rdata(&[5; 40]);
    for cut in 10..full.len() {
        let mut b = Builder::new(1, 0, [1, 0, 0, 1]);
        b.question("example", Rtype::TKEY, ANY)
            .rr("k.example", Rtype::TKEY, ANY, 0, &full[..cut]);
        let m = Message::parse(&b.0).expect("parses");
        let rr = m.records().next().expect("record");
        assert_eq!(rr.tkey().expect("TKEY").unwrap_err(), DnsError::Truncated);
    }
}

#[test]
fn malformed_messages_keep_their_header_and_question() {
    // Absurd counts after a good question.
    let mut b = Builder::new(0xbeef, 0x0100, [1, 40000, 0, 0]);
    b.question("www.example", Rtype::AAAA, IN);
    assert_eq!(Message::parse(&b.0).unwrap_err(), DnsError::AbsurdCounts);
    let p = Partial::read(&b.0).expect("a header");
    assert_eq!(
        (p.header.id, p.header.flags, p.header.ancount),
        (0xbeef, 0x0100, 40000)
    );
    assert_eq!(
        p.question,
        Some(Question {
            name: wire_name("www.example"),
            qtype: Rtype::AAAA,
            qclass: IN
        })
    );
    let f = Fields::of_partial(&p);
    assert_eq!(
        (f.id, f.qr, f.flags, f.rcode, f.edns),
        (0xbeef, false, 0x0100, Rcode::NOERROR, None)
    );
    // A bad label in the question: the header reads, the question does not.
    let mut m = Builder::new(1, 0, [1, 0, 0, 0]).0;
    m.extend_from_slice(&[0x41, b'x', 0, 0, 1, 0, 1]);
    let p = Partial::read(&m).expect("a header");
    assert_eq!((p.header.qdcount, p.question), (1, None));
    // Cut in the middle of the question type.
    let mut b = Builder::new(2, 0, [1, 0, 0, 0]);
    b.question("example", Rtype::A, IN);
    let cut = &b.0[..b.0.len() - 3];
    assert_eq!(Message::parse(cut).unwrap_err(), DnsError::Truncated);
    assert_eq!(Partial::read(cut).expect("header").question, None);
    // No question announced: none read, whatever follows.
    assert_eq!(Partial::read(&[0u8; 40]).expect("header").question, None);
    assert_eq!(Partial::read(&[0u8; HEADER_LEN - 1]), None);
}

proptest! {
    /// Any bytes: the partial view never panics, its header is the first 12 bytes, and for
    /// messages that parse it agrees with the full parse; records and TSIG/TKEY decoding of
    /// whatever parses never panic and cover every counted record.
    #[test]
    fn partial_view_and_records_agree_with_the_parser(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let partial = Partial::read(&bytes);
        prop_assert_eq!(partial.is_some(), bytes.len() >= HEADER_LEN);
        if let Ok(m) = Message::parse(&bytes) {
            let p = partial.expect("a parsed message has a header");
            prop_assert_eq!(&p.header, m.header());
            prop_assert_eq!(p.question, Fields::of(&m).question);
            let h = m.header();
            let n = m.records().inspect(|r| {
                let _ = r.tsig();
                let _ = r.tkey();
            }).count();
            prop_assert_eq!(n, h.ancount as usize + h.nscount as usize + h.arcount as usize);
            // The TSIG the parser remembers is the last additional record, when it is one.
            let last = m.records().last().filter(|r| r.section == Section::Additional);
            prop_assert_eq!(m.tsig(), last.and_then(|r| r.tsig()));
        }
    }

    /// UPDATE-shaped messages with records of any type and class and empty RDATA parse, and a
    /// TSIG with any MAC and other data decodes to what was written.
    #[test]
    fn updates_with_empty_rdata_and_tsig_parse(
        records in prop::collection::vec((any::<u16>().prop_map(Rtype), prop::sample::select(vec![IN, NONE, ANY])), 0..8),
        mac in prop::collection::vec(any::<u8>(), 0..64),
        original_id in any::<u16>(),
        error in any::<u16>(),
    ) {
        let records: Vec<_> = records.into_iter().filter(|(t, _)| *t != Rtype::OPT).collect();
        let mut b = Builder::new(original_id, UPDATE, [1, 0, records.len() as u16, 1]);
        b.question("zone.example", Rtype::SOA, IN);
        for (t, class) in &records {
            b.rr("n.zone.example", *t, *class, 0, &[]);
        }
        b.rr("key.zone.example", Rtype::TSIG, ANY, 0, &tsig_rdata("gss-tsig", &mac, original_id, error));
        let m = Message::parse(&b.0).expect("parses");
        prop_assert_eq!(m.records().count(), records.len() + 1);
        let t = m.tsig().expect("TSIG").expect("reads");
        prop_assert_eq!(t.mac, &mac[..]);
        prop_assert_eq!((t.original_id, t.error), (original_id, error));
    }
}

/// The fuzzer's seed inputs (fuzz/seeds/dns_message) are what their names say: dynamic updates
/// and TKEY messages that parse and decode, and malformed queries rejected for their reason
/// with their header still readable.
#[test]
fn fuzz_seeds_are_what_their_names_say() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/dns_message");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let wire = std::fs::read(&path).expect("seed");
        seen += 1;
        match name.strip_prefix("malformed-") {
            Some(reason) => {
                let e = Message::parse(&wire).expect_err(&name);
                assert_eq!(e.name(), format!("dns-{reason}"), "{name}");
                assert!(Partial::read(&wire).is_some(), "{name}");
            }
            None => {
                let m = Message::parse(&wire).unwrap_or_else(|e| panic!("{name}: {e}"));
                if name.contains("gss-tsig")
                    || name.contains("signed")
                    || name.starts_with("update-")
                {
                    let tsig = m.tsig().expect(&name).expect(&name);
                    assert_eq!(tsig.algorithm, wire_name("gss-tsig"), "{name}");
                }
                if name.starts_with("tkey-") {
                    let tkey = m
                        .records()
                        .find_map(|rr| rr.tkey())
                        .expect(&name)
                        .expect(&name);
                    assert_eq!(
                        (tkey.algorithm, tkey.mode),
                        (wire_name("gss-tsig"), 3),
                        "{name}"
                    );
                }
            }
        }
    }
    assert_eq!(seen, 12, "seeds in {}", dir.display());
}
