//! Flow control of the request bodies (RFC 9113 §6.9): the stream's window and the
//! connection's, moved by the server's SETTINGS and WINDOW_UPDATE frames, from bytes.

use super::tests::{frame, head};
use super::*;

/// The frames in `bytes` (whole ones): (type, flags, stream, payload).
fn frames_of(bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(h) = bytes.get(at..at + FRAME_HEADER) {
        let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]);
        let payload = bytes[at + FRAME_HEADER..at + FRAME_HEADER + len].to_vec();
        out.push((h[3], h[4], stream, payload));
        at += FRAME_HEADER + len;
    }
    assert_eq!(at, bytes.len(), "whole frames");
    out
}

/// Takes the client's output: its DATA frames on `stream`, as (payload, END_STREAM).
fn data_sent(c: &mut Http2Client, stream: u32) -> Vec<(Vec<u8>, bool)> {
    let out = c.output().to_vec();
    c.consume_output(out.len());
    frames_of(&out)
        .into_iter()
        .filter(|f| f.0 == kind::DATA && f.2 == stream)
        .map(|(_, flags, _, p)| (p, flags & flag::END_STREAM != 0))
        .collect()
}

fn window_update(stream: u32, inc: u32) -> Vec<u8> {
    frame(kind::WINDOW_UPDATE, 0, stream, &inc.to_be_bytes())
}

/// A client past its preface, the server's SETTINGS taken.
fn client_after(settings: &[u8]) -> Http2Client {
    let mut c = Http2Client::new();
    c.received(&frame(kind::SETTINGS, 0, 0, settings));
    c.consume_output(c.output().len());
    c
}

#[test]
fn a_body_goes_out_in_pieces_as_the_streams_window_opens() {
    // SETTINGS_INITIAL_WINDOW_SIZE = 4.
    let mut c = client_after(&[0, 4, 0, 0, 0, 4]);
    let body: Vec<u8> = (0..10).collect();
    c.request(7, request_headers(true, "a", "/q", 10), Some(body.clone()));
    assert_eq!(data_sent(&mut c, 1), [(body[..4].to_vec(), false)]);
    assert_eq!(c.next_end(), None, "the request is not all out");
    assert!(c.busy());
    // A WINDOW_UPDATE on the stream.
    c.received(&window_update(1, 3));
    assert_eq!(data_sent(&mut c, 1), [(body[4..7].to_vec(), false)]);
    // A new SETTINGS_INITIAL_WINDOW_SIZE moves the open stream's window by the difference.
    c.received(&frame(kind::SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 5]));
    assert_eq!(data_sent(&mut c, 1), [(body[7..8].to_vec(), false)]);
    // The connection's window opening does not open the stream's.
    c.received(&window_update(0, 1000));
    assert_eq!(data_sent(&mut c, 1), []);
    c.received(&window_update(1, 100));
    assert_eq!(data_sent(&mut c, 1), [(body[8..].to_vec(), true)]);
    assert_eq!(c.next_end(), Some((7, 0)), "the request is out");
    // The answer comes as usual.
    c.received(&frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &head("200", "application/dns-message"),
    ));
    c.received(&frame(kind::DATA, flag::END_STREAM, 1, b"dns"));
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [(7, Outcome::Answer(b"dns".to_vec()))]
    );
}

#[test]
fn the_connections_window_holds_every_stream_back() {
    // Streams get a large window; the connection keeps its 65,535 bytes.
    let mut c = client_after(&[0, 4, 0, 0x10, 0, 0]);
    let body = vec![9u8; 70_000];
    c.request(1, request_headers(true, "a", "/q", body.len()), Some(body));
    c.request(2, request_headers(true, "a", "/q", 3), Some(vec![1, 2, 3]));
    let first = data_sent(&mut c, 1);
    let lens: Vec<usize> = first.iter().map(|(p, _)| p.len()).collect();
    assert_eq!(
        lens,
        [16_384, 16_384, 16_384, 16_383],
        "frames of at most 16,384"
    );
    assert!(first.iter().all(|(_, end)| !end));
    c.received(&window_update(0, 4_465));
    assert_eq!(
        data_sent(&mut c, 1)
            .iter()
            .map(|(p, end)| (p.len(), *end))
            .collect::<Vec<_>>(),
        [(4_465, true)]
    );
    assert_eq!(c.next_end().map(|(k, _)| k), Some(1));
    c.received(&window_update(0, 3));
    assert_eq!(data_sent(&mut c, 3), [(vec![1, 2, 3], true)]);
}

#[test]
fn bad_window_updates_fail_their_stream_or_the_connection() {
    let mut c = client_after(&[0, 4, 0, 0, 0, 2]);
    c.request(1, request_headers(true, "a", "/q", 3), Some(vec![1, 2, 3]));
    c.request(2, request_headers(true, "a", "/q", 3), Some(vec![1, 2, 3]));
    c.consume_output(c.output().len());
    // An increment of 0 on a stream: that stream is reset.
    c.received(&window_update(1, 0));
    let out = frames_of(c.output());
    assert_eq!(out, [(kind::RST_STREAM, 0, 1, vec![0, 0, 0, 1])]);
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [(1, Outcome::Failed("h2-protocol-error"))]
    );
    c.consume_output(c.output().len());
    // A stream window past 2^31 - 1: that stream is reset too (the first update lets its
    // last byte go).
    c.received(&window_update(3, (1 << 31) - 1));
    assert_eq!(data_sent(&mut c, 3), [(vec![3], true)]);
    assert!(c.take_done().next().is_none());
    c.received(&window_update(3, (1 << 31) - 1));
    assert_eq!(
        c.take_done().collect::<Vec<_>>(),
        [(2, Outcome::Failed("h2-flow-control-error"))]
    );
    assert!(c.error().is_none());
    // The connection's window past 2^31 - 1: the connection fails.
    c.received(&window_update(0, (1 << 31) - 1));
    assert_eq!(c.error(), Some(ConnectionError("h2-flow-control-error")));
}
