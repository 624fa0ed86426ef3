//! Receiving: batches of datagrams with their sources, destinations and kernel receive stamps
//! (`recvmmsg`), and stream reads with their stamps.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

use crate::{set_int_option, sockaddr_to_std, Wait, BATCH, CONTROL_WORDS, RECV_BUF};

/// Reusable receive slots: [`BATCH`] buffers of [`RECV_BUF`] bytes with their source addresses.
pub struct RecvBatch {
    bufs: Vec<u8>,
    /// Control-message space per slot, when destinations or timestamps are asked for.
    control: Option<Vec<[u64; CONTROL_WORDS]>>,
    pub(crate) dests: [Option<IpAddr>; BATCH],
    /// Kernel receive times (`CLOCK_REALTIME` ns), when asked for.
    times: [Option<i64>; BATCH],
    pub(crate) addrs: Vec<libc::sockaddr_storage>,
    pub(crate) addr_lens: [libc::socklen_t; BATCH],
    lens: [usize; BATCH],
    truncated: [bool; BATCH],
    count: usize,
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    /// Empty slots.
    pub fn new() -> RecvBatch {
        RecvBatch {
            bufs: vec![0; BATCH * RECV_BUF],
            control: None,
            dests: [None; BATCH],
            times: [None; BATCH],
            // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            addr_lens: [0; BATCH],
            lens: [0; BATCH],
            truncated: [false; BATCH],
            count: 0,
        }
    }

    /// Empty slots that also record each datagram's destination address, for sockets bound to a
    /// wildcard address with [`enable_destinations`]; replies through [`send_replies`](crate::send_replies) then go
    /// out from that address.
    pub fn with_destinations() -> RecvBatch {
        RecvBatch {
            control: Some(vec![[0; CONTROL_WORDS]; BATCH]),
            ..RecvBatch::new()
        }
    }

    /// Empty slots that also record each datagram's kernel receive time, for sockets set up with
    /// [`enable_timestamps`] (see [`timestamp`](Self::timestamp)).
    pub fn with_timestamps() -> RecvBatch {
        RecvBatch {
            control: Some(vec![[0; CONTROL_WORDS]; BATCH]),
            ..RecvBatch::new()
        }
    }

    /// Receives up to [`BATCH`] datagrams on `fd`; returns how many (0 when none arrived, for
    /// [`Wait::ForOne`] also when the socket's receive timeout passed).
    pub fn recv(&mut self, fd: RawFd, wait: Wait) -> io::Result<usize> {
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
            if let Some(control) = self.control.as_mut() {
                hdr[i].msg_hdr.msg_control = control[i].as_mut_ptr().cast();
                hdr[i].msg_hdr.msg_controllen = CONTROL_WORDS * 8;
            }
        }
        let flags = match wait {
            Wait::No => libc::MSG_DONTWAIT,
            Wait::ForOne => libc::MSG_WAITFORONE,
        };
        self.count = 0;
        loop {
            // SAFETY: as above.
            let n = unsafe {
                libc::recvmmsg(
                    fd,
                    hdr.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    flags,
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
                self.truncated[i] = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
                self.addr_lens[i] = h.msg_hdr.msg_namelen;
                (self.dests[i], self.times[i]) = if self.control.is_some() {
                    // SAFETY: the kernel filled `msg_control` up to `msg_controllen` with
                    // well-formed control messages in the buffer set above.
                    unsafe { read_control(&h.msg_hdr) }
                } else {
                    (None, None)
                };
            }
            self.count = n;
            return Ok(n);
        }
    }

    /// How many datagrams the last receive took.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when the last receive took nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes of datagram `i` of the last receive (cut to [`RECV_BUF`]).
    pub fn data(&self, i: usize) -> &[u8] {
        &self.bufs[i * RECV_BUF..i * RECV_BUF + self.lens[i]]
    }

    /// True when datagram `i` was longer than [`RECV_BUF`] and cut.
    pub fn truncated(&self, i: usize) -> bool {
        self.truncated[i]
    }

    /// The source of datagram `i`.
    pub fn source(&self, i: usize) -> Option<SocketAddr> {
        sockaddr_to_std(&self.addrs[i])
    }

    /// The address datagram `i` was sent to (only with [`with_destinations`](Self::with_destinations)
    /// on a socket set up by [`enable_destinations`]).
    pub fn destination(&self, i: usize) -> Option<IpAddr> {
        self.dests[i]
    }

    /// When the kernel received datagram `i` (`CLOCK_REALTIME` ns; only with
    /// [`with_timestamps`](Self::with_timestamps) on a socket set up by [`enable_timestamps`]).
    pub fn timestamp(&self, i: usize) -> Option<i64> {
        self.times[i]
    }
}

/// Asks the kernel to stamp every packet the socket receives with the time it entered the
/// stack (`SO_TIMESTAMPNS`), read back by [`RecvBatch::with_timestamps`] and [`recv_stream`].
/// Works for UDP and TCP sockets; for TCP the stamp of a read is that of the last segment it took.
///
/// The kernel stamps packets on arrival only once some socket has asked for it, and turns that
/// on a moment (a deferred work item) after the first request: packets that come before are
/// stamped when they are read. Long runs ask early, on a socket kept open throughout.
pub fn enable_timestamps(fd: RawFd) -> io::Result<()> {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

/// Reads what a stream socket has into `buf` (`recvmsg`, non-blocking) and returns how many
/// bytes came and the kernel's receive time of the last segment they came in, when the socket
/// was set up with [`enable_timestamps`]. 0 bytes means the peer closed the stream.
pub fn recv_stream(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    recv_stamped(fd, buf).map(|(n, time, _)| (n, time))
}

/// Reads one datagram from a connected datagram socket into `buf` (`recvmsg`, non-blocking) and
/// returns its length and the kernel's receive time of it, when the socket was set up with
/// [`enable_timestamps`]: for a caller that reads datagrams one by one into a buffer of its own
/// (a QUIC connection's, as large as any datagram) rather than in [`RecvBatch`]'s slots. A
/// datagram longer than `buf` is an error (`InvalidData`): its cut bytes are lost.
pub fn recv_datagram(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    let (n, time, flags) = recv_stamped(fd, buf)?;
    if flags & libc::MSG_TRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "datagram longer than the buffer",
        ));
    }
    Ok((n, time))
}

/// One non-blocking `recvmsg` into `buf`: the bytes read, the kernel's receive time (with
/// [`enable_timestamps`]) and the message's flags.
fn recv_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>, libc::c_int)> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: a zeroed msghdr is valid; its pointers refer to `iov`, `buf` and `control`,
        // which outlive the call and are as large as the lengths given.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = CONTROL_WORDS * 8;
        // SAFETY: as above.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: the kernel wrote `msg_controllen` bytes of control messages into `control`.
        let (_, time) = unsafe { read_control(&msg) };
        return Ok((n as usize, time, msg.msg_flags));
    }
}

/// Asks the kernel to report each datagram's destination address (`IP_PKTINFO`,
/// `IPV6_RECVPKTINFO`), and for IPv6 allows replying from addresses that are not configured on
/// an interface (`IPV6_FREEBIND`): with `ip route add local ::/0 dev lo` every address is local
/// for receiving, but IPv6 checks configured addresses when a reply names its source.
pub fn enable_destinations(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, 1)?;
        set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_FREEBIND, 1)
    } else {
        set_int_option(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, 1)
    }
}

/// The destination in an `IP_PKTINFO` or `IPV6_PKTINFO` control message of `msg`, and the
/// receive time in an `SCM_TIMESTAMPNS` one (`CLOCK_REALTIME` ns).
///
/// # Safety
/// `msg.msg_control` must point to `msg.msg_controllen` bytes of control messages as the kernel
/// wrote them.
unsafe fn read_control(msg: &libc::msghdr) -> (Option<IpAddr>, Option<i64>) {
    let (mut dest, mut time) = (None, None);
    if msg.msg_controllen == 0 {
        return (dest, time);
    }
    let mut c = libc::CMSG_FIRSTHDR(msg);
    while !c.is_null() {
        let h = &*c;
        if h.cmsg_level == libc::IPPROTO_IP && h.cmsg_type == libc::IP_PKTINFO {
            let info: libc::in_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
            dest = Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                info.ipi_addr.s_addr,
            ))));
        } else if h.cmsg_level == libc::IPPROTO_IPV6 && h.cmsg_type == libc::IPV6_PKTINFO {
            let info: libc::in6_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
            dest = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
        } else if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPNS {
            let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
            #[allow(clippy::unnecessary_cast)] // time_t and c_long are not i64 on every target
            let ns = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
            // A zero stamp means the kernel had none for this packet.
            time = (ns > 0).then_some(ns);
        }
        c = libc::CMSG_NXTHDR(msg, c);
    }
    (dest, time)
}
