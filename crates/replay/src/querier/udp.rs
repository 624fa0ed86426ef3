//! UDP: one connected socket per original client (least recently used closed past the limit),
//! sends batched with `sendmmsg`, answers read with `recvmmsg`.

use super::*;

/// A client's connected UDP socket, linked into the least-recently-used list.
pub(super) struct UdpSock {
    pub(super) uid: u64,
    pub(super) client: u32,
    pub(super) sock: UdpSocket,
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl Querier {
    pub(super) fn lru_unlink(&mut self, i: u32) {
        let (prev, next) = match &self.udp[i as usize] {
            Some(u) => (u.prev, u.next),
            None => return,
        };
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
                    self.complete(slot, Outcome::Error(ErrorKind::Send), None);
                    return;
                }
                self.slots[slot as usize].via = Via::Udp { sock, uid };
                self.udp_out.push(slot);
            }
            Err(_) => self.complete(slot, Outcome::Error(ErrorKind::Send), None),
        }
    }

    /// Sends the queued UDP queries, grouping consecutive ones of one socket into `sendmmsg`.
    pub(super) fn flush_udp(&mut self) {
        if self.udp_out.is_empty() {
            return;
        }
        let out = std::mem::take(&mut self.udp_out);
        let mut start = 0;
        let mut failed: Vec<(u32, ErrorKind)> = Vec::new();
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
                failed.extend(group.iter().map(|&s| (s, ErrorKind::Send)));
                start = end;
                continue;
            };
            let fd = u.sock.as_raw_fd();
            let mut msgs: [&[u8]; BATCH] = [&[]; BATCH];
            for (i, &s) in group.iter().enumerate() {
                msgs[i] = &self.slots[s as usize].wire;
            }
            let now = clock::now_ns();
            let (n, err) = ldplayer_udp::send_connected(fd, &msgs[..group.len()]);
            for &s in &group[..n] {
                let slot = &mut self.slots[s as usize];
                if slot.sent_ns == 0 {
                    slot.sent_ns = now;
                }
                self.push_timeout(s, now + self.timeout_ns);
            }
            if n < group.len() {
                // A connected UDP socket reports an earlier ICMP port unreachable on its next send.
                let kind = match err {
                    Some(e) if e.kind() == io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
                    _ => ErrorKind::Send,
                };
                failed.extend(group[n..].iter().map(|&s| (s, kind)));
            }
            start = end;
        }
        for (s, kind) in failed {
            self.complete(s, Outcome::Error(kind), None);
        }
        let mut out = out;
        out.clear();
        self.udp_out = out;
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
                    self.stats.udp_unreachable += 1;
                    continue;
                }
                Err(_) => return,
            };
            let now = clock::now_ns();
            for i in 0..n {
                let (data, from) = (self.recv.data(i), self.recv.source(i));
                if from != Some(self.server) {
                    self.stats.unmatched_responses += 1;
                    continue;
                }
                let Some(slot) = self.answered_slot(uid, data) else {
                    self.stats.unmatched_responses += 1;
                    continue;
                };
                let id = u16::from_be_bytes([data[0], data[1]]);
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
                self.complete(slot, Outcome::Answered, Some((&answer, now)));
                self.answer_buf = answer;
            }
            if n < BATCH {
                return;
            }
        }
    }
}
