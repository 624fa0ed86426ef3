//! Loads a zone and answers a mix of queries in-process, reporting load time, memory and
//! ns per answer.
//!
//! `cargo run --release -p ldplayer-zone --example zone_bench -- ZONEFILE [ITERATIONS]`

use std::time::Instant;

use ldplayer_dns::Rtype;
use ldplayer_zone::{AnswerOptions, Zone, ZoneSet};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn query(id: u16, name: &[u8], qtype: Rtype, dnssec: bool) -> Vec<u8> {
    let mut q = vec![(id >> 8) as u8, id as u8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    q.extend_from_slice(name);
    q.extend_from_slice(&qtype.0.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0]);
    q.extend_from_slice(&(if dnssec { 0x8000u16 } else { 0 }).to_be_bytes());
    q.extend_from_slice(&[0, 0]);
    q
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/zones/root-signed-2017-08-21.zone"
        )
        .into()
    });
    let iters: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rss0 = rss_kib();
    let t = Instant::now();
    let zone = Zone::from_file(&path, None).expect("load");
    let load = t.elapsed();
    let rss1 = rss_kib();
    println!(
        "loaded {} records, {} names in {:.3} s, RSS +{} MiB",
        zone.record_count,
        zone.name_count(),
        load.as_secs_f64(),
        (rss1.saturating_sub(rss0)) / 1024
    );
    // Query mix: TLD referrals (NS/A/DS), NXDOMAIN, apex SOA/DNSKEY/NS, DO on half.
    let tlds: Vec<Vec<u8>> = zone
        .nodes
        .iter()
        .filter(|n| n.is_cut() && ldplayer_zone::name::label_count(&n.name) == 1)
        .map(|n| n.name.to_vec())
        .collect();
    let mut queries = Vec::new();
    for (i, t) in tlds.iter().enumerate() {
        let dnssec = i % 2 == 0;
        let mut www = b"\x03www\x07example".to_vec();
        www.extend_from_slice(t);
        queries.push(query(i as u16, &www, Rtype::A, dnssec));
        queries.push(query(i as u16, t, Rtype::DS, dnssec));
        if i % 4 == 0 {
            let mut bad = b"\x0cnonexistent1".to_vec();
            bad.push(i as u8 % 26 + b'a');
            let mut b = vec![bad.len() as u8 - 1];
            b.extend_from_slice(&bad[1..]);
            b.push(0);
            queries.push(query(i as u16, &b, Rtype::A, dnssec));
        }
    }
    queries.push(query(1, b"\x00", Rtype::SOA, true));
    queries.push(query(2, b"\x00", Rtype::DNSKEY, true));
    queries.push(query(3, b"\x00", Rtype::NS, false));
    let set: ZoneSet = std::iter::once(zone).collect();
    let opts = AnswerOptions::default();
    let mut out = Vec::with_capacity(4096);
    let mut bytes = 0usize;
    // Warm-up.
    for q in &queries {
        set.answer_into(q, &opts, &mut out);
    }
    let t = Instant::now();
    let mut n = 0usize;
    while n < iters {
        for q in &queries {
            if let Some(_o) = set.answer_into(q, &opts, &mut out) {
                bytes += out.len();
            }
            n += 1;
        }
    }
    let el = t.elapsed();
    println!(
        "{} answers over {} distinct queries: {:.0} ns/answer ({:.2} M answers/s, mean {} bytes)",
        n,
        queries.len(),
        el.as_nanos() as f64 / n as f64,
        n as f64 / el.as_secs_f64() / 1e6,
        bytes / n
    );
}
