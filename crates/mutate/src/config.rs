//! The mutator's configuration: plain data that a command line maps its flags onto.

use crate::prefix::IpPrefix;
use ldplayer_dns::Rtype;
use ldplayer_trace::Proto;

/// Which messages to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Queries only (QR clear).
    Queries,
    /// Responses only (QR set).
    Responses,
}

/// One what-if change or filter.
///
/// However they are listed, mutations run in this fixed order (the order of the variants), so
/// that a configuration means the same whatever order a command line gave its flags in:
///
/// 1. filters, each seeing the original record: [`Direction`](Mutation::Direction),
///    [`TimeWindow`](Mutation::TimeWindow), [`ClientPrefixes`](Mutation::ClientPrefixes),
///    [`ClientShare`](Mutation::ClientShare), [`Qtypes`](Mutation::Qtypes),
///    [`QnameSuffixes`](Mutation::QnameSuffixes). A record must pass them all; one that fails is
///    counted against the first filter it fails. A filter kind may be listed more than once: each
///    instance must pass.
/// 2. record edits: [`Transport`](Mutation::Transport);
/// 3. message edits, which change queries only (responses in a trace are the originals' answers
///    and are passed on as they are): [`StripEdns`](Mutation::StripEdns),
///    [`AddEdns`](Mutation::AddEdns), [`UdpSize`](Mutation::UdpSize),
///    [`SetDo`](Mutation::SetDo) / [`ClearDo`](Mutation::ClearDo),
///    [`RecursionDesired`](Mutation::RecursionDesired),
///    [`QnamePrefix`](Mutation::QnamePrefix);
/// 4. time: [`TimeScale`](Mutation::TimeScale), then [`TimeShift`](Mutation::TimeShift);
/// 5. [`Anonymize`](Mutation::Anonymize), last, so every choice above is made on the real
///    client address.
///
/// Each edit kind may appear once. `StripEdns` excludes `AddEdns`, `UdpSize` and `SetDo`;
/// `SetDo` excludes `ClearDo`.
///
/// "Client" means the source address of a query and the destination address of a response.
/// Per-client choices hash the client address with the seed (SipHash-1-3), so a client gets the
/// same choice in every record and in every run with the same seed.
#[derive(Debug, Clone, PartialEq)]
pub enum Mutation {
    /// Keep only queries or only responses.
    Direction(Direction),
    /// Keep records whose time lies in `[from_s, to_s)`, in seconds from the trace start (the
    /// time of the first record the mutator receives); an open end is unbounded.
    TimeWindow {
        /// Start offset in seconds (inclusive).
        from_s: Option<f64>,
        /// End offset in seconds (exclusive).
        to_s: Option<f64>,
    },
    /// Keep records whose client lies in one of these prefixes.
    ClientPrefixes(Vec<IpPrefix>),
    /// Keep this share (0 to 1) of the clients, chosen per client.
    ClientShare(f64),
    /// Keep queries and responses whose first question has one of these types; messages without
    /// a question (or that do not parse) are dropped.
    Qtypes(Vec<Rtype>),
    /// Keep messages whose first question name is at or below one of these names (presentation
    /// form), label by label and ignoring ASCII case: `example.com` keeps `www.Example.COM.` and
    /// `example.com.` but not `badexample.com.`.
    QnameSuffixes(Vec<String>),
    /// Move this share (0 to 1) of the clients, chosen per client, to `proto`. Over a connection
    /// transport each moved client gets one connection for all its records, numbered by first
    /// appearance. With a share of 1 these are 1, 2, 3...; with a smaller share, the moved
    /// clients' connections take the odd numbers 1, 3, 5... and the connection numbers `c` of the
    /// records left alone become `2c`, so the two never collide. To UDP, connection numbers
    /// become 0.
    Transport {
        /// The new transport.
        proto: Proto,
        /// Share of clients to move.
        client_share: f64,
    },
    /// Remove the OPT record from queries.
    StripEdns,
    /// Give queries without EDNS an OPT record: version 0, this UDP payload size, no DO, no
    /// options.
    AddEdns {
        /// UDP payload size.
        udp_size: u16,
    },
    /// Set the UDP payload size of queries that have EDNS (combine with `AddEdns` to reach the
    /// others too).
    UdpSize(u16),
    /// Set the DO bit on this share (0 to 1) of the queries, drawn per query from the seeded
    /// stream; a chosen query without EDNS gets an OPT record with the default payload size
    /// ([`DEFAULT_UDP_SIZE`](crate::DEFAULT_UDP_SIZE)) unless `AddEdns` gave it one already.
    SetDo {
        /// Share of queries.
        share: f64,
    },
    /// Clear the DO bit of every query.
    ClearDo,
    /// Set (true) or clear (false) the RD bit of every query: a trace of what resolvers sent
    /// to authoritative servers (RD clear) becomes stub traffic for a recursive resolver.
    RecursionDesired(bool),
    /// Put a label `<prefix><n in lower-case hex>` in front of every query name, `n` being the
    /// record's position in the mutator's input (from 1), so replayed queries can be matched to
    /// the original records: `ldp1a2b.www.example.com.`. The prefix is up to 47 letters, digits
    /// or hyphens (so the label fits in 63 bytes). A query whose name would grow past 255 bytes
    /// is dropped (counted as `qname-too-long`) rather than sent unmarked.
    QnamePrefix(String),
    /// Stretch (factor above 1) or compress (below 1) time: `t' = t0 + (t - t0) * factor`, with
    /// `t0` the trace start, rounded to the nanosecond. The factor must be positive and finite;
    /// a record whose new time would not fit in a time ([`ldplayer_trace::TIME_RANGE`]) ends the
    /// run with [`MutateError::TimeOutOfRange`](crate::MutateError::TimeOutOfRange).
    TimeScale(f64),
    /// Add this many nanoseconds (negative: subtract) to every time; a record whose new time
    /// would not fit ends the run with
    /// [`MutateError::TimeOutOfRange`](crate::MutateError::TimeOutOfRange).
    TimeShift(i64),
    /// Replace client addresses (both IPv4 and IPv6) by a keyed, prefix-preserving
    /// pseudonym in the manner of Crypto-PAn: two addresses sharing exactly `k` leading bits map
    /// to addresses sharing exactly `k` leading bits. Ports and server addresses are kept.
    Anonymize {
        /// The 128-bit key. `None` derives it from the seed, which is reproducible but no secret:
        /// give a random key to actually hide addresses.
        key: Option<[u8; 16]>,
    },
}

/// What the mutator does: a seed and a list of mutations (run in the fixed order documented on
/// [`Mutation`]). The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MutateConfig {
    /// Seed of every random choice (per-client hashes, per-query draws, the derived anonymization
    /// key).
    pub seed: u64,
    /// The mutations.
    pub mutations: Vec<Mutation>,
}
