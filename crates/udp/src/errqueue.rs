//! The socket's error queue: the kernel's send stamps and the ICMP errors it reports.

use std::io;
use std::os::fd::RawFd;

use crate::set_int_option;

/// One send timestamp from the kernel: which packet or byte it is for, and when it was handed to
/// the device (`CLOCK_REALTIME` ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendStamp {
    /// For a datagram socket, the datagram's number (from 0, counting every datagram sent since
    /// [`enable_send_timestamps`]); for a stream socket, the position of the last byte of the
    /// write it stamps (from 0 at the first byte written after the connect).
    pub key: u32,
    /// When the packet went to the device.
    pub ns: i64,
}

/// Asks the kernel to stamp every packet `fd` sends when it is handed to the device
/// (`SO_TIMESTAMPING`, software stamps keyed by datagram or byte, without the packet's
/// contents), to be read with [`read_send_stamps`]. The stamps make the socket report an error
/// event (`EPOLLERR`) until read. A stream socket must have started its connect.
pub fn enable_send_timestamps(fd: RawFd, stream: bool) -> io::Result<()> {
    let mut flags = libc::SOF_TIMESTAMPING_TX_SOFTWARE
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    if stream {
        // Bytes counted from the first byte written, not from the first byte acknowledged.
        flags |= libc::SOF_TIMESTAMPING_OPT_ID_TCP;
    }
    set_int_option(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
}

/// Like [`enable_send_timestamps`] for a datagram socket, but stamps only the datagrams sent
/// with [`send_connected_stamping`](crate::send_connected_stamping) asking for it (a
/// `SO_TIMESTAMPING` control message per datagram): their keys then count the stamped
/// datagrams only. Each stamp costs the kernel a
/// queued message and a wake-up of the socket's waiters, and the reader a message off the error
/// queue: with every datagram stamped, about a sixth of the query engine's CPU under `--fast`.
pub fn enable_send_timestamps_on_request(fd: RawFd) -> io::Result<()> {
    let flags = libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    set_int_option(
        fd,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
}

/// Control-message space of one error-queue message: a `scm_timestamping` (48 bytes) and a
/// `sock_extended_err` with its offender address (16 + 28 bytes), each with its header.
const ERRQUEUE_CONTROL_WORDS: usize = 24;
/// Error-queue messages taken per system call.
const ERRQUEUE_BATCH: usize = 16;

/// What one read of a socket's error queue found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorQueue {
    /// Send stamps appended to the caller's vector.
    pub stamps: usize,
    /// The error of the last ICMP report queued (with [`enable_icmp_errors`]): `ECONNREFUSED`
    /// for port unreachable, `EHOSTUNREACH`, `ENETUNREACH`...
    pub icmp: Option<i32>,
}

/// Asks the kernel to queue ICMP errors on a datagram socket's error queue too (`IP_RECVERR`,
/// `IPV6_RECVERR`), so that one read of the queue ([`read_error_queue`]) finds both the send
/// stamps and an ICMP report that came with them (reading the report clears the socket's error,
/// so a later send or receive does not report it again).
pub fn enable_icmp_errors(fd: RawFd, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        set_int_option(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVERR, 1)
    } else {
        set_int_option(fd, libc::IPPROTO_IP, libc::IP_RECVERR, 1)
    }
}

/// Reads the send timestamps waiting on `fd`'s error queue (without blocking) into `out`, in the
/// order the kernel queued them, and returns how many it read (0: none were waiting).
pub fn read_send_stamps(fd: RawFd, out: &mut Vec<SendStamp>) -> io::Result<usize> {
    read_error_queue(fd, out).map(|q| q.stamps)
}

/// Reads everything waiting on `fd`'s error queue (without blocking): send stamps go to `out`
/// in the order the kernel queued them; ICMP reports are summed up in the result.
pub fn read_error_queue(fd: RawFd, out: &mut Vec<SendStamp>) -> io::Result<ErrorQueue> {
    let mut control = [[0u64; ERRQUEUE_CONTROL_WORDS]; ERRQUEUE_BATCH];
    let mut found = ErrorQueue::default();
    loop {
        // SAFETY: zeroed mmsghdr are valid; each points at its own control buffer, which
        // outlives the call and is as large as the length given; no data is asked for.
        let mut hdr: [libc::mmsghdr; ERRQUEUE_BATCH] = unsafe { std::mem::zeroed() };
        for (h, c) in hdr.iter_mut().zip(control.iter_mut()) {
            h.msg_hdr.msg_control = c.as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = ERRQUEUE_CONTROL_WORDS * 8;
        }
        // SAFETY: as above.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                hdr.as_mut_ptr(),
                ERRQUEUE_BATCH as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => Ok(found),
                _ => Err(e),
            };
        }
        let n = (n as usize).min(ERRQUEUE_BATCH);
        for h in &hdr[..n] {
            // SAFETY: the kernel wrote `msg_controllen` bytes of control messages.
            match unsafe { read_error_message(&h.msg_hdr) } {
                Some(Queued::Stamp(stamp)) => {
                    out.push(stamp);
                    found.stamps += 1;
                }
                Some(Queued::Icmp(errno)) => found.icmp = Some(errno),
                None => {}
            }
        }
        if n < ERRQUEUE_BATCH {
            return Ok(found);
        }
    }
}

/// One message of a socket's error queue.
enum Queued {
    Stamp(SendStamp),
    Icmp(i32),
}

/// What an error-queue message's control messages hold: a send timestamp or an ICMP report.
///
/// # Safety
/// `msg.msg_control` must point to `msg.msg_controllen` bytes of control messages as the kernel
/// wrote them.
unsafe fn read_error_message(msg: &libc::msghdr) -> Option<Queued> {
    let (mut ns, mut key, mut icmp) = (None, None, None);
    if msg.msg_controllen == 0 {
        return None;
    }
    let mut c = libc::CMSG_FIRSTHDR(msg);
    while !c.is_null() {
        let h = &*c;
        if h.cmsg_level == libc::SOL_SOCKET && h.cmsg_type == libc::SCM_TIMESTAMPING {
            // struct scm_timestamping: three timespecs, the first the software stamp.
            let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
            #[allow(clippy::unnecessary_cast)] // time_t and c_long are not i64 on every target
            let t = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
            ns = (t > 0).then_some(t);
        } else if (h.cmsg_level == libc::IPPROTO_IP && h.cmsg_type == libc::IP_RECVERR)
            || (h.cmsg_level == libc::IPPROTO_IPV6 && h.cmsg_type == libc::IPV6_RECVERR)
        {
            let e: libc::sock_extended_err = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
            // ee_info 0 is SCM_TSTAMP_SND: the packet left for the device.
            if e.ee_errno == libc::ENOMSG as u32
                && e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                && e.ee_info == 0
            {
                key = Some(e.ee_data);
            } else if e.ee_origin == libc::SO_EE_ORIGIN_ICMP
                || e.ee_origin == libc::SO_EE_ORIGIN_ICMP6
            {
                icmp = Some(e.ee_errno as i32);
            }
        }
        c = libc::CMSG_NXTHDR(msg, c);
    }
    if let Some(errno) = icmp {
        return Some(Queued::Icmp(errno));
    }
    Some(Queued::Stamp(SendStamp { key: key?, ns: ns? }))
}
