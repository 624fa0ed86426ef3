//! Certificates for DNS over TLS: a throw-away CA and a server certificate it signs, made with
//! rcgen so that no openssl command is needed. The server certificate is a leaf (CA:FALSE,
//! serverAuth) because rustls, and so ldplayer's replay, refuses a CA certificate as a server's
//! own; clients trust the CA file (`kdig +tls-ca=ca.pem`, `replay --tls-ca`).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::{write, ConfError};

/// The PEM files of a server's certificate, its key and the CA that signed it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsFiles {
    /// The server certificate.
    pub cert: PathBuf,
    /// The server certificate's private key (PKCS#8).
    pub key: PathBuf,
    /// The CA certificate clients trust.
    pub ca: PathBuf,
}

/// Makes a CA and a server certificate (CA:FALSE, serverAuth) valid for `ips` and `names`
/// (subject alternative names), and writes `ca.pem`, `server.pem` and `server.key` into `dir`
/// (made if needed). ECDSA P-256 keys, valid from 2020 to 2099, whatever the emulated clock.
pub fn make_certificate(
    dir: &Path,
    ips: &[IpAddr],
    names: &[String],
) -> Result<TlsFiles, ConfError> {
    let files = TlsFiles {
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
        ca: dir.join("ca.pem"),
    };
    prepare(dir, &[&files.ca, &files.cert, &files.key])?;

    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name
        .push(DnType::CommonName, "ldplayer experiment CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut ca);
    let ca_key = KeyPair::generate().map_err(bad)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(bad)?;

    let mut server = server_params(ips, names)?;
    server.is_ca = IsCa::ExplicitNoCa;
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut server);
    let server_key = KeyPair::generate().map_err(bad)?;
    let issuer = Issuer::new(ca, ca_key);
    let server_cert = server.signed_by(&server_key, &issuer).map_err(bad)?;

    write(&files.ca, &ca_cert.pem())?;
    write(&files.cert, &server_cert.pem())?;
    write(&files.key, &server_key.serialize_pem())?;
    Ok(files)
}

/// Makes a self-signed certificate that is also a CA (CA:TRUE), valid for `ips` and `names`,
/// as `openssl req -x509` makes one by default, and writes `self.pem` and `self.key` into `dir`
/// (made if needed); `ca` and `cert` are then the same file. Such a certificate is what people
/// often deploy by mistake: kdig accepts it as its own trust anchor, rustls refuses it as a
/// server's own (`CaUsedAsEndEntity`), so it shows how a client reports that refusal.
pub fn make_self_signed_ca(
    dir: &Path,
    ips: &[IpAddr],
    names: &[String],
) -> Result<TlsFiles, ConfError> {
    let files = TlsFiles {
        cert: dir.join("self.pem"),
        key: dir.join("self.key"),
        ca: dir.join("self.pem"),
    };
    prepare(dir, &[&files.cert, &files.key])?;
    let mut params = server_params(ips, names)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    validity(&mut params);
    let key = KeyPair::generate().map_err(bad)?;
    let cert = params.self_signed(&key).map_err(bad)?;
    write(&files.cert, &cert.pem())?;
    write(&files.key, &key.serialize_pem())?;
    Ok(files)
}

/// Checks that none of `paths` is one of the process's inputs (all or none are written: a
/// file the process reads under one of these names stops it first), then makes `dir`.
fn prepare(dir: &Path, paths: &[&PathBuf]) -> Result<(), ConfError> {
    for path in paths {
        ldplayer_output::check(path).map_err(|e| ConfError::io("cannot write", path, e.into()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| ConfError::io("cannot create", dir, e))
}

/// A server certificate's parameters: subject alternative names `names` and `ips`, common name
/// the first of them.
fn server_params(ips: &[IpAddr], names: &[String]) -> Result<CertificateParams, ConfError> {
    let mut params = CertificateParams::new(names.to_vec()).map_err(bad)?;
    params
        .subject_alt_names
        .extend(ips.iter().map(|&ip| SanType::IpAddress(ip)));
    let common_name = names
        .first()
        .cloned()
        .or_else(|| ips.first().map(IpAddr::to_string))
        .unwrap_or_else(|| "ldplayer server".into());
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    Ok(params)
}

/// rcgen's error as ours.
fn bad(e: rcgen::Error) -> ConfError {
    ConfError::Certificate(e.to_string())
}

fn validity(params: &mut CertificateParams) {
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2099, 12, 31);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_pem_of_a_ca_and_a_leaf() {
        let dir = tempfile::tempdir().expect("scratch directory");
        let files = make_certificate(
            dir.path(),
            &[
                "127.0.0.1".parse().expect("ip"),
                "fd53::1".parse().expect("ip"),
            ],
            &["localhost".into()],
        )
        .expect("certificate");
        for (path, tag) in [
            (&files.ca, "CERTIFICATE"),
            (&files.cert, "CERTIFICATE"),
            (&files.key, "PRIVATE KEY"),
        ] {
            let text = std::fs::read_to_string(path).expect("written");
            assert!(
                text.starts_with(&format!("-----BEGIN {tag}-----")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_self_signed_ca_is_its_own_trust_anchor() {
        let dir = tempfile::tempdir().expect("scratch directory");
        let files = make_self_signed_ca(
            dir.path(),
            &["127.0.0.1".parse().expect("ip")],
            &["localhost".into()],
        )
        .expect("certificate");
        assert_eq!(files.ca, files.cert);
        let cert = std::fs::read_to_string(&files.cert).expect("written");
        let key = std::fs::read_to_string(&files.key).expect("written");
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
    }
}
