//! Classes (RFC 1035 §3.2.4, RFC 2136 for NONE).

use crate::mnemonic::vocabulary;

vocabulary! {
    /// A class, as carried in a question's QCLASS or a record's CLASS. Any `u16` is a class;
    /// those without a mnemonic display in the RFC 3597 form `CLASS3`.
    pub struct Class;
    what = "class", generic = "CLASS";
    IN = 1, "IN";
    CH = 3, "CH" | "CHAOS";
    HS = 4, "HS";
    NONE = 254, "NONE";
    ANY = 255, "ANY";
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_classes_have_their_mnemonics() {
        assert_eq!(Class::IN.to_string(), "IN");
        assert_eq!(Class(3).to_string(), "CH");
        assert_eq!("chaos".parse(), Ok(Class::CH));
        assert_eq!("in".parse(), Ok(Class::IN));
        assert_eq!("NONE".parse(), Ok(Class(254)));
    }

    #[test]
    fn unknown_classes_use_the_rfc_3597_form() {
        assert_eq!(Class(2).to_string(), "CLASS2");
        assert_eq!(Class(65535).to_string(), "CLASS65535");
        assert_eq!("CLASS42".parse(), Ok(Class(42)));
        assert!("CLASS".parse::<Class>().is_err());
        assert!("\u{e9}\u{e9}\u{e9}".parse::<Class>().is_err());
        assert_eq!(
            "XX".parse::<Class>().unwrap_err().to_string(),
            "expected a class mnemonic or CLASSnnn"
        );
    }

    proptest! {
        #[test]
        fn every_number_round_trips(v in any::<u16>()) {
            let c = Class(v);
            prop_assert_eq!(c.to_string().parse::<Class>(), Ok(c));
            prop_assert_eq!(format!("class{v}").parse::<Class>(), Ok(c));
        }
    }
}
