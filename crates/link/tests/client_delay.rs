//! Properties of per-client delays in the link's model, without I/O: each client's packets
//! keep their order through the model and the delay line, and without jitter each packet
//! leaves exactly its client's extra half round trip after the base delay.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use ldplayer_link::delay_line::DelayLine;
use ldplayer_link::{AddressDelay, Impairment, LinkParams, LossModel, Verdict};
use proptest::prelude::*;

/// Client `n`'s address; client 0 stands for packets without one.
fn address(n: u8) -> Option<IpAddr> {
    (n > 0).then(|| IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)))
}

/// Extra round trips of clients 1..=8, in ns.
fn extras() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(0u64..100_000_000, 8)
}

/// The delay of `extras`: client `n` gets `extras[n - 1]`.
fn delay_of(extras: &[u64]) -> AddressDelay {
    let extras = extras.to_vec();
    AddressDelay::new(move |ip| match ip {
        IpAddr::V4(v4) => Duration::from_nanos(extras[usize::from(v4.octets()[3]) - 1]),
        IpAddr::V6(_) => Duration::ZERO,
    })
}

/// Packets: arrival time (non-decreasing, ns), length and client (0..=8; 0 has no address).
fn packets() -> impl Strategy<Value = Vec<(u64, usize, u8)>> {
    prop::collection::vec((0u64..2_000_000, 20usize..1500, 0u8..=8), 1..300).prop_map(|gaps| {
        let mut t = 1_000_000_000u64;
        gaps.into_iter()
            .map(|(gap, len, client)| {
                t += gap;
                (t, len, client)
            })
            .collect()
    })
}

fn params() -> impl Strategy<Value = LinkParams> {
    (
        0u64..200_000_000,
        0u64..50_000_000,
        prop::option::of(8_000u64..10_000_000_000),
        0.0..0.5f64,
    )
        .prop_map(|(delay, jitter, rate_bps, p)| LinkParams {
            delay: Duration::from_nanos(delay),
            jitter: Duration::from_nanos(jitter),
            reorder: false,
            loss: LossModel::Bernoulli { p },
            rate_bps,
            queue_limit_bytes: 100_000,
        })
}

proptest! {
    #[test]
    fn packets_of_one_client_leave_in_the_order_they_came(
        params in params(),
        extras in extras(),
        packets in packets(),
        seed in any::<u64>(),
    ) {
        let mut imp = Impairment::new(&params, seed, 0).with_client_delay(delay_of(&extras));
        prop_assert!(imp.may_depart_out_of_order());
        let mut line = DelayLine::new(imp.may_depart_out_of_order(), usize::MAX);
        for (i, &(t, len, client)) in packets.iter().enumerate() {
            if let Verdict::Deliver { at_ns } = imp.offer_from(t, len, address(client)) {
                line.push(at_ns, len, (i, client)).expect("an unbounded line");
            }
        }
        let mut last_of: HashMap<u8, usize> = HashMap::new();
        while let Some((i, client)) = line.pop_due(u64::MAX) {
            if let Some(&before) = last_of.get(&client) {
                prop_assert!(before < i, "client {client}: packet {i} left after {before}");
            }
            last_of.insert(client, i);
        }
    }

    #[test]
    fn without_jitter_each_packet_takes_the_base_delay_and_half_its_clients_extra(
        delay in 0u64..200_000_000,
        reorder in any::<bool>(),
        extras in extras(),
        packets in packets(),
        seed in any::<u64>(),
    ) {
        let params = LinkParams {
            delay: Duration::from_nanos(delay),
            reorder,
            ..LinkParams::default()
        };
        let mut imp = Impairment::new(&params, seed, 1).with_client_delay(delay_of(&extras));
        for &(t, len, client) in &packets {
            let extra = if client == 0 { 0 } else { extras[usize::from(client) - 1] / 2 };
            prop_assert_eq!(
                imp.offer_from(t, len, address(client)),
                Verdict::Deliver { at_ns: t + delay + extra }
            );
        }
    }

    #[test]
    fn without_client_delays_the_client_changes_nothing(
        params in params(),
        packets in packets(),
        seed in any::<u64>(),
    ) {
        let mut plain = Impairment::new(&params, seed, 0);
        let mut told = Impairment::new(&params, seed, 0);
        prop_assert!(!told.may_depart_out_of_order());
        for &(t, len, client) in &packets {
            prop_assert_eq!(plain.offer(t, len), told.offer_from(t, len, address(client)));
        }
    }
}

#[test]
fn a_near_clients_packet_overtakes_a_far_clients_sent_just_before() {
    let far = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    let delay = AddressDelay::new(move |ip| {
        if ip == far {
            Duration::from_millis(40)
        } else {
            Duration::from_millis(10)
        }
    });
    let params = LinkParams {
        delay: Duration::from_millis(1),
        ..LinkParams::default()
    };
    let mut imp = Impairment::new(&params, 0, 0).with_client_delay(delay);
    let near = Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
    assert_eq!(
        imp.offer_from(0, 100, Some(far)),
        Verdict::Deliver { at_ns: 21_000_000 }
    );
    assert_eq!(
        imp.offer_from(1, 100, near),
        Verdict::Deliver { at_ns: 6_000_001 }
    );
    assert_eq!(
        imp.offer_from(2, 100, None),
        Verdict::Deliver { at_ns: 1_000_002 },
        "a packet without a client gets the base delay only"
    );
}
