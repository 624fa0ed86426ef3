//! Mnemonics of types, classes, opcodes and response codes, with the RFC 3597 fallbacks
//! (`TYPE65280`, `CLASS3`) for numbers without one.

/// Record type numbers from the IANA registry.
#[allow(missing_docs)]
pub mod rtype {
    /// A
    pub const A: u16 = 1;
    /// NS
    pub const NS: u16 = 2;
    /// MD
    pub const MD: u16 = 3;
    /// MF
    pub const MF: u16 = 4;
    /// CNAME
    pub const CNAME: u16 = 5;
    /// SOA
    pub const SOA: u16 = 6;
    /// MB
    pub const MB: u16 = 7;
    /// MG
    pub const MG: u16 = 8;
    /// MR
    pub const MR: u16 = 9;
    /// NULL
    pub const NULL: u16 = 10;
    /// WKS
    pub const WKS: u16 = 11;
    /// PTR
    pub const PTR: u16 = 12;
    /// HINFO
    pub const HINFO: u16 = 13;
    /// MINFO
    pub const MINFO: u16 = 14;
    /// MX
    pub const MX: u16 = 15;
    /// TXT
    pub const TXT: u16 = 16;
    /// RP
    pub const RP: u16 = 17;
    /// AFSDB
    pub const AFSDB: u16 = 18;
    /// X25
    pub const X25: u16 = 19;
    /// ISDN
    pub const ISDN: u16 = 20;
    /// RT
    pub const RT: u16 = 21;
    /// NSAP
    pub const NSAP: u16 = 22;
    /// NSAP-PTR
    pub const NSAP_PTR: u16 = 23;
    /// SIG
    pub const SIG: u16 = 24;
    /// KEY
    pub const KEY: u16 = 25;
    /// PX
    pub const PX: u16 = 26;
    /// GPOS
    pub const GPOS: u16 = 27;
    /// AAAA
    pub const AAAA: u16 = 28;
    /// LOC
    pub const LOC: u16 = 29;
    /// NXT
    pub const NXT: u16 = 30;
    /// EID
    pub const EID: u16 = 31;
    /// NIMLOC
    pub const NIMLOC: u16 = 32;
    /// SRV
    pub const SRV: u16 = 33;
    /// ATMA
    pub const ATMA: u16 = 34;
    /// NAPTR
    pub const NAPTR: u16 = 35;
    /// KX
    pub const KX: u16 = 36;
    /// CERT
    pub const CERT: u16 = 37;
    /// A6
    pub const A6: u16 = 38;
    /// DNAME
    pub const DNAME: u16 = 39;
    /// SINK
    pub const SINK: u16 = 40;
    /// OPT
    pub const OPT: u16 = 41;
    /// APL
    pub const APL: u16 = 42;
    /// DS
    pub const DS: u16 = 43;
    /// SSHFP
    pub const SSHFP: u16 = 44;
    /// IPSECKEY
    pub const IPSECKEY: u16 = 45;
    /// RRSIG
    pub const RRSIG: u16 = 46;
    /// NSEC
    pub const NSEC: u16 = 47;
    /// DNSKEY
    pub const DNSKEY: u16 = 48;
    /// DHCID
    pub const DHCID: u16 = 49;
    /// NSEC3
    pub const NSEC3: u16 = 50;
    /// NSEC3PARAM
    pub const NSEC3PARAM: u16 = 51;
    /// TLSA
    pub const TLSA: u16 = 52;
    /// SMIMEA
    pub const SMIMEA: u16 = 53;
    /// HIP
    pub const HIP: u16 = 55;
    /// NINFO
    pub const NINFO: u16 = 56;
    /// RKEY
    pub const RKEY: u16 = 57;
    /// TALINK
    pub const TALINK: u16 = 58;
    /// CDS
    pub const CDS: u16 = 59;
    /// CDNSKEY
    pub const CDNSKEY: u16 = 60;
    /// OPENPGPKEY
    pub const OPENPGPKEY: u16 = 61;
    /// CSYNC
    pub const CSYNC: u16 = 62;
    /// ZONEMD
    pub const ZONEMD: u16 = 63;
    /// SVCB
    pub const SVCB: u16 = 64;
    /// HTTPS
    pub const HTTPS: u16 = 65;
    /// SPF
    pub const SPF: u16 = 99;
    /// UINFO
    pub const UINFO: u16 = 100;
    /// UID
    pub const UID: u16 = 101;
    /// GID
    pub const GID: u16 = 102;
    /// UNSPEC
    pub const UNSPEC: u16 = 103;
    /// NID
    pub const NID: u16 = 104;
    /// L32
    pub const L32: u16 = 105;
    /// L64
    pub const L64: u16 = 106;
    /// LP
    pub const LP: u16 = 107;
    /// EUI48
    pub const EUI48: u16 = 108;
    /// EUI64
    pub const EUI64: u16 = 109;
    /// TKEY
    pub const TKEY: u16 = 249;
    /// TSIG
    pub const TSIG: u16 = 250;
    /// IXFR
    pub const IXFR: u16 = 251;
    /// AXFR
    pub const AXFR: u16 = 252;
    /// MAILB
    pub const MAILB: u16 = 253;
    /// MAILA
    pub const MAILA: u16 = 254;
    /// ANY
    pub const ANY: u16 = 255;
    /// URI
    pub const URI: u16 = 256;
    /// CAA
    pub const CAA: u16 = 257;
    /// AVC
    pub const AVC: u16 = 258;
    /// DOA
    pub const DOA: u16 = 259;
    /// AMTRELAY
    pub const AMTRELAY: u16 = 260;
    /// TA
    pub const TA: u16 = 32768;
    /// DLV
    pub const DLV: u16 = 32769;
}

fn type_name(t: u16) -> Option<&'static str> {
    Some(match t {
        1 => "A",
        2 => "NS",
        3 => "MD",
        4 => "MF",
        5 => "CNAME",
        6 => "SOA",
        7 => "MB",
        8 => "MG",
        9 => "MR",
        10 => "NULL",
        11 => "WKS",
        12 => "PTR",
        13 => "HINFO",
        14 => "MINFO",
        15 => "MX",
        16 => "TXT",
        17 => "RP",
        18 => "AFSDB",
        19 => "X25",
        20 => "ISDN",
        21 => "RT",
        22 => "NSAP",
        23 => "NSAP-PTR",
        24 => "SIG",
        25 => "KEY",
        26 => "PX",
        27 => "GPOS",
        28 => "AAAA",
        29 => "LOC",
        30 => "NXT",
        31 => "EID",
        32 => "NIMLOC",
        33 => "SRV",
        34 => "ATMA",
        35 => "NAPTR",
        36 => "KX",
        37 => "CERT",
        38 => "A6",
        39 => "DNAME",
        40 => "SINK",
        41 => "OPT",
        42 => "APL",
        43 => "DS",
        44 => "SSHFP",
        45 => "IPSECKEY",
        46 => "RRSIG",
        47 => "NSEC",
        48 => "DNSKEY",
        49 => "DHCID",
        50 => "NSEC3",
        51 => "NSEC3PARAM",
        52 => "TLSA",
        53 => "SMIMEA",
        55 => "HIP",
        56 => "NINFO",
        57 => "RKEY",
        58 => "TALINK",
        59 => "CDS",
        60 => "CDNSKEY",
        61 => "OPENPGPKEY",
        62 => "CSYNC",
        63 => "ZONEMD",
        64 => "SVCB",
        65 => "HTTPS",
        99 => "SPF",
        100 => "UINFO",
        101 => "UID",
        102 => "GID",
        103 => "UNSPEC",
        104 => "NID",
        105 => "L32",
        106 => "L64",
        107 => "LP",
        108 => "EUI48",
        109 => "EUI64",
        249 => "TKEY",
        250 => "TSIG",
        251 => "IXFR",
        252 => "AXFR",
        253 => "MAILB",
        254 => "MAILA",
        255 => "ANY",
        256 => "URI",
        257 => "CAA",
        258 => "AVC",
        259 => "DOA",
        260 => "AMTRELAY",
        32768 => "TA",
        32769 => "DLV",
        _ => return None,
    })
}

/// The mnemonic of a record type, or `TYPEnnn` when it has none.
pub fn rtype_to_string(t: u16) -> String {
    match type_name(t) {
        Some(n) => n.to_string(),
        None => format!("TYPE{t}"),
    }
}

/// Parses a type mnemonic (any case) or `TYPEnnn`.
pub fn rtype_from_str(s: &str) -> Option<u16> {
    if let Some(n) = strip_prefix_ci(s, "TYPE") {
        if let Ok(v) = n.parse() {
            return Some(v);
        }
    }
    Some(match s.to_ascii_uppercase().as_str() {
        "A" => 1,
        "NS" => 2,
        "MD" => 3,
        "MF" => 4,
        "CNAME" => 5,
        "SOA" => 6,
        "MB" => 7,
        "MG" => 8,
        "MR" => 9,
        "NULL" => 10,
        "WKS" => 11,
        "PTR" => 12,
        "HINFO" => 13,
        "MINFO" => 14,
        "MX" => 15,
        "TXT" => 16,
        "RP" => 17,
        "AFSDB" => 18,
        "X25" => 19,
        "ISDN" => 20,
        "RT" => 21,
        "NSAP" => 22,
        "NSAP-PTR" => 23,
        "SIG" => 24,
        "KEY" => 25,
        "PX" => 26,
        "GPOS" => 27,
        "AAAA" => 28,
        "LOC" => 29,
        "NXT" => 30,
        "EID" => 31,
        "NIMLOC" => 32,
        "SRV" => 33,
        "ATMA" => 34,
        "NAPTR" => 35,
        "KX" => 36,
        "CERT" => 37,
        "A6" => 38,
        "DNAME" => 39,
        "SINK" => 40,
        "OPT" => 41,
        "APL" => 42,
        "DS" => 43,
        "SSHFP" => 44,
        "IPSECKEY" => 45,
        "RRSIG" => 46,
        "NSEC" => 47,
        "DNSKEY" => 48,
        "DHCID" => 49,
        "NSEC3" => 50,
        "NSEC3PARAM" => 51,
        "TLSA" => 52,
        "SMIMEA" => 53,
        "HIP" => 55,
        "NINFO" => 56,
        "RKEY" => 57,
        "TALINK" => 58,
        "CDS" => 59,
        "CDNSKEY" => 60,
        "OPENPGPKEY" => 61,
        "CSYNC" => 62,
        "ZONEMD" => 63,
        "SVCB" => 64,
        "HTTPS" => 65,
        "SPF" => 99,
        "UINFO" => 100,
        "UID" => 101,
        "GID" => 102,
        "UNSPEC" => 103,
        "NID" => 104,
        "L32" => 105,
        "L64" => 106,
        "LP" => 107,
        "EUI48" => 108,
        "EUI64" => 109,
        "TKEY" => 249,
        "TSIG" => 250,
        "IXFR" => 251,
        "AXFR" => 252,
        "MAILB" => 253,
        "MAILA" => 254,
        "ANY" => 255,
        "URI" => 256,
        "CAA" => 257,
        "AVC" => 258,
        "DOA" => 259,
        "AMTRELAY" => 260,
        "TA" => 32768,
        "DLV" => 32769,
        _ => return None,
    })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    // `get` rather than indexing: `s` is user text and may hold multi-byte characters.
    let head = s.get(..prefix.len())?;
    let rest = s.get(prefix.len()..)?;
    (!rest.is_empty() && head.eq_ignore_ascii_case(prefix)).then_some(rest)
}

/// The mnemonic of a class, or `CLASSnnn`.
pub fn class_to_string(c: u16) -> String {
    match c {
        1 => "IN".into(),
        3 => "CH".into(),
        4 => "HS".into(),
        254 => "NONE".into(),
        255 => "ANY".into(),
        _ => format!("CLASS{c}"),
    }
}

/// Parses a class mnemonic (any case) or `CLASSnnn`.
pub fn class_from_str(s: &str) -> Option<u16> {
    if let Some(n) = strip_prefix_ci(s, "CLASS") {
        return n.parse().ok();
    }
    Some(match s.to_ascii_uppercase().as_str() {
        "IN" => 1,
        "CH" | "CHAOS" => 3,
        "HS" => 4,
        "NONE" => 254,
        "ANY" => 255,
        _ => return None,
    })
}

const OPCODES: [(u8, &str); 6] = [
    (0, "QUERY"),
    (1, "IQUERY"),
    (2, "STATUS"),
    (4, "NOTIFY"),
    (5, "UPDATE"),
    (6, "DSO"),
];

/// The mnemonic of an opcode, or `OPCODEn`.
pub fn opcode_to_string(op: u8) -> String {
    match OPCODES.iter().find(|(v, _)| *v == op) {
        Some((_, n)) => n.to_string(),
        None => format!("OPCODE{op}"),
    }
}

/// Parses an opcode mnemonic (any case) or `OPCODEn`.
pub fn opcode_from_str(s: &str) -> Option<u8> {
    if let Some(n) = strip_prefix_ci(s, "OPCODE") {
        return n.parse().ok().filter(|v| *v < 16);
    }
    OPCODES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(s))
        .map(|(v, _)| *v)
}

const RCODES: [(u16, &str); 17] = [
    (0, "NOERROR"),
    (1, "FORMERR"),
    (2, "SERVFAIL"),
    (3, "NXDOMAIN"),
    (4, "NOTIMP"),
    (5, "REFUSED"),
    (6, "YXDOMAIN"),
    (7, "YXRRSET"),
    (8, "NXRRSET"),
    (9, "NOTAUTH"),
    (10, "NOTZONE"),
    (11, "DSOTYPENI"),
    (16, "BADVERS"),
    (17, "BADKEY"),
    (18, "BADTIME"),
    (19, "BADMODE"),
    (23, "BADCOOKIE"),
];

/// The mnemonic of a (possibly extended) response code, or `RCODEnnn`.
pub fn rcode_to_string(rc: u16) -> String {
    match RCODES.iter().find(|(v, _)| *v == rc) {
        Some((_, n)) => n.to_string(),
        None => format!("RCODE{rc}"),
    }
}

/// Parses a response code mnemonic (any case) or `RCODEnnn`.
pub fn rcode_from_str(s: &str) -> Option<u16> {
    if let Some(n) = strip_prefix_ci(s, "RCODE") {
        return n.parse().ok().filter(|v| *v < 4096);
    }
    RCODES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(s))
        .map(|(v, _)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_round_trip() {
        for t in [1u16, 28, 46, 65, 255, 999, 65535] {
            assert_eq!(rtype_from_str(&rtype_to_string(t)), Some(t));
        }
        assert_eq!(rtype_to_string(65280), "TYPE65280");
        // Found by fuzzing: multi-byte text where a prefix is looked for.
        assert_eq!(opcode_from_str("QUERY\u{71c3a}RROR"), None);
        assert_eq!(rtype_from_str("TY\u{e9}E1"), None);
        assert_eq!(class_from_str("\u{e9}\u{e9}\u{e9}"), None);
        assert_eq!(rtype_from_str("aaaa"), Some(28));
        for c in [1u16, 3, 4, 254, 255, 42] {
            assert_eq!(class_from_str(&class_to_string(c)), Some(c));
        }
        for op in 0u8..16 {
            assert_eq!(opcode_from_str(&opcode_to_string(op)), Some(op));
        }
        for rc in 0u16..4096 {
            assert_eq!(rcode_from_str(&rcode_to_string(rc)), Some(rc));
        }
    }
}
