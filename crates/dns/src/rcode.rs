//! Response codes (RFC 1035 §4.1.1, extended to 12 bits by EDNS, RFC 6891 §6.1.3).

use crate::mnemonic::vocabulary;

vocabulary! {
    /// A response code. A message carries 12 bits of it: the low 4 in the header and the high 8
    /// in the EDNS OPT record (so BADVERS and above need EDNS). Codes without a mnemonic display
    /// as `RCODE23`.
    pub struct Rcode;
    what = "response code", generic = "RCODE";
    NOERROR = 0, "NOERROR";
    FORMERR = 1, "FORMERR";
    SERVFAIL = 2, "SERVFAIL";
    NXDOMAIN = 3, "NXDOMAIN";
    NOTIMP = 4, "NOTIMP";
    REFUSED = 5, "REFUSED";
    YXDOMAIN = 6, "YXDOMAIN";
    YXRRSET = 7, "YXRRSET";
    NXRRSET = 8, "NXRRSET";
    NOTAUTH = 9, "NOTAUTH";
    NOTZONE = 10, "NOTZONE";
    DSOTYPENI = 11, "DSOTYPENI";
    BADVERS = 16, "BADVERS";
    BADKEY = 17, "BADKEY";
    BADTIME = 18, "BADTIME";
    BADMODE = 19, "BADMODE";
    BADCOOKIE = 23, "BADCOOKIE";
}

/// The response codes reports list first, in this order (the results' text summary, the
/// server's statistics, where they appear even when zero); the others follow by name.
pub const MAIN_RCODES: [Rcode; 4] = [
    Rcode::NOERROR,
    Rcode::NXDOMAIN,
    Rcode::SERVFAIL,
    Rcode::REFUSED,
];

impl Rcode {
    /// The largest code a message can carry (12 bits).
    pub const MAX_IN_MESSAGE: Rcode = Rcode(0xFFF);

    /// The code made of a header's 4 bits and an OPT record's extended 8 bits.
    pub const fn from_parts(header_bits: u8, extended_bits: u8) -> Rcode {
        Rcode(((extended_bits as u16) << 4) | (header_bits as u16 & 0xF))
    }

    /// The 4 bits that go in the header.
    pub const fn header_bits(self) -> u8 {
        (self.0 & 0xF) as u8
    }

    /// The 8 bits that go in the OPT record's TTL; those of a code above
    /// [`MAX_IN_MESSAGE`](Self::MAX_IN_MESSAGE) are cut off.
    pub const fn extended_bits(self) -> u8 {
        (self.0 >> 4) as u8
    }

    /// Whether the code needs an OPT record to be carried (it is above 15).
    pub const fn needs_edns(self) -> bool {
        self.0 > 0xF
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_codes_have_their_mnemonics() {
        assert_eq!(Rcode::NXDOMAIN.to_string(), "NXDOMAIN");
        assert_eq!(Rcode(16).to_string(), "BADVERS");
        assert_eq!("servfail".parse(), Ok(Rcode::SERVFAIL));
        assert_eq!("BADCOOKIE".parse(), Ok(Rcode(23)));
        assert_eq!(Rcode::default(), Rcode::NOERROR);
    }

    #[test]
    fn unknown_codes_use_the_generic_form() {
        assert_eq!(Rcode(12).to_string(), "RCODE12");
        assert_eq!(Rcode(4095).to_string(), "RCODE4095");
        assert_eq!("RCODE23".parse(), Ok(Rcode::BADCOOKIE));
        assert!("RCODE-1".parse::<Rcode>().is_err());
        assert!("NOSUCHCODE".parse::<Rcode>().is_err());
    }

    #[test]
    fn splits_into_header_and_edns_bits() {
        assert_eq!(Rcode::BADVERS.header_bits(), 0);
        assert_eq!(Rcode::BADVERS.extended_bits(), 1);
        assert_eq!(Rcode::from_parts(0, 1), Rcode::BADVERS);
        assert_eq!(Rcode::from_parts(3, 0), Rcode::NXDOMAIN);
        assert!(Rcode::BADVERS.needs_edns() && !Rcode::REFUSED.needs_edns());
    }

    proptest! {
        #[test]
        fn every_number_round_trips(v in any::<u16>()) {
            let rc = Rcode(v);
            prop_assert_eq!(rc.to_string().parse::<Rcode>(), Ok(rc));
            prop_assert_eq!(format!("rcode{v}").parse::<Rcode>(), Ok(rc));
        }

        #[test]
        fn message_codes_split_and_rejoin(v in 0u16..=0xFFF) {
            let rc = Rcode(v);
            prop_assert_eq!(Rcode::from_parts(rc.header_bits(), rc.extended_bits()), rc);
        }
    }
}
