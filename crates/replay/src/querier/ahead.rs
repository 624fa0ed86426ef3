//! Opening clients' UDP sockets before their queries are due.
//!
//! A client's first query would otherwise wait for its socket: `socket`, `connect`, the
//! timestamping options and the epoll registration cost ≈ 10–20 µs here, so the 1,000 clients
//! that all appear in the first few milliseconds of a trace made its first queries up to 24 ms
//! late (timing error p50 13 ms over the first 100 ms at 50k qps). The querier has time to spare
//! whenever its next send is more than [`SPIN_NS`] away — above all in the 100 ms before the
//! shared start — and spends it opening the sockets of the clients of queries already queued.

use super::*;

/// Most queued queries looked at in one call, so that a call never holds up answers for long.
const SCAN_PER_CALL: usize = 4096;
/// What opening one socket may take: no socket is opened closer than this to the deadline.
const OPEN_NS: i64 = 25_000;

impl Querier {
    /// Opens UDP sockets for the clients of queued queries that have none yet, while there is
    /// time before `until_ns` (realtime) and room under the socket limit; never closes a socket
    /// to make room.
    pub(super) fn open_ahead(&mut self, until_ns: i64) {
        if self.fast || clock::now_ns() + OPEN_NS >= until_ns {
            return;
        }
        // Where the first query not looked at yet is: batch `bi`, query `qi`.
        let (mut bi, mut qi) = (0, self.cursor + self.scanned_ahead);
        while let Some(b) = self.pending.get(bi) {
            if qi < b.queries.len() {
                break;
            }
            qi -= b.queries.len();
            bi += 1;
        }
        for _ in 0..SCAN_PER_CALL {
            if self.udp_open >= self.config.max_udp_sockets || clock::now_ns() + OPEN_NS >= until_ns
            {
                return;
            }
            let Some(b) = self.pending.get(bi) else {
                return;
            };
            let Some(&m) = b.queries.get(qi) else {
                (bi, qi) = (bi + 1, 0);
                continue;
            };
            qi += 1;
            self.scanned_ahead += 1;
            if self.config.proto_override.unwrap_or(m.proto) != Proto::Udp {
                continue;
            }
            self.ensure_client(m.client, m.src);
            if self.clients.get(&m.client).is_some_and(|c| c.udp == NONE) {
                // A socket that cannot be opened now fails its query when the query is sent.
                let _ = self.udp_socket_for(m.client);
            }
        }
    }

    /// Counts one queued query as taken off the front (sent or dropped).
    pub(super) fn advance_cursor(&mut self) {
        self.cursor += 1;
        self.scanned_ahead = self.scanned_ahead.saturating_sub(1);
    }
}
