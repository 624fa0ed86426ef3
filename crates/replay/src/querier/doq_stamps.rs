//! The kernel's send stamps on a DoQ client's socket: a query's send time is the moment the
//! datagram that carried its stream's first bytes was handed to the device, as for UDP, TCP and
//! TLS ([`super::send_times`]).
//!
//! The socket asks for a stamp of every datagram it sends
//! ([`ldplayer_udp::enable_send_timestamps`], keyed by the datagram's number since then); the
//! DoQ thread counts the datagrams it hands the kernel, notes which one carried a query's first
//! stream bytes (the connection tells so as it writes them: [`conn::Event::Sent`] comes out of
//! the `poll_transmit` that wrote them), and when that datagram's stamp comes off the error
//! queue, tells the querier ([`super::doq::DoqEvent::SendStamp`]), which puts it in place of the
//! clock read it was first told. A datagram sent again (a loss, a rejected 0-RTT) carries no
//! first bytes: it moves no send time. Without the stamps the clock reads stand.
//!
//! [`conn::Event::Sent`]: ldplayer_stacks::quic::conn::Event::Sent

use std::collections::VecDeque;
use std::os::fd::RawFd;

/// Most queries of one connection waiting for their stamps; older ones keep their clock read.
const MAX_WAITING: usize = 1024;

/// A query waiting for the stamp of the datagram that carried its first stream bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Waiting {
    /// The datagram's key (its number on the socket, modulo 2³²).
    key: u32,
    slot: u32,
    gen: u32,
}

/// One socket's count of datagrams sent and the queries waiting for their stamps, in sending
/// order.
#[derive(Debug, Default)]
pub(super) struct SendStamps {
    /// The key the kernel gives the next datagram.
    next: u32,
    waiting: VecDeque<Waiting>,
}

impl SendStamps {
    /// Asks the kernel to stamp what `fd` sends; `None` where it will not (the clock reads
    /// stand).
    pub fn enable(fd: RawFd) -> Option<SendStamps> {
        ldplayer_udp::enable_send_timestamps(fd, false)
            .is_ok()
            .then(SendStamps::default)
    }

    /// The key of the next datagram the kernel takes.
    pub fn next_key(&self) -> u32 {
        self.next
    }

    /// One datagram taken by the kernel.
    pub fn count_sent(&mut self) {
        self.next = self.next.wrapping_add(1);
    }

    /// Waits for the stamp of datagram `key` for the query in `slot` (generation `gen`).
    pub fn expect(&mut self, key: u32, slot: u32, gen: u32) {
        if self.waiting.len() >= MAX_WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back(Waiting { key, slot, gen });
    }

    /// Takes the stamp of datagram `key` (`ns`, realtime): `found` gets each query it carried
    /// the first bytes of. Queries of earlier datagrams whose stamps never came keep their
    /// clock reads.
    pub fn stamp(&mut self, key: u32, ns: i64, mut found: impl FnMut(u32, u32, i64)) {
        while let Some(w) = self.waiting.front() {
            // Keys wrap: "at or before `key`" within half the key space.
            if key.wrapping_sub(w.key) >= 1 << 31 {
                break;
            }
            if w.key == key {
                found(w.slot, w.gen, ns);
            }
            self.waiting.pop_front();
        }
        if self.waiting.is_empty() && self.waiting.capacity() > 0 {
            // Most connections are idle most of the time: keep nothing for them.
            self.waiting = VecDeque::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(s: &mut SendStamps, key: u32, ns: i64) -> Vec<(u32, u32, i64)> {
        let mut got = Vec::new();
        s.stamp(key, ns, |slot, gen, ns| got.push((slot, gen, ns)));
        got
    }

    #[test]
    fn a_stamp_goes_to_the_queries_its_datagram_carried_first() {
        let mut s = SendStamps::default();
        // Datagram 0: the handshake; 1 carries queries 7 and 8; 2 carries query 9.
        s.count_sent();
        s.expect(s.next_key(), 7, 1);
        s.expect(s.next_key(), 8, 1);
        s.count_sent();
        s.expect(s.next_key(), 9, 2);
        s.count_sent();
        assert_eq!(stamped(&mut s, 0, 100), []);
        assert_eq!(stamped(&mut s, 1, 200), [(7, 1, 200), (8, 1, 200)]);
        // A stamp seen again (or a resend's) moves nothing.
        assert_eq!(stamped(&mut s, 1, 250), []);
        assert_eq!(stamped(&mut s, 2, 300), [(9, 2, 300)]);
    }

    #[test]
    fn a_missing_stamp_leaves_the_clock_read_and_keys_wrap() {
        let mut s = SendStamps {
            next: u32::MAX,
            ..SendStamps::default()
        };
        s.expect(s.next_key(), 1, 0);
        s.count_sent();
        s.expect(s.next_key(), 2, 0);
        s.count_sent();
        assert_eq!(s.next_key(), 1);
        // Datagram u32::MAX's stamp never came; datagram 0's (after the wrap) did.
        assert_eq!(stamped(&mut s, 0, 500), [(2, 0, 500)]);
        assert!(s.waiting.is_empty());
    }
}
