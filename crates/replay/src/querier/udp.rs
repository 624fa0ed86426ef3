//! UDP: one connected socket per original client (least recently used closed past the limit),
//! sends batched with `sendmmsg`, answers read with `recvmmsg`, send and receive times from the
//! kernel's stamps.

use super::answer::Mismatch;
use super::inflight::{Reply, Via};
use super::send_times::{stamps_asked, SendTimes};
use super::session::{Ctx, Readiness, Transport, TOKEN_SPAN};
use super::transport::MatchKey;
use super::NONE;
use crate::cause::{kind_of_io, Cause};
use crate::clock;
use crate::config::Timing;
use crate::net;
use ldplayer_dns::flag;
use ldplayer_results::{ErrorKind, Outcome};
use ldplayer_udp::{RecvBatch, Wait, BATCH, RECV_BUF};
use mio::net::UdpSocket;
use mio::{Interest, Token};
use std::io;
use std::os::fd::AsRawFd;

/// A client's connected UDP socket, linked into the least-recently-used list.
struct UdpSock {
    uid: u64,
    client: u32,
    sock: UdpSocket,
    /// Datagrams sent on the socket (the kernel's send stamps count them too).
    datagrams: u64,
    /// Queries waiting for the kernel's send stamps; `None` without them.
    send_times: Option<SendTimes>,
    /// The kernel stamps only the datagrams that ask, a sample of each `sendmmsg`
    /// ([`SendTimes::expect_sampled`]); otherwise every datagram.
    stamp_sampled: bool,
    /// ICMP reports come through the error queue (`IP_RECVERR`), with the send stamps.
    icmp_queued: bool,
    prev: u32,
    next: u32,
}

/// The UDP sockets of one querier's clients.
pub(super) struct UdpSessions {
    /// The first of this transport's poll tokens (socket `i` is `token_base + i`).
    token_base: usize,
    socks: Vec<Option<UdpSock>>,
    free: Vec<u32>,
    open: usize,
    /// The least recently used socket, first to close past the limit.
    lru_head: u32,
    lru_tail: u32,
    /// Queries to send at the next [`Transport::flush`], in order.
    out: Vec<u32>,
    /// The queries (slot, generation) of one `sendmmsg` sent with sampled stamps, in order.
    stamped: Vec<(u32, u32)>,
    recv: RecvBatch,
    /// Where an answer is copied out of `recv` before it is completed.
    answer_buf: Vec<u8>,
    /// Kernel send stamps read off a socket's error queue.
    stamps: Vec<ldplayer_udp::SendStamp>,
}

impl UdpSessions {
    /// No sockets yet; their tokens start at `token_base`.
    pub(super) fn new(token_base: usize) -> UdpSessions {
        UdpSessions {
            token_base,
            socks: Vec::new(),
            free: Vec::new(),
            open: 0,
            lru_head: NONE,
            lru_tail: NONE,
            out: Vec::new(),
            stamped: Vec::new(),
            recv: RecvBatch::with_timestamps(),
            answer_buf: Vec::with_capacity(RECV_BUF),
            stamps: Vec::new(),
        }
    }

    /// Whether more sockets may open without closing one.
    pub(super) fn has_room(&self, ctx: &Ctx<'_>) -> bool {
        self.open < ctx.config.max_udp_sockets
    }

    /// Opens `client`'s socket before its first query is due, if it has none.
    pub(super) fn open_ahead(&mut self, client: u32, ctx: &mut Ctx<'_>) {
        if ctx.clients.get(client).is_some_and(|c| c.udp == NONE) {
            // A socket that cannot be opened now fails its query when the query is sent.
            let _ = self.socket_for(client, ctx);
        }
    }

    /// Takes socket `i` out of the recency list, if it is in it.
    fn lru_unlink(&mut self, i: u32) {
        let (prev, next) = match &self.socks[i as usize] {
            Some(u) => (u.prev, u.next),
            None => return,
        };
        // A socket just opened is in no list yet: unlinking it must not touch the ends (it
        // used to reset them, so that the list held the newest socket alone and the next
        // eviction closed a socket whose answer was on its way).
        if prev == NONE && next == NONE && self.lru_head != i {
            return;
        }
        if let Some(u) = self.socks[i as usize].as_mut() {
            u.prev = NONE;
            u.next = NONE;
        }
        if prev != NONE {
            if let Some(p) = self.socks[prev as usize].as_mut() {
                p.next = next;
            }
        } else {
            self.lru_head = next;
        }
        if next != NONE {
            if let Some(n) = self.socks[next as usize].as_mut() {
                n.prev = prev;
            }
        } else {
            self.lru_tail = prev;
        }
    }

    /// Moves socket `i` to the most recently used end.
    fn lru_touch(&mut self, i: u32) {
        if self.lru_tail == i {
            return;
        }
        self.lru_unlink(i);
        let tail = self.lru_tail;
        if let Some(u) = self.socks[i as usize].as_mut() {
            u.prev = tail;
            u.next = NONE;
        }
        if tail != NONE {
            if let Some(t) = self.socks[tail as usize].as_mut() {
                t.next = i;
            }
        } else {
            self.lru_head = i;
        }
        self.lru_tail = i;
    }

    fn close_sock(&mut self, i: u32, ctx: &mut Ctx<'_>) {
        self.lru_unlink(i);
        if let Some(mut u) = self.socks[i as usize].take() {
            let _ = ctx.registry.deregister(&mut u.sock);
            if let Some(c) = ctx.clients.get_mut(u.client) {
                c.udp = NONE;
            }
            self.free.push(i);
            self.open -= 1;
        }
    }

    fn socket_for(&mut self, client: u32, ctx: &mut Ctx<'_>) -> io::Result<(u32, u64)> {
        let (existing, local) = match ctx.clients.get(client) {
            Some(c) => (c.udp, c.local),
            None => (NONE, None),
        };
        if existing != NONE {
            if let Some(Some(u)) = self.socks.get(existing as usize) {
                let uid = u.uid;
                self.lru_touch(existing);
                return Ok((existing, uid));
            }
        }
        if self.open >= ctx.config.max_udp_sockets && self.lru_head != NONE {
            // In-flight queries of the closed socket time out normally.
            self.close_sock(self.lru_head, ctx);
        }
        let server = ctx.config.server;
        let mut sock = net::udp_socket(local, &server)?;
        let stamp_sampled = !ctx.config.stamp_every_datagram;
        let fd = sock.as_raw_fd();
        let send_times = (ctx.config.kernel_send_times
            && if stamp_sampled {
                ldplayer_udp::enable_send_timestamps_on_request(fd).is_ok()
            } else {
                ldplayer_udp::enable_send_timestamps(fd, false).is_ok()
            })
        .then(SendTimes::default);
        // The error events that bring the stamps would hide an ICMP report that came with
        // them: have it queued beside them.
        let icmp_queued = send_times.is_some()
            && ldplayer_udp::enable_icmp_errors(sock.as_raw_fd(), server.is_ipv6()).is_ok();
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.socks.push(None);
                (self.socks.len() - 1) as u32
            }
        };
        if let Err(e) = ctx.registry.register(
            &mut sock,
            Token(self.token_base + idx as usize),
            Interest::READABLE,
        ) {
            self.free.push(idx);
            return Err(e);
        }
        let uid = ctx.inflight.new_uid();
        self.socks[idx as usize] = Some(UdpSock {
            uid,
            client,
            sock,
            datagrams: 0,
            send_times,
            stamp_sampled,
            icmp_queued,
            prev: NONE,
            next: NONE,
        });
        self.open += 1;
        self.lru_touch(idx);
        if let Some(c) = ctx.clients.get_mut(client) {
            c.udp = idx;
        }
        ctx.sink.stats.udp_sockets_opened += 1;
        Ok((idx, uid))
    }

    /// Reads socket `idx`'s error queue: kernel send stamps go to its queries, an ICMP report
    /// fails its queries in flight. Returns whether anything was there.
    fn error_queue(&mut self, idx: u32, ctx: &mut Ctx<'_>) -> bool {
        let Some(Some(u)) = self.socks.get_mut(idx as usize) else {
            return false;
        };
        let uid = u.uid;
        self.stamps.clear();
        let found = ldplayer_udp::read_error_queue(u.sock.as_raw_fd(), &mut self.stamps)
            .unwrap_or_default();
        if let Some(t) = u.send_times.as_mut() {
            for st in &self.stamps {
                t.stamp(&mut ctx.inflight.slots, st.key, st.ns);
            }
        }
        if let Some(errno) = found.icmp {
            let (kind, cause) = if errno == libc::ECONNREFUSED {
                ctx.sink.stats.udp_unreachable += 1;
                (ErrorKind::Refused, Cause::PortUnreachable)
            } else {
                let e = io::Error::from_raw_os_error(errno);
                (ErrorKind::Send, Cause::Io(e))
            };
            ctx.inflight.fail_udp(idx, uid, kind, &cause, ctx.sink);
        }
        found.stamps > 0 || found.icmp.is_some()
    }

    fn readable(&mut self, idx: u32, ctx: &mut Ctx<'_>) {
        let server = ctx.config.server;
        let retry_truncated = ctx.config.retry_truncated_over_tcp && !ctx.stopping;
        loop {
            let Some(Some(u)) = self.socks.get(idx as usize) else {
                return;
            };
            let fd = u.sock.as_raw_fd();
            let uid = u.uid;
            let n = match self.recv.recv(fd, Wait::No) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    // ICMP port unreachable: nothing listens there, so the queries in flight
                    // on this socket fail now rather than after the timeout.
                    ctx.sink.stats.udp_unreachable += 1;
                    let cause = Cause::PortUnreachable;
                    ctx.inflight
                        .fail_udp(idx, uid, ErrorKind::Refused, &cause, ctx.sink);
                    continue;
                }
                Err(_) => return,
            };
            let now = clock::now_ns();
            for i in 0..n {
                // The kernel's receive time, as a capture would show it.
                let at = self.recv.timestamp(i).unwrap_or(now);
                let (data, from) = (self.recv.data(i), self.recv.source(i));
                if from != Some(server) || data.len() < 2 {
                    ctx.sink.stats.unmatched_responses += 1;
                    continue;
                }
                let id = u16::from_be_bytes([data[0], data[1]]);
                let slot = match ctx.inflight.reply_of(uid, MatchKey::Id(id), data) {
                    Reply::Answer(slot) => slot,
                    Reply::Mismatch(slot, m) => {
                        // A response to another question may be a late answer to an earlier
                        // query: the query waits on for its own. A message that is no response
                        // at all (the query echoed back) ends it.
                        ctx.sink.stats.unmatched_responses += 1;
                        match m {
                            Mismatch::NotAResponse => {
                                let cause = m.cause();
                                ctx.inflight
                                    .fail(slot, ErrorKind::BadResponse, &cause, ctx.sink);
                            }
                            Mismatch::QuestionMismatch => {
                                ctx.inflight.slots[slot as usize].mismatch = true
                            }
                        }
                        continue;
                    }
                    Reply::Late | Reply::Stray => {
                        ctx.sink.stats.unmatched_responses += 1;
                        continue;
                    }
                };
                let tc = u16::from_be_bytes([data[2], data[3]]) & flag::TC != 0;
                if tc && retry_truncated {
                    ctx.inflight.release_id(uid, id);
                    ctx.inflight.slots[slot as usize].via = Via::None;
                    ctx.sink.stats.tc_retries += 1;
                    ctx.retry_tcp.push(slot);
                    continue;
                }
                // Copy out of the receive buffer, which the next read reuses; the copy buffer
                // is reused rather than a zeroed 4 KiB array per answer.
                let mut answer = std::mem::take(&mut self.answer_buf);
                answer.clear();
                answer.extend_from_slice(data);
                ctx.inflight
                    .complete(slot, Outcome::Answered, Some((&answer, at)), ctx.sink);
                self.answer_buf = answer;
            }
            if n < BATCH {
                return;
            }
        }
    }
}

impl Transport for UdpSessions {
    fn submit(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        let client = ctx.inflight.slots[slot as usize].client;
        match self.socket_for(client, ctx) {
            Ok((sock, uid)) => {
                if !ctx.inflight.claim_id(slot, uid) {
                    ctx.inflight
                        .fail(slot, ErrorKind::Send, &Cause::IdsExhausted, ctx.sink);
                    return;
                }
                ctx.inflight.slots[slot as usize].via = Via::Udp { sock, uid };
                self.out.push(slot);
                if self.out.len() >= BATCH * 4 {
                    self.flush(ctx);
                }
            }
            Err(e) => {
                let kind = kind_of_io(&e);
                ctx.inflight.fail(slot, kind, &Cause::Io(e), ctx.sink);
            }
        }
    }

    /// Sends the queued queries, grouping consecutive ones of one socket into `sendmmsg`.
    fn flush(&mut self, ctx: &mut Ctx<'_>) {
        if self.out.is_empty() {
            return;
        }
        let mut out = std::mem::take(&mut self.out);
        if matches!(ctx.config.timing, Timing::Fast { .. }) && out.len() > 1 {
            // One `sendmmsg` per socket: a trace that takes its clients in turn queued them one
            // socket after another, and each query went out with a system call of its own (4
            // clients under --fast: one `send` per query). Stable, so each socket keeps its
            // queries' order; only with --fast, where nothing is due at a set time.
            let slots = &ctx.inflight.slots;
            out.sort_by_key(|&s| match slots[s as usize].via {
                Via::Udp { sock, .. } => sock,
                _ => NONE,
            });
        }
        let mut start = 0;
        let mut failed: Vec<(Vec<u32>, ErrorKind, Cause)> = Vec::new();
        let mut refused: Vec<(u32, u64)> = Vec::new();
        while start < out.len() {
            let slots = &mut ctx.inflight.slots;
            let Via::Udp { sock, .. } = slots[out[start] as usize].via else {
                start += 1;
                continue;
            };
            let mut end = start + 1;
            while end < out.len()
                && matches!(slots[out[end] as usize].via, Via::Udp { sock: s, .. } if s == sock)
                && end - start < BATCH
            {
                end += 1;
            }
            let group = &out[start..end];
            let Some(Some(u)) = self.socks.get_mut(sock as usize) else {
                failed.push((group.to_vec(), ErrorKind::Send, Cause::ClosedLocally));
                start = end;
                continue;
            };
            let uid = u.uid;
            let fd = u.sock.as_raw_fd();
            let mut msgs: [&[u8]; BATCH] = [&[]; BATCH];
            for (i, &s) in group.iter().enumerate() {
                msgs[i] = &slots[s as usize].wire;
            }
            let now = clock::now_ns();
            let msgs = &msgs[..group.len()];
            let stamping = u.stamp_sampled && u.send_times.is_some();
            let (n, err) = if stamping {
                ldplayer_udp::send_connected_stamping(fd, msgs, |i| stamps_asked(i, msgs.len()))
            } else {
                ldplayer_udp::send_connected(fd, msgs)
            };
            self.stamped.clear();
            for (i, &s) in group[..n].iter().enumerate() {
                let slot = &mut slots[s as usize];
                let first_send = slot.sent_ns == 0;
                if first_send {
                    slot.sent_ns = now;
                    ctx.sink.first_sends += 1;
                }
                match u.send_times.as_mut() {
                    // A query sent again keeps its first send time; its datagram keeps its
                    // place among the stamped ones (no slot).
                    Some(_) if stamping => {
                        self.stamped
                            .push((if first_send { s } else { u32::MAX }, slot.gen));
                    }
                    Some(t) if first_send => t.expect(s, slot.gen, u.datagrams + i as u64 + 1),
                    _ => {}
                }
            }
            if let (true, Some(t)) = (stamping, u.send_times.as_mut()) {
                // If not all went out, the last, which asked, did not: the stamps of those that
                // did are expected, the queries after the last of them keep their clock reads.
                let asked = if n == group.len() {
                    n
                } else {
                    (0..n)
                        .rev()
                        .find(|&i| stamps_asked(i, group.len()))
                        .map_or(0, |i| i + 1)
                };
                t.expect_sampled(&self.stamped[..asked]);
            }
            u.datagrams += n as u64;
            if n < group.len()
                && !matches!(&err, Some(e) if e.kind() == io::ErrorKind::ConnectionRefused)
            {
                // The kernel may have counted the datagram that failed: its stamps could no
                // longer be told apart, so this socket keeps its clock reads.
                u.send_times = None;
            }
            let icmp_queued = u.icmp_queued;
            for &s in &group[..n] {
                let deadline = ctx.deadline_of(s, now);
                ctx.inflight.push_timeout(s, deadline);
            }
            if n < group.len() {
                let rest = group[n..].to_vec();
                match err {
                    // A connected UDP socket reports an earlier ICMP port unreachable on its
                    // next send: nothing listens there, so what is in flight fails too.
                    Some(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        if !icmp_queued {
                            // Otherwise counted when read off the error queue.
                            ctx.sink.stats.udp_unreachable += 1;
                        }
                        refused.push((sock, uid));
                        failed.push((rest, ErrorKind::Refused, Cause::PortUnreachable));
                    }
                    Some(e) => failed.push((rest, kind_of_io(&e), Cause::Io(e))),
                    None => failed.push((rest, ErrorKind::Send, Cause::ClosedLocally)),
                }
            }
            start = end;
        }
        for (slots, kind, cause) in failed {
            for s in slots {
                ctx.inflight.fail(s, kind, &cause, ctx.sink);
            }
        }
        for (sock, uid) in refused {
            let cause = Cause::PortUnreachable;
            ctx.inflight
                .fail_udp(sock, uid, ErrorKind::Refused, &cause, ctx.sink);
        }
        out.clear();
        self.out = out;
    }

    fn owns(&self, token: usize) -> bool {
        token.wrapping_sub(self.token_base) < TOKEN_SPAN
    }

    fn ready(&mut self, token: usize, ready: Readiness, ctx: &mut Ctx<'_>) {
        let idx = (token - self.token_base) as u32;
        // An error event is most often the kernel's send stamps (or an ICMP report queued with
        // them); when the queue is empty, it is the socket's error, which a read reports.
        let queued = ready.error && self.error_queue(idx, ctx);
        if ready.readable || (ready.error && !queued) {
            self.readable(idx, ctx);
        }
    }

    /// Sends the query again while it has retries left and its socket is open; ends it
    /// otherwise.
    fn expired(&mut self, slot: u32, ctx: &mut Ctx<'_>) {
        let s = &ctx.inflight.slots[slot as usize];
        if let Via::Udp { sock, uid } = s.via {
            if s.retries_left > 0 && !ctx.stopping {
                let open = matches!(self.socks.get(sock as usize), Some(Some(u)) if u.uid == uid);
                if open {
                    ctx.inflight.slots[slot as usize].retries_left -= 1;
                    ctx.sink.stats.udp_retries += 1;
                    self.out.push(slot);
                    self.flush(ctx);
                    return;
                }
            }
        }
        ctx.inflight.time_out(slot, ctx.sink);
    }

    fn close(&mut self, ctx: &mut Ctx<'_>) {
        for i in 0..self.socks.len() {
            self.close_sock(i as u32, ctx);
        }
    }
}
