use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

/// The transport a DNS message travelled over (or is to be replayed over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Proto {
    /// Plain UDP.
    Udp = 0,
    /// Plain TCP with the two-byte length framing.
    Tcp = 1,
    /// DNS over TLS (RFC 7858).
    Tls = 2,
    /// DNS over HTTPS (RFC 8484).
    Https = 3,
    /// DNS over QUIC (RFC 9250).
    Quic = 4,
}

impl Proto {
    /// Every transport, in code order.
    pub const ALL: [Proto; 5] = [
        Proto::Udp,
        Proto::Tcp,
        Proto::Tls,
        Proto::Https,
        Proto::Quic,
    ];

    /// The lower-case name used in the text format (`udp`, `tcp`, `tls`, `https`, `quic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
            Proto::Tls => "tls",
            Proto::Https => "https",
            Proto::Quic => "quic",
        }
    }

    /// The transport with this code in the binary format.
    pub fn from_code(code: u8) -> Option<Proto> {
        Proto::ALL.get(code as usize).copied()
    }

    /// True for transports that carry a connection (everything but UDP).
    pub fn is_connection(self) -> bool {
        self != Proto::Udp
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Proto {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Proto::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown transport `{s}` (udp, tcp, tls, https, quic)"))
    }
}

/// One DNS message of a trace, borrowing its bytes from the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Capture time in nanoseconds since the Unix epoch.
    pub time_ns: i64,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// Transport.
    pub proto: Proto,
    /// Connection number, unique within the trace and shared by both directions of one
    /// connection; 0 for messages without a connection (UDP).
    pub conn: u64,
    /// The DNS message as sent: no TCP length prefix.
    pub wire: &'a [u8],
}

impl Record<'_> {
    /// Copies the record into an owned one.
    pub fn to_owned_record(&self) -> RecordBuf {
        RecordBuf {
            time_ns: self.time_ns,
            src: self.src,
            dst: self.dst,
            proto: self.proto,
            conn: self.conn,
            wire: self.wire.to_vec(),
        }
    }
}

/// An owned [`Record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBuf {
    /// Capture time in nanoseconds since the Unix epoch.
    pub time_ns: i64,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// Transport.
    pub proto: Proto,
    /// Connection number (0: none).
    pub conn: u64,
    /// The DNS message.
    pub wire: Vec<u8>,
}

impl RecordBuf {
    /// Borrows the record.
    pub fn as_record(&self) -> Record<'_> {
        Record {
            time_ns: self.time_ns,
            src: self.src,
            dst: self.dst,
            proto: self.proto,
            conn: self.conn,
            wire: &self.wire,
        }
    }
}
