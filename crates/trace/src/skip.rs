use ldplayer_dns::DnsError;
use std::collections::BTreeMap;
use std::fmt;

/// Why a reader skipped a packet, a message, a line or a record.
///
/// Readers never stop on bad input: they skip what they cannot use, tell the sink why, and go on.
/// [`SkipReason::name`] is the stable key used in summaries and JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SkipReason {
    /// A DNS payload that is not a well-formed message.
    Dns(DnsError),
    /// A packet shorter than its headers say (snap length, cut capture).
    TruncatedPacket,
    /// A capture interface with a link type that is not decoded.
    UnsupportedLinkType,
    /// An IP header or extension header that does not parse.
    MalformedIp,
    /// IP fragments whose datagram never completed before the timeout or the end of the capture.
    IpFragmentIncomplete,
    /// IP fragments dropped because the reassembly memory bound was reached.
    IpFragmentOverflow,
    /// Bytes missing in a TCP stream; the reader resynchronized after the gap.
    TcpGap,
    /// A TCP stream that buffered more out-of-order data than allowed, or too many streams.
    TcpOverflow,
    /// Bytes in a TCP stream that do not frame a DNS message (junk, a bad length).
    TcpJunk,
    /// A file that ends in the middle of a block or record, or whose compressed stream was cut
    /// short.
    TruncatedFile,
    /// A compressed file whose stream is corrupt (a frame's check failed, or its data did not
    /// decode): counted once, where the damage showed.
    CorruptFile,
    /// A record read from a compressed frame that then failed its check or did not decode:
    /// dropped, as it may not be what was written (see [`crate::open`]).
    CorruptFrame,
    /// A capture block that does not parse.
    BadBlock,
    /// A text-format line that does not parse.
    TextLine,
    /// A binary-format record that does not parse.
    BinaryRecord,
    /// A dnstap data frame that does not decode as a `Dnstap` protobuf message.
    DnstapNotProtobuf,
    /// A dnstap message of a type `dnstap.proto` does not define (or not a `MESSAGE`).
    DnstapUnknownType,
    /// A dnstap message without the DNS message of its direction (`query_message` for a query
    /// type, `response_message` for a response type).
    DnstapNoMessage,
    /// A dnstap message without the time of its direction, or with one beyond 2262.
    DnstapBadTime,
    /// A data frame of a Frame Streams stream whose content type is not
    /// `protobuf:dnstap.Dnstap`.
    DnstapContentType,
    /// A Frame Streams control frame that does not decode, or a data frame outside a stream
    /// (after its `STOP`).
    DnstapBadFrame,
    /// A dnstap frame cut short on a collector's connection: the writer went away (or the
    /// collector was stopped) in the middle of it.
    DnstapCutFrame,
}

impl SkipReason {
    /// A short, stable, kebab-case key.
    pub fn name(&self) -> &'static str {
        match self {
            SkipReason::Dns(e) => e.name(),
            SkipReason::TruncatedPacket => "packet-truncated",
            SkipReason::UnsupportedLinkType => "link-type-unsupported",
            SkipReason::MalformedIp => "ip-malformed",
            SkipReason::IpFragmentIncomplete => "ip-fragment-incomplete",
            SkipReason::IpFragmentOverflow => "ip-fragment-overflow",
            SkipReason::TcpGap => "tcp-gap",
            SkipReason::TcpOverflow => "tcp-overflow",
            SkipReason::TcpJunk => "tcp-junk",
            SkipReason::TruncatedFile => "file-truncated",
            SkipReason::CorruptFile => "file-corrupt",
            SkipReason::CorruptFrame => "file-corrupt-frame",
            SkipReason::BadBlock => "capture-bad-block",
            SkipReason::TextLine => "text-bad-line",
            SkipReason::BinaryRecord => "binary-bad-record",
            SkipReason::DnstapNotProtobuf => "dnstap-not-protobuf",
            SkipReason::DnstapUnknownType => "dnstap-unknown-type",
            SkipReason::DnstapNoMessage => "dnstap-no-message",
            SkipReason::DnstapBadTime => "dnstap-bad-time",
            SkipReason::DnstapContentType => "dnstap-content-type",
            SkipReason::DnstapBadFrame => "dnstap-bad-frame",
            SkipReason::DnstapCutFrame => "dnstap-cut-frame",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<DnsError> for SkipReason {
    fn from(e: DnsError) -> Self {
        SkipReason::Dns(e)
    }
}

/// Counts of skipped items by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkipCounts(BTreeMap<SkipReason, u64>);

impl SkipCounts {
    /// Counts one more item skipped for `reason`.
    pub fn add(&mut self, reason: SkipReason) {
        *self.0.entry(reason).or_insert(0) += 1;
    }
    /// How many items were skipped for `reason`.
    pub fn get(&self, reason: SkipReason) -> u64 {
        self.0.get(&reason).copied().unwrap_or(0)
    }
    /// Adds `other`'s counts into `self` (counts of several readers or runs).
    pub fn merge(&mut self, other: &SkipCounts) {
        for (r, c) in other.iter() {
            *self.0.entry(r).or_insert(0) += c;
        }
    }
    /// All items skipped.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
    /// (reason, count) pairs in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = (SkipReason, u64)> + '_ {
        self.0.iter().map(|(r, c)| (*r, *c))
    }
}
