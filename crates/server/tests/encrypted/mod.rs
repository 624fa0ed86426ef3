//! What the encrypted-transport tests (DoT, DoH, DoQ) share: a small zone and a self-signed
//! certificate.
#![allow(dead_code)]

use ldplayer_server::TlsIdentity;
use ldplayer_zone::{Zone, ZoneSet};
use rustls::pki_types::CertificateDer;
use std::sync::Arc;

/// A zone `origin` with `www` and the rest a zone needs.
pub fn zone(origin: &str) -> Arc<ZoneSet> {
    let text = format!(
        "$ORIGIN {origin}\n$TTL 300\n@ SOA ns1 hostmaster 1 7200 3600 1209600 300\n\
         @ NS ns1\nns1 A 192.0.2.1\nwww A 192.0.2.10\n"
    );
    let zone = Zone::from_text(&text, "test.zone", None).expect("zone loads");
    Arc::new(std::iter::once(zone).collect())
}

/// A self-signed certificate for 127.0.0.1, 127.0.0.2 and localhost, given to the server as
/// PEM: the server's identity and the client's trust anchor.
pub fn certificate() -> (TlsIdentity, CertificateDer<'static>) {
    let names = vec!["127.0.0.1".into(), "127.0.0.2".into(), "localhost".into()];
    let made = rcgen::generate_simple_self_signed(names).expect("certificate");
    let identity = TlsIdentity::from_pem(
        made.cert.pem().as_bytes(),
        made.signing_key.serialize_pem().as_bytes(),
    )
    .expect("identity");
    (identity, made.cert.der().clone())
}
