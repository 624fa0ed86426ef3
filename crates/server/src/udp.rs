//! UDP workers: each owns one `SO_REUSEPORT` socket on the listen address, receives batches with
//! `recvmmsg` and sends the answers back with one `sendmmsg`.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ldplayer_zone::{AnswerOptions, ZoneSet};
use socket2::{Domain, Protocol, Socket, Type};

use crate::stats::{bump, Counters};
use crate::POLL_INTERVAL;

/// Most datagrams moved by one `recvmmsg` or `sendmmsg`.
pub(crate) const BATCH: usize = 32;
/// Size of each receive slot; longer datagrams are cut by the kernel and dropped.
pub(crate) const RECV_BUF: usize = 4096;

/// A blocking UDP socket bound to `addr` with `SO_REUSEPORT`, whose receives and sends time out
/// after [`POLL_INTERVAL`] so the worker sees the stop flag.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<Socket> {
    let sock = Socket::new(
        Domain::for_address(addr),
        Type::DGRAM.cloexec(),
        Some(Protocol::UDP),
    )?;
    if addr.is_ipv6() {
        sock.set_only_v6(true)?;
    }
    sock.set_reuse_port(true)?;
    sock.set_read_timeout(Some(POLL_INTERVAL))?;
    sock.set_write_timeout(Some(POLL_INTERVAL))?;
    sock.bind(&addr.into())?;
    Ok(sock)
}

/// The reusable buffers of one worker: a receive slot, its source address and a response buffer
/// per batch entry. Nothing is allocated per query once the response buffers have grown to the
/// largest response sent.
struct Slots {
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    addr_lens: [libc::socklen_t; BATCH],
    lens: [usize; BATCH],
    cut: [bool; BATCH],
    resps: Vec<Vec<u8>>,
    /// Slots with a response to send, in order.
    reply: [usize; BATCH],
}

impl Slots {
    fn new() -> Slots {
        Slots {
            bufs: vec![0; BATCH * RECV_BUF],
            // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            addr_lens: [0; BATCH],
            lens: [0; BATCH],
            cut: [false; BATCH],
            resps: (0..BATCH).map(|_| Vec::with_capacity(1232)).collect(),
            reply: [0; BATCH],
        }
    }

    /// Waits up to the socket's receive timeout for a datagram, then takes what else is queued
    /// (up to [`BATCH`]); returns how many (0 on timeout).
    fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        // SAFETY: zeroed iovec/mmsghdr are valid; the pointers refer to `self.bufs` and
        // `self.addrs`, which outlive the call and are large enough.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdr: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.bufs.as_mut_ptr();
        for i in 0..BATCH {
            iov[i] = libc::iovec {
                // SAFETY: i * RECV_BUF + RECV_BUF <= bufs.len().
                iov_base: unsafe { base.add(i * RECV_BUF) }.cast(),
                iov_len: RECV_BUF,
            };
            hdr[i].msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            hdr[i].msg_hdr.msg_namelen =
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            hdr[i].msg_hdr.msg_iov = &mut iov[i];
            hdr[i].msg_hdr.msg_iovlen = 1;
        }
        loop {
            // SAFETY: as above; MSG_WAITFORONE blocks (up to SO_RCVTIMEO) for the first datagram
            // only.
            let n = unsafe {
                libc::recvmmsg(
                    fd,
                    hdr.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    libc::MSG_WAITFORONE,
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Ok(0),
                    _ => Err(e),
                };
            }
            let n = (n as usize).min(BATCH);
            for (i, h) in hdr.iter().enumerate().take(n) {
                self.lens[i] = (h.msg_len as usize).min(RECV_BUF);
                self.cut[i] = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
                self.addr_lens[i] = h.msg_hdr.msg_namelen;
            }
            return Ok(n);
        }
    }

    /// Sends the responses of the first `count` entries of `reply` with as few `sendmmsg` calls
    /// as possible; returns how many the kernel refused.
    fn send(&mut self, fd: RawFd, count: usize) -> u64 {
        // SAFETY: zeroed iovec/mmsghdr are valid; the pointers refer to `self.resps` and
        // `self.addrs`, which outlive the call; the kernel only reads through them.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdr: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (j, &i) in self.reply[..count].iter().enumerate() {
            let r = &self.resps[i];
            iov[j] = libc::iovec {
                iov_base: r.as_ptr() as *mut libc::c_void,
                iov_len: r.len(),
            };
            hdr[j].msg_hdr.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            hdr[j].msg_hdr.msg_namelen = self.addr_lens[i];
            hdr[j].msg_hdr.msg_iov = &mut iov[j];
            hdr[j].msg_hdr.msg_iovlen = 1;
        }
        let mut done = 0;
        let mut failed = 0;
        while done < count {
            // SAFETY: `hdr[done..count]` is initialised as above.
            let n = unsafe {
                libc::sendmmsg(
                    fd,
                    hdr.as_mut_ptr().add(done),
                    (count - done) as libc::c_uint,
                    0,
                )
            };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // The first remaining message failed: skip it and go on with the rest.
                failed += 1;
                done += 1;
            } else if n == 0 {
                failed += 1;
                done += 1;
            } else {
                done += n as usize;
            }
        }
        failed
    }
}

/// The worker loop: runs until `stop` is set.
pub(crate) fn run(
    sock: Socket,
    zones: Arc<ZoneSet>,
    opts: AnswerOptions,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
) {
    let opts = AnswerOptions { tcp: false, ..opts };
    let fd = sock.as_raw_fd();
    let mut slots = Slots::new();
    while !stop.load(Ordering::Relaxed) {
        let n = match slots.recv(fd) {
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
            bump(&counters.udp_queries);
            if slots.cut[i] {
                bump(&counters.dropped);
                continue;
            }
            let query = &slots.bufs[i * RECV_BUF..i * RECV_BUF + slots.lens[i]];
            match zones.answer_into(query, &opts, &mut slots.resps[i]) {
                Some(outcome) => {
                    counters.response(&outcome, false);
                    slots.reply[replies] = i;
                    replies += 1;
                }
                None => bump(&counters.dropped),
            }
        }
        if replies > 0 {
            for _ in 0..slots.send(fd, replies) {
                bump(&counters.send_errors);
            }
        }
    }
}
