//! The machinery shared by the DNS vocabularies ([`Rtype`](crate::Rtype),
//! [`Class`](crate::Class), [`Rcode`](crate::Rcode)): one table per vocabulary, written once in
//! a [`vocabulary!`] invocation, from which the constants, the mnemonic of a number and the number
//! of a mnemonic are all generated. Also the opcode mnemonics, which the text format needs but no
//! other crate passes around.

/// The longest mnemonic any vocabulary may hold; parsing upper-cases into a buffer of this size
/// so no text is allocated. Every table entry is checked against it at compile time.
pub(crate) const LONGEST: usize = 16;

/// A mnemonic that names no value of a vocabulary, and is not its RFC 3597 generic form either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected a {what} mnemonic or {generic}nnn")]
pub struct UnknownMnemonic {
    /// What was being parsed, e.g. "record type".
    pub what: &'static str,
    /// The generic form's prefix, e.g. "TYPE".
    pub generic: &'static str,
}

/// Defines a `u16` newtype with one constant per registered value, `Display` (mnemonic, or the
/// RFC 3597 generic form), `FromStr` (mnemonic in any case, aliases, or the generic form),
/// conversions from and to `u16`, and serde as the mnemonic string, all from one table.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        pub struct $ty:ident;
        what = $what:literal, generic = $generic:literal;
        $( $konst:ident = $value:literal, $name:literal $(| $alias:literal)*; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $ty(pub u16);

        #[allow(missing_docs)]
        impl $ty {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($value), ").")]
                pub const $konst: $ty = $ty($value);
            )*
        }

        $( const _: () = assert!($name.len() <= $crate::mnemonic::LONGEST); )*

        impl $ty {
            /// Every value that has a mnemonic, in the order of the registry.
            pub const KNOWN: &'static [$ty] = &[$($ty::$konst),*];

            /// The registered mnemonic, or `None` for a number that has none.
            pub const fn mnemonic(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some($name), )*
                    _ => None,
                }
            }

            /// The value a mnemonic (any case, aliases included) names; no generic form.
            fn from_mnemonic(s: &str) -> Option<Self> {
                let mut buf = [0u8; $crate::mnemonic::LONGEST];
                Some(match $crate::mnemonic::ascii_upper(s, &mut buf)? {
                    $( $name $(| $alias)* => Self::$konst, )*
                    _ => return None,
                })
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self.mnemonic() {
                    Some(name) => f.write_str(name),
                    None => write!(f, concat!($generic, "{}"), self.0),
                }
            }
        }

        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!(stringify!($ty), "({})"), self)
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::mnemonic::UnknownMnemonic;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::mnemonic::generic_number(s, $generic)
                    .map($ty)
                    .or_else(|| Self::from_mnemonic(s))
                    .ok_or($crate::mnemonic::UnknownMnemonic { what: $what, generic: $generic })
            }
        }

        impl From<u16> for $ty {
            fn from(v: u16) -> Self {
                $ty(v)
            }
        }

        impl From<$ty> for u16 {
            fn from(v: $ty) -> u16 {
                v.0
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(<D::Error as ::serde::de::Error>::custom)
            }
        }
    };
}
pub(crate) use vocabulary;

/// `s` upper-cased into `buf`, or `None` when it is too long to be any mnemonic.
pub(crate) fn ascii_upper<'b>(s: &str, buf: &'b mut [u8; LONGEST]) -> Option<&'b str> {
    let out = buf.get_mut(..s.len())?;
    out.copy_from_slice(s.as_bytes());
    out.make_ascii_uppercase();
    // Upper-casing ASCII bytes keeps UTF-8 valid, so this never fails.
    std::str::from_utf8(out).ok()
}

/// The number of an RFC 3597 generic form such as `TYPE65280` (prefix in any case, decimal
/// digits only).
pub(crate) fn generic_number(s: &str, prefix: &str) -> Option<u16> {
    let digits = strip_prefix_ci(s, prefix)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    // `get` rather than indexing: `s` is user text and may hold multi-byte characters.
    let head = s.get(..prefix.len())?;
    let rest = s.get(prefix.len()..)?;
    (!rest.is_empty() && head.eq_ignore_ascii_case(prefix)).then_some(rest)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_round_trip() {
        for op in 0u8..16 {
            assert_eq!(opcode_from_str(&opcode_to_string(op)), Some(op));
        }
        // Found by fuzzing: multi-byte text where a prefix is looked for.
        assert_eq!(opcode_from_str("QUERY\u{71c3a}RROR"), None);
    }

    #[test]
    fn generic_forms_take_decimal_digits_only() {
        assert_eq!(generic_number("type65280", "TYPE"), Some(65280));
        assert_eq!(generic_number("TYPE+5", "TYPE"), None);
        assert_eq!(generic_number("TYPE65536", "TYPE"), None);
        assert_eq!(generic_number("TYPE", "TYPE"), None);
        assert_eq!(generic_number("TY\u{e9}E1", "TYPE"), None);
    }

    #[test]
    fn upper_casing_rejects_what_no_mnemonic_can_be() {
        let mut buf = [0; LONGEST];
        assert_eq!(ascii_upper("nsec3param", &mut buf), Some("NSEC3PARAM"));
        assert_eq!(
            ascii_upper("x".repeat(LONGEST + 1).as_str(), &mut buf),
            None
        );
        assert_eq!(ascii_upper("\u{e9}\u{e9}", &mut buf), Some("\u{e9}\u{e9}"));
    }
}
