//! Options of the capture reader.

/// Which DNS messages the reader keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Keep {
    /// Queries and responses.
    #[default]
    All,
    /// Only queries (QR bit clear).
    Queries,
    /// Only responses (QR bit set).
    Responses,
}

impl Keep {
    /// True when a message with these header flags (bytes 2 and 3 of the message) is kept.
    #[inline]
    pub fn keeps(self, wire: &[u8]) -> bool {
        let qr = wire.get(2).is_some_and(|b| b & 0x80 != 0);
        match self {
            Keep::All => true,
            Keep::Queries => !qr,
            Keep::Responses => qr,
        }
    }
}

/// How a [`CaptureReader`](super::CaptureReader) decodes a capture, and the bounds on the memory it
/// uses for IP fragment and TCP stream reassembly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureOptions {
    /// UDP and TCP ports that carry DNS; a packet is decoded when either of its ports is one of
    /// them. Default: `[53]`.
    pub dns_ports: Vec<u16>,
    /// Which messages to keep. Default: all.
    pub keep: Keep,
    /// Keep messages whose 12-byte header reads but whose body does not parse (absurd counts,
    /// bad labels or pointers, cut short): they are passed on with their bytes and noted to the
    /// sink ([`Sink::malformed`](crate::Sink::malformed)). Over TCP, such a message is
    /// kept when the next message starts right after it (or the stream ends there); otherwise
    /// framing was lost and its bytes count as `tcp-junk`. When false, they are skipped with
    /// their `dns-*` reason. Shorter messages are always skipped. Default: true.
    pub keep_malformed: bool,
    /// Most TCP connections tracked at once; beyond it the least recently used ones are dropped
    /// (counted as `TcpOverflow` when they were still open). Default: 65,536.
    pub max_tcp_flows: usize,
    /// Most bytes one direction of a TCP connection buffers while waiting for missing segments;
    /// beyond it the hole is given up (counted as `TcpOverflow`). Default: 256 KiB.
    pub max_tcp_buffer_per_flow: usize,
    /// Capture time (nanoseconds) after which a hole in a TCP stream is given up (`TcpGap`).
    /// Default: 10 s.
    pub tcp_gap_timeout_ns: i64,
    /// Capture time (nanoseconds) after which an idle TCP connection is forgotten; a segment seen
    /// later on the same 4-tuple starts a new connection number. Default: 300 s.
    pub tcp_idle_timeout_ns: i64,
    /// Most bytes buffered for IP fragment reassembly over all datagrams; beyond it the oldest
    /// incomplete datagrams are dropped (`IpFragmentOverflow`). Default: 8 MiB.
    pub max_frag_bytes: usize,
    /// Capture time (nanoseconds) after which an incomplete fragmented datagram is dropped
    /// (`IpFragmentIncomplete`). Default: 30 s.
    pub frag_timeout_ns: i64,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            dns_ports: vec![53],
            keep: Keep::All,
            keep_malformed: true,
            max_tcp_flows: 65_536,
            max_tcp_buffer_per_flow: 256 * 1024,
            tcp_gap_timeout_ns: 10_000_000_000,
            tcp_idle_timeout_ns: 300_000_000_000,
            max_frag_bytes: 8 * 1024 * 1024,
            frag_timeout_ns: 30_000_000_000,
        }
    }
}

/// A set of ports as a bitmap, for a constant-time test per packet.
#[derive(Clone)]
pub(crate) struct PortSet(Box<[u64; 1024]>);

impl PortSet {
    pub(crate) fn new(ports: &[u16]) -> Self {
        let mut bits = Box::new([0u64; 1024]);
        for &p in ports {
            bits[(p >> 6) as usize] |= 1 << (p & 63);
        }
        PortSet(bits)
    }
    #[inline]
    pub(crate) fn contains(&self, port: u16) -> bool {
        self.0[(port >> 6) as usize] & (1 << (port & 63)) != 0
    }
}
