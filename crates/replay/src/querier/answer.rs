//! What makes a message the answer to a query, on every transport.
//!
//! The ID on a socket or connection (or the stream, for DoH and DoQ) finds the query a message
//! is for; this module says whether the message answers it, as DNS clients check (RFC 5452 §9.1;
//! dnspython's `Message.is_response`): QR set, the query's opcode, and the query's question, its
//! name compared without regard to case (RFC 4343: servers may echo the name in another case,
//! as 0x20 randomisation expects) and its type and class exactly. A server may leave the
//! question out of an error it could not do better than (FORMERR, SERVFAIL, NOTIMP, REFUSED),
//! and a query whose question the engine cannot compare (none, or a compressed name) takes any
//! question back.

use crate::cause::Cause;
use ldplayer_dns::{flag, Rcode, HEADER_LEN};

/// Why a message with a query's ID (or on its stream) is not its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// QR clear, another opcode, or shorter than a header: not a response at all.
    NotAResponse,
    /// A response, for another question.
    QuestionMismatch,
}

impl Mismatch {
    /// The cause the query fails with when no answer comes instead.
    pub(crate) fn cause(self) -> Cause {
        match self {
            Mismatch::NotAResponse => Cause::NotAResponse,
            Mismatch::QuestionMismatch => Cause::QuestionMismatch,
        }
    }
}

/// Length of the first question (name, type, class) when it is uncompressed; 0 otherwise.
pub(crate) fn question_len(wire: &[u8]) -> u16 {
    if wire.len() < HEADER_LEN || u16::from_be_bytes([wire[4], wire[5]]) == 0 {
        return 0;
    }
    let mut p = HEADER_LEN;
    loop {
        let Some(&l) = wire.get(p) else { return 0 };
        if l == 0 {
            p += 1;
            break;
        }
        if l & 0xC0 != 0 {
            return 0;
        }
        p += 1 + l as usize;
    }
    if p + 4 > wire.len() {
        return 0;
    }
    (p + 4 - HEADER_LEN) as u16
}

/// Whether a header (the first bytes of a message) says the message is a response.
pub(crate) fn is_response(header: &[u8]) -> bool {
    header.len() >= HEADER_LEN && u16::from_be_bytes([header[2], header[3]]) & flag::QR != 0
}

fn opcode(wire: &[u8]) -> u8 {
    (wire[2] >> 3) & 0x0F
}

/// Checks that `resp` answers `query` (whose first question is `qlen` bytes long, 0 when it
/// cannot be compared): see the [module docs](self).
pub(crate) fn check(query: &[u8], qlen: u16, resp: &[u8]) -> Result<(), Mismatch> {
    if !is_response(resp) || query.len() < HEADER_LEN || opcode(query) != opcode(resp) {
        return Err(Mismatch::NotAResponse);
    }
    if qlen == 0 {
        return Ok(());
    }
    if resp[4..6] == [0, 0] {
        let rcode = Rcode(u16::from(resp[3] & 0x0F));
        let may_omit = [
            Rcode::FORMERR,
            Rcode::SERVFAIL,
            Rcode::NOTIMP,
            Rcode::REFUSED,
        ];
        return if may_omit.contains(&rcode) {
            Ok(())
        } else {
            Err(Mismatch::QuestionMismatch)
        };
    }
    let end = HEADER_LEN + qlen as usize;
    let (Some(asked), Some(got)) = (query.get(HEADER_LEN..end), resp.get(HEADER_LEN..end)) else {
        return Err(Mismatch::QuestionMismatch);
    };
    let name = qlen as usize - 4;
    // Label lengths are at most 63, below every letter: comparing the whole name without
    // regard to ASCII case compares the labels so.
    if asked[..name].eq_ignore_ascii_case(&got[..name]) && asked[name..] == got[name..] {
        Ok(())
    } else {
        Err(Mismatch::QuestionMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A query for `www.example. A` with ID 0x1234.
    fn query() -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        q.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
        q
    }

    fn response_to(q: &[u8]) -> Vec<u8> {
        let mut r = q.to_vec();
        r[2] |= 0x80;
        r
    }

    #[test]
    fn question_length() {
        let q = query();
        assert_eq!(question_len(&q), 17);
        assert_eq!(question_len(&q[..20]), 0, "cut short");
        let mut compressed = q[..HEADER_LEN].to_vec();
        compressed.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
        assert_eq!(question_len(&compressed), 0);
    }

    #[test]
    fn a_response_to_the_question_in_any_case_answers() {
        let q = query();
        let qlen = question_len(&q);
        let mut r = response_to(&q);
        assert_eq!(check(&q, qlen, &r), Ok(()));
        r[13] = b'W';
        r[18] = b'X';
        assert_eq!(check(&q, qlen, &r), Ok(()), "0x20: case does not matter");
    }

    #[test]
    fn the_query_itself_or_another_opcode_is_not_a_response() {
        let q = query();
        let qlen = question_len(&q);
        assert_eq!(check(&q, qlen, &q), Err(Mismatch::NotAResponse), "an echo");
        let mut notify = response_to(&q);
        notify[2] |= 4 << 3;
        assert_eq!(check(&q, qlen, &notify), Err(Mismatch::NotAResponse));
        assert_eq!(check(&q, qlen, &q[..5]), Err(Mismatch::NotAResponse));
    }

    #[test]
    fn another_name_type_or_class_is_another_question() {
        let q = query();
        let qlen = question_len(&q);
        let mut other = response_to(&q);
        other[14] = b'x';
        assert_eq!(check(&q, qlen, &other), Err(Mismatch::QuestionMismatch));
        // Type A (1) against type 0x0021: one byte apart, as 'A' and 'a' are: not a case.
        let mut typed = response_to(&q);
        let at = HEADER_LEN + 13;
        typed[at + 1] = 0x21;
        assert_eq!(check(&q, qlen, &typed), Err(Mismatch::QuestionMismatch));
        let mut class = response_to(&q);
        class[at + 3] = 3;
        assert_eq!(check(&q, qlen, &class), Err(Mismatch::QuestionMismatch));
        let short = response_to(&q[..HEADER_LEN + 5]);
        assert_eq!(check(&q, qlen, &short), Err(Mismatch::QuestionMismatch));
    }

    #[test]
    fn an_error_may_leave_the_question_out_an_answer_may_not() {
        let q = query();
        let qlen = question_len(&q);
        let mut bare = response_to(&q[..HEADER_LEN]);
        bare[5] = 0;
        assert_eq!(check(&q, qlen, &bare), Err(Mismatch::QuestionMismatch));
        for rcode in [1u8, 2, 4, 5] {
            bare[3] = rcode;
            assert_eq!(check(&q, qlen, &bare), Ok(()), "rcode {rcode}");
        }
        bare[3] = 3; // NXDOMAIN names the question it denies
        assert_eq!(check(&q, qlen, &bare), Err(Mismatch::QuestionMismatch));
        // A query without a comparable question takes any response.
        assert_eq!(check(&q, 0, &response_to(&q[..HEADER_LEN])), Ok(()));
    }
}
