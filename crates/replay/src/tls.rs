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
            key_log: crate::traffic_secrets::TAP.clone(),
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
        c.key_log = crate::traffic_secrets::KEY_LOG_FILE.clone();
        c.enable_early_data = zero_rtt && resume;
        Arc::new(c)
    }

    /// A configuration for one client of the reference stack (rustls' ClientConnection for the
    /// whole session), as [`TlsBase::for_client_with`] makes it.
    pub fn for_reference_client_with(&self, alpn: Vec<Vec<u8>>, resume: bool) -> Arc<ClientConfig> {
        let mut c = (*self.for_client_with(alpn, resume)).clone();
        c.enable_secret_extraction = false;
        c.key_log = crate::traffic_secrets::KEY_LOG_FILE.clone();
        Arc::new(c)
    }

    /// A configuration for one client, with its own session store (or none, without
    /// `resume`), offering these application protocols (ALPN: none for DoT, `h2` for DoH).
    pub fn for_client_with(&self, alpn: Vec<Vec<u8>>, resume: bool) -> Arc<ClientConfig> {
        let mut c = self.config.clone();
        c.alpn_protocols = alpn;
        // A session keeps only its traffic keys once it is established (see `traffic_keys`).
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
/// state (`tls_session::tests::idle_session_memory`).
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
