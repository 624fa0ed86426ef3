//! What a stream connection's messages are to its queries: answers, responses that are not
//! answers, or garbage that ends the connection.
//!
//! On TCP and TLS (answers matched by DNS ID) a connection carries nothing but the server's
//! responses to the queries sent on it, one behind its length: a message that is not a response
//! (QR clear, another opcode: the query echoed back), a frame too short for a header, or a
//! response whose ID no query in flight has (nor had lately, nor may have had: a late answer is
//! not garbage, and on a connection where a query timed out any response may be one) says
//! the framing is lost or the peer is not a DNS server. The connection is closed with
//! [`crate::cause::Cause::StreamGarbage`]: its queries fail at once rather than time out, and the next ones
//! reconnect. The start of a frame is judged as soon as its length and header are in, so that a
//! server sending random bytes (a length of 40,000 and then a trickle) is found out at once.
//!
//! A response to another question is not garbage (it may be a late answer to an earlier query
//! with the same ID): the query waits on for its own answer and, if none comes, fails as a bad
//! response. DoH matches by stream, one response per query: a message that is not the
//! stream's query's answer fails that query at once.

use super::answer::{self, Mismatch};
use super::inflight::{Inflight, Reply, Via};
use super::session::Ctx;
use super::transport::{MatchKey, StreamTransport};
use ldplayer_dns::{Message, HEADER_LEN};
use ldplayer_results::ErrorKind;

/// What one message received on a stream connection was.
pub(super) enum StreamReply {
    /// The answer of the query in this slot.
    Answer(u32),
    /// Not an answer; the connection goes on.
    Ignored,
    /// Not an answer, and the query in this slot (which was at this [`Via`]) failed for it;
    /// the connection goes on.
    Failed(u32, Via),
    /// Not a DNS response to a query in flight (what, in words): the connection must close.
    Garbage(String),
}

/// Judges `msg`, received with `key` on connection `uid` whose protocol matches by ID (`by_id`)
/// or by stream, and fails the query it is for when it can no longer be answered. On a
/// connection where a query `timed_out`, a response no query in flight has is taken for a late
/// answer.
pub(super) fn judge(
    ctx: &mut Ctx<'_>,
    uid: u64,
    by_id: bool,
    timed_out: bool,
    key: MatchKey,
    msg: &[u8],
) -> StreamReply {
    match (ctx.inflight.reply_of(uid, key, msg), by_id) {
        (Reply::Answer(slot), _) => StreamReply::Answer(slot),
        (Reply::Late, _) | (Reply::Stray, false) => StreamReply::Ignored,
        (Reply::Stray, true) if timed_out => StreamReply::Ignored,
        (Reply::Stray, true) => StreamReply::Garbage(stray(msg)),
        (Reply::Mismatch(slot, Mismatch::QuestionMismatch), true) => {
            ctx.inflight.slots[slot as usize].mismatch = true;
            StreamReply::Ignored
        }
        (Reply::Mismatch(_, Mismatch::NotAResponse), true) => {
            StreamReply::Garbage(not_a_response(msg))
        }
        (Reply::Mismatch(slot, m), false) => {
            // The stream is over: no other answer can come for its query.
            let via = ctx
                .inflight
                .fail(slot, ErrorKind::BadResponse, &m.cause(), ctx.sink);
            StreamReply::Failed(slot, via)
        }
    }
}

/// Whether the frame that `protocol` (of connection `uid`) has begun to receive is already
/// garbage by its length or header; what, in words.
pub(super) fn pending_garbage(
    inflight: &Inflight,
    uid: u64,
    timed_out: bool,
    protocol: &StreamTransport,
) -> Option<String> {
    if !protocol.matches_by_id() {
        return None;
    }
    let (len, start) = protocol.pending_frame()?;
    if len < HEADER_LEN {
        return Some(short_frame(Some(len)));
    }
    let header = start.get(..HEADER_LEN)?;
    if !answer::is_response(header) {
        return Some(not_a_response(header));
    }
    let id = u16::from_be_bytes([header[0], header[1]]);
    (!timed_out && !inflight.knows_id(uid, id)).then(|| stray(header))
}

/// A frame whose length (`None`: not known any more) is too short for a DNS header, in words.
pub(super) fn short_frame(len: Option<usize>) -> String {
    match len {
        Some(len) => format!("a frame of {len} bytes, shorter than a DNS header"),
        None => "a frame shorter than a DNS header".into(),
    }
}

fn not_a_response(msg: &[u8]) -> String {
    format!(
        "a message with ID {} that is not a response (QR clear, or another opcode: the query \
         echoed back?)",
        id_of(msg)
    )
}

fn stray(msg: &[u8]) -> String {
    format!(
        "a response with ID {}, which no query in flight on it has",
        id_of(msg)
    )
}

fn id_of(msg: &[u8]) -> u16 {
    match msg {
        [a, b, ..] => u16::from_be_bytes([*a, *b]),
        _ => 0,
    }
}

/// The EDNS TCP keepalive timeout (RFC 7828) of a response, in ns.
pub(super) fn keepalive_ns(msg: &Message<'_>) -> Option<i64> {
    let mut opts = msg.edns_options();
    while opts.len() >= 4 {
        let code = u16::from_be_bytes([opts[0], opts[1]]);
        let len = u16::from_be_bytes([opts[2], opts[3]]) as usize;
        let data = opts.get(4..4 + len)?;
        if code == ldplayer_dns::option_code::KEEPALIVE && len == 2 {
            return Some(u16::from_be_bytes([data[0], data[1]]) as i64 * 100_000_000);
        }
        opts = &opts[4 + len..];
    }
    None
}
