//! Records of the responses used that no rebuilt zone holds: why each was left out, counted in
//! the build report with a few examples, so that nothing a build drops goes unsaid.

use std::net::IpAddr;

use crate::exchange::Rr;
use crate::hierarchy::BuildReport;

/// How many examples the report keeps for each reason.
const EXAMPLES: usize = 3;

/// Why a record of a used response is in no zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeftOut {
    /// In the answer section of a response without AA: not the server's own data.
    NotAuthoritative,
    /// No zone that the sending server serves contains its owner.
    OutOfZone,
    /// An address record (or its RRSIG) of the additional section that no zone the sending
    /// server serves contains: a nameserver's address given beside a referral or an answer,
    /// used for the zones' servers and glue but not zone data of that server.
    GlueOutOfZone,
    /// An SOA (or its RRSIG) whose owner is not the apex of any zone found.
    SoaWithoutZone,
    /// A type the section does not carry zone data in: in the authority section anything but
    /// NS, SOA, DS, NSEC, NSEC3 and RRSIG; in the additional section anything but addresses
    /// (A, AAAA and their RRSIGs).
    UnexpectedInSection,
    /// An RRset seen again with other data than the first one kept.
    Conflict,
}

impl LeftOut {
    /// The reason's key in the report (`records_left_out`).
    pub fn name(self) -> &'static str {
        match self {
            LeftOut::NotAuthoritative => "not-authoritative",
            LeftOut::OutOfZone => "out-of-zone",
            LeftOut::GlueOutOfZone => "glue-out-of-zone",
            LeftOut::SoaWithoutZone => "soa-without-zone",
            LeftOut::UnexpectedInSection => "unexpected-in-section",
            LeftOut::Conflict => "conflict",
        }
    }
}

impl BuildReport {
    /// Counts the records of `set` (one RRset, or a section's records) left out for `why`, sent
    /// by `server`; the first few distinct RRsets of each reason are kept as examples.
    pub(crate) fn leave_out(&mut self, why: LeftOut, set: &[&Rr], server: IpAddr) {
        let Some(first) = set.first() else { return };
        let n = set.len() as u64;
        *self
            .records_left_out
            .entry(why.name().to_string())
            .or_default() += n;
        match why {
            LeftOut::NotAuthoritative => self.records_not_authoritative += n,
            LeftOut::OutOfZone | LeftOut::GlueOutOfZone | LeftOut::SoaWithoutZone => {
                self.records_out_of_zone += n
            }
            LeftOut::UnexpectedInSection | LeftOut::Conflict => {}
        }
        let examples = self
            .records_left_out_examples
            .entry(why.name().to_string())
            .or_default();
        if examples.len() < EXAMPLES {
            let text = format!(
                "{} {} from {server}",
                first.owner().fmt_with_dot(),
                first.rtype()
            );
            if !examples.contains(&text) {
                examples.push(text);
            }
        }
    }
}
