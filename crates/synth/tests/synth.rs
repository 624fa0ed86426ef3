//! Behaviour of the synthesizer as seen through its records.

use ldplayer_dns::{flag, Class, Fields, Message, Rtype};
use ldplayer_synth::{
    RootLike, Synth, SynthConfig, SynthError, Workload, DEFAULT_START_NS, SYN_INTERVALS_NS,
};
use ldplayer_trace::{Collect, Proto, Record, RecordBuf, Sink, SinkError, Source};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

fn collect(config: SynthConfig) -> Vec<RecordBuf> {
    let mut sink = Collect::default();
    Synth::new(config).unwrap().run(&mut sink).unwrap();
    sink.records
}

/// Runs `config` through `f` record by record, without keeping the records.
fn each(config: SynthConfig, f: impl FnMut(&Record<'_>)) {
    struct Each<F>(F);
    impl<F: FnMut(&Record<'_>)> Sink for Each<F> {
        fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
            (self.0)(r);
            Ok(())
        }
    }
    Synth::new(config).unwrap().run(&mut Each(f)).unwrap();
}

fn workloads() -> Vec<SynthConfig> {
    vec![
        SynthConfig::syn(2),
        SynthConfig::poisson(5000.0),
        SynthConfig {
            clients: 1000,
            ..SynthConfig::root_like(5000.0)
        },
    ]
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    for base in workloads() {
        let config = SynthConfig {
            count: Some(5000),
            tcp_share: 0.3,
            seed: 7,
            ..base
        };
        let a = collect(config.clone());
        let b = collect(config.clone());
        assert_eq!(a, b);
        // Running the same generator twice also repeats itself.
        let mut synth = Synth::new(config.clone()).unwrap();
        let (mut c, mut d) = (Collect::default(), Collect::default());
        synth.run(&mut c).unwrap();
        synth.run(&mut d).unwrap();
        assert_eq!(c.records, a);
        assert_eq!(d.records, a);
        let other = collect(SynthConfig { seed: 8, ..config });
        assert_eq!(other.len(), a.len());
        assert_ne!(other, a);
    }
}

#[test]
fn output_is_pinned() {
    // A fingerprint of a trace per workload: it must not change across platforms or releases
    // unless the generator is changed on purpose.
    let mut got = Vec::new();
    for base in workloads() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for &b in bytes {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        };
        each(
            SynthConfig {
                count: Some(2000),
                tcp_share: 0.2,
                seed: 42,
                ..base
            },
            |r| {
                eat(&r.time_ns.to_be_bytes());
                eat(r.src.to_string().as_bytes());
                eat(r.dst.to_string().as_bytes());
                eat(&[r.proto as u8]);
                eat(&r.conn.to_be_bytes());
                eat(r.wire);
            },
        );
        got.push(h);
    }
    assert_eq!(got, PINNED, "{got:#x?}");
}

const PINNED: [u64; 3] = [
    0x37ca_fac9_b30e_b533,
    0x13b0_e6d8_214d_cc21,
    0xfc1e_8854_9409_1536,
];

#[test]
fn count_and_duration_bound_the_trace() {
    assert_eq!(
        collect(SynthConfig {
            count: Some(1234),
            ..SynthConfig::syn(3)
        })
        .len(),
        1234
    );
    let by_time = SynthConfig {
        count: None,
        duration_ns: Some(1_000_000_000),
        ..SynthConfig::syn(2)
    };
    assert_eq!(collect(by_time.clone()).len(), 100);
    assert_eq!(
        collect(SynthConfig {
            count: Some(30),
            ..by_time.clone()
        })
        .len(),
        30
    );
    let poisson = collect(SynthConfig {
        count: None,
        duration_ns: Some(2_000_000_000),
        ..SynthConfig::poisson(1000.0)
    });
    assert!((1800..2200).contains(&poisson.len()), "{}", poisson.len());
    assert!(poisson
        .iter()
        .all(|r| r.time_ns < DEFAULT_START_NS + 2_000_000_000));
}

#[test]
fn fixed_interval_is_exact_and_round_robin() {
    for (i, interval) in SYN_INTERVALS_NS.iter().enumerate() {
        let records = collect(SynthConfig {
            count: Some(1000),
            clients: 7,
            start_ns: 5,
            ..SynthConfig::syn(i)
        });
        for (n, r) in records.iter().enumerate() {
            assert_eq!(r.time_ns, 5 + n as i64 * *interval as i64);
            assert_eq!(r.src.ip(), records[n % 7].src.ip());
        }
        let clients: HashSet<IpAddr> = records.iter().map(|r| r.src.ip()).collect();
        assert_eq!(clients.len(), 7);
    }
}

#[test]
fn time_is_ordered() {
    for base in workloads() {
        let records = collect(SynthConfig {
            count: Some(20_000),
            ..base
        });
        assert!(records.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        assert_eq!(records[0].time_ns, DEFAULT_START_NS);
    }
}

#[test]
fn poisson_rate() {
    let (mut first, mut last, mut n) = (0, 0, 0u64);
    let mut gaps_over_mean = 0u64;
    let mut prev = 0;
    each(
        SynthConfig {
            count: Some(100_000),
            seed: 3,
            ..SynthConfig::poisson(10_000.0)
        },
        |r| {
            if n == 0 {
                first = r.time_ns;
            } else if r.time_ns - prev > 100_000 {
                gaps_over_mean += 1;
            }
            prev = r.time_ns;
            last = r.time_ns;
            n += 1;
        },
    );
    let rate = (n - 1) as f64 / ((last - first) as f64 / 1e9);
    assert!((rate - 10_000.0).abs() < 150.0, "rate {rate}");
    // Exponential gaps: P(gap > mean) = 1/e.
    let share = gaps_over_mean as f64 / (n - 1) as f64;
    assert!((share - (-1f64).exp()).abs() < 0.01, "{share}");
}

#[test]
fn root_like_clients_are_heavy_tailed() {
    // The calibrated shape: 100 000 clients, 1 000 000 queries (10 per client on average).
    let mut per_client: HashMap<IpAddr, u32> = HashMap::new();
    let mut qnames_junk = 0u64;
    let mut name = Vec::new();
    each(
        SynthConfig {
            count: Some(1_000_000),
            seed: 11,
            ..SynthConfig::root_like(50_000.0)
        },
        |r| {
            *per_client.entry(r.src.ip()).or_default() += 1;
            let msg = Message::parse(r.wire).unwrap();
            name.clear();
            msg.qname_wire(&mut name);
            let tld_start = last_label(&name);
            if !KNOWN
                .iter()
                .any(|t| name[tld_start + 1..name.len() - 1] == *t.as_bytes())
            {
                qnames_junk += 1;
            }
        },
    );
    let mut counts: Vec<u32> = per_client.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    assert_eq!(total, 1_000_000);
    let top: u64 = counts[..1000].iter().map(|&c| c as u64).sum();
    let top_share = top as f64 / total as f64;
    assert!((0.6..0.9).contains(&top_share), "top 1% send {top_share}");
    let median = counts[counts.len() / 2];
    assert!(median < 10, "median client sends {median}");
    assert!(
        counts[0] as u64 * 20 < total,
        "busiest client sends {}",
        counts[0]
    );
    let junk = qnames_junk as f64 / total as f64;
    assert!((junk - 0.5).abs() < 0.01, "junk share {junk}");
}

const KNOWN: &[&str] = &[
    "com", "net", "arpa", "org", "de", "uk", "cn", "ru", "jp", "br", "fr", "it", "nl", "au",
    "info", "io", "in", "pl", "eu", "ca", "es", "kr", "tw", "xyz", "edu", "gov", "co", "me", "us",
    "ch",
];

/// Offset of the last label of an uncompressed wire name.
fn last_label(name: &[u8]) -> usize {
    let mut p = 0;
    let mut last = 0;
    while name[p] != 0 {
        last = p;
        p += 1 + name[p] as usize;
    }
    last
}

#[test]
fn do_and_edns_shares() {
    let (mut n, mut edns, mut dnssec_ok) = (0u64, 0u64, 0u64);
    each(
        SynthConfig {
            count: Some(100_000),
            edns_share: 0.8,
            do_share: 0.3,
            udp_size: 4096,
            ..SynthConfig::poisson(1000.0)
        },
        |r| {
            let f = Fields::of(&Message::parse(r.wire).unwrap());
            n += 1;
            if let Some(e) = f.edns {
                edns += 1;
                assert_eq!((e.version, e.udp_size), (0, 4096));
                dnssec_ok += e.dnssec_ok as u64;
            }
        },
    );
    assert!((edns as f64 / n as f64 - 0.8).abs() < 0.01);
    assert!((dnssec_ok as f64 / n as f64 - 0.3).abs() < 0.01);
}

#[test]
fn tcp_share_is_per_client_with_one_connection_each() {
    let mut seen: HashMap<IpAddr, (Proto, u64, u16)> = HashMap::new();
    let mut conn_order = Vec::new();
    each(
        SynthConfig {
            count: Some(200_000),
            clients: 10_000,
            tcp_share: 0.25,
            ..SynthConfig::poisson(1000.0)
        },
        |r| {
            let entry = seen.entry(r.src.ip()).or_insert_with(|| {
                if r.proto == Proto::Tcp {
                    conn_order.push(r.conn);
                }
                (r.proto, r.conn, r.src.port())
            });
            assert_eq!(
                (entry.0, entry.1),
                (r.proto, r.conn),
                "client changed transport"
            );
            match r.proto {
                Proto::Tcp => assert_eq!(entry.2, r.src.port()),
                _ => assert_eq!(r.conn, 0),
            }
        },
    );
    let tcp = seen.values().filter(|v| v.0 == Proto::Tcp).count();
    let share = tcp as f64 / seen.len() as f64;
    assert!((share - 0.25).abs() < 0.02, "{share}");
    let dense: Vec<u64> = (1..=conn_order.len() as u64).collect();
    assert_eq!(
        conn_order, dense,
        "connections are numbered 1, 2, 3... by first use"
    );
}

#[test]
fn every_query_parses_as_configured() {
    for rd in [false, true] {
        for base in workloads() {
            let server = Synth::new(base.clone()).unwrap().server();
            let mut qtypes: HashMap<Rtype, u64> = HashMap::new();
            each(
                SynthConfig {
                    count: Some(50_000),
                    rd,
                    ..base
                },
                |r| {
                    let msg = Message::parse(r.wire).unwrap();
                    assert_eq!(msg.end(), r.wire.len());
                    let f = Fields::of(&msg);
                    assert!(!f.qr);
                    assert_eq!(f.flags, if rd { flag::RD } else { 0 });
                    let q = f.question.unwrap();
                    assert_eq!(q.qclass, Class::IN);
                    *qtypes.entry(q.qtype).or_default() += 1;
                    assert_eq!(f.edns.unwrap().udp_size, 1232);
                    assert_eq!(r.dst, server);
                    assert!(r.src.port() >= 1024);
                },
            );
            let a = qtypes[&Rtype::A] as f64 / 50_000.0;
            let aaaa = qtypes[&Rtype::AAAA] as f64 / 50_000.0;
            assert!((a - 0.45).abs() < 0.01 && (aaaa - 0.2).abs() < 0.01);
            assert_eq!(qtypes.len(), 12);
        }
    }
}

#[test]
fn unique_names_are_unique() {
    for base in [SynthConfig::syn(4), SynthConfig::poisson(1e6)] {
        let mut names = HashSet::new();
        each(
            SynthConfig {
                count: Some(100_000),
                zone: "Test.Example.".into(),
                ..base
            },
            |r| {
                let mut name = Vec::new();
                Message::parse(r.wire).unwrap().qname_wire(&mut name);
                assert!(name.ends_with(b"\x04Test\x07Example\x00"));
                assert!(names.insert(name));
            },
        );
        assert_eq!(names.len(), 100_000);
    }
}

#[test]
fn ipv6_clients() {
    let records = collect(SynthConfig {
        count: Some(100),
        clients: 10,
        client_net: "2001:db8:1::".parse().unwrap(),
        client_prefix_len: 48,
        ..SynthConfig::default()
    });
    assert_eq!(
        records[3].src.ip(),
        "2001:db8:1::4".parse::<IpAddr>().unwrap()
    );
    assert_eq!(
        records[0].dst,
        "[2001:db8::53]:53".parse::<SocketAddr>().unwrap()
    );
}

#[test]
fn stops_quietly_when_the_sink_stops() {
    struct Stop(u32, bool);
    impl Sink for Stop {
        fn record(&mut self, _: &Record<'_>) -> Result<(), SinkError> {
            self.0 += 1;
            if self.0 == 10 {
                Err(SinkError::Stopped)
            } else {
                Ok(())
            }
        }
        fn finish(&mut self) -> Result<(), SinkError> {
            self.1 = true;
            Ok(())
        }
    }
    let mut sink = Stop(0, false);
    Synth::new(SynthConfig::default())
        .unwrap()
        .run(&mut sink)
        .unwrap();
    assert_eq!((sink.0, sink.1), (10, true));
}

#[test]
fn bad_configurations_are_rejected() {
    let bad = |c: SynthConfig| Synth::new(c).unwrap_err();
    let d = SynthConfig::default;
    assert_eq!(bad(SynthConfig::fixed(0)), SynthError::ZeroInterval);
    assert_eq!(bad(SynthConfig::poisson(0.0)), SynthError::BadRate(0.0));
    assert!(matches!(
        bad(SynthConfig::poisson(f64::NAN)),
        SynthError::BadRate(_)
    ));
    assert!(matches!(
        bad(SynthConfig {
            do_share: 1.5,
            ..d()
        }),
        SynthError::BadShare { .. }
    ));
    assert!(matches!(
        bad(SynthConfig {
            tcp_share: -0.1,
            ..d()
        }),
        SynthError::BadShare { .. }
    ));
    assert!(matches!(
        bad(SynthConfig {
            edns_share: 0.5,
            do_share: 0.6,
            ..d()
        }),
        SynthError::DoWithoutEdns { .. }
    ));
    assert_eq!(
        bad(SynthConfig { clients: 0, ..d() }),
        SynthError::NoClients
    );
    assert!(matches!(
        bad(SynthConfig {
            client_prefix_len: 30,
            clients: 4,
            ..d()
        }),
        SynthError::TooManyClients { .. }
    ));
    assert!(matches!(
        bad(SynthConfig {
            client_prefix_len: 40,
            ..d()
        }),
        SynthError::BadPrefixLen { .. }
    ));
    assert_eq!(
        bad(SynthConfig {
            server: Some("[2001:db8::1]:53".parse().unwrap()),
            ..d()
        }),
        SynthError::FamilyMismatch
    );
    assert!(matches!(
        bad(SynthConfig {
            zone: "a..b".into(),
            ..d()
        }),
        SynthError::BadZone(_)
    ));
    assert_eq!(
        bad(SynthConfig {
            qtypes: vec![],
            ..d()
        }),
        SynthError::NoQtypes
    );
    assert_eq!(
        bad(SynthConfig {
            qtypes: vec![(Rtype::A, 0)],
            ..d()
        }),
        SynthError::NoQtypes
    );
    assert_eq!(
        bad(SynthConfig { count: None, ..d() }),
        SynthError::Unbounded
    );
    let root = |r: RootLike| SynthConfig {
        workload: Workload::RootLike(r),
        ..d()
    };
    assert!(matches!(
        bad(root(RootLike {
            zipf_exponent: -1.0,
            ..RootLike::new(1.0)
        })),
        SynthError::BadZipf(_)
    ));
    assert!(matches!(
        bad(root(RootLike {
            junk_share: 2.0,
            ..RootLike::new(1.0)
        })),
        SynthError::BadShare { .. }
    ));
}

#[test]
fn times_that_do_not_fit_are_refused_not_cut_short() {
    // One query a second from 2.5 s before the last time that fits: 3 fit, 10 do not.
    let near_end = SynthConfig {
        start_ns: i64::MAX - 2_500_000_000,
        count: Some(10),
        ..SynthConfig::syn(0)
    };
    let e = Synth::new(near_end.clone()).expect_err("10 queries do not fit");
    assert!(
        matches!(e, SynthError::TimeOutOfRange { query: 10, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("2262"), "{e}");
    let fits = SynthConfig {
        count: Some(3),
        ..near_end.clone()
    };
    assert_eq!(collect(fits).len(), 3);
    // A duration that ends before the range does is no overflow.
    let by_duration = SynthConfig {
        count: None,
        duration_ns: Some(2_000_000_001),
        ..near_end
    };
    assert_eq!(collect(by_duration).len(), 3);
    // Random gaps: found at the query that leaves the range, as an error of the run.
    let poisson = SynthConfig {
        workload: Workload::Poisson { rate_qps: 1e-300 },
        count: Some(5),
        ..SynthConfig::default()
    };
    let mut sink = Collect::default();
    let err = Synth::new(poisson)
        .expect("a valid configuration")
        .run(&mut sink)
        .expect_err("the second query is out of range");
    assert!(err.to_string().contains("query 2 "), "{err}");
    assert_eq!(sink.records.len(), 1);
}

/// Clients with a gap variation send on their own clocks: each client's gaps have the asked
/// mean (its rate) and variation, and the trace stays in time order.
#[test]
fn clients_with_a_gap_variation_keep_it() {
    let clients = 40u32;
    for cv in [0.2, 3.0] {
        let config = SynthConfig {
            clients,
            count: Some(40_000),
            seed: 9,
            workload: Workload::Clients(Box::new(ldplayer_synth::ClientMix {
                rates_qps: vec![2.0; clients as usize],
                protos: vec![Proto::Udp; clients as usize],
                gap_cvs: vec![cv; clients as usize],
            })),
            ..SynthConfig::default()
        };
        let mut times: HashMap<IpAddr, Vec<i64>> = HashMap::new();
        let mut last = i64::MIN;
        each(config, |r| {
            assert!(r.time_ns >= last, "time order");
            last = r.time_ns;
            times.entry(r.src.ip()).or_default().push(r.time_ns);
        });
        assert_eq!(times.len(), clients as usize);
        let (mut ratio_squares, mut n, mut mean_gaps) = (0.0, 0.0, 0.0);
        for t in times.values() {
            let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e9).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            mean_gaps += mean / clients as f64;
            ratio_squares += gaps.iter().map(|g| (g / mean).powi(2)).sum::<f64>();
            n += gaps.len() as f64;
        }
        let measured = (ratio_squares / n - 1.0).sqrt();
        assert!(
            (measured - cv).abs() < cv * 0.25,
            "gap variation {measured}, asked {cv}"
        );
        assert!(
            (mean_gaps - 0.5).abs() < 0.1,
            "mean gap {mean_gaps} s at 2 q/s"
        );
    }
}
