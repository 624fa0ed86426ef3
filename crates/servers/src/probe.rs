//! Is the server up? One query over UDP, TCP and (when asked) TLS, each of which must be
//! answered, and a DoH handshake when asked: a server that listens on UDP may still be loading zones for TCP, and a TLS port
//! that accepts connections may still fail the handshake. The TLS client checks the
//! certificate against the CA the experiment's clients will trust.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ldplayer_dns::{Header, Rcode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::setup::Probe;

/// Bit 10 of the flags word: an authoritative answer.
const AA: u16 = 0x0400;

/// The query of `probe` with message ID `id`: recursion desired, no EDNS.
pub(crate) fn query(probe: &Probe, id: u16) -> Result<Vec<u8>, String> {
    let name = ldplayer_dns::name_from_presentation(&probe.qname)
        .map_err(|e| format!("{}: {e}", probe.qname))?;
    let mut q = Vec::with_capacity(12 + name.len() + 4);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend_from_slice(&name);
    q.extend_from_slice(&probe.qtype.0.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes()); // IN
    Ok(q)
}

/// Whether `answer` answers query `id` as `probe` wants.
fn check(probe: &Probe, id: u16, answer: &[u8]) -> Result<(), String> {
    let header = Header::read(answer).ok_or("a response shorter than a header")?;
    if header.id != id || !header.qr() {
        return Err("a message that is not the response".into());
    }
    if probe.authoritative {
        let rcode = Rcode::from_parts(header.rcode_low(), 0);
        if rcode != Rcode::NOERROR || header.ancount == 0 || header.flags & AA == 0 {
            return Err(format!(
                "{rcode} with {} answer record(s){}",
                header.ancount,
                if header.flags & AA == 0 {
                    ", not authoritative"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

/// Asks over UDP, waiting up to `wait`.
pub(crate) fn udp(probe: &Probe, wait: Duration) -> Result<(), String> {
    let id = next_id();
    let query = query(probe, id)?;
    let local: SocketAddr = if probe.addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local).map_err(|e| e.to_string())?;
    sock.connect(probe.addr).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(wait))
        .map_err(|e| e.to_string())?;
    sock.send(&query).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 4096];
    let n = sock.recv(&mut buf).map_err(|e| e.to_string())?;
    check(probe, id, &buf[..n])
}

/// Asks over TCP, waiting up to `wait` for each step.
pub(crate) fn tcp(probe: &Probe, wait: Duration) -> Result<(), String> {
    let mut stream = connect(probe.addr, wait)?;
    exchange(probe, &mut stream)
}

/// Asks over TLS to `addr`, trusting the CA certificate(s) in `ca` for the address.
pub(crate) fn tls(
    probe: &Probe,
    addr: SocketAddr,
    ca: &Path,
    wait: Duration,
) -> Result<(), String> {
    let mut tls = handshake(addr, ca, wait, Vec::new())?;
    exchange(probe, &mut tls)
}

/// Checks that DoH is served at `addr`: a TLS handshake (trusting `ca`) that settles on
/// HTTP/2. A query is not asked: that needs an HTTP/2 client, and the replay's own DoH is
/// what the experiment measures.
pub(crate) fn https(addr: SocketAddr, ca: &Path, wait: Duration) -> Result<(), String> {
    let tls = handshake(addr, ca, wait, vec![b"h2".to_vec()])?;
    match tls.conn.alpn_protocol() {
        Some(b"h2") => Ok(()),
        Some(other) => Err(format!(
            "the server chose {} instead of HTTP/2",
            String::from_utf8_lossy(other)
        )),
        None => Err("the server did not offer HTTP/2 (no ALPN)".into()),
    }
}

/// A finished TLS handshake with `addr`, offering `alpn`.
fn handshake(
    addr: SocketAddr,
    ca: &Path,
    wait: Duration,
    alpn: Vec<Vec<u8>>,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| format!("{}: {e}", ca.display()))? {
        let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
        roots
            .add(cert)
            .map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn;
    let name = ServerName::IpAddress(addr.ip().into());
    let mut session =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut stream = connect(addr, wait)?;
    while session.is_handshaking() {
        session
            .complete_io(&mut stream)
            .map_err(|e| e.to_string())?;
    }
    Ok(rustls::StreamOwned::new(session, stream))
}

fn connect(addr: SocketAddr, wait: Duration) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&addr, wait).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(wait))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(wait))
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// One length-prefixed query and its answer over a stream.
fn exchange(probe: &Probe, stream: &mut impl ReadWrite) -> Result<(), String> {
    let id = next_id();
    let query = query(probe, id)?;
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&query);
    stream.write_all(&framed).map_err(|e| e.to_string())?;
    stream.flush().map_err(|e| e.to_string())?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).map_err(|e| e.to_string())?;
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut answer).map_err(|e| e.to_string())?;
    check(probe, id, &answer)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A message ID that differs from one probe to the next.
fn next_id() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0x1d5e);
    NEXT.fetch_add(0x3b1, Ordering::Relaxed)
}
