//! Send times from the kernel: the moment each query's last packet was handed to the device.
//!
//! A query is first marked sent with the clock read just before the system call that hands its
//! last byte to the kernel; on this project's machines that read came 38–45 µs before the
//! packet showed on the wire (a capture's time), more than most answers take on loopback. So
//! each socket also asks the kernel for send timestamps ([`ldplayer_udp::enable_send_timestamps`]),
//! and this queue replaces a query's time with its stamp when the stamp arrives: keyed by
//! datagram number for UDP and by byte position for TCP and TLS (a write's stamp covers every
//! message that ended in it). Without the kernel's stamps the clock reads stand.
//!
//! Under `--fast` (`--send-times kernel-sampled`) a UDP socket asks for the stamps of the first,
//! every [`STAMP_SPAN`]th and the last datagram of each `sendmmsg` only
//! ([`SendTimes::expect_sampled`]); the queries between get a time interpolated between the
//! stamps around them by position. Stamping every datagram cost a sixth of the query engine's
//! CPU under `--fast` (32 datagrams a call). Against a tcpdump witness each query stayed within
//! 10 µs of the wire at the 5th and 95th percentiles run alone, 23.5 µs once under the test
//! suite's load; 1.3 µs with every datagram stamped, 21–76 µs at the 95th with only each call's
//! first and last, and a clock read before the call was 78–141 µs early at the median
//! (`crates/cli/tests/latency_witness.rs`).

use super::inflight::Slot;
use std::collections::VecDeque;

/// Most queries of one socket waiting for their stamps; older ones keep their clock read.
const MAX_WAITING: usize = 4096;

/// A query waiting for the stamp of the packet that carried its last byte.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// Datagrams (UDP; stamped datagrams with [`SendTimes::expect_sampled`]) or bytes (TCP, TLS)
    /// the socket had sent once this query was out.
    end: u64,
    slot: u32,
    gen: u32,
    /// For a datagram sent unstamped between two stamped ones: its place between them.
    between: Option<Between>,
}

/// Where an unstamped datagram went between the stamped ones before and after it: `i` of `n`
/// steps from the stamp whose `end` is `from` to the next.
#[derive(Debug, Clone, Copy)]
struct Between {
    from: u64,
    i: u32,
    n: u32,
}

/// The queries of one socket waiting for their kernel send stamps, in sending order.
#[derive(Debug, Default)]
pub(super) struct SendTimes {
    waiting: VecDeque<Waiting>,
    /// The last stamp taken: the count it brought the socket to, and its time.
    last: Option<(u64, i64)>,
    /// Stamped datagrams sent, with [`SendTimes::expect_sampled`].
    stamped: u64,
}

impl SendTimes {
    /// Waits for the stamp of the packet that brings the socket's count of datagrams or bytes
    /// sent to `end`, for the query in `slot` (generation `gen`).
    pub fn expect(&mut self, slot: u32, gen: u32, end: u64) {
        self.wait(Waiting {
            end,
            slot,
            gen,
            between: None,
        });
    }

    /// Waits for the stamps of one `sendmmsg` whose datagrams carried the queries `sent`
    /// (slot, generation), in order, and which asked the kernel to stamp those
    /// [`stamps_asked`] picks (the first, every [`STAMP_SPAN`]th and the last); returns how
    /// many stamps those are.
    pub fn expect_sampled(&mut self, sent: &[(u32, u32)]) -> u64 {
        let n = sent.len();
        let mut stamps = 0;
        // The stamped datagram before the current one, by index, and its count.
        let mut before = (0, self.stamped);
        for (i, &(slot, gen)) in sent.iter().enumerate() {
            let w = if stamps_asked(i, n) {
                stamps += 1;
                before = (i, self.stamped + stamps);
                Waiting {
                    end: before.1,
                    slot,
                    gen,
                    between: None,
                }
            } else {
                let next = (i + 1..n).find(|&j| stamps_asked(j, n)).unwrap_or(n - 1);
                let (i, steps) = ((i - before.0) as u32, (next - before.0) as u32);
                Waiting {
                    end: before.1 + 1,
                    slot,
                    gen,
                    between: Some(Between {
                        from: before.1,
                        i,
                        n: steps,
                    }),
                }
            };
            self.wait(w);
        }
        self.stamped += stamps;
        stamps
    }

    fn wait(&mut self, w: Waiting) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back(w);
    }

    /// Takes a stamp whose key is `key` (the datagram's number, or the position of the last
    /// byte of the stamped write): every query that was out once it was sent gets `ns` as its
    /// send time.
    pub fn stamp(&mut self, slots: &mut [Slot], key: u32, ns: i64) {
        let Some(front) = self.waiting.front() else {
            return;
        };
        let through = unwrap_near(key as u64 + 1, front.end);
        let last = self.last.replace((through, ns));
        while let Some(w) = self.waiting.front() {
            if w.end > through {
                break;
            }
            let at = match w.between {
                None => Some(ns),
                // Interpolated only between the two stamps of its own call; if the first was
                // lost, the clock read stands.
                Some(b) => last
                    .filter(|&(end, _)| end == b.from)
                    .map(|(_, from_ns)| from_ns + (ns - from_ns) * i64::from(b.i) / i64::from(b.n)),
            };
            if let (Some(slot), Some(at)) = (slots.get_mut(w.slot as usize), at) {
                if slot.live && slot.gen == w.gen {
                    slot.sent_ns = at;
                }
            }
            self.waiting.pop_front();
        }
        if self.waiting.is_empty() && self.waiting.capacity() > 0 {
            // Most sockets are idle most of the time: keep nothing for them.
            self.waiting = VecDeque::new();
        }
    }
}

/// Every how many datagrams of one `sendmmsg` the kernel stamps one.
pub(super) const STAMP_SPAN: usize = 8;

/// Whether the datagram at `i` of a `sendmmsg` of `n` asks for a send stamp: the first, every
/// [`STAMP_SPAN`]th and the last ([`SendTimes::expect_sampled`]).
pub(super) fn stamps_asked(i: usize, n: usize) -> bool {
    i.is_multiple_of(STAMP_SPAN) || i + 1 == n
}

/// The 64-bit count whose low 32 bits are those of `low` and which is nearest to `near`: the
/// kernel's keys are 32 bits and wrap.
fn unwrap_near(low: u64, near: u64) -> u64 {
    let low = low & 0xFFFF_FFFF;
    let base = near & !0xFFFF_FFFF;
    [base.wrapping_sub(1 << 32), base, base.wrapping_add(1 << 32)]
        .into_iter()
        .map(|b| b | low)
        .min_by_key(|v| v.abs_diff(near))
        .unwrap_or(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(n: usize) -> Vec<Slot> {
        (0..n)
            .map(|i| Slot {
                gen: 1,
                live: true,
                index: i as u64,
                trace_ns: 0,
                intended_ns: 0,
                sent_ns: 1,
                deadline_ns: 0,
                proto: ldplayer_trace::Proto::Udp,
                new_connection: false,
                handshake_ns: 0,
                client: 0,
                via: super::super::inflight::Via::None,
                id: 0,
                qlen: 0,
                mismatch: false,
                retries_left: 0,
                wire: Vec::new(),
            })
            .collect()
    }

    /// A call of 10 datagrams asks for stamps on the 1st, 9th and 10th; those between are
    /// placed between the stamps around them by position, and a lost stamp leaves the
    /// datagrams it bounds with their clock reads.
    #[test]
    fn datagrams_between_sampled_stamps_are_interpolated() {
        let asked: Vec<usize> = (0..10).filter(|&i| stamps_asked(i, 10)).collect();
        assert_eq!(asked, [0, 8, 9]);
        let mut slots = slots(20);
        let mut t = SendTimes::default();
        let sent: Vec<(u32, u32)> = (0..10).map(|s| (s, 1)).collect();
        assert_eq!(t.expect_sampled(&sent), 3);
        t.stamp(&mut slots, 0, 1_000);
        t.stamp(&mut slots, 1, 1_800);
        t.stamp(&mut slots, 2, 1_850);
        let times: Vec<i64> = slots[..10].iter().map(|s| s.sent_ns).collect();
        assert_eq!(
            times,
            [1_000, 1_100, 1_200, 1_300, 1_400, 1_500, 1_600, 1_700, 1_800, 1_850]
        );
        // The next call's first stamp never comes: the first datagram takes the next stamp, as
        // any query whose stamp was lost (it was out by then), those between keep their clock
        // reads, and the 9th and 10th get their own stamps.
        let sent: Vec<(u32, u32)> = (10..20).map(|s| (s, 1)).collect();
        assert_eq!(t.expect_sampled(&sent), 3);
        t.stamp(&mut slots, 4, 3_000);
        t.stamp(&mut slots, 5, 3_100);
        let times: Vec<i64> = slots[10..].iter().map(|s| s.sent_ns).collect();
        assert_eq!(times, [3_000, 1, 1, 1, 1, 1, 1, 1, 3_000, 3_100]);
    }

    #[test]
    fn keys_wrap_around() {
        assert_eq!(unwrap_near(5, 3), 5);
        assert_eq!(unwrap_near(2, (1 << 32) - 3), (1 << 32) + 2);
        assert_eq!(unwrap_near(0xFFFF_FFFF, (1 << 32) + 1), 0xFFFF_FFFF);
    }
}
