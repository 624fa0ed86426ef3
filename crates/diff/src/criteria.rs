//! What `diff` compares and how: the fields, and the normalisations that decide when two values
//! are the same. Read from a TOML criteria file (`diff --criteria FILE`):
//!
//! ```toml
//! # Every field but these (or `fields = [...]`: only those). `flags.*` and `edns.*` name a
//! # group.
//! ignore = ["edns.bufsize", "edns.padding"]
//! # TTLs count in the answer, authority and additional sections (default: ignored).
//! ttl = false
//! # The case of names counts, as 0x20 randomisation would see it (default: ignored).
//! case = false
//! # RRSIGs compared by owner, type covered, algorithm, labels, key tag and signer
//! # ("covered", the default: servers that sign on the fly agree), or whole ("full").
//! rrsig = "covered"
//! ```

use crate::field::Field;
use serde::{Deserialize, Serialize};

/// How RRSIG records are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RrsigMode {
    /// By owner, type covered, algorithm, labels, key tag and signer: the signature, its
    /// validity times and original TTL aside (servers signing on the fly make their own).
    #[default]
    Covered,
    /// The whole RDATA.
    Full,
}

/// The fields compared and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Criteria {
    /// The fields compared, in [`Field::ALL`] order.
    pub fields: Vec<Field>,
    /// TTLs count in record comparisons.
    pub ttl: bool,
    /// The case of names counts.
    pub case: bool,
    /// How RRSIGs are compared.
    pub rrsig: RrsigMode,
}

impl Default for Criteria {
    /// Every field; TTLs and case ignored; RRSIGs by what they cover.
    fn default() -> Criteria {
        Criteria {
            fields: Field::ALL.to_vec(),
            ttl: false,
            case: false,
            rrsig: RrsigMode::Covered,
        }
    }
}

/// Why a criteria file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CriteriaError {
    /// Not TOML, or keys this build does not know.
    #[error("{0}")]
    Toml(String),
    /// A field name that is not one.
    #[error("unknown field `{0}` (the fields: {names})", names = Field::names())]
    UnknownField(String),
    /// Both `fields` and `ignore`.
    #[error("give `fields` (the ones compared) or `ignore` (the ones left out), not both")]
    FieldsAndIgnore,
    /// Nothing left to compare.
    #[error("no field left to compare")]
    NoField,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    fields: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    ttl: Option<bool>,
    case: Option<bool>,
    rrsig: Option<RrsigText>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RrsigText {
    Covered,
    Full,
}

/// The fields a name in a criteria file or a bound stands for: one field, or a group
/// (`flags.*`, `edns.*`, `*`).
pub fn fields_named(name: &str) -> Result<Vec<Field>, CriteriaError> {
    let name = name.trim();
    let found: Vec<Field> = match name.strip_suffix('*') {
        Some(prefix) => Field::ALL
            .into_iter()
            .filter(|f| f.name().starts_with(prefix) && f.name() != prefix.trim_end_matches('.'))
            .collect(),
        None => Field::from_name(name).into_iter().collect(),
    };
    if found.is_empty() {
        return Err(CriteriaError::UnknownField(name.to_string()));
    }
    Ok(found)
}

impl Criteria {
    /// Reads a criteria file's text.
    pub fn from_toml(text: &str) -> Result<Criteria, CriteriaError> {
        let file: File = toml::from_str(text).map_err(|e| CriteriaError::Toml(e.to_string()))?;
        let named = |list: &[String]| -> Result<Vec<Field>, CriteriaError> {
            let mut out = Vec::new();
            for name in list {
                out.extend(fields_named(name)?);
            }
            Ok(out)
        };
        let fields = match (&file.fields, &file.ignore) {
            (Some(_), Some(_)) => return Err(CriteriaError::FieldsAndIgnore),
            (Some(only), None) => {
                let chosen = named(only)?;
                Field::ALL
                    .into_iter()
                    .filter(|f| chosen.contains(f))
                    .collect()
            }
            (None, Some(left_out)) => {
                let out = named(left_out)?;
                Field::ALL
                    .into_iter()
                    .filter(|f| !out.contains(f))
                    .collect()
            }
            (None, None) => Field::ALL.to_vec(),
        };
        if fields.is_empty() {
            return Err(CriteriaError::NoField);
        }
        Ok(Criteria {
            fields,
            ttl: file.ttl.unwrap_or(false),
            case: file.case.unwrap_or(false),
            rrsig: match file.rrsig {
                Some(RrsigText::Full) => RrsigMode::Full,
                _ => RrsigMode::Covered,
            },
        })
    }

    /// Whether `field` is compared.
    pub fn compares(&self, field: Field) -> bool {
        self.fields.contains(&field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_or_ignore_with_groups() {
        let c = Criteria::from_toml("ignore = [\"edns.*\", \"flags.ra\"]\nttl = true\n").unwrap();
        assert!(c.ttl && !c.case);
        assert!(!c.compares(Field::EdnsNsid) && !c.compares(Field::FlagRa));
        assert!(
            c.compares(Field::Edns),
            "`edns.*` leaves the presence of EDNS compared"
        );
        assert!(c.compares(Field::FlagAd) && c.compares(Field::Answer));
        let c = Criteria::from_toml("fields = [\"rcode\", \"flags.*\"]\nrrsig = \"full\"").unwrap();
        assert_eq!(c.fields.len(), 7);
        assert_eq!(c.rrsig, RrsigMode::Full);
        assert_eq!(Criteria::from_toml("").unwrap(), Criteria::default());
    }

    #[test]
    fn mistakes_are_named() {
        let e = Criteria::from_toml("fields = [\"rcodes\"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`rcodes`") && e.contains("flags.ad"), "{e}");
        let e = Criteria::from_toml("ttls = true").unwrap_err().to_string();
        assert!(e.contains("ttls"), "{e}");
        assert!(matches!(
            Criteria::from_toml("fields = [\"rcode\"]\nignore = [\"rcode\"]"),
            Err(CriteriaError::FieldsAndIgnore)
        ));
        assert!(matches!(
            Criteria::from_toml("fields = []"),
            Err(CriteriaError::NoField)
        ));
        assert!(Criteria::from_toml("rrsig = \"some\"").is_err());
    }
}
