//! DNS messages for tests: a query built from its parts, and asking a server over UDP or TCP.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// A query: `id`, one question `name` (presentation form, absolute) of type `qtype` in class
/// IN, RD clear; with `edns` = `Some((UDP size, DO))` an OPT record. Fails the test if `name`
/// is not a domain name.
pub fn query(id: u16, name: &str, qtype: impl Into<u16>, edns: Option<(u16, bool)>) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(edns.is_some())]);
    q.extend(ldplayer_dns::name_from_presentation(name).expect("a domain name"));
    q.extend_from_slice(&qtype.into().to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    if let Some((size, dnssec_ok)) = edns {
        q.extend_from_slice(&[0, 0, 41]);
        q.extend_from_slice(&size.to_be_bytes());
        q.extend_from_slice(&[0, 0]);
        q.extend_from_slice(&(if dnssec_ok { 0x8000u16 } else { 0 }).to_be_bytes());
        q.extend_from_slice(&[0, 0]);
    }
    q
}

/// [`query`] with RD set and no EDNS, as a stub resolver asks a recursive server.
pub fn recursive_query(id: u16, name: &str, qtype: impl Into<u16>) -> Vec<u8> {
    let mut q = query(id, name, qtype, None);
    q[2] |= 1;
    q
}

/// Sends `query` over UDP to `server` and waits for the reply with the same ID: three tries of
/// half a second each. `None` if nothing answered.
pub fn ask_udp(server: SocketAddr, query: &[u8]) -> Option<Vec<u8>> {
    let local: SocketAddr = if server.is_ipv4() {
        ([127, 0, 0, 1], 0).into()
    } else {
        (std::net::Ipv6Addr::LOCALHOST, 0).into()
    };
    let sock = UdpSocket::bind(local).ok()?;
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    for _attempt in 0..3 {
        sock.send_to(query, server).ok()?;
        let mut buf = [0u8; 65535];
        for _ in 0..4 {
            match sock.recv_from(&mut buf) {
                Ok((n, _)) if n >= 2 && buf[..2] == query[..2] => return Some(buf[..n].to_vec()),
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    }
    None
}

/// Sends `query` over TCP to `server` (a connection of its own, RFC 1035 length prefix) and
/// reads one reply within two seconds. `None` if it did not answer.
pub fn ask_tcp(server: SocketAddr, query: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut framed = u16::try_from(query.len()).ok()?.to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    s.write_all(&framed).ok()?;
    let mut len = [0u8; 2];
    s.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut buf).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_has_its_question_and_edns_in_place() {
        let q = query(0x1234, "www.example.", 28u16, Some((1232, true)));
        assert_eq!(q[..4], [0x12, 0x34, 0, 0], "ID, RD clear");
        assert_eq!(q[4..12], [0, 1, 0, 0, 0, 0, 0, 1], "QD 1, AR 1");
        assert_eq!(&q[12..25], b"\x03www\x07example\x00");
        assert_eq!(q[25..29], [0, 28, 0, 1], "AAAA IN");
        assert_eq!(q[29..], [0, 0, 41, 4, 208, 0, 0, 0x80, 0, 0, 0], "OPT, DO");
        let plain = query(1, ".", 6u16, None);
        assert_eq!(plain.len(), 12 + 1 + 4, "no OPT: {plain:?}");
        assert_eq!(recursive_query(1, ".", 6u16)[2], 1, "RD set");
    }
}
