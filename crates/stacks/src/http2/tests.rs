//! The HTTP/2 client against hand-built server frames and against loona-hpack (an independent
//! HPACK decoder), and whatever the server sends (proptest).

use super::*;

/// What the server would say: frames built by hand.
pub(super) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    frame_header(&mut f, payload.len(), kind, flags, stream);
    f.extend_from_slice(payload);
    f
}

/// A response head: `:status` and `content-type` as literals.
pub(super) fn head(status: &str, content_type: &str) -> Vec<u8> {
    let mut b = Vec::new();
    literal(&mut b, 8, status.as_bytes());
    literal(&mut b, 31, content_type.as_bytes());
    b
}

fn client_with(requests: u64) -> Http2Client {
    let mut c = Http2Client::new();
    for key in 0..requests {
        c.request(
            key,
            request_headers(true, "a.test", "/dns-query", 3),
            Some(vec![1, 2, 3]),
        );
    }
    c
}

#[test]
fn the_request_header_block_decodes_to_the_doh_request() {
    let block = request_headers(true, "resolver.test:8443", "/dns-query", 33);
    let mut fields = Vec::new();
    loona_hpack::Decoder::new()
        .decode_with_cb(&block, |n, v| fields.push((n.to_vec(), v.to_vec())))
        .unwrap();
    let text: Vec<(String, String)> = fields
        .into_iter()
        .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
        .collect();
    let want = [
        (":method", "POST"),
        (":scheme", "https"),
        (":path", "/dns-query"),
        (":authority", "resolver.test:8443"),
        ("accept", "application/dns-message"),
        ("content-type", "application/dns-message"),
        ("content-length", "33"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(text, want);
    // A long path takes a multi-byte length.
    let long = format!("/dns-query?dns={}", "A".repeat(300));
    let block = request_headers(false, "a", &long, 0);
    let fields = loona_hpack::Decoder::new().decode(&block).unwrap();
    assert_eq!(fields[0].1, b"GET");
    assert_eq!(fields[2].1, long.as_bytes());
}

#[test]
fn requests_go_out_after_the_preface_and_answers_come_back_by_stream() {
    let mut c = client_with(2);
    let out = c.output().to_vec();
    assert!(out.starts_with(PREFACE));
    let (key, end) = c.next_end().unwrap();
    assert_eq!(key, 0);
    assert!(end < out.len(), "the second request follows the first");
    c.pop_end();
    assert_eq!(c.next_end(), Some((1, out.len())));
    c.consume_output(out.len());
    assert_eq!(c.next_end().map(|(_, e)| e), Some(0));

    // The server's SETTINGS, then the answer to stream 3 before stream 1's, split across
    // reads at awkward places.
    let mut server = frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
    server.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &head("200", "application/dns-message"),
    ));
    server.extend(frame(kind::DATA, flag::END_STREAM, 3, b"answer-3"));
    server.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &head("200", "application/dns-message; charset=x"),
    ));
    server.extend(frame(kind::DATA, 0, 1, b"ans"));
    server.extend(frame(
        kind::DATA,
        flag::END_STREAM | flag::PADDED,
        1,
        &[2, b'w', b'e', b'r', 0, 0],
    ));
    for chunk in server.chunks(7) {
        c.received(chunk);
    }
    let done: Vec<_> = c.take_done().collect();
    assert_eq!(
        done,
        [
            (1, Outcome::Answer(b"answer-3".to_vec())),
            (0, Outcome::Answer(b"answer".to_vec()))
        ]
    );
    assert!(c.error().is_none());
    // SETTINGS acknowledged.
    assert_eq!(c.output(), frame(kind::SETTINGS, flag::ACK, 0, &[]));
    assert!(!c.busy());
}

#[test]
fn statuses_content_types_and_resets_fail_their_own_request_only() {
    let mut c = client_with(4);
    let mut server = frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &head("404", "text/plain"),
    );
    server.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &head("200", "text/html"),
    ));
    server.extend(frame(kind::DATA, flag::END_STREAM, 3, b"<html>"));
    server.extend(frame(kind::RST_STREAM, 0, 5, &7u32.to_be_bytes()));
    // An informational head, then the real one, then trailers.
    let mut info = Vec::new();
    literal(&mut info, 8, b"103");
    server.extend(frame(kind::HEADERS, flag::END_HEADERS, 7, &info));
    server.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        7,
        &head("200", "application/dns-message"),
    ));
    server.extend(frame(kind::DATA, 0, 7, b"dns"));
    server.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        7,
        &[],
    ));
    c.received(&server);
    let done: Vec<_> = c.take_done().collect();
    assert_eq!(
        done,
        [
            (0, Outcome::Status(404)),
            (1, Outcome::NotDns),
            (2, Outcome::Failed("h2-refused-stream")),
            (3, Outcome::Answer(b"dns".to_vec())),
        ]
    );
    assert!(c.error().is_none());
}

#[test]
fn the_server_stream_limit_holds_requests_back_until_streams_end() {
    let mut c = Http2Client::new();
    c.received(&frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1]));
    let before = c.output().len();
    for key in 0..3 {
        c.request(key, request_headers(false, "a", "/q", 0), None);
    }
    assert_eq!(c.streams.len(), 1, "one stream at a time");
    assert!(c.output().len() > before);
    c.received(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &head("500", "x"),
    ));
    assert_eq!(c.streams.len(), 1, "the next one went out");
    assert_eq!(c.streams[0].id, 3);
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [(0, Outcome::Status(500))]
    );
}

#[test]
fn before_the_servers_settings_a_hundred_streams_go_out_then_its_limit_rules() {
    // No SETTINGS yet: a burst of 150 opens 100 streams (what h2, nghttp2 and Go assume).
    let mut c = client_with(150);
    assert_eq!(c.streams.len(), 100);
    // A server naming its limit: 120.
    c.received(&frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 120]));
    assert_eq!(c.streams.len(), 120);
    // A later SETTINGS without the limit keeps it.
    c.received(&frame(kind::SETTINGS, 0, 0, &[0, 4, 0, 0, 255, 255]));
    assert_eq!(c.streams.len(), 120);
    // A server whose first SETTINGS names no limit has none: every request goes out.
    let mut c = client_with(150);
    c.received(&frame(kind::SETTINGS, 0, 0, &[]));
    assert_eq!(c.streams.len(), 150);
}

#[test]
fn goaway_fails_what_the_server_did_not_take_and_ping_is_answered() {
    let mut c = client_with(3);
    c.consume_output(c.output().len());
    c.received(&frame(kind::PING, 0, 0, b"12345678"));
    assert_eq!(c.output(), frame(kind::PING, flag::ACK, 0, b"12345678"));
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&0u32.to_be_bytes());
    c.received(&frame(kind::GOAWAY, 0, 0, &goaway));
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [
            (2, Outcome::Failed("h2-goaway")),
            (1, Outcome::Failed("h2-goaway"))
        ]
    );
    assert!(!c.finished(), "stream 1 is still answered");
    c.received(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &head("204", "x"),
    ));
    assert!(c.finished());
}

#[test]
fn protocol_errors_end_the_connection_and_fail_everything() {
    for bad in [
        frame(kind::PUSH_PROMISE, 0, 1, &[0, 0, 0, 2]),
        frame(kind::DATA, 0, 0, b"x"),
        frame(kind::SETTINGS, 0, 0, &[0, 1, 0]),
        frame(
            kind::HEADERS,
            flag::END_HEADERS,
            1,
            &[0xff, 0xff, 0xff, 0xff, 0x0f],
        ),
        {
            let mut f = Vec::new();
            frame_header(&mut f, MAX_FRAME + 1, kind::DATA, 0, 1);
            f
        },
    ] {
        let mut c = client_with(2);
        c.received(&bad);
        assert!(c.error().is_some(), "{bad:?}");
        assert_eq!(c.take_done().count(), 2, "{bad:?}");
        // Nothing more is taken: a new request fails at once.
        let error = c.error().map(|e| e.0);
        c.request(9, request_headers(false, "a", "/", 0), None);
        c.received(&frame(kind::PING, 0, 0, b"12345678"));
        assert!(!c.busy());
        let done: Vec<_> = c.take_done().collect();
        assert_eq!(done.len(), 1);
        assert_eq!(Some(done[0].0), Some(9));
        assert!(matches!(done[0].1, Outcome::Failed(why) if Some(why) == error));
    }
}

#[test]
fn a_body_beyond_a_dns_message_resets_its_stream() {
    let mut c = client_with(1);
    c.received(&frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &head("200", "application/dns-message"),
    ));
    let chunk = vec![0u8; MAX_FRAME];
    for _ in 0..4 {
        c.received(&frame(kind::DATA, 0, 1, &chunk));
    }
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [(0, Outcome::Failed("h2-body-too-large"))]
    );
    assert!(c.error().is_none());
}

/// Frames of any type, flags and stream (mostly the client's first streams), with any
/// payload; and bytes that are not frames at all.
fn server_bytes() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    let frame = (
        0u8..11,
        any::<u8>(),
        0u32..10,
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(kind, flags, stream, payload)| frame(kind, flags, stream, &payload));
    prop_oneof![
        (any::<u8>(), proptest::collection::vec(frame, 0..24)).prop_map(|(control, frames)| {
            let mut b = vec![control];
            b.extend(frames.concat());
            b
        }),
        proptest::collection::vec(any::<u8>(), 0..512),
    ]
}

proptest::proptest! {
    #[test]
    fn whatever_the_server_sends_requests_end_once_and_buffers_stay_bounded(
        bytes in server_bytes()
    ) {
        fuzz_server_bytes(&bytes);
        crate::hpack::fuzz_block(&bytes);
    }
}

#[test]
fn hpack_integers_follow_rfc_7541_examples() {
    // C.1.2: 1337 with a 5-bit prefix.
    let mut b = Vec::new();
    put_integer(&mut b, 0, 5, 1337);
    assert_eq!(b, [31, 154, 10]);
    let mut b = Vec::new();
    put_integer(&mut b, 0, 5, 10);
    assert_eq!(b, [10]);
}
