//! Send times from the kernel: the moment each query's last packet was handed to the device.
//!
//! A query is first marked sent with the clock read just before the system call that hands its
//! last byte to the kernel; on this project's machines that read came 38–45 µs before the
//! packet showed on the wire (a capture's time), more than most answers take on loopback. So
//! each socket also asks the kernel for send timestamps ([`ldplayer_udp::enable_send_timestamps`]),
//! and this queue replaces a query's time with its stamp when the stamp arrives: keyed by
//! datagram number for UDP and by byte position for TCP and TLS (a write's stamp covers every
//! message that ended in it). Without the kernel's stamps the clock reads stand.

use super::inflight::Slot;
use std::collections::VecDeque;

/// Most queries of one socket waiting for their stamps; older ones keep their clock read.
const MAX_WAITING: usize = 4096;

/// A query waiting for the stamp of the packet that carried its last byte.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// Datagrams (UDP) or bytes (TCP, TLS) the socket had sent once this query was out.
    end: u64,
    slot: u32,
    gen: u32,
}

/// The queries of one socket waiting for their kernel send stamps, in sending order.
#[derive(Debug, Default)]
pub(super) struct SendTimes {
    waiting: VecDeque<Waiting>,
}

impl SendTimes {
    /// Waits for the stamp of the packet that brings the socket's count of datagrams or bytes
    /// sent to `end`, for the query in `slot` (generation `gen`).
    pub fn expect(&mut self, slot: u32, gen: u32, end: u64) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back(Waiting { end, slot, gen });
    }

    /// Takes a stamp whose key is `key` (the datagram's number, or the position of the last
    /// byte of the stamped write): every query that was out once it was sent gets `ns` as its
    /// send time.
    pub fn stamp(&mut self, slots: &mut [Slot], key: u32, ns: i64) {
        let Some(front) = self.waiting.front() else {
            return;
        };
        let through = unwrap_near(key as u64 + 1, front.end);
        while let Some(w) = self.waiting.front() {
            if w.end > through {
                break;
            }
            if let Some(slot) = slots.get_mut(w.slot as usize) {
                if slot.live && slot.gen == w.gen {
                    slot.sent_ns = ns;
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

    #[test]
    fn keys_wrap_around() {
        assert_eq!(unwrap_near(5, 3), 5);
        assert_eq!(unwrap_near(2, (1 << 32) - 3), (1 << 32) + 2);
        assert_eq!(unwrap_near(0xFFFF_FFFF, (1 << 32) + 1), 0xFFFF_FFFF);
    }
}
