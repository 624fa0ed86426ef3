//! Packet captures: DNS messages out of pcap and pcapng files, and records back into pcap.
//!
//! - [`CaptureReader`] is a [`Source`](crate::Source): it reads a pcap or pcapng
//!   capture from any [`Read`](std::io::Read), decodes the link layer (Ethernet with VLAN
//!   tags, Linux SLL and SLL2, raw IP, BSD loopback), IPv4 and IPv6 (extension headers,
//!   fragment reassembly), the tunnels tshark looks inside (VXLAN, Geneve, GRE, IP in IP),
//!   and DNS over UDP and over TCP (full stream reassembly with the
//!   two-byte length framing, resynchronization after gaps and junk), and pushes one
//!   [`Record`](crate::Record) per DNS message. Whatever it cannot use is reported to
//!   the sink as a [`SkipReason`](crate::SkipReason); malformed messages whose header
//!   reads are kept and noted (see [`CaptureOptions::keep_malformed`]), and [`PortCensus`] says
//!   which ports the traffic was on when it was not on the DNS ports.
//! - [`PacketDecoder`] is the same decoding, one frame at a time, for frames that come from
//!   elsewhere.
//! - [`PcapWriter`] is a [`Sink`](crate::Sink) that writes records as a pcap file of
//!   synthetic Ethernet/IP/UDP or TCP packets that reads back to the same records.
//!
//! Memory is bounded whatever the input: see [`CaptureOptions`].

mod decoder;
mod deferred;
mod frag;
mod net;
mod options;
mod ports;
mod reader;
mod tcp;
mod tunnel;
mod writer;

pub use decoder::PacketDecoder;
pub use deferred::{Deferred, DeferredBuf, FragmentHeader};
pub use net::linktype;
pub use options::{CaptureOptions, Keep};
pub use ports::PortCensus;
pub use reader::{read_capture_bytes, CaptureReader};
pub use tunnel::{Tunnel, TunnelCounts};
pub use writer::PcapWriter;
