//! DNS over TCP's framing: each message behind its length in 2 bytes (RFC 1035 §4.2.2),
//! answers matched by DNS ID.

use super::outgoing::Outgoing;
use super::transport::{MatchKey, Queued, Received, StreamError, StreamProtocol, StreamSession};
use super::KEEP_BUF;
use ldplayer_dns::HEADER_LEN;

/// The framing of one connection: queries waiting for the socket and the start of an answer
/// whose end has not arrived. Both buffers are released once empty if they grew large: most
/// connections are idle most of the time.
#[derive(Debug, Default)]
pub(crate) struct TcpFraming {
    /// Framed queries waiting for the socket.
    out: Outgoing,
    /// Received bytes that do not make a whole frame yet.
    partial: Vec<u8>,
}

impl TcpFraming {
    /// The received bytes kept until their frame is complete; TLS decrypts into it.
    pub(super) fn partial_mut(&mut self) -> &mut Vec<u8> {
        &mut self.partial
    }

    /// Hands over the messages completed in [`partial_mut`](Self::partial_mut) and keeps the rest.
    pub(super) fn deframe_partial(&mut self, message: &mut impl FnMut(MatchKey, &[u8])) -> u64 {
        let (used, malformed) = deframe(&self.partial, message);
        self.partial.drain(..used);
        if self.partial.is_empty() && self.partial.capacity() > KEEP_BUF {
            self.partial = Vec::new();
        }
        malformed
    }
}

/// Hands each whole frame at the front of `buf` to `message`; returns the bytes they took and
/// how many frames were too short to be a DNS message.
fn deframe(buf: &[u8], message: &mut impl FnMut(MatchKey, &[u8])) -> (usize, u64) {
    let mut pos = 0;
    let mut malformed = 0;
    while let [a, b, rest @ ..] = &buf[pos..] {
        let len = u16::from_be_bytes([*a, *b]) as usize;
        let Some(msg) = rest.get(..len) else {
            break;
        };
        pos += 2 + len;
        if msg.len() < HEADER_LEN {
            malformed += 1;
            continue;
        }
        message(MatchKey::Id(u16::from_be_bytes([msg[0], msg[1]])), msg);
    }
    (pos, malformed)
}

/// The frame begun in `partial` (what [`deframe`] left): its declared length and its bytes so
/// far.
fn pending(partial: &[u8]) -> Option<(usize, &[u8])> {
    match partial {
        [a, b, rest @ ..] => Some((u16::from_be_bytes([*a, *b]) as usize, rest)),
        _ => None,
    }
}

impl StreamProtocol for TcpFraming {
    type Session = Outgoing;

    fn matches_by_id(&self) -> bool {
        true
    }

    fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError> {
        let (Ok(len), [a, b, ..]) = (u16::try_from(wire.len()), wire) else {
            return Err(StreamError::BadQuery);
        };
        let key = MatchKey::Id(u16::from_be_bytes([*a, *b]));
        self.out.extend(&len.to_be_bytes());
        self.out.extend(wire);
        Ok(Queued {
            key,
            wire_end: Some(self.out.queued_total()),
        })
    }

    fn received(
        &mut self,
        bytes: &mut [u8],
        message: &mut impl FnMut(MatchKey, &[u8]),
    ) -> Result<Received, StreamError> {
        let malformed = if self.partial.is_empty() {
            // Whole frames are handed over from where they were read; only a frame's start is
            // kept.
            let (used, malformed) = deframe(bytes, message);
            self.partial.extend_from_slice(&bytes[used..]);
            malformed
        } else {
            self.partial.extend_from_slice(bytes);
            self.deframe_partial(message)
        };
        Ok(Received {
            peer_closed: false,
            malformed,
        })
    }

    fn pending_frame(&self) -> Option<(usize, &[u8])> {
        pending(&self.partial)
    }

    // The socket side (output, what the socket took, handshake, close) is the session's.
    fn session(&self) -> &Outgoing {
        &self.out
    }

    fn session_mut(&mut self) -> &mut Outgoing {
        &mut self.out
    }
}

/// Plain TCP's session is only its bytes waiting: no handshake, nothing to resume.
impl StreamSession for Outgoing {
    #[inline]
    fn output(&self) -> &[u8] {
        Outgoing::output(self)
    }

    #[inline]
    fn consume_output(&mut self, n: usize) {
        self.consume(n);
        self.release_if_idle(KEEP_BUF);
    }

    #[inline]
    fn written_total(&self) -> u64 {
        Outgoing::written_total(self)
    }

    #[inline]
    fn is_handshaking(&self) -> bool {
        false
    }

    fn resumed(&self) -> bool {
        false
    }

    /// Drops the queries not yet written: they fail with the connection.
    fn close(&mut self) {
        self.discard();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::querier::test_messages::query;

    fn framed(msgs: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in msgs {
            out.extend_from_slice(&(m.len() as u16).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    /// Feeds `reads` one after the other; returns the messages with their keys, and what the
    /// last read gave.
    fn feed(f: &mut TcpFraming, reads: &[&[u8]]) -> (Vec<(MatchKey, Vec<u8>)>, u64) {
        let mut got = Vec::new();
        let mut malformed = 0;
        for r in reads {
            let mut bytes = r.to_vec();
            let out = f
                .received(&mut bytes, &mut |k, m| got.push((k, m.to_vec())))
                .unwrap();
            assert!(!out.peer_closed);
            malformed += out.malformed;
        }
        (got, malformed)
    }

    #[test]
    fn queries_are_framed_and_their_ends_known_at_once() {
        let mut f = TcpFraming::default();
        let (a, b) = (query(0x1234), query(0xBEEF));
        let qa = f.queue_query(&a).unwrap();
        assert_eq!(qa.key, MatchKey::Id(0x1234));
        assert_eq!(qa.wire_end, Some(2 + a.len() as u64));
        let qb = f.queue_query(&b).unwrap();
        assert_eq!(qb.key, MatchKey::Id(0xBEEF));
        assert_eq!(qb.wire_end, Some(4 + (a.len() + b.len()) as u64));
        assert_eq!(f.output(), framed(&[&a, &b]));
        f.consume_output(5);
        assert_eq!(f.written_total(), 5);
        assert_eq!(f.output(), &framed(&[&a, &b])[5..]);
        let rest = f.output().len();
        f.consume_output(rest);
        assert!(f.output().is_empty());
        // Positions run on over the connection's life.
        let qa2 = f.queue_query(&a).unwrap();
        assert_eq!(
            qa2.wire_end,
            Some(qb.wire_end.unwrap() + 2 + a.len() as u64)
        );
    }

    #[test]
    fn queries_a_frame_cannot_carry_are_refused() {
        let mut f = TcpFraming::default();
        assert!(matches!(f.queue_query(&[0]), Err(StreamError::BadQuery)));
        let huge = vec![0u8; 65_536];
        assert!(matches!(f.queue_query(&huge), Err(StreamError::BadQuery)));
        assert!(f.output().is_empty(), "nothing queued for them");
        assert!(f.queue_query(&huge[..65_535]).is_ok(), "the largest frame");
    }

    #[test]
    fn answers_split_at_every_byte_come_out_whole() {
        let (a, b) = (query(1), query(2));
        let stream = framed(&[&a, &b]);
        for cut in 0..=stream.len() {
            let mut f = TcpFraming::default();
            let (got, malformed) = feed(&mut f, &[&stream[..cut], &stream[cut..]]);
            assert_eq!(malformed, 0);
            assert_eq!(
                got,
                vec![(MatchKey::Id(1), a.clone()), (MatchKey::Id(2), b.clone())],
                "cut at {cut}"
            );
            assert!(
                f.partial.is_empty(),
                "nothing left over after a cut at {cut}"
            );
        }
    }

    #[test]
    fn answers_byte_by_byte_and_many_in_one_read() {
        let msgs: Vec<Vec<u8>> = (0..5).map(query).collect();
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let stream = framed(&refs);
        let expected: Vec<_> = (0..5).map(|i| (MatchKey::Id(i), query(i))).collect();

        let mut f = TcpFraming::default();
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(feed(&mut f, &bytes).0, expected);

        let mut f = TcpFraming::default();
        assert_eq!(feed(&mut f, &[&stream]).0, expected);
    }

    #[test]
    fn frames_too_short_for_a_message_are_counted_and_skipped() {
        let a = query(7);
        // A frame of length 0, one of 2 bytes (an ID and nothing else), then a message.
        let stream = framed(&[&[], &[0, 7], &a]);
        let mut f = TcpFraming::default();
        let (got, malformed) = feed(&mut f, &[&stream]);
        assert_eq!(malformed, 2);
        assert_eq!(got, vec![(MatchKey::Id(7), a)]);
    }

    #[test]
    fn a_length_larger_than_what_came_waits_for_the_rest() {
        // The prefix says 65,535 bytes; 100 came.
        let mut stream = vec![0xFF, 0xFF];
        stream.extend_from_slice(&[0xAB; 100]);
        let mut f = TcpFraming::default();
        let (got, malformed) = feed(&mut f, &[&stream]);
        assert!(got.is_empty());
        assert_eq!(malformed, 0);
        assert_eq!(
            f.partial.len(),
            stream.len(),
            "kept until the frame is whole"
        );
        let rest = vec![0xAB; 65_535 - 100];
        let (got, _) = feed(&mut f, &[&rest]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, MatchKey::Id(0xABAB));
        assert_eq!(got[0].1.len(), 65_535);
        assert!(
            f.partial.capacity() == 0,
            "a large buffer is released once empty"
        );
    }
}
