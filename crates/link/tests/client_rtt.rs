//! Per-client round trips through the emulator between two real network namespaces: clients
//! at different addresses on side A, pinging one server on side B at the same time, each see
//! the link's round trip plus their own extra.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ldplayer_link::{AddressDelay, Link, LinkOptions, LinkParams, Side};
use support::{
    echo, exclusive, ping_pong, prerequisites, quantile, Testbed, A_V4, A_V6, B_V4, B_V6,
};

/// A second client address on side A, routed back to side A from side B.
const A2_V4: &str = "10.99.0.3";

fn addr(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip.parse().expect("an IP address"), port)
}

#[test]
fn each_client_address_sees_its_own_round_trip() {
    clients_see_their_own_round_trips(Side::A);
}

#[test]
fn the_clients_may_be_on_side_b() {
    clients_see_their_own_round_trips(Side::B);
}

/// Three clients (two IPv4 addresses, one IPv6) with different extra round trips, pinging
/// at once through a link whose device on the clients' namespace is `clients_on`.
fn clients_see_their_own_round_trips(clients_on: Side) {
    if !prerequisites() {
        return;
    }
    let _turn = exclusive();
    let (bed, tun_a, tun_b) = Testbed::new();
    bed.a
        .ip(&["addr", "add", &format!("{A2_V4}/32"), "dev", &bed.tun_a]);
    bed.b.ip(&["route", "add", A2_V4, "dev", &bed.tun_b]);
    // 4 ms each way for everyone (8 ms RTT), plus each client's extra round trip.
    let clients: [(&str, &str, u64); 3] = [(A_V4, B_V4, 2), (A2_V4, B_V4, 32), (A_V6, B_V6, 12)];
    let extras: Vec<(IpAddr, Duration)> = clients
        .iter()
        .map(|&(ip, _, ms)| (ip.parse().expect("an address"), Duration::from_millis(ms)))
        .collect();
    let client_delay = AddressDelay::new(move |ip| {
        extras
            .iter()
            .find(|(client, _)| *client == ip)
            .map_or(Duration::ZERO, |&(_, extra)| extra)
    });
    let each_way = LinkParams {
        delay: Duration::from_millis(4),
        ..LinkParams::default()
    };
    let options = LinkOptions {
        client_delay: Some(client_delay),
        clients_on,
        ..LinkOptions::default()
    };
    // The testbed's side A is the clients' namespace: its device goes where they are.
    let (first, second) = match clients_on {
        Side::A => (tun_a, tun_b),
        Side::B => (tun_b, tun_a),
    };
    let link = Link::start_with_options(first, second, each_way.clone(), each_way, 1, options)
        .expect("the link starts");
    let servers = [
        echo(bed.b.udp(addr(B_V4, 7010))),
        echo(bed.b.udp(addr(B_V6, 7010))),
    ];
    // All clients at once, so that their packets share the delay line.
    let pinging: Vec<_> = clients
        .iter()
        .map(|&(client, server, extra_ms)| {
            let socket = bed.a.udp(addr(client, 0));
            socket.connect(addr(server, 7010)).expect("connect");
            let rtt = Duration::from_millis(8 + extra_ms);
            (
                client,
                rtt,
                std::thread::spawn(move || ping_pong(&socket, 100)),
            )
        })
        .collect();
    for (client, rtt, thread) in pinging {
        let rtts = thread.join().expect("the pinging thread");
        assert_eq!(rtts.len(), 100, "every ping from {client} answered");
        let (min, p50) = (rtts[0], quantile(&rtts, 0.5));
        eprintln!(
            "{client}: RTT min {min:?} p50 {p50:?} p99 {:?} (configured {rtt:?})",
            quantile(&rtts, 0.99)
        );
        assert!(min >= rtt, "{client} never early: min {min:?} < {rtt:?}");
        assert!(
            p50 < rtt + Duration::from_millis(1),
            "{client}: p50 {p50:?} within 1 ms of {rtt:?}"
        );
    }
    drop(servers);
    // Nothing is held any more: every packet read has been written.
    std::thread::sleep(Duration::from_millis(100));
    let counters = link.stop();
    eprintln!("{counters:?}");
    for dir in [counters.a_to_b, counters.b_to_a] {
        assert!(dir.packets_out >= 300, "{counters:?}");
        assert_eq!(dir.packets_in, dir.packets_out, "{counters:?}");
        assert_eq!(dir.bytes_in, dir.bytes_out, "{counters:?}");
        assert_eq!(
            dir.dropped_loss + dir.dropped_queue + dir.dropped_write,
            0,
            "{counters:?}"
        );
    }
}
