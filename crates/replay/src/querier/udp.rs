//! UDP: one connected socket per original client (least recently used closed past the limit),
//! sends batched with `sendmmsg`, answers read with `recvmmsg`.

use super::answer::Mismatch;
use super::inflight::Reply;
use super::send_times::SendTimes;
use super::transport::MatchKey;
use super::*;
use crate::cause::{kind_of_io, Cause};

/// A client's connected UDP socket, linked into the least-recently-used list.
pub(super) struct UdpSock {
    pub(super) uid: u64,
    pub(super) client: u32,
    pub(super) sock: UdpSocket,
    /// Datagrams sent on the socket (the kernel's send stamps count them too).
    pub(super) datagrams: u64,
    /// Queries waiting for the kernel's send stamps; `None` without them.
    pub(super) send_times: Option<SendTimes>,
    /// ICMP reports come through the error queue (`IP_RECVERR`), with the send stamps.
    pub(super) icmp_queued: bool,
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl Querier {
    /// Takes socket `i` out of the recency list, if it is in it.
    pub(super) fn lru_unlink(&mut self, i: u32) {
        let (prev, next) = match &self.udp[i as usize] {
            Some(u) => (u.prev, u.next),
            None => return,
        };
        // A socket just opened is in no list yet: unlinking it must not touch the ends (it
        // used to reset them, so that the list held the newest socket alone and the next
        // eviction closed a socket whose answer was on its way).
        if prev == NONE && next == NONE && self.lru_head != i {
            return;
        }
        if let Some(u) = self.udp[i as usize].as_mut() {
            u.prev = NONE;
            u.next = NONE;
        }
        if prev != NONE {
            if let Some(p) = self.udp[prev as usize].as_mut() {
                p.next = next;
            }
        } else {
            self.lru_head = next;
        }
        if next != NONE {
            if let Some(n) = self.udp[next as usize].as_mut() {
                n.prev = prev;
            }
        } else {
            self.lru_tail = prev;
        }
    }

    /// Moves socket `i` to the most recently used end.
    pub(super) fn lru_touch(&mut self, i: u32) {
        if self.lru_tail == i {
            return;
        }
        self.lru_unlink(i);
        let tail = self.lru_tail;
        if let Some(u) = self.udp[i as usize].as_mut() {
            u.prev = tail;
            u.next = NONE;
        }
        if tail != NONE {
            if let Some(t) = self.udp[tail as usize].as_mut() {
                t.next = i;
            }
        } else {
            self.lru_head = i;
        }
        self.lru_tail = i;
    }

    pub(super) fn close_udp(&mut self, i: u32) {
        self.lru_unlink(i);
        if let Some(mut u) = self.udp[i as usize].take() {
            let _ = self.poll.registry().deregister(&mut u.sock);
            if let Some(c) = self.clients.get_mut(&u.client) {
                c.udp = NONE;
            }
            self.free_udp.push(i);
            self.udp_open -= 1;
        }
    }

    pub(super) fn udp_socket_for(&mut self, client: u32) -> io::Result<(u32, u64)> {
        let (existing, local) = match self.clients.get(&client) {
            Some(c) => (c.udp, c.local),
            None => (NONE, None),
        };
        if existing != NONE {
            if let Some(Some(u)) = self.udp.get(existing as usize) {
                let uid = u.uid;
                self.lru_touch(existing);
                return Ok((existing, uid));
            }
        }
        if self.udp_open >= self.config.max_udp_sockets && self.lru_head != NONE {
            // In-flight queries of the closed socket time out normally.
            self.close_udp(self.lru_head);
        }
        let mut sock = net::udp_socket(local, &self.server)?;
        let send_times = (self.config.kernel_send_times
            && ldplayer_udp::enable_send_timestamps(sock.as_raw_fd(), false).is_ok())
        .then(SendTimes::default);
        // The error events that bring the stamps would hide an ICMP report that came with
        // them: have it queued beside them.
        let icmp_queued = send_times.is_some()
            && ldplayer_udp::enable_icmp_errors(sock.as_raw_fd(), self.server.is_ipv6()).is_ok();
        let idx = match self.free_udp.pop() {
            Some(i) => i,
            None => {
                self.udp.push(None);
                (self.udp.len() - 1) as u32
            }
        };
        self.poll.registry().register(
            &mut sock,
            Token(UDP_BASE + idx as usize),
            Interest::READABLE,
        )?;
        let uid = self.next_uid;
        self.next_uid += 1;
        self.udp[idx as usize] = Some(UdpSock {
            uid,
            client,
            sock,
            datagrams: 0,
            send_times,
            icmp_queued,
            prev: NONE,
            next: NONE,
        });
        self.udp_open += 1;
        self.lru_touch(idx);
        if let Some(c) = self.clients.get_mut(&client) {
            c.udp = idx;
        }
        self.stats.udp_sockets_opened += 1;
        Ok((idx, uid))
    }

    pub(super) fn send_udp(&mut self, slot: u32) {
        let client = self.slots[slot as usize].client;
        match self.udp_socket_for(client) {
            Ok((sock, uid)) => {
                if !self.claim_id(slot, uid) {
                    self.fail(slot, ErrorKind::Send, &Cause::IdsExhausted);
                    return;
                }
                self.slots[slot as usize].via = Via::Udp { sock, uid };
                self.udp_out.push(slot);
            }
            Err(e) => self.fail(slot, kind_of_io(&e), &Cause::Io(e)),
        }
    }

    /// Sends the queued UDP queries, grouping consecutive ones of one socket into `sendmmsg`.
    pub(super) fn flush_udp(&mut self) {
        if self.udp_out.is_empty() {
            return;
        }
        let out = std::mem::take(&mut self.udp_out);
        let mut start = 0;
        let mut failed: Vec<(Vec<u32>, ErrorKind, Cause)> = Vec::new();
        let mut refused: Vec<(u32, u64)> = Vec::new();
        while start < out.len() {
            let Via::Udp { sock, .. } = self.slots[out[start] as usize].via else {
                start += 1;
                continue;
            };
            let mut end = start + 1;
            while end < out.len()
                && matches!(self.slots[out[end] as usize].via, Via::Udp { sock: s, .. } if s == sock)
                && end - start < BATCH
            {
                end += 1;
            }
            let group = &out[start..end];
            let Some(Some(u)) = self.udp.get(sock as usize) else {
                failed.push((group.to_vec(), ErrorKind::Send, Cause::ClosedLocally));
                start = end;
                continue;
            };
            let uid = u.uid;
            let fd = u.sock.as_raw_fd();
            let mut msgs: [&[u8]; BATCH] = [&[]; BATCH];
            for (i, &s) in group.iter().enumerate() {
                msgs[i] = &self.slots[s as usize].wire;
            }
            let now = clock::now_ns();
            let (n, err) = ldplayer_udp::send_connected(fd, &msgs[..group.len()]);
            let Some(Some(u)) = self.udp.get_mut(sock as usize) else {
                start = end;
                continue;
            };
            for (i, &s) in group[..n].iter().enumerate() {
                let slot = &mut self.slots[s as usize];
                if slot.sent_ns == 0 {
                    slot.sent_ns = now;
                    self.first_sends += 1;
                    if let Some(t) = u.send_times.as_mut() {
                        t.expect(s, slot.gen, u.datagrams + i as u64 + 1);
                    }
                }
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
                let deadline = self.deadline_of(s, now);
                self.push_timeout(s, deadline);
            }
            if n < group.len() {
                let rest = group[n..].to_vec();
                match err {
                    // A connected UDP socket reports an earlier ICMP port unreachable on its
                    // next send: nothing listens there, so what is in flight fails too.
                    Some(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        if !icmp_queued {
                            // Otherwise counted when read off the error queue.
                            self.stats.udp_unreachable += 1;
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
                self.fail(s, kind, &cause);
            }
        }
        for (sock, uid) in refused {
            self.fail_udp_in_flight(sock, uid, ErrorKind::Refused, &Cause::PortUnreachable);
        }
        let mut out = out;
        out.clear();
        self.udp_out = out;
    }

    /// Reads socket `idx`'s error queue: kernel send stamps go to its queries, an ICMP report
    /// fails its queries in flight. Returns whether anything was there.
    pub(super) fn udp_error_queue(&mut self, idx: u32) -> bool {
        let Some(Some(u)) = self.udp.get_mut(idx as usize) else {
            return false;
        };
        let uid = u.uid;
        self.stamps.clear();
        let found = ldplayer_udp::read_error_queue(u.sock.as_raw_fd(), &mut self.stamps)
            .unwrap_or_default();
        if let Some(t) = u.send_times.as_mut() {
            for st in &self.stamps {
                t.stamp(&mut self.slots, st.key, st.ns);
            }
        }
        if let Some(errno) = found.icmp {
            let (kind, cause) = if errno == libc::ECONNREFUSED {
                self.stats.udp_unreachable += 1;
                (ErrorKind::Refused, Cause::PortUnreachable)
            } else {
                let e = io::Error::from_raw_os_error(errno);
                (ErrorKind::Send, Cause::Io(e))
            };
            self.fail_udp_in_flight(idx, uid, kind, &cause);
        }
        found.stamps > 0 || found.icmp.is_some()
    }

    pub(super) fn udp_readable(&mut self, idx: u32) {
        loop {
            let Some(Some(u)) = self.udp.get(idx as usize) else {
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
                    self.stats.udp_unreachable += 1;
                    self.fail_udp_in_flight(idx, uid, ErrorKind::Refused, &Cause::PortUnreachable);
                    continue;
                }
                Err(_) => return,
            };
            let now = clock::now_ns();
            for i in 0..n {
                // The kernel's receive time, as a capture would show it.
                let at = self.recv.timestamp(i).unwrap_or(now);
                let (data, from) = (self.recv.data(i), self.recv.source(i));
                if from != Some(self.server) {
                    self.stats.unmatched_responses += 1;
                    continue;
                }
                if data.len() < 2 {
                    self.stats.unmatched_responses += 1;
                    continue;
                }
                let id = u16::from_be_bytes([data[0], data[1]]);
                let slot = match self.reply_of(uid, MatchKey::Id(id), data) {
                    Reply::Answer(slot) => slot,
                    Reply::Mismatch(slot, m) => {
                        // A response to another question may be a late answer to an earlier
                        // query: the query waits on for its own. A message that is no response
                        // at all (the query echoed back) ends it.
                        self.stats.unmatched_responses += 1;
                        match m {
                            Mismatch::NotAResponse => {
                                self.fail(slot, ErrorKind::BadResponse, &m.cause())
                            }
                            Mismatch::QuestionMismatch => self.slots[slot as usize].mismatch = true,
                        }
                        continue;
                    }
                    Reply::Late | Reply::Stray => {
                        self.stats.unmatched_responses += 1;
                        continue;
                    }
                };
                let tc = u16::from_be_bytes([data[2], data[3]]) & flag::TC != 0;
                if tc && self.config.retry_truncated_over_tcp && !self.stopping {
                    self.release_id(uid, id);
                    self.slots[slot as usize].via = Via::None;
                    self.stats.tc_retries += 1;
                    self.send_stream(slot, Proto::Tcp);
                    continue;
                }
                // Copy out of the receive buffer so that `complete` may borrow self; the copy
                // buffer is reused rather than a zeroed 4 KiB array per answer.
                let mut answer = std::mem::take(&mut self.answer_buf);
                answer.clear();
                answer.extend_from_slice(data);
                self.complete(slot, Outcome::Answered, Some((&answer, at)));
                self.answer_buf = answer;
            }
            if n < BATCH {
                return;
            }
        }
    }
}
