//! The summary: counts, percentiles, timing error, rate error, merge, JSON and text.

use ldplayer_dns::Rcode;
use ldplayer_results::{ErrorKind, Outcome, QueryResult, ResultSink, Summary};
use ldplayer_trace::Proto;

const T0: i64 = 1_700_000_000 * 1_000_000_000;
const S: i64 = 1_000_000_000;

fn answered(index: u64, proto: Proto, intended: i64, sent: i64, latency: i64) -> QueryResult {
    QueryResult {
        index,
        trace_ns: intended - T0,
        intended_ns: intended,
        sent_ns: sent,
        received_ns: sent + latency,
        proto,
        new_connection: false,
        handshake_ns: 0,
        rcode: Rcode::NOERROR,
        response_len: 100,
        truncated: false,
        outcome: Outcome::Answered,
        target: 0,
    }
}

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel + 1e-9
}

#[test]
fn latency_percentiles_per_transport() {
    let mut s = Summary::new();
    // UDP latencies 1, 2, ..., 1000 µs; TCP 10 ms and 20 ms.
    for i in 1..=1000 {
        s.add(&answered(
            i,
            Proto::Udp,
            T0 + i as i64,
            T0 + i as i64,
            i as i64 * 1000,
        ));
    }
    s.add(&answered(2000, Proto::Tcp, T0, T0, 10_000_000));
    s.add(&answered(2001, Proto::Tcp, T0, T0, 20_000_000));
    let rep = s.report();
    let udp = &rep.latency_ms["udp"];
    assert_eq!(udp.count, 1000);
    for (got, want) in [
        (udp.min, 0.001),
        (udp.max, 1.0),
        (udp.p5, 0.050),
        (udp.p25, 0.250),
        (udp.p50, 0.500),
        (udp.p75, 0.750),
        (udp.p95, 0.950),
        (udp.p99, 0.990),
        (udp.p99_9, 0.999),
        (udp.max, 1.000),
        (udp.mean, 0.5005),
    ] {
        assert!(close(got, want, 0.0005), "got {got}, want {want}");
    }
    let tcp = &rep.latency_ms["tcp"];
    assert_eq!(tcp.count, 2);
    assert!(close(tcp.p50, 10.0, 0.001), "{}", tcp.p50);
    assert!(close(tcp.p99_9, 20.0, 0.001), "{}", tcp.p99_9);
    assert!(!rep.latency_ms.contains_key("tls"));
}

#[test]
fn counts_errors_connections() {
    let mut s = Summary::new();
    let mut r = answered(0, Proto::Tcp, T0, T0, 1000);
    r.new_connection = true;
    s.add(&r);
    s.add(&answered(1, Proto::Tcp, T0, T0, 1000));
    s.add(&answered(2, Proto::Tcp, T0, T0, 1000));
    s.add(&answered(3, Proto::Udp, T0, T0, 1000));
    let mut t = answered(4, Proto::Udp, T0, T0, 0);
    t.outcome = Outcome::Timeout;
    t.received_ns = 0;
    s.add(&t);
    for (i, k) in [ErrorKind::Refused, ErrorKind::Refused, ErrorKind::BadQuery]
        .into_iter()
        .enumerate()
    {
        let mut e = t;
        e.index = 10 + i as u64;
        e.outcome = Outcome::Error(k);
        if k == ErrorKind::BadQuery {
            e.sent_ns = 0;
        }
        s.add(&e);
    }
    let mut nx = answered(20, Proto::Udp, T0, T0, 1000);
    nx.rcode = Rcode::NXDOMAIN;
    nx.truncated = true;
    s.add(&nx);
    let rep = s.report();
    assert_eq!(rep.results, 9);
    assert_eq!(rep.sent, 8);
    assert_eq!(rep.answered, 5);
    assert_eq!(rep.timeouts, 1);
    assert_eq!(rep.errors["refused"], 2);
    assert_eq!(rep.errors["bad-query"], 1);
    assert_eq!(rep.errors["reset"], 0);
    assert_eq!(rep.errors.len(), ErrorKind::ALL.len());
    assert_eq!(rep.truncated, 1);
    assert_eq!(rep.rcodes["NOERROR"], 4);
    assert_eq!(rep.rcodes["NXDOMAIN"], 1);
    assert_eq!(rep.connections.opened, 1);
    assert_eq!(rep.connections.reused, 2);
}

#[test]
fn timing_error_quartiles_signed() {
    let mut s = Summary::new();
    // Errors of -100, -99, ..., 99 µs, in a shuffled order.
    let mut errs: Vec<i64> = (-100..100).collect();
    errs.reverse();
    errs.rotate_left(37);
    for (i, e) in errs.iter().enumerate() {
        let intended = T0 + i as i64 * 1_000_000;
        s.add(&answered(
            i as u64,
            Proto::Udp,
            intended,
            intended + e * 1000,
            1000,
        ));
    }
    let t = s.report().timing_error_us.unwrap();
    assert_eq!(t.count, 200);
    assert_eq!(t.min, -100.0);
    assert_eq!(t.max, 99.0);
    assert!(close(t.mean, -0.5, 1e-9), "{}", t.mean);
    // Nearest rank: the 50th, 100th, 150th and 198th of 200.
    for (got, want) in [(t.p25, -51.0), (t.p50, -1.0), (t.p75, 49.0), (t.p99, 97.0)] {
        assert!(close(got, want, 0.001), "got {got}, want {want}");
    }
}

#[test]
fn timing_error_all_early_or_all_late() {
    let mut s = Summary::new();
    for i in 0..4 {
        s.add(&answered(
            i,
            Proto::Udp,
            T0 + 1_000_000,
            T0 + 1_000_000 - (i as i64 + 1) * 500,
            1,
        ));
    }
    let t = s.report().timing_error_us.unwrap();
    assert_eq!(
        (t.min, t.p25, t.p50, t.p75, t.p99, t.max),
        (-2.0, -2.0, -1.5, -1.0, -0.5, -0.5)
    );
    let mut s = Summary::new();
    for i in 0..4 {
        s.add(&answered(i, Proto::Udp, T0, T0 + i as i64 * 500, 1));
    }
    let t = s.report().timing_error_us.unwrap();
    assert_eq!(
        (t.min, t.p25, t.p50, t.p75, t.p99, t.max),
        (0.0, 0.0, 0.5, 1.0, 1.5, 1.5)
    );
}

/// 1000 queries intended in each second from T0 to T0 + 5 s, evenly spread; `send` says when
/// each is actually sent (None: never).
fn paced(send: impl Fn(i64, i64) -> Option<i64>) -> Summary {
    let mut s = Summary::new();
    let mut index = 0;
    for sec in 0..6 {
        for k in 0..1000 {
            let intended = T0 + sec * S + k * 1_000_000 + 1;
            let r = match send(sec, k) {
                Some(sent) => answered(index, Proto::Udp, intended, sent, 200_000),
                None => QueryResult {
                    sent_ns: 0,
                    received_ns: 0,
                    outcome: Outcome::Error(ErrorKind::Send),
                    ..answered(index, Proto::Udp, intended, intended, 0)
                },
            };
            s.add(&r);
            index += 1;
        }
    }
    s
}

#[test]
fn rate_error_one_second_one_percent_short() {
    // The last 10 queries of second 2 are not sent.
    let s = paced(|sec, k| (sec != 2 || k < 990).then(|| T0 + sec * S + k * 1_000_000 + 1));
    let r = s.report().rate_error;
    // Seconds 0 and 5 are partial (edges): 1..=4 are compared.
    assert_eq!(r.seconds, 4);
    assert_eq!(r.within_0_1pct, Some(0.75));
    assert_eq!(r.within_1pct, Some(1.0));
    assert!(close(r.min_pct.unwrap(), -1.0, 1e-9));
    assert_eq!(r.p25_pct, Some(-1.0));
    assert_eq!(r.p50_pct, Some(0.0));
    assert_eq!(r.p75_pct, Some(0.0));
    assert_eq!(r.max_pct, Some(0.0));
}

#[test]
fn rate_error_late_queries_move_to_the_next_second() {
    // The last 10 queries of second 2 go out 20 ms late, in second 3: -1% then +1%. One more
    // query of second 4 is late by a second (into second 5, an edge): -0.1%.
    let s = paced(|sec, k| {
        let intended = T0 + sec * S + k * 1_000_000 + 1;
        Some(match (sec, k) {
            (2, k) if k >= 990 => intended + 20_000_000,
            (4, 0) => intended + S,
            _ => intended,
        })
    });
    let rep = s.report();
    let r = rep.rate_error;
    assert_eq!(r.seconds, 4);
    // Errors: 0, -1, +1, -0.1 (%).
    assert_eq!(r.within_0_1pct, Some(0.5));
    assert_eq!(r.within_1pct, Some(1.0));
    assert!(close(r.min_pct.unwrap(), -1.0, 1e-9));
    assert!(close(r.p25_pct.unwrap(), -1.0, 1e-9));
    assert!(close(r.p50_pct.unwrap(), -0.1, 1e-9));
    assert!(close(r.p75_pct.unwrap(), 0.0, 1e-9));
    assert!(close(r.max_pct.unwrap(), 1.0, 1e-9));
    // Timing error: 10 queries 20 ms late, one 1 s late.
    let t = rep.timing_error_us.unwrap();
    assert_eq!(t.max, 1e6);
    assert_eq!(t.min, 0.0);
    assert_eq!(t.p99, 0.0);
}

#[test]
fn rate_error_needs_full_seconds() {
    let mut s = Summary::new();
    s.add(&answered(0, Proto::Udp, T0, T0, 1));
    s.add(&answered(1, Proto::Udp, T0 + S + 5, T0 + S + 5, 1));
    let r = s.report().rate_error;
    assert_eq!(r.seconds, 0);
    assert_eq!(r.within_1pct, None);
    assert_eq!(r.p50_pct, None);
}

#[test]
fn qps() {
    // 1000 queries over 1 s, each answered after 1 ms; 10 not answered.
    let mut s = Summary::new();
    for i in 0..1000 {
        let t = T0 + i * 1_000_000;
        let mut r = answered(i as u64, Proto::Udp, t, t, 1_000_000);
        if i % 100 == 0 {
            r.outcome = Outcome::Timeout;
            r.received_ns = 0;
        }
        s.add(&r);
    }
    let rep = s.report();
    // Answers: 990 between the first send (T0) and the last receive (T0 + 1.000 s).
    assert!(close(rep.qps, 990.0, 1e-9), "{}", rep.qps);
    // Sends: 1000 over 0.999 s.
    assert!(
        close(rep.sent_qps, 1000.0 / 0.999, 1e-9),
        "{}",
        rep.sent_qps
    );
    assert!(close(rep.duration_s, 1.0, 1e-9));
    let empty = Summary::new().report();
    assert_eq!(
        (empty.qps, empty.sent_qps, empty.duration_s),
        (0.0, 0.0, 0.0)
    );
    assert!(empty.timing_error_us.is_none());
}

#[test]
fn merge_equals_one_summary() {
    let whole = paced(|sec, k| {
        let intended = T0 + sec * S + k * 1_000_000 + 1;
        (k % 97 != 0).then_some(intended + (k % 13) * 1_000 - 5_000)
    });
    let mut parts = [Summary::new(), Summary::new(), Summary::new()];
    let mut index = 0;
    for sec in 0..6 {
        for k in 0..1000 {
            let intended = T0 + sec * S + k * 1_000_000 + 1;
            let r = if k % 97 != 0 {
                answered(
                    index,
                    Proto::Udp,
                    intended,
                    intended + (k % 13) * 1_000 - 5_000,
                    200_000,
                )
            } else {
                QueryResult {
                    sent_ns: 0,
                    received_ns: 0,
                    outcome: Outcome::Error(ErrorKind::Send),
                    ..answered(index, Proto::Udp, intended, intended, 0)
                }
            };
            parts[index as usize % 3].result(&r).unwrap();
            index += 1;
        }
    }
    let mut merged = Summary::new();
    for p in &parts {
        merged.merge(p);
    }
    assert_eq!(merged.report(), whole.report());
    // The same through a results file.
    let mut w = ldplayer_results::ResultsWriter::with_block_limits(
        Vec::new(),
        500,
        std::time::Duration::from_secs(3600),
    )
    .unwrap();
    let mut index = 0;
    for sec in 0..6 {
        for k in 0..1000 {
            let intended = T0 + sec * S + k * 1_000_000 + 1;
            let r = if k % 97 != 0 {
                answered(
                    index,
                    Proto::Udp,
                    intended,
                    intended + (k % 13) * 1_000 - 5_000,
                    200_000,
                )
            } else {
                QueryResult {
                    sent_ns: 0,
                    received_ns: 0,
                    outcome: Outcome::Error(ErrorKind::Send),
                    ..answered(index, Proto::Udp, intended, intended, 0)
                }
            };
            w.write(&r).unwrap();
            index += 1;
        }
    }
    let file = w.into_inner().unwrap();
    let reader = ldplayer_results::ResultsReader::new(&file[..]).unwrap();
    let from_file = Summary::from_results(reader).unwrap();
    assert_eq!(from_file.report(), whole.report());
    assert_eq!(merged.results(), 6000);
}

#[test]
fn json_keys_and_text() {
    let mut s = paced(|sec, k| Some(T0 + sec * S + k * 1_000_000 + 1 + 3_000));
    let mut tcp = answered(1_000_000, Proto::Tcp, T0 + S, T0 + S, 5_000_000);
    tcp.new_connection = true;
    tcp.handshake_ns = 40_000;
    s.add(&tcp);
    // A reused connection's query carries no handshake.
    let mut again = answered(1_000_001, Proto::Tcp, T0 + S, T0 + S, 5_000_000);
    again.handshake_ns = 0;
    s.add(&again);
    let rep = s.report();
    let v = serde_json::to_value(&rep).unwrap();
    assert_eq!(v["handshake_ms"]["tcp"]["count"], 1);
    let hs = v["handshake_ms"]["tcp"]["p50"].as_f64().unwrap();
    assert!(close(hs, 0.04, 0.0005), "{hs}");
    assert!(v["handshake_ms"].get("udp").is_none());
    assert!(
        rep.to_string().contains("handshake tcp: p50 40.0 µs"),
        "{rep}"
    );
    for key in [
        "sent",
        "answered",
        "timeouts",
        "qps",
        "errors",
        "latency_ms",
        "connections",
        "timing_error_us",
        "rate_error",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["sent"], 6002);
    assert_eq!(v["errors"]["bad-query"], 0);
    for key in ["p5", "p25", "p50", "p75", "p95", "p99", "p99.9"] {
        assert!(v["latency_ms"]["udp"][key].is_f64(), "latency {key}");
    }
    let p50 = v["latency_ms"]["udp"]["p50"].as_f64().unwrap();
    assert!(close(p50, 0.2, 0.0005), "{p50}");
    assert_eq!(v["connections"]["opened"], 1);
    assert_eq!(v["connections"]["reused"], 1);
    for key in ["min", "p25", "p50", "p75", "p99", "max"] {
        assert!(v["timing_error_us"][key].is_f64(), "timing {key}");
    }
    let p50 = v["timing_error_us"]["p50"].as_f64().unwrap();
    assert!(close(p50, 3.0, 0.0005), "{p50}");
    for key in [
        "seconds",
        "within_0_1pct",
        "within_1pct",
        "p25_pct",
        "p50_pct",
        "p75_pct",
    ] {
        assert!(v["rate_error"].get(key).is_some(), "rate {key}");
    }
    let text = rep.to_string();
    assert!(
        text.starts_with(
            "6002 queries: 6002 sent, 6002 answered (NOERROR 6002), 0 timeouts, 0 errors\n"
        ),
        "{text}"
    );
    assert!(text.contains("latency udp: p50 200.0 µs"), "{text}");
    // One answer of 5 ms: its median is that answer, not the middle of its histogram bucket.
    assert!(text.contains("latency tcp: p50 5.000 ms"), "{text}");
    assert!(text.contains("connections: 1 opened, 1 reused"), "{text}");
    assert!(text.contains("timing error: p50 3.0 µs"), "{text}");
    assert!(
        text.contains("rate error: 4 full seconds, 100.0% within ±0.1%, 100.0% within ±1%"),
        "{text}"
    );
    assert_eq!(s.to_string(), text);
    eprintln!("{text}");
}

/// "41 answered" must not read as success when all 41 were SERVFAIL: the text summary breaks the
/// answers down by response code, the four main ones first, then the others by name.
#[test]
fn text_shows_the_answers_by_rcode() {
    let mut s = Summary::new();
    for i in 0..41 {
        let mut r = answered(i, Proto::Udp, T0, T0, 1000);
        r.rcode = Rcode::SERVFAIL;
        s.add(&r);
    }
    let text = s.report().to_string();
    assert!(
        text.starts_with("41 queries: 41 sent, 41 answered (SERVFAIL 41), 0 timeouts, 0 errors\n"),
        "{text}"
    );
    for (i, rcode) in [0u16, 0, 3, 5, 16, 1, 4000, 4].into_iter().enumerate() {
        let mut r = answered(100 + i as u64, Proto::Udp, T0, T0, 1000);
        r.rcode = Rcode(rcode);
        s.add(&r);
    }
    let rep = s.report();
    assert_eq!(
        rep.rcodes_text(),
        "NOERROR 2, NXDOMAIN 1, SERVFAIL 41, REFUSED 1, BADVERS 1, FORMERR 1, NOTIMP 1, RCODE4000 1"
    );
    // Nothing answered: no breakdown.
    let mut t = answered(0, Proto::Udp, T0, T0, 0);
    t.outcome = Outcome::Timeout;
    let mut none = Summary::new();
    none.add(&t);
    assert!(
        none.report()
            .to_string()
            .starts_with("1 queries: 1 sent, 0 answered, 1 timeouts, 0 errors\n"),
        "{}",
        none.report()
    );
}

/// Whether `values` never decrease and lie in [`min`, `max`].
fn ordered_within(min: f64, quantiles: &[f64], max: f64) -> bool {
    let mut previous = min;
    for &q in quantiles {
        if q < previous || q > max {
            return false;
        }
        previous = q;
    }
    min <= max
}

#[test]
fn quantiles_of_one_repeated_value_are_that_value() {
    // 23.517 µs falls in a histogram bucket whose middle is 23.512 µs: the quartiles were
    // reported below the (exact) minimum.
    let mut s = Summary::new();
    for i in 0..8 {
        s.add(&answered(i, Proto::Udp, T0, T0 + 23_517, 23_517));
    }
    let rep = s.report();
    let t = rep.timing_error_us.unwrap();
    assert_eq!(
        (t.min, t.p25, t.p50, t.p75, t.p99, t.max),
        (23.517, 23.517, 23.517, 23.517, 23.517, 23.517)
    );
    let l = &rep.latency_ms["udp"];
    assert_eq!(
        (l.min, l.p5, l.p50, l.p99_9, l.max),
        (0.023517, 0.023517, 0.023517, 0.023517, 0.023517)
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Every quantile the summary reports lies between the minimum and the maximum it reports,
    /// in order, and those are the exact extremes of what was recorded.
    #[test]
    fn reported_quantiles_lie_within_the_exact_extremes(
        values in proptest::collection::vec((-5_000_000i64..5_000_000, 0i64..10_000_000_000, 0usize..3), 1..200)
    ) {
        let mut s = Summary::new();
        for (i, &(timing, latency, proto)) in values.iter().enumerate() {
            let intended = T0 + i as i64 * 1_000;
            let mut r = answered(i as u64, Proto::ALL[proto], intended, intended + timing, latency);
            if proto == 1 {
                r.new_connection = true;
                r.handshake_ns = latency / 3 + 1;
            }
            s.add(&r);
        }
        let rep = s.report();
        let t = rep.timing_error_us.as_ref().unwrap();
        let exact = |v: Vec<i64>| {
            let lo = *v.iter().min().unwrap() as f64;
            let hi = *v.iter().max().unwrap() as f64;
            (lo, hi)
        };
        let (lo, hi) = exact(values.iter().map(|v| v.0).collect());
        proptest::prop_assert_eq!((t.min, t.max), (lo / 1e3, hi / 1e3));
        proptest::prop_assert!(
            ordered_within(t.min, &[t.p25, t.p50, t.p75, t.p99], t.max),
            "timing {:?}", t
        );
        proptest::prop_assert!(t.mean >= t.min && t.mean <= t.max, "timing {:?}", t);
        for (proto, l) in rep.latency_ms.iter().chain(&rep.handshake_ms) {
            proptest::prop_assert!(
                ordered_within(l.min, &[l.p5, l.p25, l.p50, l.p75, l.p95, l.p99, l.p99_9], l.max),
                "{} {:?}", proto, l
            );
        }
        for (k, p) in Proto::ALL.iter().enumerate() {
            let latencies: Vec<i64> = values.iter().filter(|v| v.2 == k).map(|v| v.1).collect();
            if latencies.is_empty() {
                continue;
            }
            let (lo, hi) = exact(latencies);
            let l = &rep.latency_ms[p.as_str()];
            proptest::prop_assert_eq!((l.min, l.max), (lo / 1e6, hi / 1e6));
        }
    }
}
