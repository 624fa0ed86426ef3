//! Properties of the link's model without I/O: ordering, minimum delay, loss rates, rate
//! limit spacing and the queue bound, over arbitrary parameters and arrival patterns.

use std::time::Duration;

use ldplayer_link::impair::serialisation_ns;
use ldplayer_link::{DropReason, Impairment, LinkParams, LossModel, Verdict};
use proptest::prelude::*;

/// Arrival times (non-decreasing, ns) and lengths of a packet sequence.
fn arrivals() -> impl Strategy<Value = Vec<(u64, usize)>> {
    prop::collection::vec((0u64..2_000_000, 20usize..1500), 1..300).prop_map(|gaps| {
        let mut t = 1_000_000_000u64;
        gaps.into_iter()
            .map(|(gap, len)| {
                t += gap;
                (t, len)
            })
            .collect()
    })
}

fn loss_model() -> impl Strategy<Value = LossModel> {
    prop_oneof![
        Just(LossModel::None),
        (0.0..=1.0f64).prop_map(|p| LossModel::Bernoulli { p }),
        (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(a, b, c, d)| {
            LossModel::GilbertElliott {
                p_good_to_bad: a,
                p_bad_to_good: b,
                loss_good: c,
                loss_bad: d,
            }
        }),
    ]
}

fn params() -> impl Strategy<Value = LinkParams> {
    (
        0u64..200_000_000,
        0u64..50_000_000,
        any::<bool>(),
        loss_model(),
        prop::option::of(8_000u64..10_000_000_000),
        1usize..2_000_000,
    )
        .prop_map(
            |(delay, jitter, reorder, loss, rate_bps, queue)| LinkParams {
                delay: Duration::from_nanos(delay),
                jitter: Duration::from_nanos(jitter),
                reorder,
                loss,
                rate_bps,
                queue_limit_bytes: queue,
            },
        )
}

/// Offers every packet, returning (arrival, length, verdict).
fn run(params: &LinkParams, seed: u64, packets: &[(u64, usize)]) -> Vec<(u64, usize, Verdict)> {
    let mut imp = Impairment::new(params, seed, 0);
    packets
        .iter()
        .map(|&(t, len)| (t, len, imp.offer(t, len)))
        .collect()
}

fn departures(verdicts: &[(u64, usize, Verdict)]) -> Vec<(u64, usize, u64)> {
    verdicts
        .iter()
        .filter_map(|&(t, len, v)| match v {
            Verdict::Deliver { at_ns } => Some((t, len, at_ns)),
            Verdict::Drop(_) => None,
        })
        .collect()
}

proptest! {
    #[test]
    fn without_reorder_packets_leave_in_arrival_order(
        mut p in params(), seed: u64, packets in arrivals()
    ) {
        p.reorder = false;
        let out = departures(&run(&p, seed, &packets));
        for pair in out.windows(2) {
            prop_assert!(pair[1].2 >= pair[0].2, "{pair:?}");
        }
    }

    #[test]
    fn no_packet_leaves_before_its_arrival_plus_the_delay(
        p in params(), seed: u64, packets in arrivals()
    ) {
        let delay = p.delay.as_nanos() as u64;
        for (t, _, at) in departures(&run(&p, seed, &packets)) {
            prop_assert!(at >= t + delay, "arrived {t}, left {at}, delay {delay}");
        }
    }

    #[test]
    fn without_rate_limit_or_jitter_the_delay_is_exact(
        delay in 0u64..1_000_000_000, seed: u64, packets in arrivals()
    ) {
        let p = LinkParams { delay: Duration::from_nanos(delay), ..Default::default() };
        for (t, _, at) in departures(&run(&p, seed, &packets)) {
            prop_assert_eq!(at, t + delay);
        }
    }

    #[test]
    fn jitter_stays_within_its_bound_when_reordering_is_allowed(
        jitter in 1u64..10_000_000, seed: u64, packets in arrivals()
    ) {
        let p = LinkParams {
            delay: Duration::from_millis(5),
            jitter: Duration::from_nanos(jitter),
            reorder: true,
            ..Default::default()
        };
        for (t, _, at) in departures(&run(&p, seed, &packets)) {
            prop_assert!((t + 5_000_000..=t + 5_000_000 + jitter).contains(&at));
        }
    }

    #[test]
    fn the_rate_limit_spaces_packets_by_their_serialisation_time(
        rate in 8_000u64..1_000_000_000, delay in 0u64..100_000_000, seed: u64,
        packets in arrivals(),
    ) {
        let p = LinkParams {
            delay: Duration::from_nanos(delay),
            rate_bps: Some(rate),
            queue_limit_bytes: usize::MAX,
            ..Default::default()
        };
        let out = departures(&run(&p, seed, &packets));
        prop_assert_eq!(out.len(), packets.len(), "an unbounded queue drops nothing");
        for pair in out.windows(2) {
            let (_, len, at) = pair[1];
            prop_assert!(at - pair[0].2 >= serialisation_ns(len as u64, rate), "{pair:?}");
        }
        for (t, len, at) in out {
            prop_assert!(at >= t + delay + serialisation_ns(len as u64, rate));
        }
    }

    #[test]
    fn the_queue_bound_caps_the_wait_and_drops_are_tail_drops(
        rate in 8_000u64..100_000_000, limit in 1usize..100_000, seed: u64,
        packets in arrivals(),
    ) {
        let p = LinkParams {
            rate_bps: Some(rate),
            queue_limit_bytes: limit,
            ..Default::default()
        };
        let verdicts = run(&p, seed, &packets);
        for &(t, len, v) in &verdicts {
            match v {
                Verdict::Deliver { at_ns } => {
                    // Waiting for at most `limit` bytes ahead, plus its own serialisation
                    // (and the byte being serialised when the packet came).
                    let bound = serialisation_ns(limit.max(len) as u64 + 1, rate)
                        + serialisation_ns(len as u64, rate) + 2;
                    prop_assert!(at_ns - t <= bound, "waited {} > {bound}", at_ns - t);
                }
                Verdict::Drop(reason) => prop_assert_eq!(reason, DropReason::Queue),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn bernoulli_loss_converges_to_p(p in 0.0..=1.0f64, seed: u64) {
        let n = 40_000;
        let params = LinkParams { loss: LossModel::Bernoulli { p }, ..Default::default() };
        let mut imp = Impairment::new(&params, seed, 0);
        let lost = (0..n)
            .filter(|&i| imp.offer(i, 100) == Verdict::Drop(DropReason::Loss))
            .count();
        let share = lost as f64 / n as f64;
        let tolerance = 5.0 * (p * (1.0 - p) / n as f64).sqrt() + 1e-9;
        prop_assert!((share - p).abs() <= tolerance, "lost {share}, p {p}");
    }

    #[test]
    fn gilbert_elliott_loss_converges_to_its_stationary_mean(
        p_good_to_bad in 0.02..=0.5f64, p_bad_to_good in 0.03..=0.5f64,
        loss_good in 0.0..=0.2f64, loss_bad in 0.5..=1.0f64, seed: u64,
    ) {
        let n = 200_000u64;
        let loss = LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_good, loss_bad };
        let params = LinkParams { loss, ..Default::default() };
        let mut imp = Impairment::new(&params, seed, 0);
        let lost = (0..n)
            .filter(|&i| imp.offer(i, 100) == Verdict::Drop(DropReason::Loss))
            .count();
        let share = lost as f64 / n as f64;
        // Successive packets are correlated: the variance of the mean grows by (2 - s) / s
        // with s the sum of the transition probabilities.
        let s = p_good_to_bad + p_bad_to_good;
        let sd = ((0.25 + 0.25 * (2.0 - s) / s) / n as f64).sqrt();
        prop_assert!(
            (share - loss.mean_loss()).abs() <= 5.0 * sd,
            "lost {share}, stationary {}", loss.mean_loss()
        );
    }
}

#[test]
fn gilbert_elliott_losses_come_in_bursts() {
    let loss = LossModel::GilbertElliott {
        p_good_to_bad: 0.01,
        p_bad_to_good: 0.2,
        loss_good: 0.0,
        loss_bad: 1.0,
    };
    let mut imp = Impairment::new(
        &LinkParams {
            loss,
            ..Default::default()
        },
        7,
        0,
    );
    let lost: Vec<bool> = (0..100_000)
        .map(|i| imp.offer(i, 100) == Verdict::Drop(DropReason::Loss))
        .collect();
    let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count();
    let losses = lost.iter().filter(|&&l| l).count();
    let mean_burst = losses as f64 / bursts as f64;
    // Bursts last 1 / p_bad_to_good = 5 packets on average; independent losses at the same
    // rate would average 1.05.
    assert!((4.0..6.0).contains(&mean_burst), "mean burst {mean_burst}");
}

#[test]
fn a_full_queue_tail_drops_then_drains_at_the_rate() {
    // 8 kbit/s: one byte per millisecond. Ten 100-byte packets at once, 300 bytes of queue.
    let p = LinkParams {
        rate_bps: Some(8_000),
        queue_limit_bytes: 300,
        delay: Duration::from_millis(10),
        ..Default::default()
    };
    let verdicts: Vec<Verdict> = run(&p, 1, &[(0, 100); 10])
        .into_iter()
        .map(|(_, _, v)| v)
        .collect();
    let ms = |m: u64| Verdict::Deliver {
        at_ns: m * 1_000_000,
    };
    assert_eq!(&verdicts[..3], &[ms(110), ms(210), ms(310)]);
    assert!(verdicts[3..]
        .iter()
        .all(|&v| v == Verdict::Drop(DropReason::Queue)));
    // Once the first packet has gone (200 bytes still queued), one more fits.
    let mut imp = Impairment::new(&p, 1, 0);
    for _ in 0..10 {
        imp.offer(0, 100);
    }
    assert_eq!(imp.offer(100_000_000, 100), ms(410));
    assert_eq!(
        imp.offer(100_000_000, 100),
        Verdict::Drop(DropReason::Queue)
    );
}

#[test]
fn the_same_seed_makes_the_same_decisions_and_streams_differ() {
    let p = LinkParams {
        jitter: Duration::from_millis(3),
        loss: LossModel::Bernoulli { p: 0.5 },
        ..Default::default()
    };
    let decide = |seed, stream| {
        let mut imp = Impairment::new(&p, seed, stream);
        (0..1000).map(|i| imp.offer(i, 60)).collect::<Vec<_>>()
    };
    assert_eq!(decide(42, 0), decide(42, 0));
    assert_ne!(decide(42, 0), decide(42, 1));
    assert_ne!(decide(42, 0), decide(43, 0));
}

#[test]
fn without_reorder_jitter_never_lets_a_packet_overtake() {
    let p = LinkParams {
        delay: Duration::from_millis(10),
        jitter: Duration::from_millis(10),
        ..Default::default()
    };
    let packets: Vec<(u64, usize)> = (0..10_000).map(|i| (i * 100_000, 100)).collect();
    let out = departures(&run(&p, 3, &packets));
    assert!(out.windows(2).all(|w| w[1].2 >= w[0].2));
    let mut reordering = p.clone();
    reordering.reorder = true;
    let out = departures(&run(&reordering, 3, &packets));
    assert!(
        out.windows(2).any(|w| w[1].2 < w[0].2),
        "with reorder, 10 ms of jitter on packets 0.1 ms apart must reorder some"
    );
}
