//! The TLS client configuration (rustls with the ring provider).

use crate::config::TlsConfig;
use crate::error::ReplayError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{
    ClientSessionStore, Resumption, Tls12ClientSessionValue, Tls13ClientSessionValue,
};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{ClientConfig, DigitallySignedStruct, NamedGroup, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The shared part of the TLS setup; each simulated client gets its own [`ClientConfig`] (a cheap
/// clone) with its own session store, so that clients do not share tickets.
#[derive(Debug, Clone)]
pub(crate) struct TlsBase {
    config: ClientConfig,
    key_log: Arc<dyn rustls::KeyLog>,
    pub server_name: ServerName<'static>,
    /// The server certificate verifier of every configuration (none while there are no roots
    /// to trust: every handshake then fails).
    pub verifier: Option<Arc<dyn ServerCertVerifier>>,
}

impl TlsBase {
    pub fn new(tls: &TlsConfig, server_ip: IpAddr) -> Result<TlsBase, ReplayError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ReplayError::TlsSetup(e.to_string()))?;
        let verifier: Option<Arc<dyn ServerCertVerifier>>;
        let config = if tls.insecure {
            let v: Arc<dyn ServerCertVerifier> = Arc::new(AcceptAnyCert(provider));
            verifier = Some(v.clone());
            builder
                .dangerous()
                .with_custom_certificate_verifier(v)
                .with_no_client_auth()
        } else {
            let mut roots = RootCertStore::empty();
            if let Some(path) = &tls.ca_file {
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| ReplayError::TlsSetup(format!("{}: {e}", path.display())))?;
                for cert in certs {
                    let cert = cert
                        .map_err(|e| ReplayError::TlsSetup(format!("{}: {e}", path.display())))?;
                    roots
                        .add(cert)
                        .map_err(|e| ReplayError::TlsSetup(format!("{}: {e}", path.display())))?;
                }
                if roots.is_empty() {
                    return Err(ReplayError::TlsSetup(format!(
                        "{}: no certificates",
                        path.display()
                    )));
                }
            }
            let roots = Arc::new(roots);
            match rustls::client::WebPkiServerVerifier::builder_with_provider(
                roots.clone(),
                provider,
            )
            .build()
            {
                Ok(v) => {
                    let v: Arc<dyn ServerCertVerifier> = v;
                    verifier = Some(v.clone());
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(v)
                        .with_no_client_auth()
                }
                Err(_) => {
                    verifier = None;
                    builder.with_root_certificates(roots).with_no_client_auth()
                }
            }
        };
        let server_name = match &tls.server_name {
            Some(n) => ServerName::try_from(n.clone())
                .map_err(|e| ReplayError::TlsSetup(format!("server name {n}: {e}")))?,
            None => ServerName::IpAddress(server_ip.into()),
        };
        Ok(TlsBase {
            config,
            key_log: ldplayer_stacks::tls::secrets::TAP.clone(),
            server_name,
            verifier,
        })
    }

    /// A configuration for one DoT client that resumes sessions.
    #[cfg(test)]
    pub fn for_client(&self) -> Arc<ClientConfig> {
        self.for_client_with(Vec::new(), true)
    }

    /// A configuration for one QUIC client offering `alpn` (`doq`, RFC 9250 §4.1, or `h3` for
    /// DoH over HTTP/3), with its own session store and early data (0-RTT) allowed when
    /// `zero_rtt`.
    pub fn for_quic_client_with(
        &self,
        alpn: &[u8],
        resume: bool,
        zero_rtt: bool,
    ) -> Arc<ClientConfig> {
        let mut c = (*self.for_client_with(vec![alpn.to_vec()], resume)).clone();
        // The QUIC client takes its keys from rustls' key changes; nothing to extract.
        c.enable_secret_extraction = false;
        c.key_log = ldplayer_stacks::tls::secrets::KEY_LOG_FILE.clone();
        c.enable_early_data = zero_rtt && resume;
        Arc::new(c)
    }

    /// A configuration for one client of the reference stack (rustls' ClientConnection for the
    /// whole session), as [`TlsBase::for_client_with`] makes it.
    pub fn for_reference_client_with(&self, alpn: Vec<Vec<u8>>, resume: bool) -> Arc<ClientConfig> {
        let mut c = (*self.for_client_with(alpn, resume)).clone();
        c.enable_secret_extraction = false;
        c.key_log = ldplayer_stacks::tls::secrets::KEY_LOG_FILE.clone();
        Arc::new(c)
    }

    /// A configuration for one client, with its own session store (or none, without
    /// `resume`), offering these application protocols (ALPN: none for DoT, `h2` for DoH).
    pub fn for_client_with(&self, alpn: Vec<Vec<u8>>, resume: bool) -> Arc<ClientConfig> {
        let mut c = self.config.clone();
        c.alpn_protocols = alpn;
        // A session keeps only its traffic keys once it is established (see `ldplayer_stacks::tls`).
        c.enable_secret_extraction = true;
        // With SSLKEYLOGFILE set, the sessions' secrets go there (NSS key log format), so that
        // Wireshark or tshark can decrypt a capture of the replay; without it, nothing is written.
        c.key_log = self.key_log.clone();
        c.resumption = if resume {
            Resumption::store(Arc::new(OneClientStore::default()))
        } else {
            Resumption::disabled()
        };
        Arc::new(c)
    }
}

/// The session store of one simulated client, which talks to one server over one connection at
/// a time: its newest TLS 1.3 ticket (servers send two or more; one resumes the next
/// connection, and that connection brings fresh ones), its TLS 1.2 session and its key-exchange
/// hint. rustls' `ClientSessionMemoryCache` held a hash map and every ticket: ≈ 1 KB more per
/// client empty, ≈ 2.6 KB with nsd's two tickets, against ≈ 4 KB for the whole connection
/// state (`tests::idle_session_memory`).
#[derive(Debug, Default)]
struct OneClientStore(Mutex<OneClient>);

#[derive(Debug, Default)]
struct OneClient {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: Option<Tls13ClientSessionValue>,
}

impl OneClientStore {
    fn with<T>(&self, f: impl FnOnce(&mut OneClient) -> T) -> T {
        // A panic while holding the lock cannot leave the store inconsistent: use it anyway.
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }
}

/// Every simulated client talks to the replay's one server, so server names are not compared.
impl ClientSessionStore for OneClientStore {
    fn set_kx_hint(&self, _: ServerName<'static>, group: NamedGroup) {
        self.with(|c| c.kx_hint = Some(group));
    }

    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(|c| c.kx_hint)
    }

    fn set_tls12_session(&self, _: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(|c| c.tls12 = Some(value));
    }

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(|c| c.tls12.clone())
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {
        self.with(|c| c.tls12 = None);
    }

    fn insert_tls13_ticket(&self, _: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.with(|c| c.tls13 = Some(value));
    }

    fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.with(|c| c.tls13.take())
    }
}

/// Accepts any server certificate; signatures over the handshake are still verified. Only for
/// test servers.
#[derive(Debug)]
struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The lean stack's TLS session ([`ldplayer_stacks::tls::TlsSession`]) with the replay's own
/// client configurations: memory per idle client (configuration, session store, session) and
/// the hand-over to the traffic keys, against nsd.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TlsConfig;
    use ldplayer_stacks::tls::TlsSession;
    use rustls::HandshakeKind;
    use std::io::{self, Read, Write};
    use std::net::TcpStream;

    /// Writes all the session's output to the socket.
    fn flush(s: &mut TlsSession, sock: &mut TcpStream) {
        while !s.output().is_empty() {
            match sock.write(s.output()) {
                Ok(n) => s.consume_output(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                Err(e) => panic!("write: {e}"),
            }
        }
    }

    /// Completes a handshake and one query/answer over a non-blocking socket.
    fn exchange(s: &mut TlsSession, sock: &mut TcpStream, query: &[u8]) -> Vec<u8> {
        let mut framed = (query.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(query);
        let mut pending = &framed[..];
        let mut plain = Vec::new();
        let mut chunk = [0u8; 16 * 1024 + 256];
        for _ in 0..100 {
            let n = s.write_plain(pending).unwrap();
            pending = &pending[n..];
            flush(s, sock);
            if pending.is_empty() && plain.len() >= 2 {
                let len = u16::from_be_bytes([plain[0], plain[1]]) as usize;
                if plain.len() >= 2 + len {
                    return plain;
                }
            }
            loop {
                match sock.read(&mut chunk) {
                    Ok(0) => panic!("the server closed the connection"),
                    Ok(n) => {
                        s.received(&mut chunk[..n], &mut plain).unwrap();
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        panic!("no answer");
    }

    /// Heap bytes per idle TLS session after a handshake and one exchange with nsd, with the
    /// client's own configuration and session store. Printed, and bounded so that a return of
    /// per-connection buffers or of a larger session store is caught (allocation sizes do not
    /// depend on the machine's speed).
    #[test]
    fn idle_session_memory() {
        let (server, _ca) = ldplayer_testbed::nsd_tls();
        let addr = server.tls_addr.unwrap();
        for resume in [false, true] {
            let tls = TlsConfig {
                insecure: true,
                resume,
                ..TlsConfig::default()
            };
            let base = TlsBase::new(&tls, addr.ip()).unwrap();
            let (config, session) = idle_memory(&base, addr);
            println!(
                "resumption {resume}: per client, configuration and session store {config} B; \
                 per idle session (state, tickets) {session} B"
            );
            // Measured: 384 + 1,252 B without resumption, 672 + 2,063 B with it (the ticket);
            // 672 + 2,085 B either way with rustls 0.23.46, and 672 + 2,275 B with the traffic
            // secrets kept for key updates. rustls' state kept took 384 + 4,023 B and 672 +
            // 4,834 B (its kernel connection, for key updates, 672 + 3,863 B), and rustls'
            // buffered connection with its memory cache ≈ 1,400 + 6,700 B.
            assert!(
                config + session < 4 * 1024,
                "{config} + {session} B per idle client"
            );
        }
    }

    /// After the first answer the session runs on its traffic keys alone, and nsd (OpenSSL)
    /// still answers: the record layer is checked by an independent implementation.
    #[test]
    fn later_answers_come_through_the_traffic_keys() {
        let (server, _ca) = ldplayer_testbed::nsd_tls();
        let addr = server.tls_addr.unwrap();
        let tls = TlsConfig {
            insecure: true,
            ..TlsConfig::default()
        };
        let base = TlsBase::new(&tls, addr.ip()).unwrap();
        let mut sock = TcpStream::connect(addr).unwrap();
        sock.set_nonblocking(true).unwrap();
        let mut s = TlsSession::new(base.for_client(), base.server_name.clone()).unwrap();
        assert!(!s.on_traffic_keys());
        for id in [0x1234u16, 0x4321, 0x5555] {
            let mut query = id.to_be_bytes().to_vec();
            query.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
            query.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
            let answer = exchange(&mut s, &mut sock, &query);
            assert_eq!(
                answer[2..4],
                id.to_be_bytes(),
                "the answer to query {id:#x}"
            );
            assert!(s.on_traffic_keys(), "keys only after an answer");
        }
        assert_eq!(s.handshake_kind(), Some(HandshakeKind::Full));
        s.close();
        flush(&mut s, &mut sock);
    }

    /// Heap bytes per client configuration and per idle session, over 50 of each.
    fn idle_memory(base: &TlsBase, addr: std::net::SocketAddr) -> (isize, isize) {
        // A query for www.example. A.
        let query = [
            0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, b'w', b'w', b'w', 7, b'e', b'x', b'a',
            b'm', b'p', b'l', b'e', 0, 0, 1, 0, 1,
        ];
        const N: isize = 50;
        let before = ldplayer_stacks::alloc_count::live();
        let configs: Vec<_> = (0..N).map(|_| base.for_client()).collect();
        let after_configs = ldplayer_stacks::alloc_count::live();
        let mut kept = Vec::new();
        for cfg in &configs {
            let mut sock = TcpStream::connect(addr).unwrap();
            sock.set_nonblocking(true).unwrap();
            let mut s = TlsSession::new(cfg.clone(), base.server_name.clone()).unwrap();
            let answer = exchange(&mut s, &mut sock, &query);
            assert_eq!(
                answer[2..4],
                query[..2],
                "the answer carries the query's ID"
            );
            kept.push((Box::new(s), sock));
        }
        let after = ldplayer_stacks::alloc_count::live();
        // Sessions that keep nothing would be a counter left out (installed in lib.rs).
        assert!(after > after_configs, "the counting allocator counts");
        drop(kept);
        ((after_configs - before) / N, (after - after_configs) / N)
    }
}
