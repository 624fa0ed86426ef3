//! Opening clients' UDP sockets before their queries are due.
//!
//! A client's first query would otherwise wait for its socket: `socket`, `connect`, the
//! timestamping options and the epoll registration cost ≈ 10–20 µs here, so the 1,000 clients
//! that all appear in the first few milliseconds of a trace made its first queries up to 24 ms
//! late (timing error p50 13 ms over the first 100 ms at 50k qps). The querier has time to spare
//! whenever its next send is more than [`SPIN_NS`](crate::clock::SPIN_NS) away — above all in
//! the 100 ms before the shared start — and spends it opening the sockets of the clients of
//! queries already queued.

use super::pending::Pending;
use super::session::Ctx;
use super::udp::UdpSessions;
use crate::clock;
use ldplayer_trace::Proto;

/// Most queued queries looked at in one call, so that a call never holds up answers for long.
const SCAN_PER_CALL: usize = 4096;
/// What opening one socket may take: no socket is opened closer than this to the deadline.
const OPEN_NS: i64 = 25_000;

/// Opens UDP sockets for the clients of queued queries that have none yet, while there is time
/// before `until_ns` (realtime) and room under the socket limit; never closes a socket to make
/// room.
pub(super) fn open_ahead(
    pending: &mut Pending,
    udp: &mut UdpSessions,
    ctx: &mut Ctx<'_>,
    until_ns: i64,
) {
    if clock::now_ns() + OPEN_NS >= until_ns {
        return;
    }
    let mut at = pending.ahead();
    for _ in 0..SCAN_PER_CALL {
        if !udp.has_room(ctx) || clock::now_ns() + OPEN_NS >= until_ns {
            return;
        }
        let Some(m) = pending.look_ahead(&mut at) else {
            return;
        };
        if ctx.config.proto_override.unwrap_or(m.proto) != Proto::Udp {
            continue;
        }
        ctx.clients.ensure(ctx.config, m.client, m.src);
        udp.open_ahead(m.client, ctx);
    }
}
