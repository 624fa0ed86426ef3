//! The zone constructor: rebuilds the zones of a DNS hierarchy (root, TLDs, second-level
//! zones) from the responses a recursive resolver received from authoritative nameservers, so
//! that `ldplayer serve --manifest` (or BIND, through the exported configuration) can stand in
//! for every one of those nameservers at its own address.
//!
//! How (after the LDplayer paper, §3.2):
//! 1. Every NS RRset seen marks a zone cut; A/AAAA records seen anywhere (answers and glue)
//!    give the nameservers' addresses, so each zone gets the addresses of its servers, and the
//!    root the root hints given ([`ZoneBuilder::add_root_server`]). A server whose responses
//!    show it serving a zone it was not found serving this way (an authoritative answer at
//!    that zone's apex or with its SOA, a referral from it) is given that zone (and reported:
//!    its NS or glue was not captured, or names it otherwise).
//! 2. Each response's RRsets go into the deepest zone that the responding server serves and
//!    that contains the owner (a DS at a zone's apex goes to the parent, an SOA to the zone it
//!    names); the answer section only from authoritative responses; the first RRset seen wins
//!    over later, different ones.
//! 3. Each zone is completed: an SOA is synthesized where none was captured, the apex NS set is
//!    taken from the parent's referral where the zone's own was not seen, the parent gets the
//!    delegation, and nameserver names inside a zone get their addresses (glue). DNSSEC
//!    records are kept as captured (no signing); signed RRsets recorded with TTLs below their
//!    signatures' original TTL (a cache's countdown) get it back.
//!
//! [`ZoneBuilder`] takes responses (also as a trace [`Sink`](ldplayer_trace::Sink), so any
//! capture format of the trace pipeline can feed it); [`Hierarchy::write_layout`] writes the
//! zones (one file per zone with a BIND configuration, or a few bundles of zones: [`Layout`]),
//! the manifest and root hints; [`BuildReport`] says what could not be
//! rebuilt, every record left out counted by reason ([`LeftOut`]).
//!
//! [`from_files`] takes existing zone files as they are and finds the addresses of their
//! nameservers in them (the root zone gives the root and its glue).
//!
//! [`synthetic`] makes a hierarchy of any size (root, TLDs, second-level zones) without a
//! capture, and [`sign`] signs its root and TLDs with ldnsutils, for experiments and
//! benchmarks.
//!
//! [`deckard`] reads Deckard scenarios (`.rpl`), recorded hierarchies given as each nameserver
//! address's answers, and feeds their answers to the builder the same way.

#![forbid(unsafe_code)]

mod builder;
pub mod deckard;
mod exchange;
pub mod from_files;
mod hierarchy;
mod left_out;
mod record_text;
mod runs;
pub mod sign;
pub mod synthetic;

pub use builder::ZoneBuilder;
pub use exchange::{Exchange, Rdata, Rr, Unused};
pub use hierarchy::{BuildReport, BuiltZone, Hierarchy, Layout, Written};
pub use left_out::LeftOut;
