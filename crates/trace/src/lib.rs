//! The trace model of ldplayer and its two native formats.
//!
//! A trace is a sequence of [`Record`]s: one DNS message each, with its capture time, endpoints,
//! transport and connection. Every reader is a [`Source`] that pushes records into a [`Sink`]
//! (and tells it what it had to skip and why); every writer, the inspector and the replay engine
//! are sinks. This keeps readers and consumers independent: any source feeds any sink.
//!
//! Formats defined here:
//! - [`text`]: one tab-separated line per message, for people and scripts (awk, Python);
//! - [`binary`]: a versioned, length-prefixed record stream for the replay hot path.
//!
//! Packet captures (pcap, pcapng) are read and written by [`capture`], dnstap logs by
//! [`dnstap`]. [`open`] opens a trace of any of these formats, compressed or not, as one
//! [`Source`]; [`many`] opens many files as one, merged in time order and decoded on several
//! cores.

pub mod binary;
pub mod capture;
mod check;
mod client_hash;
pub mod compress;
pub mod dnstap;
pub mod input;
pub mod many;
pub mod open;
mod record;
mod sink;
mod skip;
pub mod text;
mod time;
mod transport;

pub use check::{CheckMessages, Checked};
pub use client_hash::{
    splitmix64, splitmix64_finalize, stable_hash, unit_interval, SPLITMIX64_GAMMA,
};
pub use record::{Proto, Record, RecordBuf};
pub use sink::{drive, Collect, Sink, SinkError, Source, TraceError};
pub use skip::{SkipCounts, SkipReason};
pub use time::{civil_time, format_time, parse_time, seconds_to_ns, CivilTime, TIME_RANGE};
pub use transport::{DohMethod, ProtoChoice, Stack};
