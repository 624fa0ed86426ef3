//! Socket setup and batched UDP system calls.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

/// The local address of client number `client` within `prefix`: the prefix's address plus
/// `client + 1`, wrapping around within the prefix (never the network address itself unless the
/// prefix has a single address).
pub fn client_addr(prefix: (IpAddr, u8), client: u32) -> IpAddr {
    let (net, len) = prefix;
    let (bits, base): (u32, u128) = match net {
        IpAddr::V4(a) => (32, u32::from(a) as u128),
        IpAddr::V6(a) => (128, u128::from(a)),
    };
    let host_bits = bits.saturating_sub(len as u32);
    let mask: u128 = if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    let base = base & !mask;
    let offset = if mask == 0 {
        0
    } else if mask == 1 {
        client as u128 & 1
    } else {
        (client as u128 % mask) + 1
    };
    let addr = base | offset;
    match net {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(addr as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(addr)),
    }
}

fn bind_local(sock: &Socket, local: Option<IpAddr>, server: &SocketAddr) -> io::Result<()> {
    if let Some(ip) = local {
        // Freebind lets us use addresses routed to us (AnyIP) but not configured.
        if ip.is_ipv4() {
            let _ = sock.set_freebind(true);
        } else {
            let _ = sock.set_freebind_ipv6(true);
        }
        sock.bind(&SocketAddr::new(ip, 0).into())
    } else {
        let any: IpAddr = if server.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            Ipv6Addr::UNSPECIFIED.into()
        };
        sock.bind(&SocketAddr::new(any, 0).into())
    }
}

/// A non-blocking UDP socket bound to `local` (or the unspecified address), port ephemeral.
pub fn udp_socket(local: Option<IpAddr>, server: &SocketAddr) -> io::Result<mio::net::UdpSocket> {
    let sock = Socket::new(
        Domain::for_address(*server),
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    bind_local(&sock, local, server)?;
    Ok(mio::net::UdpSocket::from_std(sock.into()))
}

/// A non-blocking TCP socket with a connect to `server` under way (or done).
pub fn tcp_connect(local: Option<IpAddr>, server: &SocketAddr) -> io::Result<mio::net::TcpStream> {
    let sock = Socket::new(
        Domain::for_address(*server),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    sock.set_nodelay(true)?;
    if local.is_some() {
        bind_local(&sock, local, server)?;
    }
    match sock.connect(&SockAddr::from(*server)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(sock.into()))
}

/// Most messages moved by one `sendmmsg` or `recvmmsg`.
pub const BATCH: usize = 32;
/// Size of each receive buffer; longer datagrams are cut and flagged.
pub const RECV_BUF: usize = 4096;

/// Sends `msgs` to `dest` on `fd` with as few `sendmmsg` calls as possible; returns how many went
/// out (the rest failed with the returned error, if any).
pub fn send_batch(fd: RawFd, dest: &SockAddr, msgs: &[&[u8]]) -> (usize, Option<io::Error>) {
    let mut done = 0;
    while done < msgs.len() {
        let chunk = &msgs[done..(done + BATCH).min(msgs.len())];
        // SAFETY: zeroed iovec/mmsghdr are valid; every pointer below points into `chunk` or
        // `dest`, which outlive the call, and the kernel only reads through them.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdr: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for (i, m) in chunk.iter().enumerate() {
            iov[i] = libc::iovec {
                iov_base: m.as_ptr() as *mut libc::c_void,
                iov_len: m.len(),
            };
            hdr[i].msg_hdr.msg_name = dest.as_ptr() as *mut libc::c_void;
            hdr[i].msg_hdr.msg_namelen = dest.len();
            hdr[i].msg_hdr.msg_iov = &mut iov[i];
            hdr[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: `hdr[..chunk.len()]` is initialised as above.
        let n = unsafe {
            libc::sendmmsg(
                fd,
                hdr.as_mut_ptr(),
                chunk.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return (done, Some(e));
        }
        if n == 0 {
            return (done, Some(io::Error::from(io::ErrorKind::WriteZero)));
        }
        done += n as usize;
    }
    (done, None)
}

/// Reusable buffers for `recvmmsg`.
pub struct RecvBufs {
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    lens: [usize; BATCH],
    truncated: [bool; BATCH],
    count: usize,
}

impl RecvBufs {
    pub fn new() -> RecvBufs {
        RecvBufs {
            bufs: vec![0; BATCH * RECV_BUF],
            // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; BATCH],
            lens: [0; BATCH],
            truncated: [false; BATCH],
            count: 0,
        }
    }

    /// Receives up to [`BATCH`] datagrams without blocking; returns how many (0 when none).
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        // SAFETY: zeroed iovec/mmsghdr are valid; pointers refer to `self.bufs` and
        // `self.addrs`, which live across the call and are large enough.
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdr: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let base = self.bufs.as_mut_ptr();
        for i in 0..BATCH {
            iov[i] = libc::iovec {
                // SAFETY: i * RECV_BUF < bufs.len().
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
            // SAFETY: as above.
            let n = unsafe {
                libc::recvmmsg(
                    fd,
                    hdr.as_mut_ptr(),
                    BATCH as libc::c_uint,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => {
                        self.count = 0;
                        return Ok(0);
                    }
                    _ => return Err(e),
                }
            }
            let n = n as usize;
            for (i, h) in hdr.iter().enumerate().take(n) {
                self.lens[i] = (h.msg_len as usize).min(RECV_BUF);
                self.truncated[i] = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            }
            self.count = n;
            return Ok(n);
        }
    }

    /// Datagram `i` of the last receive: its bytes, whether it was cut, and its source.
    pub fn get(&self, i: usize) -> (&[u8], bool, Option<SocketAddr>) {
        let data = &self.bufs[i * RECV_BUF..i * RECV_BUF + self.lens[i]];
        let addr = sockaddr_to_std(&self.addrs[i]);
        (data, self.truncated[i], addr)
    }
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let a: &libc::sockaddr_in = unsafe { &*(s as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))),
                u16::from_be(a.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let a: &libc::sockaddr_in6 = unsafe { &*(s as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)),
                u16::from_be(a.sin6_port),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_addresses() {
        let p = ("127.0.0.0".parse().unwrap(), 8);
        assert_eq!(client_addr(p, 0), "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(client_addr(p, 255), "127.0.1.0".parse::<IpAddr>().unwrap());
        let p6 = ("fd00::".parse().unwrap(), 64);
        assert_eq!(client_addr(p6, 9), "fd00::a".parse::<IpAddr>().unwrap());
        let one = ("127.0.0.9".parse().unwrap(), 32);
        assert_eq!(client_addr(one, 5), "127.0.0.9".parse::<IpAddr>().unwrap());
        let small = ("10.0.0.0".parse().unwrap(), 30);
        assert_eq!(client_addr(small, 3), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
