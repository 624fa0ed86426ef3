//! DNS over QUIC (RFC 9250) on top of the QUIC client's streams ([`crate::quic`], which knows
//! nothing of DNS): one bidirectional stream per query, the message after a 2-byte length with
//! DNS ID 0, the stream then finished; the server opens no streams.

/// The longest stream a DoQ client reads: the 2-byte length and a DNS message (the QUIC
/// connection's [`Config::max_stream_recv`](crate::quic::conn::Config::max_stream_recv)).
pub const MAX_STREAM_RECV: u64 = 2 + 65_535;

/// DOQ_NO_ERROR (RFC 9250 §4.3): the code a client closes its connection with when all is well.
pub const NO_ERROR: u64 = 0;

/// A query's stream bytes: the 2-byte length, then the message with its DNS ID set to 0 (RFC
/// 9250 §4.2.1). A message longer than 65,535 bytes cannot be framed: `None`.
pub fn query(wire: &[u8]) -> Option<Vec<u8>> {
    let len = u16::try_from(wire.len()).ok()?;
    let mut framed = Vec::with_capacity(2 + wire.len());
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(wire);
    if framed.len() >= 4 {
        framed[2..4].copy_from_slice(&[0, 0]);
    }
    Some(framed)
}

/// The DNS message of a whole answer stream: what follows the 2-byte length, if the length is
/// right.
pub fn answer(stream: &[u8]) -> Option<&[u8]> {
    match stream {
        [a, b, msg @ ..] if usize::from(u16::from_be_bytes([*a, *b])) == msg.len() => Some(msg),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_framed_with_id_0_and_an_answer_unframed() {
        let q = query(&[0x12, 0x34, 1, 0, 0, 1]).unwrap();
        assert_eq!(q, [0, 6, 0, 0, 1, 0, 0, 1]);
        assert_eq!(answer(&q), Some(&[0, 0, 1, 0, 0, 1][..]));
        assert_eq!(answer(&[0, 7, 1]), None);
        assert_eq!(answer(&[0]), None);
        assert!(query(&vec![0; 65_536]).is_none());
    }
}
