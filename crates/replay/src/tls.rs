//! The TLS client configuration (rustls with the ring provider).

use crate::config::TlsConfig;
use crate::error::ReplayError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionMemoryCache, Resumption};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::net::IpAddr;
use std::sync::Arc;

/// The shared part of the TLS setup; each simulated client gets its own [`ClientConfig`] (a cheap
/// clone) with its own session store, so that clients do not share tickets.
#[derive(Debug, Clone)]
pub(crate) struct TlsBase {
    config: ClientConfig,
    resume: bool,
    pub server_name: ServerName<'static>,
}

impl TlsBase {
    pub fn new(tls: &TlsConfig, server_ip: IpAddr) -> Result<TlsBase, ReplayError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ReplayError::TlsSetup(e.to_string()))?;
        let config = if tls.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
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
            builder.with_root_certificates(roots).with_no_client_auth()
        };
        let server_name = match &tls.server_name {
            Some(n) => ServerName::try_from(n.clone())
                .map_err(|e| ReplayError::TlsSetup(format!("server name {n}: {e}")))?,
            None => ServerName::IpAddress(server_ip.into()),
        };
        Ok(TlsBase {
            config,
            resume: tls.resume,
            server_name,
        })
    }

    /// A configuration for one client, with its own session store (or none).
    pub fn for_client(&self) -> Arc<ClientConfig> {
        let mut c = self.config.clone();
        c.resumption = if self.resume {
            Resumption::store(Arc::new(ClientSessionMemoryCache::new(2)))
        } else {
            Resumption::disabled()
        };
        Arc::new(c)
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
