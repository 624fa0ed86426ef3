//! Why a configuration cannot be synthesized.

use ldplayer_dns::NameError;
use thiserror::Error;

/// A configuration the synthesizer rejects, found by [`crate::Synth::new`] before any output.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SynthError {
    /// A fixed interval of zero.
    #[error("the query interval must be at least 1 ns")]
    ZeroInterval,
    /// A client mix whose lists do not have one entry per client.
    #[error("a client mix needs one rate and one transport per client: {clients} clients, {rates} rates, {protos} transports")]
    ClientMix {
        /// Clients configured.
        clients: u32,
        /// Rates given.
        rates: usize,
        /// Transports given.
        protos: usize,
    },
    /// A gap variation out of range, or not one per client.
    #[error(
        "a client's gap variation must be from 0.01 to 100 (1 is Poisson), one per client: {0}"
    )]
    BadGapCv(String),
    /// A rate that is not a positive finite number.
    #[error("the query rate must be a positive number, not {0}")]
    BadRate(f64),
    /// A share (fraction) outside `[0, 1]`.
    #[error("{name} must be between 0 and 1, not {value}")]
    BadShare {
        /// Which share.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A DO share above the EDNS share.
    #[error(
        "the DO share ({do_share}) cannot exceed the EDNS share ({edns_share}): DO needs EDNS"
    )]
    DoWithoutEdns {
        /// The DO share.
        do_share: f64,
        /// The EDNS share.
        edns_share: f64,
    },
    /// A client shape parameter that is not a finite number in range.
    #[error("bad client distribution: {0}")]
    BadZipf(&'static str),
    /// Zero clients.
    #[error("at least one client is needed")]
    NoClients,
    /// A prefix length beyond the address width.
    #[error("prefix length /{len} is too long for the address")]
    BadPrefixLen {
        /// The length given.
        len: u8,
    },
    /// More clients than the client prefix has addresses.
    #[error("{clients} clients do not fit in a /{len} prefix")]
    TooManyClients {
        /// Number of clients asked for.
        clients: u32,
        /// The prefix length.
        len: u8,
    },
    /// Clients and server of different address families.
    #[error("the server and the client prefix must be of the same address family")]
    FamilyMismatch,
    /// A zone that is not a domain name.
    #[error("bad zone: {0}")]
    BadZone(#[from] NameError),
    /// A zone too long to take a unique label in front.
    #[error("the zone is too long to prefix unique labels to")]
    ZoneTooLong,
    /// An empty query type mix, or one whose weights are all zero.
    #[error("the query type mix is empty")]
    NoQtypes,
    /// Neither a count nor a duration.
    #[error("give a query count or a duration")]
    Unbounded,
    /// A query whose time would not fit in a time (signed 64-bit nanoseconds since the epoch):
    /// found before any output for the fixed workload, at that query for the random ones.
    #[error(
        "query {query} would come {offset_s:.3} s after the start ({start_s:.3} s since the epoch), \
         out of the times a trace can hold: {}; lower the count, the interval or the start, or \
         raise the rate",
        ldplayer_trace::TIME_RANGE
    )]
    TimeOutOfRange {
        /// The query, from 1.
        query: u64,
        /// Its offset from the start, in seconds.
        offset_s: f64,
        /// The start, in seconds since the epoch.
        start_s: f64,
    },
}
