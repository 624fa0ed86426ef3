//! The packets a direction holds until their departure time: a FIFO when departures never go
//! backwards, a min-heap when the direction may reorder, bounded in bytes either way so that
//! a long delay at a high rate cannot exhaust memory.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The bound of the bytes one direction holds in its delay line (64 MiB): 160 ms of delay at
/// 3.3 Gbit/s, beyond what the emulator carries. A packet above it is dropped and counted as a
/// queue drop.
pub const DEFAULT_HELD_LIMIT_BYTES: usize = 64 << 20;

/// Packets waiting for their departure, earliest first; ties leave in arrival order.
#[derive(Debug)]
pub struct DelayLine<P> {
    order: Order<P>,
    held_bytes: usize,
    limit_bytes: usize,
    /// Arrival sequence number, the tie-break of equal departure times in the heap.
    next_seq: u64,
}

/// The two ways of keeping packets ordered by departure.
#[derive(Debug)]
enum Order<P> {
    /// Departures are pushed in non-decreasing order: a plain queue.
    Fifo(VecDeque<Held<P>>),
    /// Departures may come in any order.
    Heap(BinaryHeap<Reverse<Held<P>>>),
}

/// One held packet, ordered by departure then arrival.
#[derive(Debug)]
struct Held<P> {
    at_ns: u64,
    seq: u64,
    len: usize,
    packet: P,
}

impl<P> PartialEq for Held<P> {
    fn eq(&self, other: &Self) -> bool {
        (self.at_ns, self.seq) == (other.at_ns, other.seq)
    }
}
impl<P> Eq for Held<P> {}
impl<P> PartialOrd for Held<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Held<P> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at_ns, self.seq).cmp(&(other.at_ns, other.seq))
    }
}

impl<P> DelayLine<P> {
    /// An empty line holding at most `limit_bytes`; `reorder` chooses the heap, which accepts
    /// departures in any order (the FIFO requires them non-decreasing).
    pub fn new(reorder: bool, limit_bytes: usize) -> DelayLine<P> {
        DelayLine {
            order: if reorder {
                Order::Heap(BinaryHeap::new())
            } else {
                Order::Fifo(VecDeque::new())
            },
            held_bytes: 0,
            limit_bytes,
            next_seq: 0,
        }
    }

    /// Holds `packet` (`len` bytes) until `at_ns`; gives it back when the line is full. In
    /// FIFO mode a departure earlier than the last one pushed leaves right after it instead.
    pub fn push(&mut self, at_ns: u64, len: usize, packet: P) -> Result<(), P> {
        if self.held_bytes.saturating_add(len) > self.limit_bytes {
            return Err(packet);
        }
        self.held_bytes += len;
        let seq = self.next_seq;
        self.next_seq += 1;
        match &mut self.order {
            Order::Fifo(queue) => {
                let at_ns = queue.back().map_or(at_ns, |last| at_ns.max(last.at_ns));
                queue.push_back(Held {
                    at_ns,
                    seq,
                    len,
                    packet,
                });
            }
            Order::Heap(heap) => heap.push(Reverse(Held {
                at_ns,
                seq,
                len,
                packet,
            })),
        }
        Ok(())
    }

    /// The earliest departure held, if any.
    pub fn next_departure(&self) -> Option<u64> {
        match &self.order {
            Order::Fifo(queue) => queue.front().map(|h| h.at_ns),
            Order::Heap(heap) => heap.peek().map(|Reverse(h)| h.at_ns),
        }
    }

    /// The earliest packet if it is due at `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<P> {
        if self.next_departure()? > now_ns {
            return None;
        }
        let held = match &mut self.order {
            Order::Fifo(queue) => queue.pop_front()?,
            Order::Heap(heap) => heap.pop()?.0,
        };
        self.held_bytes -= held.len;
        Some(held.packet)
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    /// Number of packets held now.
    pub fn len(&self) -> usize {
        match &self.order {
            Order::Fifo(queue) => queue.len(),
            Order::Heap(heap) => heap.len(),
        }
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_leave_when_due_and_in_departure_order() {
        for reorder in [false, true] {
            let mut line = DelayLine::new(reorder, 1000);
            line.push(10, 1, 'a').expect("room");
            line.push(20, 1, 'b').expect("room");
            line.push(20, 1, 'c').expect("room");
            assert_eq!(line.next_departure(), Some(10));
            assert_eq!(line.pop_due(9), None);
            assert_eq!(line.pop_due(10), Some('a'));
            assert_eq!(line.pop_due(25), Some('b'), "ties leave in arrival order");
            assert_eq!(line.pop_due(25), Some('c'));
            assert!(line.is_empty());
        }
    }

    #[test]
    fn the_heap_reorders_and_the_fifo_does_not() {
        let mut heap = DelayLine::new(true, 1000);
        heap.push(30, 1, 'a').expect("room");
        heap.push(10, 1, 'b').expect("room");
        assert_eq!(heap.pop_due(100), Some('b'));
        let mut fifo = DelayLine::new(false, 1000);
        fifo.push(30, 1, 'a').expect("room");
        fifo.push(10, 1, 'b').expect("room");
        assert_eq!(fifo.pop_due(100), Some('a'));
        assert_eq!(fifo.pop_due(100), Some('b'));
    }

    #[test]
    fn a_full_line_gives_the_packet_back_and_frees_room_as_packets_leave() {
        let mut line = DelayLine::new(false, 100);
        line.push(1, 60, 'a').expect("room");
        assert_eq!(line.push(2, 41, 'b'), Err('b'));
        line.push(2, 40, 'c').expect("exactly full");
        assert_eq!(line.held_bytes(), 100);
        assert_eq!(line.pop_due(1), Some('a'));
        line.push(3, 60, 'd').expect("room again");
        assert_eq!(line.len(), 2);
    }
}
