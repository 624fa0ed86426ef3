//! dnstap for ldplayer: the logs that DNS servers write about their own traffic.
//!
//! BIND, Unbound, Knot DNS, Knot Resolver, dnsdist and CoreDNS log every message they see as
//! dnstap: protobuf messages (`dnstap.proto`) carried in Frame Streams, to a file or over a
//! Unix or TCP socket. Each message holds the DNS message as sent, its endpoints, its
//! transport, its time and what the server was doing (a client's query, a resolver's query
//! upstream...).
//!
//! - [`fstrm`]: Frame Streams, read from any byte stream and written to files, and both sides
//!   of the bi-directional handshake of sockets;
//! - [`Tap`]: one dnstap message, decoded from a data frame (its bytes shared with the frame,
//!   not copied) or encoded into one;
//! - [`Census`]: counts of a log's messages by type and by identity;
//! - [`collector`]: listens on a Unix or TCP socket for servers' dnstap, as `fstrm_capture`
//!   does.
//!
//! This crate knows nothing of ldplayer's traces: `ldplayer-trace` builds on it to read
//! dnstap files as traces and write traces as dnstap, as it builds on `pcap-parser` for
//! captures.

#![forbid(unsafe_code)]

mod census;
pub mod collector;
pub mod fstrm;
pub mod proto;
mod tap;

pub use census::{Census, MAX_IDENTITIES};
pub use tap::{MessageType, Tap, TapError, Transport};
