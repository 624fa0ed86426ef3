//! The server's flow control against quinn-proto's server with tiny windows (RFC 9000 §4): a
//! request goes out in pieces as the server's MAX_STREAM_DATA and MAX_DATA open the windows,
//! with STREAM_DATA_BLOCKED when a stream's limit holds it back, and never more than allowed
//! (quinn closes a connection that sends past a limit, FLOW_CONTROL_ERROR).

use super::{answered, connect, identity, query, Server, Sim, MS};
use quinn_proto::VarInt;
use std::time::Duration;

/// A request longer than [`query`]'s: `len` bytes after the 2-byte length.
fn long_query(i: u8, len: u16) -> Vec<u8> {
    let mut q = len.to_be_bytes().to_vec();
    q.extend((0..len).map(|j| i.wrapping_add(j as u8)));
    q
}

#[test]
fn a_request_goes_out_in_pieces_within_the_servers_stream_window() {
    let (cert, key, tls) = identity();
    let server = Server::with(cert, key, Duration::from_secs(30), |t| {
        t.stream_receive_window(VarInt::from_u32(8));
    });
    let mut sim = Sim::new(server);
    let mut client = connect(&tls, sim.now, false);
    let queries: Vec<Vec<u8>> = (0..3).map(|i| long_query(i, 100)).collect();
    for q in &queries {
        client.open_stream(q.clone());
    }
    sim.run(&mut client, sim.now + 20_000 * MS, answered(3));
    assert_eq!(client.closed(), None);
    let mut answers = sim.answers();
    answers.sort();
    let want: Vec<(u64, Vec<u8>)> = (0..3).map(|i| (4 * i as u64, queries[i].clone())).collect();
    assert_eq!(answers, want);
    let stats = sim.server.only().stats();
    assert!(
        stats.frame_rx.stream_data_blocked > 0,
        "the client said it was blocked: {:?}",
        stats.frame_rx
    );
    assert!(
        stats.frame_tx.max_stream_data > 0,
        "the server raised the limits"
    );
    // 102 bytes a stream in pieces of at most 8 bytes a window.
    assert!(stats.frame_rx.stream >= 3 * 13, "{:?}", stats.frame_rx);
}

#[test]
fn the_servers_connection_window_and_stream_count_hold_requests_back() {
    let (cert, key, tls) = identity();
    let server = Server::with(cert, key, Duration::from_secs(30), |t| {
        t.receive_window(VarInt::from_u32(50));
        t.max_concurrent_bidi_streams(VarInt::from_u32(2));
    });
    let mut sim = Sim::new(server);
    let mut client = connect(&tls, sim.now, false);
    for i in 0..10 {
        client.open_stream(query(i));
    }
    sim.run(&mut client, sim.now + 20_000 * MS, answered(10));
    assert_eq!(sim.answers().len(), 10, "{:?}", client.closed());
    assert_eq!(client.closed(), None);
    let stats = sim.server.only().stats();
    assert!(stats.frame_tx.max_data > 0, "{:?}", stats.frame_tx);
    assert!(stats.frame_tx.max_streams_bidi > 0, "{:?}", stats.frame_tx);
}
