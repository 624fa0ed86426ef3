use thiserror::Error;

/// Why a byte string is not a well-formed DNS message.
///
/// Each variant is one reason a captured message is skipped; [`DnsError::name`] gives the stable
/// key under which traces count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Error)]
pub enum DnsError {
    /// Shorter than the 12-byte header.
    #[error("shorter than a DNS header")]
    ShortHeader,
    /// A name, question or record runs past the end of the message.
    #[error("truncated message")]
    Truncated,
    /// A label type other than a length or a compression pointer (0x40 and 0x80 prefixes).
    #[error("bad label type")]
    BadLabel,
    /// A compression pointer that does not point strictly backwards (a loop) or into the header.
    #[error("bad compression pointer")]
    BadPointer,
    /// A name longer than 255 bytes.
    #[error("name too long")]
    NameTooLong,
    /// Section counts that the message cannot hold.
    #[error("section counts larger than the message")]
    AbsurdCounts,
    /// More than one OPT record, or an OPT record with a non-root owner.
    #[error("bad OPT record")]
    BadOpt,
}

impl DnsError {
    /// A short, stable, kebab-case key for counting skipped messages by reason.
    pub fn name(&self) -> &'static str {
        match self {
            DnsError::ShortHeader => "dns-short-header",
            DnsError::Truncated => "dns-truncated",
            DnsError::BadLabel => "dns-bad-label",
            DnsError::BadPointer => "dns-bad-pointer",
            DnsError::NameTooLong => "dns-name-too-long",
            DnsError::AbsurdCounts => "dns-absurd-counts",
            DnsError::BadOpt => "dns-bad-opt",
        }
    }
}
