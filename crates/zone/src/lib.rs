//! Zone files loaded into memory and answered authoritatively.
//!
//! This is the core of ldplayer's "meta" DNS server, which hosts every zone of an emulated DNS
//! hierarchy (root, TLDs, SLDs) in one process.
//!
//! * [`Zone`] loads an RFC 1035 zone file with `domain`'s parser (relative names, `$ORIGIN`,
//!   `$TTL`, `$INCLUDE`, parentheses, DNSSEC types, RFC 3597 unknown types) into nodes keyed by
//!   lowercase wire name; RRsets are pre-encoded as `TYPE CLASS TTL RDLEN RDATA` so answering
//!   only writes owner names (compressed) and copies bytes. Cuts, occluded names (glue), empty
//!   non-terminals, the NSEC chain (canonical order) and the NSEC3 chain (hash order) are found
//!   at load time.
//! * [`reader`] reads zone files into records that know their file, line and column, for
//!   every command that takes zone files; [`check_zone`] makes sure they are one zone as BIND
//!   and nsd see one (one SOA at the apex, no out-of-zone data, a CNAME alone at its name).
//! * [`ZoneSet`] picks the zone with the longest matching origin (DS at a child apex goes to the
//!   parent when both are served).
//! * [`Manifest`] says which zone files each nameserver address serves (or which zones of a
//!   [`Bundle`], a file of many zones); its [`Views`] pick the zone set by a query's
//!   destination address (split horizon).
//! * [`ZoneSet::answer_into`] answers a query as nsd/knot do: AA, referrals with glue, DS at
//!   cuts from the parent side, CNAME chains within a zone, DNAME synthesis, wildcards, NXDOMAIN
//!   and NODATA with the RFC 2308 SOA, and with DO the RRSIGs and NSEC/NSEC3 proofs as stored.
//!
//! Truncation follows nsd 4.6 (measured against it): RRsets are added whole; the first answer
//! or authority RRset (with its RRSIGs) that does not fit the UDP payload size sets TC and ends
//! the response there, keeping what was already written (no additional section then);
//! additional-section RRsets that do not fit are left out without TC.

#![forbid(unsafe_code)]

mod answer;
pub mod bundle;
mod check;
mod entries;
pub mod hints;
pub mod manifest;
pub mod name;
pub mod reader;
mod set;
mod source;
pub mod text;
mod tokens;
mod units;
mod writer;
mod zone;

pub use answer::{answer, AnswerOptions, Kind, Outcome, Response};
pub use bundle::Bundle;
pub use check::check_zone;
pub use manifest::{Manifest, ManifestEntry, Views, ZoneSource};
pub use set::ZoneSet;
pub use units::expand as expand_time_units;
pub use zone::{flags, Node, Nsec3Chain, Nsec3Entry, RRset, Zone, ZoneError, NONE};
