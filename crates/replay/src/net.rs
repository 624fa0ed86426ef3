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

/// The address a client with original address `src` sends from when the replay keeps original
/// sources: `src` itself when it can be a routed source towards `server`, else
/// [`stand_in_source`].
pub fn original_source(src: IpAddr, server: &SocketAddr) -> IpAddr {
    let usable = src.is_ipv4() == server.is_ipv4()
        && !src.is_loopback()
        && !src.is_multicast()
        && !src.is_unspecified()
        && src != server.ip()
        && match src {
            IpAddr::V4(a) => !a.is_broadcast() && a.octets()[0] != 0,
            IpAddr::V6(_) => true,
        };
    if usable {
        src
    } else {
        stand_in_source(src, server.is_ipv4())
    }
}

/// A stable stand-in for an original address that cannot be used as a source: a hash of it in
/// 198.18.0.0/15 (RFC 2544's benchmarking prefix) for an IPv4 server, in `fd00:198:18::/48`
/// for an IPv6 one. Distinct addresses map to distinct stand-ins in all but rare collisions.
pub fn stand_in_source(src: IpAddr, ipv4: bool) -> IpAddr {
    use std::hash::{Hash, Hasher};
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x6c64_706c, 0x6179_6572);
    src.hash(&mut h);
    let x = h.finish();
    if ipv4 {
        // 17 host bits; skip .0 and .255 endings so that no stand-in looks like a broadcast.
        let host = (x % (1 << 17)) as u32;
        let host = if host & 0xff == 0 || host & 0xff == 0xff {
            host ^ 1
        } else {
            host
        };
        IpAddr::V4(Ipv4Addr::from(0xc612_0000u32 | host))
    } else {
        let base = u128::from(Ipv6Addr::new(0xfd00, 0x198, 0x18, 0, 0, 0, 0, 0));
        IpAddr::V6(Ipv6Addr::from(base | u128::from(x).max(1)))
    }
}

fn bind_local(sock: &Socket, local: Option<IpAddr>, server: &SocketAddr) -> io::Result<()> {
    if let Some(ip) = local {
        // IPv4 binds to any address routed to this host (AnyIP: `ip route add local PREFIX dev
        // lo`) and refuses others (EADDRNOTAVAIL), whose answers would go elsewhere. IPv6 checks
        // configured addresses only, so AnyIP needs IPV6_FREEBIND there, and an IPv6 address
        // that is not local is not caught here: its answers are lost and its queries time out.
        if ip.is_ipv6() {
            let _ = sock.set_freebind_v6(true);
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

/// The receive buffer a replay's UDP socket asks for, bytes (resperf's `-b 4096`).
pub const UDP_RECV_BUFFER: usize = 4 << 20;

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
    // Room for the answers (and the kernel's send stamps, queued on the same budget) that
    // arrive while the querier is busy or off its core: with the default (≈ 200 KB, a few
    // hundred datagrams) one client's socket overflowed at 11k answers a second on a loaded
    // machine, a loss that was the client's, not the server's (bench/capacity.sh). Memory is
    // only taken by datagrams waiting; the kernel caps it at net.core.rmem_max.
    let _ = sock.set_recv_buffer_size(UDP_RECV_BUFFER);
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
    sock.set_tcp_nodelay(true)?;
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
    fn original_sources_keep_usable_addresses_and_stand_in_for_others() {
        let server: SocketAddr = "10.53.0.1:53".parse().unwrap();
        let own: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(original_source(own, &server), own);
        for odd in [
            "127.0.0.9",
            "10.53.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "2001:db8::1",
        ] {
            let odd: IpAddr = odd.parse().unwrap();
            let stand_in = original_source(odd, &server);
            assert_ne!(stand_in, odd);
            assert!(stand_in.is_ipv4());
            let o = match stand_in {
                IpAddr::V4(a) => a.octets(),
                IpAddr::V6(_) => unreachable!(),
            };
            assert_eq!((o[0], o[1] & 0xfe), (198, 18), "{stand_in}");
            assert_eq!(original_source(odd, &server), stand_in, "stable");
        }
        let v6_server: SocketAddr = "[fd53::1]:53".parse().unwrap();
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert!(original_source(v4, &v6_server).is_ipv6());
    }

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
