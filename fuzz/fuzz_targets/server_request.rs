//! The authoritative server's request path: arbitrary bytes as a query, answered exactly as the
//! UDP and TCP workers of `ldplayer-server` answer it — the view of the destination address
//! ([`Views::for_destination`], an empty zone set when the address serves nothing), then
//! [`ZoneSet::answer_into`] into a reused buffer — from small zones embedded here: a signed-looking
//! root (NSEC, RRSIG, DS) with delegations and glue, a child zone with CNAME chains and loops,
//! DNAMEs (one pointing below itself, one whose target is too long to substitute), wildcards and
//! an RRset too large for UDP, and an NSEC3 zone.
//!
//! The first input byte picks the transport, the destination, minimal responses, the server's
//! EDNS size and the chain limit; the rest is the query. Checks: no panic; a response is due
//! unless the query is shorter than a header or has QR set; a response parses as a whole DNS
//! message with the query's ID, QR set, opcode, RD and CD echoed, the question echoed, OPT iff
//! the query had EDNS, TC and RCODE as reported; it fits the UDP limit (512 bytes without EDNS,
//! else the client's size capped by the server's and raised to 512) or 65535 over TCP; the same
//! query answered into a dirty buffer gives the same bytes; a destination that serves nothing only
//! gets error responses.
#![no_main]
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use ldplayer_dns::{flag, Message};
use ldplayer_zone::{AnswerOptions, Kind, Views, Zone, ZoneSet};
use libfuzzer_sys::fuzz_target;

const SIG: &str = "AwEAAagAIKlVZrpC6Ia7gEzahOR+9W29euxhJhVVLOyQbSEW0O8gcCjFFVQUTf6v58fLjwBd0YI0EzrAcQqBGCzh/RStIoO8g0NfnfL2MTJRkxoXbfDaUeVPQuYEhg37NZWAJQ9VnMVDxP/VHL496M/QZxkjf5/Efucp2gaDX6RS6CXpoY68LsvPVjR0ZSwzz1apAzvN9dlzEheX7ICJBBtuA6G3LQpzW5hOA2hzCTMjJPJ8LbqF6dsV6DoBQzgul0sGIcGOYl7OyQdXfZ57relSQageu+ipAdTTJ25AsRTAoub8ONGcLmqrAmRLKBP1dfwhYB4N7knNnulqQxA+Uk1ihz0=";

const ROOT: &str = "\
$ORIGIN .
$TTL 86400
@ SOA a.root-servers.net. nstld.verisign-grs.com. 2017082100 1800 900 604800 86400
@ RRSIG SOA 8 0 86400 20300101000000 20200101000000 15768 . KEYDATA
@ NS a.root-servers.net.
@ NS b.root-servers.net.
@ RRSIG NS 8 0 518400 20300101000000 20200101000000 15768 . KEYDATA
@ DNSKEY 257 3 8 KEYDATA
@ RRSIG DNSKEY 8 0 172800 20300101000000 20200101000000 19036 . KEYDATA
@ NSEC arpa. NS SOA RRSIG NSEC DNSKEY
@ RRSIG NSEC 8 0 86400 20300101000000 20200101000000 15768 . KEYDATA
arpa. NS a.root-servers.net.
arpa. DS 42581 8 2 F1A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F80
arpa. RRSIG DS 8 1 86400 20300101000000 20200101000000 15768 . KEYDATA
arpa. NSEC example. NS DS RRSIG NSEC
arpa. RRSIG NSEC 8 1 86400 20300101000000 20200101000000 15768 . KEYDATA
example. NS ns1.example.
example. NS ns2.example.
example. NSEC net. NS RRSIG NSEC
example. RRSIG NSEC 8 1 86400 20300101000000 20200101000000 15768 . KEYDATA
ns1.example. A 192.0.2.1
ns1.example. AAAA 2001:db8::1
ns2.example. A 192.0.2.2
net. NS a.gtld-servers.net.
net. NS ns1.example.
net. DS 35886 8 2 7862B27F5F516EBE19680444D4CE5E762981931842C465F00236401D8BD973EE
net. RRSIG DS 8 1 86400 20300101000000 20200101000000 15768 . KEYDATA
net. NSEC root-servers.net. NS DS RRSIG NSEC
net. RRSIG NSEC 8 1 86400 20300101000000 20200101000000 15768 . KEYDATA
a.gtld-servers.net. A 192.5.6.30
a.gtld-servers.net. AAAA 2001:503:a83e::2:30
root-servers.net. NS a.root-servers.net.
root-servers.net. NSEC . NS RRSIG NSEC
root-servers.net. RRSIG NSEC 8 2 86400 20300101000000 20200101000000 15768 . KEYDATA
a.root-servers.net. A 198.41.0.4
a.root-servers.net. AAAA 2001:503:ba3e::2:30
b.root-servers.net. A 199.9.14.201
";

const EXAMPLE: &str = "\
$ORIGIN example.
$TTL 3600
@ SOA ns1 hostmaster 1 7200 3600 1209600 300
@ RRSIG SOA 8 1 3600 20300101000000 20200101000000 4242 example. KEYDATA
@ NS ns1
@ NS ns2
@ MX 10 mail
@ DNSKEY 256 3 8 KEYDATA
ns1 A 192.0.2.1
ns1 AAAA 2001:db8::1
ns2 A 192.0.2.2
mail A 192.0.2.25
www A 192.0.2.80
www AAAA 2001:db8::80
www RRSIG A 8 2 3600 20300101000000 20200101000000 4242 example. KEYDATA
alias CNAME www
chain CNAME alias
loop1 CNAME loop2
loop2 CNAME loop1
self CNAME self
outside CNAME www.example.net.
dn DNAME example.net.
a.target A 192.0.2.9
dnself DNAME x.dnself.example.
dnlong DNAME aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.dddddddddddddddddddddddddddddddddddddddddddddddddddddd.
*.wild A 192.0.2.99
*.wild TXT \"wildcard\"
*.wild MX 10 mail
*.wild NSEC zz.example. A TXT MX RRSIG NSEC
*.cn CNAME www
cwild CNAME x.wild
sub NS ns.sub
sub NS ns1
ns.sub A 192.0.2.53
ns.sub AAAA 2001:db8::53
deep.below.sub A 192.0.2.12
signed NS ns.signed
signed DS 12345 8 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE2F5DD5E3B8C7D9D9D3CC0B2A
ns.signed A 192.0.2.54
deep.ent A 192.0.2.11
_dns._udp SRV 0 5 53 ns1
unknown TYPE65534 \\# 4 0a000001
@ NSEC alias.example. A NS SOA MX RRSIG NSEC DNSKEY
alias NSEC www.example. CNAME RRSIG NSEC
www NSEC zz.example. A AAAA RRSIG NSEC
zz NSEC example. TXT RRSIG NSEC
zz TXT \"last\"
";

const NSEC3: &str = "\
$ORIGIN example.net.
$TTL 600
@ SOA ns1.example. hostmaster.example. 7 3600 600 86400 60
@ NS ns1.example.
@ NSEC3PARAM 1 0 12 AABBCCDD
@ RRSIG NSEC3PARAM 8 2 600 20300101000000 20200101000000 777 example.net. KEYDATA
www A 192.0.2.7
*.any TXT \"any\"
cut NS ns1.example.
0p9mhaveqvm6t7vbl5lop2u3t2rp3tom NSEC3 1 0 12 AABBCCDD 2T7B4G4VSA5SMI47K61MV5BV1A22BOJR A RRSIG
0p9mhaveqvm6t7vbl5lop2u3t2rp3tom RRSIG NSEC3 8 3 600 20300101000000 20200101000000 777 example.net. KEYDATA
2t7b4g4vsa5smi47k61mv5bv1a22bojr NSEC3 1 0 12 AABBCCDD JI6NEOAEPV8B5O6K4EV33ABHA8HT9FGC NS SOA RRSIG NSEC3PARAM
ji6neoaepv8b5o6k4ev33abha8ht9fgc NSEC3 1 1 12 AABBCCDD KOHAR7MBB8DC2CE8A9QVL8HON4K53UHI TXT
kohar7mbb8dc2ce8a9qvl8hon4k53uhi NSEC3 1 0 12 AABBCCDD 0P9MHAVEQVM6T7VBL5LOP2U3T2RP3TOM NS
";

/// An RRset of about 6 KB at big.example. (larger than any UDP limit) and one of about 70 KB
/// at huge.example. (larger than a TCP message).
fn big_records() -> String {
    let mut s = String::from("$ORIGIN example.\n");
    for i in 0..60 {
        s.push_str(&format!("big TXT \"{i:03}{}\"\n", "x".repeat(96)));
    }
    for i in 0..300 {
        s.push_str(&format!("huge TXT \"{i:04}{}\"\n", "y".repeat(230)));
    }
    s
}

struct Setup {
    plain: Views,
    split: Views,
    nothing: ZoneSet,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let load = |text: &str, name: &str| {
            Arc::new(Zone::from_text(&text.replace("KEYDATA", SIG), name, None).expect(name))
        };
        let root = load(ROOT, "root");
        let example = load(&format!("{EXAMPLE}{}", big_records()), "example");
        let net = load(NSEC3, "example.net");
        let set =
            |zones: &[&Arc<Zone>]| Arc::new(zones.iter().map(|&z| z.clone()).collect::<ZoneSet>());
        let all = set(&[&root, &example, &net]);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let split = Views::by_address([
            (ip("198.41.0.4"), set(&[&root])),
            (ip("2001:503:ba3e::2:30"), set(&[&root])),
            (ip("192.0.2.1"), set(&[&example, &net])),
            (ip("192.0.2.2"), set(&[&root, &example])),
        ]);
        Setup {
            plain: Views::plain(all),
            split,
            nothing: ZoneSet::new(),
        }
    })
}

const DESTINATIONS: [Option<&str>; 6] = [
    None,
    Some("198.41.0.4"),
    Some("::ffff:192.0.2.1"),
    Some("192.0.2.2"),
    Some("2001:503:ba3e::2:30"),
    Some("203.0.113.9"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&control, query)) = data.split_first() else {
        return;
    };
    let s = setup();
    let tcp = control & 1 != 0;
    // 0..=5: split horizon by destination; 6, 7: plain mode (every destination).
    let d = (control >> 1) & 7;
    let (views, dest) = match DESTINATIONS.get(d as usize) {
        Some(a) => (&s.split, a.map(|a| a.parse::<IpAddr>().unwrap())),
        None => (&s.plain, None),
    };
    let opts = AnswerOptions {
        tcp,
        minimal: control & 0x10 != 0,
        edns_size: [1232, 512, 4096, 100][((control >> 5) & 3) as usize],
        max_chain: if control & 0x80 != 0 { 8 } else { 2 },
    };
    // As in the workers: no view for the destination means no zones (REFUSED).
    let zones = views.for_destination(dest).unwrap_or(&s.nothing);
    let mut out = Vec::new();
    let outcome = zones.answer_into(query, &opts, &mut out);
    if query.len() < 12 || query[2] & 0x80 != 0 {
        assert!(outcome.is_none(), "no response is due");
        return;
    }
    let outcome = outcome.expect("a query gets a response");
    let resp = Message::parse(&out).expect("the response parses");
    assert_eq!(
        resp.end(),
        out.len(),
        "no bytes after the response's records"
    );
    let h = *resp.header();
    assert_eq!(out[..2], query[..2], "the response carries the query's ID");
    assert!(h.qr(), "QR is set");
    let qflags = u16::from_be_bytes([query[2], query[3]]);
    assert_eq!(
        h.opcode() as u16,
        (qflags >> 11) & 0xF,
        "the opcode is echoed"
    );
    assert_eq!(
        h.flags & (flag::RD | flag::CD),
        qflags & (flag::RD | flag::CD),
        "RD and CD are echoed"
    );
    assert_eq!(h.flags & flag::TC != 0, outcome.truncated, "TC as reported");
    match resp.edns() {
        Some(e) => {
            assert_eq!(resp.rcode(), outcome.rcode, "the RCODE as reported");
            assert_eq!(e.version, 0);
            assert_eq!(
                e.udp_size,
                opts.edns_size.max(512),
                "the server's EDNS size"
            );
        }
        None => assert_eq!(ldplayer_dns::Rcode::from_parts(h.rcode_low(), 0), outcome.rcode, "the RCODE as reported"),
    }
    let parsed = Message::parse(query).ok();
    let limit = if tcp {
        65535
    } else {
        match parsed.as_ref().and_then(|m| m.edns().copied()) {
            Some(e) => e.udp_size.min(opts.edns_size).max(512) as usize,
            None => 512,
        }
    };
    assert!(
        out.len() <= limit,
        "{} bytes over a limit of {limit} (tcp: {tcp})",
        out.len()
    );
    match &parsed {
        Some(q) => {
            assert_eq!(
                resp.edns().is_some(),
                q.edns().is_some(),
                "OPT iff the query had EDNS"
            );
            if q.header().qdcount == 1 {
                assert_eq!(h.qdcount, 1);
                assert_eq!(
                    out[12..resp.question_end()],
                    query[12..q.question_end()],
                    "the question is echoed"
                );
            } else {
                assert_eq!(h.qdcount, 0);
            }
        }
        None => {
            assert_eq!(outcome.kind, Kind::FormErr);
            assert_eq!((h.qdcount, h.ancount, h.nscount, h.arcount), (0, 0, 0, 0));
        }
    }
    if zones.zones().is_empty() {
        assert!(
            matches!(
                outcome.kind,
                Kind::Refused | Kind::FormErr | Kind::NotImp | Kind::BadVers
            ),
            "a destination serving nothing answered {:?}",
            outcome.kind
        );
    }
    // The workers reuse their buffers: what was there before must not matter.
    let mut dirty = vec![0xA5; 700];
    let again = zones.answer_into(query, &opts, &mut dirty);
    assert_eq!(again, Some(outcome));
    assert_eq!(dirty, out, "the same query gives the same response");
});
