//! Record types (RFC 1035 §3.2.2 and the IANA registry).

use crate::mnemonic::vocabulary;

vocabulary! {
    /// A record type, as carried in a question's QTYPE or a record's TYPE. Any `u16` is a record
    /// type; those without a mnemonic display in the RFC 3597 form `TYPE65280`.
    pub struct Rtype;
    what = "record type", generic = "TYPE";
    A = 1, "A";
    NS = 2, "NS";
    MD = 3, "MD";
    MF = 4, "MF";
    CNAME = 5, "CNAME";
    SOA = 6, "SOA";
    MB = 7, "MB";
    MG = 8, "MG";
    MR = 9, "MR";
    NULL = 10, "NULL";
    WKS = 11, "WKS";
    PTR = 12, "PTR";
    HINFO = 13, "HINFO";
    MINFO = 14, "MINFO";
    MX = 15, "MX";
    TXT = 16, "TXT";
    RP = 17, "RP";
    AFSDB = 18, "AFSDB";
    X25 = 19, "X25";
    ISDN = 20, "ISDN";
    RT = 21, "RT";
    NSAP = 22, "NSAP";
    NSAP_PTR = 23, "NSAP-PTR";
    SIG = 24, "SIG";
    KEY = 25, "KEY";
    PX = 26, "PX";
    GPOS = 27, "GPOS";
    AAAA = 28, "AAAA";
    LOC = 29, "LOC";
    NXT = 30, "NXT";
    EID = 31, "EID";
    NIMLOC = 32, "NIMLOC";
    SRV = 33, "SRV";
    ATMA = 34, "ATMA";
    NAPTR = 35, "NAPTR";
    KX = 36, "KX";
    CERT = 37, "CERT";
    A6 = 38, "A6";
    DNAME = 39, "DNAME";
    SINK = 40, "SINK";
    OPT = 41, "OPT";
    APL = 42, "APL";
    DS = 43, "DS";
    SSHFP = 44, "SSHFP";
    IPSECKEY = 45, "IPSECKEY";
    RRSIG = 46, "RRSIG";
    NSEC = 47, "NSEC";
    DNSKEY = 48, "DNSKEY";
    DHCID = 49, "DHCID";
    NSEC3 = 50, "NSEC3";
    NSEC3PARAM = 51, "NSEC3PARAM";
    TLSA = 52, "TLSA";
    SMIMEA = 53, "SMIMEA";
    HIP = 55, "HIP";
    NINFO = 56, "NINFO";
    RKEY = 57, "RKEY";
    TALINK = 58, "TALINK";
    CDS = 59, "CDS";
    CDNSKEY = 60, "CDNSKEY";
    OPENPGPKEY = 61, "OPENPGPKEY";
    CSYNC = 62, "CSYNC";
    ZONEMD = 63, "ZONEMD";
    SVCB = 64, "SVCB";
    HTTPS = 65, "HTTPS";
    SPF = 99, "SPF";
    UINFO = 100, "UINFO";
    UID = 101, "UID";
    GID = 102, "GID";
    UNSPEC = 103, "UNSPEC";
    NID = 104, "NID";
    L32 = 105, "L32";
    L64 = 106, "L64";
    LP = 107, "LP";
    EUI48 = 108, "EUI48";
    EUI64 = 109, "EUI64";
    TKEY = 249, "TKEY";
    TSIG = 250, "TSIG";
    IXFR = 251, "IXFR";
    AXFR = 252, "AXFR";
    MAILB = 253, "MAILB";
    MAILA = 254, "MAILA";
    ANY = 255, "ANY";
    URI = 256, "URI";
    CAA = 257, "CAA";
    AVC = 258, "AVC";
    DOA = 259, "DOA";
    AMTRELAY = 260, "AMTRELAY";
    TA = 32768, "TA";
    DLV = 32769, "DLV";
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_types_have_their_mnemonics() {
        assert_eq!(Rtype::A.to_string(), "A");
        assert_eq!(Rtype::AAAA.to_string(), "AAAA");
        assert_eq!(Rtype::NSAP_PTR.to_string(), "NSAP-PTR");
        assert_eq!(Rtype(28), Rtype::AAAA);
        assert_eq!("aaaa".parse(), Ok(Rtype::AAAA));
        assert_eq!("Nsec3Param".parse(), Ok(Rtype::NSEC3PARAM));
        assert_eq!("DLV".parse(), Ok(Rtype(32769)));
        assert_eq!(Rtype::KNOWN.len(), 89);
    }

    #[test]
    fn unknown_types_use_the_rfc_3597_form() {
        assert_eq!(Rtype(65534).to_string(), "TYPE65534");
        assert_eq!(Rtype(0).to_string(), "TYPE0");
        assert_eq!(format!("{:?}", Rtype(54)), "Rtype(TYPE54)");
        assert_eq!("TYPE65534".parse(), Ok(Rtype(65534)));
        assert_eq!(
            "type1".parse(),
            Ok(Rtype::A),
            "a generic form of a known type"
        );
        assert!("TYPE65536".parse::<Rtype>().is_err());
        assert!("BOGUS".parse::<Rtype>().is_err());
        assert!("".parse::<Rtype>().is_err());
        // Found by fuzzing: multi-byte text where a prefix is looked for.
        assert!("TY\u{e9}E1".parse::<Rtype>().is_err());
    }

    #[test]
    fn serializes_as_its_mnemonic() {
        assert_eq!(serde_json::to_string(&Rtype::AAAA).unwrap(), r#""AAAA""#);
        assert_eq!(serde_json::to_string(&Rtype(999)).unwrap(), r#""TYPE999""#);
        assert_eq!(
            serde_json::from_str::<Rtype>(r#""txt""#).unwrap(),
            Rtype::TXT
        );
    }

    proptest! {
        #[test]
        fn every_number_round_trips(v in any::<u16>()) {
            let t = Rtype(v);
            prop_assert_eq!(t.to_string().parse::<Rtype>(), Ok(t));
            prop_assert_eq!(t.to_string().to_ascii_lowercase().parse::<Rtype>(), Ok(t));
            prop_assert_eq!(format!("TYPE{v}").parse::<Rtype>(), Ok(t));
            prop_assert_eq!(u16::from(Rtype::from(v)), v);
        }
    }
}
