//! Socket setup: local addresses per client, UDP sockets and non-blocking TCP connects.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

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
        // IPv4 binds to any address routed to this host (AnyIP: `ip route add local PREFIX dev
        // lo`) and refuses others (EADDRNOTAVAIL), whose answers would go elsewhere. IPv6 checks
        // configured addresses only, so AnyIP needs IPV6_FREEBIND there, and an IPv6 address
        // that is not local is not caught here: its answers are lost and its queries time out.
        if ip.is_ipv6() {
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

/// A socket that asks for the kernel's receive timestamps and does nothing else: kept open for
/// a whole replay from before its first query, so that the kernel, which turns its timestamping
/// on a moment after it is first asked, stamps the first answers on arrival too.
pub(crate) fn timestamping_on() -> Option<std::net::UdpSocket> {
    let sock = std::net::UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).ok()?;
    ldplayer_udp::enable_timestamps(sock.as_raw_fd()).ok()?;
    Some(sock)
}

/// A non-blocking UDP socket bound to `local` (or the unspecified address), port ephemeral, and
/// connected to `server`, as stub resolvers do: the kernel keeps the route, drops datagrams from
/// other sources and reports ICMP port unreachable as `ECONNREFUSED`. Answers carry the kernel's
/// receive time.
pub fn udp_socket(local: Option<IpAddr>, server: &SocketAddr) -> io::Result<mio::net::UdpSocket> {
    let sock = Socket::new(
        Domain::for_address(*server),
        Type::DGRAM.nonblocking().cloexec(),
        Some(Protocol::UDP),
    )?;
    bind_local(&sock, local, server)?;
    sock.connect(&SockAddr::from(*server))?;
    // Without kernel timestamps answers are timed when read: worse, not wrong.
    let _ = ldplayer_udp::enable_timestamps(sock.as_raw_fd());
    Ok(mio::net::UdpSocket::from_std(sock.into()))
}

/// A non-blocking TCP socket with a connect to `server` under way (or done), whose reads carry
/// the kernel's receive time.
pub fn tcp_connect(local: Option<IpAddr>, server: &SocketAddr) -> io::Result<mio::net::TcpStream> {
    let sock = Socket::new(
        Domain::for_address(*server),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    sock.set_nodelay(true)?;
    let _ = ldplayer_udp::enable_timestamps(sock.as_raw_fd());
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
