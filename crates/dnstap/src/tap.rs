//! One dnstap message, decoded: who logged it, what kind of message it is, its endpoints,
//! transport and time, and the DNS message.

use crate::proto;
use bytes::Bytes;
use prost::Message as _;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// The dnstap message types (`Message.Type`): where in a server's work a message was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MessageType {
    /// A query an authoritative server received.
    AuthQuery = 1,
    /// A response an authoritative server sent.
    AuthResponse = 2,
    /// A query a resolver sent upstream (to an authoritative server).
    ResolverQuery = 3,
    /// A response a resolver received from upstream.
    ResolverResponse = 4,
    /// A query a server received from a client.
    ClientQuery = 5,
    /// A response a server sent to a client.
    ClientResponse = 6,
    /// A query a forwarder sent upstream.
    ForwarderQuery = 7,
    /// A response a forwarder received.
    ForwarderResponse = 8,
    /// A query a stub resolver sent.
    StubQuery = 9,
    /// A response a stub resolver received.
    StubResponse = 10,
    /// A query a tool (dig, say) sent.
    ToolQuery = 11,
    /// A response a tool received.
    ToolResponse = 12,
    /// A dynamic update a server received.
    UpdateQuery = 13,
    /// The response to a dynamic update.
    UpdateResponse = 14,
}

impl MessageType {
    /// Every type, in code order.
    pub const ALL: [MessageType; 14] = [
        MessageType::AuthQuery,
        MessageType::AuthResponse,
        MessageType::ResolverQuery,
        MessageType::ResolverResponse,
        MessageType::ClientQuery,
        MessageType::ClientResponse,
        MessageType::ForwarderQuery,
        MessageType::ForwarderResponse,
        MessageType::StubQuery,
        MessageType::StubResponse,
        MessageType::ToolQuery,
        MessageType::ToolResponse,
        MessageType::UpdateQuery,
        MessageType::UpdateResponse,
    ];

    /// The type with this code in `dnstap.proto`.
    pub fn from_code(code: i32) -> Option<MessageType> {
        usize::try_from(code)
            .ok()
            .and_then(|c| c.checked_sub(1))
            .and_then(|i| MessageType::ALL.get(i).copied())
    }

    /// The type's code in `dnstap.proto`.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The name `dnstap.proto` gives it (`CLIENT_QUERY`), as `--dnstap-types` and the dnstap
    /// tools spell it.
    pub fn name(self) -> &'static str {
        match self {
            MessageType::AuthQuery => "AUTH_QUERY",
            MessageType::AuthResponse => "AUTH_RESPONSE",
            MessageType::ResolverQuery => "RESOLVER_QUERY",
            MessageType::ResolverResponse => "RESOLVER_RESPONSE",
            MessageType::ClientQuery => "CLIENT_QUERY",
            MessageType::ClientResponse => "CLIENT_RESPONSE",
            MessageType::ForwarderQuery => "FORWARDER_QUERY",
            MessageType::ForwarderResponse => "FORWARDER_RESPONSE",
            MessageType::StubQuery => "STUB_QUERY",
            MessageType::StubResponse => "STUB_RESPONSE",
            MessageType::ToolQuery => "TOOL_QUERY",
            MessageType::ToolResponse => "TOOL_RESPONSE",
            MessageType::UpdateQuery => "UPDATE_QUERY",
            MessageType::UpdateResponse => "UPDATE_RESPONSE",
        }
    }

    /// True for the query types (odd codes), whose message is `query_message`, sent at
    /// `query_time` from the query address to the response address.
    pub fn is_query(self) -> bool {
        self.code() % 2 == 1
    }

    /// The type of the other half of the exchange (`CLIENT_RESPONSE` for `CLIENT_QUERY`).
    pub fn counterpart(self) -> MessageType {
        let code = if self.is_query() {
            self.code() + 1
        } else {
            self.code() - 1
        };
        MessageType::from_code(code).unwrap_or(self)
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MessageType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        MessageType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown dnstap type `{s}` (one of {})",
                    MessageType::ALL.map(|t| t.name()).join(", ")
                )
            })
    }
}

/// The transport a message went over (`SocketProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// DNS over UDP.
    Udp,
    /// DNS over TCP.
    Tcp,
    /// DNS over TLS.
    Dot,
    /// DNS over HTTPS.
    Doh,
    /// DNSCrypt over UDP (the logged message is the decrypted DNS message).
    DnsCryptUdp,
    /// DNSCrypt over TCP.
    DnsCryptTcp,
    /// DNS over QUIC.
    Doq,
}

impl Transport {
    /// The transport with this `SocketProtocol` code.
    pub fn from_code(code: i32) -> Option<Transport> {
        Some(match code {
            1 => Transport::Udp,
            2 => Transport::Tcp,
            3 => Transport::Dot,
            4 => Transport::Doh,
            5 => Transport::DnsCryptUdp,
            6 => Transport::DnsCryptTcp,
            7 => Transport::Doq,
            _ => return None,
        })
    }

    /// Its `SocketProtocol` code.
    pub fn code(self) -> i32 {
        match self {
            Transport::Udp => 1,
            Transport::Tcp => 2,
            Transport::Dot => 3,
            Transport::Doh => 4,
            Transport::DnsCryptUdp => 5,
            Transport::DnsCryptTcp => 6,
            Transport::Doq => 7,
        }
    }
}

/// Why a data frame is not a dnstap message this crate can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TapError {
    /// The frame does not decode as a `Dnstap` protobuf message.
    #[error("not a dnstap protobuf message: {0}")]
    NotProtobuf(String),
    /// `Dnstap.type` is not `MESSAGE`, or `Message.type` is none of the known types.
    #[error("unknown dnstap message type {0}")]
    UnknownType(i32),
    /// A `MESSAGE` without its `message` field.
    #[error("a dnstap MESSAGE without its message")]
    NoMessage,
}

/// A decoded dnstap message. Its byte fields share the frame's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tap {
    /// Who logged it (`Dnstap.identity`: a server's name), if said.
    pub identity: Option<Bytes>,
    /// The software that logged it (`Dnstap.version`), if said.
    pub version: Option<Bytes>,
    /// The message type.
    pub kind: MessageType,
    /// The transport, if said (or not one `dnstap.proto` knows).
    pub transport: Option<Transport>,
    /// The address and port of the initiator of the query (the client, or the resolver for
    /// its own queries). Missing addresses and ports are unspecified (`0.0.0.0`, `::`, 0).
    pub query_addr: SocketAddr,
    /// The address and port of the responder.
    pub response_addr: SocketAddr,
    /// `query_time` as (seconds, nanoseconds) since the Unix epoch, if said.
    pub query_time: Option<(u64, u32)>,
    /// `response_time`, if said.
    pub response_time: Option<(u64, u32)>,
    /// The query as sent, if logged.
    pub query_message: Option<Bytes>,
    /// The response as sent, if logged.
    pub response_message: Option<Bytes>,
    /// The zone the resolver queried for (`query_zone`, a wire-format name; resolver types).
    pub query_zone: Option<Bytes>,
}

fn addr(bytes: Option<&Bytes>, port: Option<u32>, v6: bool) -> SocketAddr {
    let ip = match bytes.map(|b| b.len()) {
        Some(4) => bytes
            .and_then(|b| <[u8; 4]>::try_from(&b[..]).ok())
            .map(IpAddr::from),
        Some(16) => bytes
            .and_then(|b| <[u8; 16]>::try_from(&b[..]).ok())
            .map(IpAddr::from),
        _ => None,
    }
    .unwrap_or(if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    });
    let port = port.and_then(|p| u16::try_from(p).ok()).unwrap_or(0);
    SocketAddr::new(ip, port)
}

fn ip_bytes(ip: IpAddr) -> Bytes {
    match ip {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    }
}

/// Seconds and nanoseconds as nanoseconds since the Unix epoch, if they fit an `i64`.
fn time_ns((sec, nsec): (u64, u32)) -> Option<i64> {
    i64::try_from(sec)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(i64::from(nsec.min(999_999_999)))
}

impl Tap {
    /// Decodes a data frame of a `protobuf:dnstap.Dnstap` stream.
    pub fn decode(frame: Bytes) -> Result<Tap, TapError> {
        let dnstap =
            proto::Dnstap::decode(frame).map_err(|e| TapError::NotProtobuf(e.to_string()))?;
        if dnstap.r#type != proto::dnstap::Type::Message as i32 {
            return Err(TapError::UnknownType(dnstap.r#type));
        }
        let m = dnstap.message.ok_or(TapError::NoMessage)?;
        let kind = MessageType::from_code(m.r#type).ok_or(TapError::UnknownType(m.r#type))?;
        let v6 = m.socket_family == Some(proto::SocketFamily::Inet6 as i32);
        let time = |sec: Option<u64>, nsec: Option<u32>| sec.map(|s| (s, nsec.unwrap_or(0)));
        Ok(Tap {
            identity: dnstap.identity,
            version: dnstap.version,
            kind,
            transport: m.socket_protocol.and_then(Transport::from_code),
            query_addr: addr(m.query_address.as_ref(), m.query_port, v6),
            response_addr: addr(m.response_address.as_ref(), m.response_port, v6),
            query_time: time(m.query_time_sec, m.query_time_nsec),
            response_time: time(m.response_time_sec, m.response_time_nsec),
            query_message: m.query_message,
            response_message: m.response_message,
            query_zone: m.query_zone,
        })
    }

    /// The message of this type's direction: the query for a query type, the response for a
    /// response type.
    pub fn wire(&self) -> Option<&Bytes> {
        if self.kind.is_query() {
            self.query_message.as_ref()
        } else {
            self.response_message.as_ref()
        }
    }

    /// The time of this type's direction in nanoseconds since the Unix epoch: `query_time` for a
    /// query type, `response_time` for a response type; `None` when it is missing or beyond
    /// the year 2262.
    pub fn time_ns(&self) -> Option<i64> {
        if self.kind.is_query() {
            self.query_time
        } else {
            self.response_time
        }
        .and_then(time_ns)
    }

    /// Source and destination of the message: the initiator to the responder for a query
    /// type, the other way for a response type.
    pub fn endpoints(&self) -> (SocketAddr, SocketAddr) {
        if self.kind.is_query() {
            (self.query_addr, self.response_addr)
        } else {
            (self.response_addr, self.query_addr)
        }
    }

    /// A message of type `kind` carrying `wire` from `src` to `dst` at `time_ns`: the
    /// addresses, port and time go to the query or response fields as `kind`'s direction says.
    pub fn new(
        kind: MessageType,
        transport: Option<Transport>,
        src: SocketAddr,
        dst: SocketAddr,
        time_ns: i64,
        wire: Bytes,
    ) -> Tap {
        let (query_addr, response_addr) = if kind.is_query() {
            (src, dst)
        } else {
            (dst, src)
        };
        let time = (
            time_ns.div_euclid(1_000_000_000).max(0) as u64,
            time_ns.rem_euclid(1_000_000_000) as u32,
        );
        let (query_time, response_time, query_message, response_message) = if kind.is_query() {
            (Some(time), None, Some(wire), None)
        } else {
            (None, Some(time), None, Some(wire))
        };
        Tap {
            identity: None,
            version: None,
            kind,
            transport,
            query_addr,
            response_addr,
            query_time,
            response_time,
            query_message,
            response_message,
            query_zone: None,
        }
    }

    /// The message as a `Dnstap` protobuf, ready to be a data frame. Both addresses are given
    /// in one family (`socket_family`): an IPv4 address beside an IPv6 one is written as
    /// IPv4-mapped IPv6.
    pub fn encode(&self) -> Vec<u8> {
        let v6 = self.query_addr.is_ipv6() || self.response_addr.is_ipv6();
        let ip = |a: SocketAddr| match (a.ip(), v6) {
            (IpAddr::V4(v4), true) => ip_bytes(IpAddr::V6(v4.to_ipv6_mapped())),
            (ip, _) => ip_bytes(ip),
        };
        let family = if v6 {
            proto::SocketFamily::Inet6
        } else {
            proto::SocketFamily::Inet
        };
        let message = proto::Message {
            r#type: self.kind.code(),
            socket_family: Some(family as i32),
            socket_protocol: self.transport.map(Transport::code),
            query_address: Some(ip(self.query_addr)),
            response_address: Some(ip(self.response_addr)),
            query_port: Some(u32::from(self.query_addr.port())),
            response_port: Some(u32::from(self.response_addr.port())),
            query_time_sec: self.query_time.map(|t| t.0),
            query_time_nsec: self.query_time.map(|t| t.1),
            query_message: self.query_message.clone(),
            query_zone: self.query_zone.clone(),
            response_time_sec: self.response_time.map(|t| t.0),
            response_time_nsec: self.response_time.map(|t| t.1),
            response_message: self.response_message.clone(),
            policy: None,
            http_protocol: None,
        };
        proto::Dnstap {
            identity: self.identity.clone(),
            version: self.version.clone(),
            extra: None,
            r#type: proto::dnstap::Type::Message as i32,
            message: Some(message),
        }
        .encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_agree_with_dnstap_proto() {
        for t in MessageType::ALL {
            assert_eq!(MessageType::from_code(t.code()), Some(t));
            assert_eq!(t.name().parse::<MessageType>(), Ok(t));
            let generated = proto::message::Type::try_from(t.code()).expect("known");
            assert_eq!(generated.as_str_name(), t.name());
            assert_eq!(t.counterpart().counterpart(), t);
            assert_ne!(t.is_query(), t.counterpart().is_query());
        }
        assert_eq!(MessageType::from_code(0), None);
        assert_eq!(MessageType::from_code(15), None);
        assert!("client_query".parse::<MessageType>().is_ok());
        assert!("CLIENT".parse::<MessageType>().is_err());
        for code in 1..=7 {
            let t = Transport::from_code(code).expect("known");
            assert_eq!(t.code(), code);
        }
    }

    #[test]
    fn a_response_round_trips() {
        let src: SocketAddr = "[2001:db8::53]:53".parse().expect("addr");
        let dst: SocketAddr = "192.0.2.7:40000".parse().expect("addr");
        let mut tap = Tap::new(
            MessageType::ClientResponse,
            Some(Transport::Dot),
            src,
            dst,
            1_700_000_000_123_456_789,
            Bytes::from_static(b"\x12\x34\x81\x80"),
        );
        tap.identity = Some(Bytes::from_static(b"ns1"));
        let back = Tap::decode(Bytes::from(tap.encode())).expect("decodes");
        assert_eq!(back.time_ns(), Some(1_700_000_000_123_456_789));
        let (s, d) = back.endpoints();
        assert_eq!(s, src);
        assert_eq!(d.port(), 40000);
        assert_eq!(d.ip(), "::ffff:192.0.2.7".parse::<IpAddr>().expect("ip"));
        assert_eq!(back.wire().map(|w| &w[..]), Some(&b"\x12\x34\x81\x80"[..]));
        assert_eq!(back.identity, tap.identity);
        assert_eq!(back.transport, Some(Transport::Dot));
    }

    #[test]
    fn bad_frames_say_why() {
        assert!(matches!(
            Tap::decode(Bytes::from_static(b"\xff\xff\xff")),
            Err(TapError::NotProtobuf(_))
        ));
        // type = 2 (field 15, varint), no message.
        assert_eq!(
            Tap::decode(Bytes::from_static(&[0x78, 2])),
            Err(TapError::UnknownType(2))
        );
        assert_eq!(
            Tap::decode(Bytes::from_static(&[0x78, 1])),
            Err(TapError::NoMessage)
        );
        // A message of type 99.
        assert_eq!(
            Tap::decode(Bytes::from_static(&[0x78, 1, 0x72, 2, 0x08, 99])),
            Err(TapError::UnknownType(99))
        );
    }
}
