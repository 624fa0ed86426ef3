//! UDP workers: each owns one `SO_REUSEPORT` socket on the listen address, receives batches with
//! `recvmmsg` and sends the answers back with one `sendmmsg` (both from `ldplayer-udp`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ldplayer_udp::{send_replies, RecvBatch, Wait, BATCH};
use ldplayer_zone::{AnswerOptions, Views, ZoneSet};
use socket2::{Domain, Protocol, Socket, Type};

use crate::stats::{bump, Counters, Transport};
use crate::POLL_INTERVAL;

/// A blocking UDP socket bound to `addr` with `SO_REUSEPORT`, whose receives and sends time out
/// after [`POLL_INTERVAL`] so the worker sees the stop flag. With `destinations` the kernel
/// reports each query's destination address (needed for split views and wildcard addresses).
pub(crate) fn bind(addr: SocketAddr, destinations: bool) -> io::Result<Socket> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::DGRAM.cloexec(),
        Some(Protocol::UDP),
    )?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_reuse_port(true)?;
    if destinations {
        ldplayer_udp::enable_destinations(sock.as_raw_fd(), addr.is_ipv6())?;
    }
    // Bursts (a replayed trace's, or many resolvers' at once) outlast the default 208 KiB
    // receive buffer: the demo's 20k qps Poisson replay lost ≈ 0.1% of its queries there. The
    // kernel caps the size at net.core.rmem_max.
    let _ = sock.set_recv_buffer_size(RECV_BUFFER);
    sock.set_read_timeout(Some(POLL_INTERVAL))?;
    sock.set_write_timeout(Some(POLL_INTERVAL))?;
    sock.bind(&addr.into())?;
    Ok(sock)
}

/// The receive buffer asked for each UDP socket.
const RECV_BUFFER: usize = 4 << 20;

/// The reusable buffers of one worker: the receive slots and a response buffer per slot.
/// Nothing is allocated per query once the response buffers have grown to the largest response.
struct Slots {
    batch: RecvBatch,
    resps: Vec<Vec<u8>>,
    /// Slots with a response to send, in order.
    reply: [usize; BATCH],
}

/// The worker loop: runs until `stop` is set. With `destinations` (the socket was bound with
/// them) each query is answered from the view of the address it was sent to, and the answer
/// leaves from that address.
pub(crate) fn run(
    sock: Socket,
    destinations: bool,
    views: Arc<Views>,
    opts: AnswerOptions,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let opts = AnswerOptions { tcp: false, ..opts };
    let fd = sock.as_raw_fd();
    // Queries to an address in no view are answered from no zones: REFUSED.
    let nothing = ZoneSet::new();
    let mut slots = Slots {
        batch: if destinations {
            RecvBatch::with_destinations()
        } else {
            RecvBatch::new()
        },
        resps: (0..BATCH).map(|_| Vec::with_capacity(1232)).collect(),
        reply: [0; BATCH],
    };
    while !stop.load(Ordering::Relaxed) {
        let n = match slots.batch.recv(fd, Wait::ForOne) {
            Ok(n) => n,
            Err(_) => {
                // A transient error (e.g. ENOMEM, or an ICMP error reported on the socket):
                // pause briefly rather than spin.
                std::thread::sleep(POLL_INTERVAL / 10);
                continue;
            }
        };
        let mut replies = 0;
        for i in 0..n {
            counters.query(slots.batch.data(i).len(), Transport::Udp);
            if slots.batch.truncated(i) {
                bump(&counters.dropped);
                continue;
            }
            let query = slots.batch.data(i);
            let zones = match views.for_destination(slots.batch.destination(i)) {
                Some(z) => z,
                None => {
                    bump(&counters.no_view);
                    &nothing
                }
            };
            match zones.answer_into(query, &opts, &mut slots.resps[i]) {
                Some(outcome) => {
                    counters.response(&outcome, slots.resps[i].len(), Transport::Udp);
                    slots.reply[replies] = i;
                    replies += 1;
                }
                None => bump(&counters.dropped),
            }
        }
        if replies > 0 {
            let mut out: [&[u8]; BATCH] = [&[]; BATCH];
            for (o, &i) in out.iter_mut().zip(&slots.reply[..replies]) {
                *o = &slots.resps[i];
            }
            let refused = send_replies(fd, &slots.batch, &slots.reply[..replies], &out[..replies]);
            for _ in 0..refused {
                bump(&counters.send_errors);
            }
        }
    }
}
