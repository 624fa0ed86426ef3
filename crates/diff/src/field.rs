//! The fields of an answer that `diff` compares, each on its own.

use serde::{Serialize, Serializer};

/// One thing two answers to the same query can differ in.
///
/// Header flags, EDNS values and options are fields of their own, so a difference says exactly
/// what differs: a resolver that sets AD where the others do not differs in `flags.ad` only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// One side answered, the other did not (a timeout or an error).
    Missing,
    /// One side's answer is not a well-formed DNS message, the other's is (or both are, with
    /// different bytes).
    Malformed,
    /// The opcode.
    Opcode,
    /// The response code (extended by EDNS).
    Rcode,
    /// The AA flag.
    FlagAa,
    /// The TC flag.
    FlagTc,
    /// The RD flag.
    FlagRd,
    /// The RA flag.
    FlagRa,
    /// The AD flag.
    FlagAd,
    /// The CD flag.
    FlagCd,
    /// The question section.
    Question,
    /// The answer section's records but RRSIGs, as a set (order ignored, TTL ignored unless
    /// the criteria ask for it).
    Answer,
    /// The answer section's RRSIGs.
    AnswerRrsig,
    /// The authority section, as a set.
    Authority,
    /// The additional section (OPT and TSIG aside), as a set.
    Additional,
    /// Whether there is an OPT record at all.
    Edns,
    /// The EDNS version.
    EdnsVersion,
    /// The EDNS UDP payload size.
    EdnsBufsize,
    /// The DO bit.
    EdnsDo,
    /// The NSID option (RFC 5001).
    EdnsNsid,
    /// The client subnet option (RFC 7871).
    EdnsEcs,
    /// The padding option (RFC 7830): its length.
    EdnsPadding,
    /// The extended DNS errors (RFC 8914): their info codes and texts.
    EdnsEde,
}

impl Field {
    /// Every field, in the order of reports (what is most severe first, as respdiff weighs
    /// them).
    pub const ALL: [Field; 23] = [
        Field::Missing,
        Field::Malformed,
        Field::Opcode,
        Field::Question,
        Field::Rcode,
        Field::FlagAa,
        Field::FlagTc,
        Field::FlagRd,
        Field::FlagRa,
        Field::FlagAd,
        Field::FlagCd,
        Field::Answer,
        Field::AnswerRrsig,
        Field::Authority,
        Field::Additional,
        Field::Edns,
        Field::EdnsVersion,
        Field::EdnsBufsize,
        Field::EdnsDo,
        Field::EdnsNsid,
        Field::EdnsEcs,
        Field::EdnsPadding,
        Field::EdnsEde,
    ];

    /// The field's name in criteria files, bounds, reports and exports.
    pub fn name(self) -> &'static str {
        match self {
            Field::Missing => "missing",
            Field::Malformed => "malformed",
            Field::Opcode => "opcode",
            Field::Rcode => "rcode",
            Field::FlagAa => "flags.aa",
            Field::FlagTc => "flags.tc",
            Field::FlagRd => "flags.rd",
            Field::FlagRa => "flags.ra",
            Field::FlagAd => "flags.ad",
            Field::FlagCd => "flags.cd",
            Field::Question => "question",
            Field::Answer => "answer",
            Field::AnswerRrsig => "answer.rrsig",
            Field::Authority => "authority",
            Field::Additional => "additional",
            Field::Edns => "edns",
            Field::EdnsVersion => "edns.version",
            Field::EdnsBufsize => "edns.bufsize",
            Field::EdnsDo => "edns.do",
            Field::EdnsNsid => "edns.nsid",
            Field::EdnsEcs => "edns.ecs",
            Field::EdnsPadding => "edns.padding",
            Field::EdnsEde => "edns.ede",
        }
    }

    /// The field named `name`.
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its position in [`ALL`](Self::ALL), for tables indexed by field.
    pub fn index(self) -> usize {
        Field::ALL
            .iter()
            .position(|&f| f == self)
            .unwrap_or_default()
    }

    /// The names of every field, for messages.
    pub fn names() -> String {
        Field::ALL.map(Field::name).join(", ")
    }

    /// The header flag bit of a flag field.
    pub(crate) fn flag_bit(self) -> Option<u16> {
        use ldplayer_dns::flag;
        Some(match self {
            Field::FlagAa => flag::AA,
            Field::FlagTc => flag::TC,
            Field::FlagRd => flag::RD,
            Field::FlagRa => flag::RA,
            Field::FlagAd => flag::AD,
            Field::FlagCd => flag::CD,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Field {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_has_a_name_of_its_own_and_its_place() {
        for (i, f) in Field::ALL.into_iter().enumerate() {
            assert_eq!(f.index(), i);
            assert_eq!(Field::from_name(f.name()), Some(f));
        }
        let mut names: Vec<_> = Field::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Field::ALL.len());
    }
}
