//! What a capture reader in split mode leaves undecoded: the packets whose decoding needs the
//! state of the packets before them (TCP segments, IP fragments), and where every packet begins.
//!
//! Several files of one capture (rotated every few minutes by dnscap or tcpdump) decode on
//! several cores at once when each reader decodes what a packet holds by itself (UDP messages)
//! and hands the rest over, in order, to the one [`PacketDecoder`](super::PacketDecoder) that
//! holds the state of the whole capture ([`PacketDecoder::resume`](super::PacketDecoder::resume)):
//! TCP streams and fragmented datagrams that cross a file boundary are then reassembled as if
//! the files were one, and the records come out in the same order as from the files joined.

use std::net::{IpAddr, SocketAddr};

use super::frag::{FragKey, Fragment};

/// A part of a capture handed over undecoded by a reader in split mode, in capture order among
/// the records and skips it tells its sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred<'a> {
    /// A packet begins (told for every packet): what follows, up to the next one, is its. Its
    /// time drives the timeouts of reassembly; `number` is its position in its file (from 1),
    /// the location of the skips it causes.
    Packet {
        /// Capture time, ns since the Unix epoch.
        time_ns: i64,
        /// The packet's number in its file, from 1.
        number: u64,
    },
    /// A TCP segment on a DNS port, its header checked: the TCP header and what follows it.
    Segment {
        /// Source address and port.
        src: SocketAddr,
        /// Destination address and port.
        dst: SocketAddr,
        /// The TCP header and payload.
        segment: &'a [u8],
    },
    /// An IP fragment of a datagram that may carry DNS.
    Fragment {
        /// What its IP header says about it.
        header: FragmentHeader,
        /// How many tunnels deep it was found.
        depth: u8,
        /// Its payload.
        payload: &'a [u8],
    },
}

/// What an IP header (IPv4's, or IPv6's fragment header) says about a fragment: the datagram it
/// belongs to and where its payload goes there. One type for the IP decoder's fragments and
/// the ones handed over in split mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentHeader {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// The IP identification.
    pub id: u32,
    /// The protocol it carries (for IPv6: the next header after the fragment header).
    pub proto: u8,
    /// Where its payload goes in the datagram, in bytes.
    pub offset: usize,
    /// More fragments follow.
    pub more: bool,
}

impl FragmentHeader {
    /// The fragment with `payload`, as reassembly takes it.
    #[inline]
    pub(crate) fn fragment(self, payload: &[u8]) -> Fragment<'_> {
        Fragment {
            key: FragKey {
                src: self.src,
                dst: self.dst,
                id: self.id,
                proto: self.proto,
            },
            offset: self.offset,
            more: self.more,
            payload,
        }
    }
}

impl Deferred<'_> {
    /// The bytes it carries (none for [`Deferred::Packet`]).
    pub fn bytes(&self) -> &[u8] {
        match self {
            Deferred::Packet { .. } => &[],
            Deferred::Segment { segment, .. } => segment,
            Deferred::Fragment { payload, .. } => payload,
        }
    }

    /// An owned copy.
    pub fn to_owned_deferred(&self) -> DeferredBuf {
        DeferredBuf {
            part: self.with_bytes(&[]),
            bytes: self.bytes().to_vec(),
        }
    }

    /// The same part carrying `bytes` in place of its own.
    pub fn with_bytes<'b>(&self, bytes: &'b [u8]) -> Deferred<'b> {
        match *self {
            Deferred::Packet { time_ns, number } => Deferred::Packet { time_ns, number },
            Deferred::Segment { src, dst, .. } => Deferred::Segment {
                src,
                dst,
                segment: bytes,
            },
            Deferred::Fragment { header, depth, .. } => Deferred::Fragment {
                header,
                depth,
                payload: bytes,
            },
        }
    }
}

/// An owned [`Deferred`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferredBuf {
    part: Deferred<'static>,
    bytes: Vec<u8>,
}

impl DeferredBuf {
    /// Borrows it.
    pub fn as_deferred(&self) -> Deferred<'_> {
        self.part.with_bytes(&self.bytes)
    }

    /// Its size in memory, roughly: its bytes and fixed fields.
    pub fn cost(&self) -> usize {
        self.bytes.len() + std::mem::size_of::<Self>()
    }
}
