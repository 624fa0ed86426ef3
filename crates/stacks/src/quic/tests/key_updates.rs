//! Key updates (RFC 9001 §6) against quinn-proto's server: this client starts them after its
//! configured count of packets, one at a time, and keeps the previous phase's read key for a
//! while so that the server's late packets of the old phase still decrypt.

use super::{answered, connect, identity, query, Server, Sim, MS};
use crate::quic::conn::{Connection, Event};
use std::time::Duration;

/// A connection with one query answered and time for the acknowledgements to settle: the
/// handshake is confirmed and the current keys have had a packet acknowledged.
fn settled(sim: &mut Sim, tls: &std::sync::Arc<rustls::ClientConfig>) -> Connection {
    let mut client = connect(tls, sim.now, false);
    client.open_stream(query(0));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(1));
    assert_eq!(sim.answers().len(), 1, "{:?}", client.closed());
    sim.run(&mut client, sim.now + 200 * MS, |_, _| false);
    client
}

/// Whether the events since `from` hold the answer on `stream`.
fn has_answer(events: &[Event], stream: u64) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Answer { stream: s, .. } if *s == stream))
}

#[test]
fn the_client_starts_key_updates_after_its_count_and_the_server_follows() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = settled(&mut sim, &tls);
    assert_eq!(client.key_updates_started(), 0, "a count of 0 starts none");
    client.set_key_update_packets(4);
    // Queries one after another, each its own packets: an update every few of them.
    for i in 1..=30u16 {
        client.open_stream(query(i));
        sim.run(
            &mut client,
            sim.now + 2_000 * MS,
            answered(1 + usize::from(i)),
        );
    }
    assert_eq!(sim.answers().len(), 31, "{:?}", client.closed());
    assert_eq!(client.closed(), None);
    let started = client.key_updates_started();
    assert!(started >= 3, "{started} key updates started");
}

#[test]
fn no_key_update_starts_before_the_current_keys_have_an_acknowledgement() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = settled(&mut sim, &tls);
    // The server updates its keys; the client follows with its answer to query 1.
    sim.server.only().force_key_update();
    client.open_stream(query(1));
    sim.run(&mut client, sim.now + 1_000 * MS, answered(2));
    assert!(client.key_phase(), "the client followed the server");
    // From now on the client hears nothing back: no packet it sends with its new keys is
    // acknowledged, however many go and however long after the previous key went.
    sim.hold = true;
    client.set_key_update_packets(1);
    for i in 2..=10u16 {
        client.open_stream(query(i));
    }
    sim.run(&mut client, sim.now + 1_000 * MS, |_, _| false);
    assert!(!client.holds_previous_keys(), "the previous key went");
    assert!(sim.client_sent > 8, "the client kept sending");
    assert_eq!(client.key_updates_started(), 0);
    // Once it hears again, the queries are answered, and its own update can start.
    sim.hold = false;
    let held = std::mem::take(&mut sim.held);
    for mut d in held {
        client.handle(sim.now, &mut d);
    }
    sim.run(&mut client, sim.now + 5_000 * MS, answered(11));
    assert_eq!(sim.answers().len(), 11, "{:?}", client.closed());
    client.open_stream(query(11));
    sim.run(&mut client, sim.now + 2_000 * MS, answered(12));
    assert_eq!(client.key_updates_started(), 1);
    assert!(!client.key_phase(), "the client's own update");
}

/// A query answered in the old key phase, its datagram held back while the client updates its
/// keys and hears the server in the new phase; returns the connection, the held datagrams and
/// the query's stream.
fn old_phase_answer_held(sim: &mut Sim, client: &mut Connection) -> (Vec<Vec<u8>>, u64) {
    sim.hold = true;
    let late = client.open_stream(query(1));
    sim.run(client, sim.now + 1_000 * MS, |sim, _| {
        sim.server.answered >= 2
    });
    assert_eq!(sim.server.answered, 2, "the server answered");
    assert!(!sim.held.is_empty());
    let held = std::mem::take(&mut sim.held);
    sim.hold = false;
    assert!(!client.key_phase());
    client.set_key_update_packets(1);
    client.open_stream(query(2));
    sim.run(client, sim.now + 1_000 * MS, answered(2));
    client.set_key_update_packets(0);
    assert_eq!(client.key_updates_started(), 1);
    assert!(client.key_phase(), "the new phase");
    assert!(client.holds_previous_keys());
    assert!(
        !has_answer(&sim.events, late),
        "the late answer came another way: {:?}",
        sim.events
    );
    (held, late)
}

#[test]
fn packets_of_the_old_key_phase_still_decrypt_after_an_update() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = settled(&mut sim, &tls);
    let (held, late) = old_phase_answer_held(&mut sim, &mut client);
    for mut d in held {
        client.handle(sim.now, &mut d);
    }
    let mut events = Vec::new();
    while let Some(e) = client.poll_event() {
        events.push(e);
    }
    assert!(has_answer(&events, late), "{events:?}");
}

#[test]
fn the_old_key_phase_is_discarded_after_three_ptos() {
    let (cert, key, tls) = identity();
    let mut sim = Sim::new(Server::new(cert, key, Duration::from_secs(30)));
    let mut client = settled(&mut sim, &tls);
    let (held, late) = old_phase_answer_held(&mut sim, &mut client);
    // Time passes, the server's retransmissions of the answer (in the new phase) held too.
    sim.hold = true;
    sim.run(&mut client, sim.now + 2_000 * MS, |_, c| {
        !c.holds_previous_keys()
    });
    assert!(!client.holds_previous_keys(), "the previous key went");
    assert_eq!(client.closed(), None);
    for mut d in held {
        client.handle(sim.now, &mut d);
    }
    let mut events = Vec::new();
    while let Some(e) = client.poll_event() {
        events.push(e);
    }
    assert!(
        !has_answer(&events, late),
        "an old-phase packet decrypted: {events:?}"
    );
    // The connection goes on: the server's retransmissions, of the new phase, answer.
    sim.hold = false;
    let again = std::mem::take(&mut sim.held);
    assert!(!again.is_empty(), "the server retransmitted");
    for mut d in again {
        client.handle(sim.now, &mut d);
    }
    while let Some(e) = client.poll_event() {
        events.push(e);
    }
    assert!(has_answer(&events, late), "{events:?}");
}
