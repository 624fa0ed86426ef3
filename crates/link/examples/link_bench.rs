//! Speed and added latency of the link emulator (run as root by `bench/link.sh`): packets per
//! second through it at 0 and 20 ms of delay, with its CPU time per packet, and the round-trip
//! time it adds at delay 0 beside a plain veth pair between two namespaces. All traffic stays
//! inside the namespaces made here; every loop is bounded in count and time.
//!
//! Usage: link_bench [FLOOD_SECONDS] [PINGS]

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use ldplayer_link::{LinkParams, RunningLink, Timing};
use support::{echo, ping_pong, quantile, set_receive_buffer, Netns, Testbed, A_V4, B_V4};

fn addr(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(ip.parse().expect("an IP address"), port)
}

fn delay(ms: u64) -> LinkParams {
    LinkParams {
        delay: Duration::from_millis(ms),
        ..Default::default()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let flood: f64 = args
        .next()
        .map_or(2.0, |a| a.parse().expect("flood seconds"));
    let pings: u32 = args
        .next()
        .map_or(5_000, |a| a.parse().expect("ping count"));
    let flood = Duration::from_secs_f64(flood.clamp(0.1, 60.0));
    println!(
        "# link emulator bench: {flood:?} UDP floods (28-byte payloads), {pings} pings; load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!();
    println!("## Throughput (UDP flood A -> B, counted by the receiver)");
    println!(
        "{:>8} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>14}",
        "delay_ms",
        "offered_pps",
        "link_pps",
        "recv_pps",
        "link_read",
        "link_out",
        "received",
        "link_cpu_ns/pkt"
    );
    for ms in [0, 20] {
        throughput(ms, flood);
    }
    println!();
    println!("## Round-trip time, sequential 32-byte UDP ping-pong (µs)");
    println!(
        "{:<20} {:>8} {:>8} {:>8} {:>8} {:>9} {:>14}",
        "path", "min", "p50", "p99", "max", "answered", "link_cpu_us/rt"
    );
    let veth = veth_rtts(pings);
    report("veth pair", &veth, Duration::ZERO, Duration::ZERO);
    let (emulated, cpu) = link_rtts(0, pings, Timing::default());
    report("emulator, delay 0", &emulated, Duration::ZERO, cpu);
    let added = quantile(&emulated, 0.5).saturating_sub(quantile(&veth, 0.5));
    println!(
        "added by the emulator at p50: {:.1} µs",
        added.as_secs_f64() * 1e6
    );
    println!();
    println!("## Round trips at 10 ms each way, minus the configured 20 ms (µs)");
    for spin_us in [0, 50, 100] {
        let timing = Timing {
            spin: Duration::from_micros(spin_us),
        };
        let (delayed, cpu) = link_rtts(10, pings.min(1000), timing);
        let label = format!("spin {spin_us} µs");
        report(&label, &delayed, Duration::from_millis(20), cpu);
    }
}

/// Floods A -> B for `length` through a link with `ms` of delay and prints what got through.
fn throughput(ms: u64, length: Duration) {
    let (bed, link) = Testbed::linked(delay(ms), delay(ms), 1);
    let receiver = bed.b.udp(addr(B_V4, 9000));
    set_receive_buffer(&receiver, 64 << 20);
    receiver
        .set_read_timeout(Some(Duration::from_millis(200 + 2 * ms)))
        .expect("timeout");
    let sender = bed.a.udp(addr(A_V4, 0));
    sender.connect(addr(B_V4, 9000)).expect("connect");
    let counting = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let (mut received, mut first, mut last) = (0u64, None, Instant::now());
        while receiver.recv(&mut buf).is_ok() {
            received += 1;
            last = Instant::now();
            first.get_or_insert(last);
        }
        (received, first.map(|f| last - f))
    });
    let cpu_before = link.cpu_time();
    let start = Instant::now();
    let deadline = start + length;
    let mut offered = 0u64;
    let payload = [0x42u8; 28];
    while Instant::now() < deadline {
        // The send buffer may fill: that is back-pressure from the TUN device, not loss.
        if sender.send(&payload).is_ok() {
            offered += 1;
        }
    }
    let sending = start.elapsed();
    let (received, span) = counting.join().expect("receiver");
    let cpu = cpu_delta(&link, cpu_before);
    let counters = link.stop();
    let dir = counters.a_to_b;
    let span = span.unwrap_or(Duration::from_secs(1)).as_secs_f64();
    let per_packet = cpu.map_or("?".into(), |c| {
        let packets = dir.packets_in + counters.b_to_a.packets_in;
        (c.as_nanos() / u128::from(packets.max(1))).to_string()
    });
    println!(
        "{:>8} {:>11.0} {:>11.0} {:>11.0} {:>9} {:>9} {:>9} {:>14}",
        ms,
        offered as f64 / sending.as_secs_f64(),
        dir.packets_out as f64 / sending.as_secs_f64(),
        received as f64 / span,
        dir.packets_in,
        dir.packets_out,
        received,
        per_packet,
    );
}

/// CPU time the link's threads used since `before`.
fn cpu_delta(link: &RunningLink, before: Option<Duration>) -> Option<Duration> {
    Some(link.cpu_time()?.saturating_sub(before?))
}

/// Ping-pong through the emulator with `ms` each way; the RTTs and the emulator's CPU time.
fn link_rtts(ms: u64, pings: u32, timing: Timing) -> (Vec<Duration>, Duration) {
    let (rtts, cpu, counters) = link_rtts_counted(ms, pings, timing);
    let departures = counters.a_to_b.packets_out + counters.b_to_a.packets_out;
    let late = counters.a_to_b.late_departures + counters.b_to_a.late_departures;
    let lateness = counters.a_to_b.lateness_ns + counters.b_to_a.lateness_ns;
    eprintln!(
        "  ({} ms each way, spin {:?}: {late} of {departures} departures later than {:?}, mean lateness {:.1} µs)",
        ms,
        timing.spin,
        ldplayer_link::LATE_THRESHOLD,
        lateness as f64 / departures.max(1) as f64 / 1e3
    );
    (rtts, cpu)
}

/// [`link_rtts`] with the link's final counters.
fn link_rtts_counted(
    ms: u64,
    pings: u32,
    timing: Timing,
) -> (Vec<Duration>, Duration, ldplayer_link::LinkCounters) {
    let (bed, link) = Testbed::linked_with(delay(ms), delay(ms), 1, timing);
    let _server = echo(bed.b.udp(addr(B_V4, 9001)));
    let client = bed.a.udp(addr(A_V4, 0));
    client.connect(addr(B_V4, 9001)).expect("connect");
    ping_pong(&client, 50); // warm up
    let before = link.cpu_time();
    let rtts = ping_pong(&client, pings);
    let cpu = cpu_delta(&link, before).unwrap_or_default() / pings.max(1);
    (rtts, cpu, link.stop())
}

/// Ping-pong over a plain veth pair between two fresh namespaces.
fn veth_rtts(pings: u32) -> Vec<Duration> {
    let (a, b) = (Netns::new(), Netns::new());
    let pid_b = b.pid().to_string();
    a.ip(&[
        "link", "add", "vba", "type", "veth", "peer", "name", "vbb", "netns", &pid_b,
    ]);
    a.ip(&["addr", "add", A_V4, "peer", B_V4, "dev", "vba"]);
    a.ip(&["link", "set", "vba", "up"]);
    b.ip(&["addr", "add", B_V4, "peer", A_V4, "dev", "vbb"]);
    b.ip(&["link", "set", "vbb", "up"]);
    let _server = echo(b.udp(addr(B_V4, 9001)));
    let client: UdpSocket = a.udp(addr(A_V4, 0));
    client.connect(addr(B_V4, 9001)).expect("connect");
    ping_pong(&client, 50);
    ping_pong(&client, pings)
}

/// One line of the RTT table, minus `base` (the configured RTT), with the emulator's CPU time
/// per round trip.
fn report(path: &str, sorted: &[Duration], base: Duration, cpu: Duration) {
    let us = |d: Duration| format!("{:.1}", d.saturating_sub(base).as_secs_f64() * 1e6);
    println!(
        "{:<20} {:>8} {:>8} {:>8} {:>8} {:>9} {:>14.1}",
        path,
        us(sorted[0]),
        us(quantile(sorted, 0.5)),
        us(quantile(sorted, 0.99)),
        us(sorted[sorted.len() - 1]),
        sorted.len(),
        cpu.as_secs_f64() * 1e6,
    );
}
