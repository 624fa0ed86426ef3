//! DNS over TLS (RFC 7858) settings: the listen addresses, the server's certificate chain and key,
//! and the rustls configuration made from them (TLS 1.3 and 1.2, ring, session tickets on so that
//! clients resume). The connections themselves are served by the TCP thread (see `tcp.rs`).

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::ServerError;

/// The port DNS over TLS is served on by convention (RFC 7858 §3.1).
pub const DOT_PORT: u16 = 853;

/// DNS over TLS: where to listen and with which certificate.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Addresses to accept TLS connections on (TCP only; nothing is bound for UDP). Port 0
    /// picks a free port; see
    /// [`RunningServer::tls_local_addrs`](crate::RunningServer::tls_local_addrs).
    pub listen: Vec<SocketAddr>,
    /// The certificate chain and key the server presents.
    pub identity: TlsIdentity,
}

/// The server's certificate chain (leaf first) and its private key.
#[derive(Clone)]
pub struct TlsIdentity {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
}

impl fmt::Debug for TlsIdentity {
    /// Says how many certificates there are; never shows the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("certificates", &self.chain.len())
            .field("key", &"(hidden)")
            .finish()
    }
}

impl TlsIdentity {
    /// A chain (leaf first) and its key, already decoded.
    pub fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> TlsIdentity {
        TlsIdentity {
            chain,
            key: Arc::new(key),
        }
    }

    /// Reads a PEM certificate chain (leaf first) and a PEM private key (PKCS#8, PKCS#1 or
    /// SEC1) from memory.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsIdentity, ServerError> {
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ServerError::Tls(format!("certificate: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem)
            .map_err(|e| ServerError::Tls(format!("private key: {e}")))?;
        Self::checked(chain, key, "the certificate PEM")
    }

    /// Reads a PEM certificate chain file (leaf first) and a PEM private key file.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsIdentity, ServerError> {
        let file_err = |path: &Path| {
            let path = path.to_path_buf();
            move |e: rustls_pki_types::pem::Error| ServerError::TlsFile {
                path,
                message: e.to_string(),
            }
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .map_err(file_err(cert))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(file_err(cert))?;
        let key_der = PrivateKeyDer::from_pem_file(key).map_err(file_err(key))?;
        Self::checked(chain, key_der, &cert.display().to_string())
    }

    fn checked(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        what: &str,
    ) -> Result<TlsIdentity, ServerError> {
        if chain.is_empty() {
            return Err(ServerError::Tls(format!("no certificate in {what}")));
        }
        Ok(TlsIdentity::new(chain, key))
    }

    /// The certificate chain, leaf first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }
}

/// The rustls configuration of the TLS listeners: TLS 1.3 and 1.2 with the ring provider, no
/// client certificates, stateless session tickets (a fresh key per server start) and the
/// in-memory session cache for TLS 1.2 session IDs. Fails when the key does not match the
/// certificate.
pub(crate) fn server_config(
    identity: &TlsIdentity,
) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let bad = |e: rustls::Error| ServerError::Tls(e.to_string());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(bad)?
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(bad)?;
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(bad)?;
    Ok(Arc::new(config))
}
