//! Batched UDP I/O: many datagrams per system call with `recvmmsg` and `sendmmsg` (Linux), and
//! the kernel's receive timestamps.
//!
//! Both the query engine (queries out, answers in) and the authoritative server (queries in,
//! answers out) move datagrams in batches; on loopback the kernel's cost per packet, not the
//! system call, then dominates (≈ 0.9 Mpps with `sendmmsg` against 0.5–0.7 with `send_to`, see
//! shared/notes/crates.md). std and socket2 offer no batched calls, hence this small unsafe core,
//! kept in one place.
//!
//! Receive timestamps ([`enable_timestamps`], [`RecvBatch::with_timestamps`], [`recv_stream`],
//! [`recv_datagram`]) are the kernel's: taken when a packet enters the stack, as a capture's
//! are, so that a response's arrival does not depend on when the receiving thread woke up. Send
//! timestamps ([`enable_send_timestamps`], [`read_send_stamps`]) are the kernel's too, taken
//! when a packet is handed to the device: on this project's machines a send system call took
//! 38–45 µs from the clock read before it to the packet on the wire (1.5 µs when the caller had
//! not slept), the kernel's stamp 1.5 µs. The query engine uses both for UDP, TCP, TLS and QUIC
//! alike; they live here beside the other control messages.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;

/// Control-message space of one datagram, in 8-byte words (aligned for `cmsghdr`): enough for
/// one `in6_pktinfo` (the larger of the two) and one `timespec`, 72 bytes, with room to spare.
pub(crate) const CONTROL_WORDS: usize = 16;

mod errqueue;
mod recv;
mod send;

pub use errqueue::*;
pub use recv::*;
pub use send::*;

/// Most datagrams moved by one `recvmmsg` or `sendmmsg`.
pub const BATCH: usize = 32;
/// Size of each receive slot; longer datagrams are cut by the kernel and flagged.
pub const RECV_BUF: usize = 4096;

/// Whether [`RecvBatch::recv`] may block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Take what is queued now (`MSG_DONTWAIT`); 0 when nothing is.
    No,
    /// Block for the first datagram (up to the socket's receive timeout), then take what else is
    /// queued (`MSG_WAITFORONE`).
    ForOne,
}

/// Sets an integer socket option (`setsockopt`); socket2 has no call for the options here.
fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` is a valid c_int that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[inline]
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
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_batch_goes_out_and_comes_back_with_its_sources() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let msgs: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 10 + i as usize]).collect();
        let refs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
        let (sent, err) = send_to(a.as_raw_fd(), &b.local_addr().unwrap().into(), &refs);
        assert_eq!((sent, err.map(|e| e.kind())), (40, None));
        let mut batch = RecvBatch::new();
        let mut got = Vec::new();
        while got.len() < 40 {
            let n = batch.recv(b.as_raw_fd(), Wait::ForOne).unwrap();
            assert!(n > 0 && n == batch.len());
            for i in 0..n {
                assert_eq!(batch.source(i), Some(a.local_addr().unwrap()));
                assert!(!batch.truncated(i));
                got.push(batch.data(i).to_vec());
            }
            // Echo the first of each batch back to its source.
            assert_eq!(send_replies(b.as_raw_fd(), &batch, &[0], &[b"pong"]), 0);
        }
        assert_eq!(got, msgs);
        let mut buf = [0u8; 8];
        a.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        assert_eq!(a.recv(&mut buf).unwrap(), 4);
        // Nothing left: a non-blocking receive takes nothing.
        assert_eq!(batch.recv(b.as_raw_fd(), Wait::No).unwrap(), 0);
        assert!(batch.is_empty());
    }

    /// The kernel's receive time lies between the send and the receive call, for datagrams and
    /// for a stream.
    /// `CLOCK_REALTIME` in ns, as the kernel's stamps are.
    fn now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64
    }

    #[test]
    fn receive_times_come_from_the_kernel() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_timestamps(b.as_raw_fd()).unwrap();
        // The kernel turns its timestamping on a moment after the first socket asks for it;
        // packets before that are stamped when read.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let before = now();
        a.send_to(b"stamp", b.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut batch = RecvBatch::with_timestamps();
        assert_eq!(batch.recv(b.as_raw_fd(), Wait::No).unwrap(), 1);
        let stamp = batch.timestamp(0).expect("a kernel timestamp");
        // Taken at arrival, not when read 20 ms later.
        assert!(stamp >= before && stamp < now() - 10_000_000, "{stamp}");
        // Without the socket option there is none.
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.send_to(b"plain", c.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(batch.recv(c.as_raw_fd(), Wait::No).unwrap(), 1);
        assert_eq!(batch.timestamp(0), None);

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        enable_timestamps(server.as_raw_fd()).unwrap();
        let before = now();
        std::io::Write::write_all(&mut client, b"stream").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 64];
        let (n, stamp) = recv_stream(server.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"stream");
        let stamp = stamp.expect("a kernel timestamp on TCP");
        assert!(stamp >= before && stamp < now() - 10_000_000, "{stamp}");
        drop(client);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(recv_stream(server.as_raw_fd(), &mut buf).unwrap().0, 0);
    }

    /// Send stamps come keyed by datagram number (UDP) and by the last byte of each write (TCP),
    /// each between the clock read before the send and the one after it.
    #[test]
    fn send_times_come_from_the_kernel() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        enable_send_timestamps(a.as_raw_fd(), false).unwrap();
        let mut windows = Vec::new();
        for i in 0..3u8 {
            let before = now();
            let (n, err) = send_connected(a.as_raw_fd(), &[&[i; 20], &[i; 30]]);
            assert_eq!((n, err.map(|e| e.kind())), (2, None));
            windows.push((before, now()));
        }
        let mut stamps = Vec::new();
        assert_eq!(read_send_stamps(a.as_raw_fd(), &mut stamps).unwrap(), 6);
        for (i, st) in stamps.iter().enumerate() {
            assert_eq!(st.key, i as u32);
            let (lo, hi) = windows[i / 2];
            assert!(st.ns >= lo && st.ns <= hi, "{st:?} outside {lo}..{hi}");
        }
        assert_eq!(read_send_stamps(a.as_raw_fd(), &mut stamps).unwrap(), 0);

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _server = listener.accept().unwrap();
        enable_send_timestamps(client.as_raw_fd(), true).unwrap();
        std::io::Write::write_all(&mut client, &[1; 100]).unwrap();
        std::io::Write::write_all(&mut client, &[2; 50]).unwrap();
        stamps.clear();
        assert_eq!(
            read_send_stamps(client.as_raw_fd(), &mut stamps).unwrap(),
            2
        );
        assert_eq!((stamps[0].key, stamps[1].key), (99, 149));

        // A port with nothing behind it: the ICMP report comes through the error queue along
        // with the send stamp, and reading it clears the socket's error.
        let gone = UdpSocket::bind("127.0.0.1:0").unwrap();
        let dead = gone.local_addr().unwrap();
        drop(gone);
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        c.connect(dead).unwrap();
        enable_send_timestamps(c.as_raw_fd(), false).unwrap();
        enable_icmp_errors(c.as_raw_fd(), false).unwrap();
        assert_eq!(send_connected(c.as_raw_fd(), &[b"anyone?"]).0, 1);
        std::thread::sleep(std::time::Duration::from_millis(20));
        stamps.clear();
        let q = read_error_queue(c.as_raw_fd(), &mut stamps).unwrap();
        assert_eq!(
            q,
            ErrorQueue {
                stamps: 1,
                icmp: Some(libc::ECONNREFUSED)
            }
        );
        assert_eq!(
            read_error_queue(c.as_raw_fd(), &mut stamps).unwrap(),
            ErrorQueue::default()
        );
        let mut batch = RecvBatch::new();
        assert_eq!(batch.recv(c.as_raw_fd(), Wait::No).unwrap(), 0);
    }

    /// Stamps asked for datagram by datagram: only those come, keyed by their count, each
    /// within its send call; the datagrams between go out unstamped.
    #[test]
    fn send_stamps_come_for_the_datagrams_that_ask() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        enable_send_timestamps_on_request(a.as_raw_fd()).unwrap();
        let msgs: Vec<[u8; 20]> = (0..10u8).map(|i| [i; 20]).collect();
        let msgs: Vec<&[u8]> = msgs.iter().map(|m| &m[..]).collect();
        let mut windows = Vec::new();
        for _ in 0..2 {
            let before = now();
            let (n, err) = send_connected_stamping(a.as_raw_fd(), &msgs, |i| i == 0 || i == 9);
            assert_eq!((n, err.map(|e| e.kind())), (10, None));
            windows.push((before, now()));
        }
        assert_eq!(send_connected(a.as_raw_fd(), &msgs[..3]).0, 3);
        let mut stamps = Vec::new();
        assert_eq!(read_send_stamps(a.as_raw_fd(), &mut stamps).unwrap(), 4);
        for (i, st) in stamps.iter().enumerate() {
            assert_eq!(st.key, i as u32);
            let (lo, hi) = windows[i / 2];
            assert!(st.ns >= lo && st.ns <= hi, "{st:?} outside {lo}..{hi}");
        }
        assert!(stamps[0].ns <= stamps[1].ns && stamps[2].ns <= stamps[3].ns);
        let mut got = RecvBatch::new();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let mut total = 0;
        while total < 23 {
            total += got.recv(b.as_raw_fd(), Wait::ForOne).unwrap();
        }
    }

    /// One datagram at a time, with its kernel receive stamp: taken at arrival, not when read;
    /// a datagram longer than the buffer is refused rather than cut silently.
    #[test]
    fn single_datagrams_come_with_their_kernel_stamps() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        enable_timestamps(b.as_raw_fd()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut buf = [0u8; 64];
        let empty = recv_datagram(b.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(empty.kind(), std::io::ErrorKind::WouldBlock);
        let before = now();
        a.send_to(b"stamp", b.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (n, stamp) = recv_datagram(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"stamp");
        let stamp = stamp.expect("a kernel timestamp");
        assert!(stamp >= before && stamp < now() - 10_000_000, "{stamp}");
        a.send_to(&[9u8; 100], b.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let long = recv_datagram(b.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(long.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn long_datagrams_are_cut_and_flagged() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        a.send_to(&vec![7u8; RECV_BUF + 100], b.local_addr().unwrap())
            .unwrap();
        let mut batch = RecvBatch::new();
        assert_eq!(batch.recv(b.as_raw_fd(), Wait::ForOne).unwrap(), 1);
        assert!(batch.truncated(0));
        assert_eq!(batch.data(0).len(), RECV_BUF);
    }
}
