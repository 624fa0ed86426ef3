//! The TLS 1.3 application traffic secrets of the lean stack's sessions, so that a session on
//! its traffic keys alone (the `keys` module) can follow the server's key updates (RFC
//! 8446 §4.6.3, §7.2).
//!
//! rustls hands over the traffic *keys* of an established session, not the secrets the next
//! keys are derived from; its key log is where it gives the secrets out. Every client
//! configuration logs to [`TAP`], which keeps each session's first application traffic secrets
//! by its ClientHello's random (and still writes `SSLKEYLOGFILE` when it is set); the session
//! takes them when it lets rustls go. Keeping rustls' kernel connection instead cost 2.6 KB per
//! idle session (it holds the server's certificate chain); the two secrets cost about 100 B.

use ring::hkdf;
use rustls::KeyLog;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};

/// Secrets kept for sessions that have not taken theirs (a session that ends before its first
/// answer never does): the oldest go first.
const MAX_KEPT: usize = 65_536;

/// `SSLKEYLOGFILE`, where every session's secrets go when it is set.
pub static KEY_LOG_FILE: LazyLock<Arc<dyn KeyLog>> =
    LazyLock::new(|| Arc::new(rustls::KeyLogFile::new()));

/// The key log of the lean stack's TLS client configurations (QUIC's and the reference
/// stack's log to [`KEY_LOG_FILE`] alone: their sessions never take secrets from here).
pub static TAP: LazyLock<Arc<SecretTap>> = LazyLock::new(|| {
    Arc::new(SecretTap {
        file: KEY_LOG_FILE.clone(),
        kept: Mutex::default(),
    })
});

/// A key log that keeps the application traffic secrets and passes everything on to
/// `SSLKEYLOGFILE` (written only when that is set).
#[derive(Debug)]
pub struct SecretTap {
    file: Arc<dyn KeyLog>,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_random: HashMap<[u8; 32], Pair>,
    order: VecDeque<[u8; 32]>,
}

/// A session's first application traffic secrets, as far as they have been logged.
#[derive(Debug, Default)]
struct Pair {
    client: Option<Vec<u8>>,
    server: Option<Vec<u8>>,
}

const CLIENT_SECRET: &str = "CLIENT_TRAFFIC_SECRET_0";
const SERVER_SECRET: &str = "SERVER_TRAFFIC_SECRET_0";

impl KeyLog for SecretTap {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if self.file.will_log(label) {
            self.file.log(label, client_random, secret);
        }
        let (Ok(random), true) = (
            <[u8; 32]>::try_from(client_random),
            label == CLIENT_SECRET || label == SERVER_SECRET,
        ) else {
            return;
        };
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let kept = &mut *kept;
        if !kept.by_random.contains_key(&random) {
            if kept.order.len() >= MAX_KEPT {
                if let Some(old) = kept.order.pop_front() {
                    kept.by_random.remove(&old);
                }
            }
            kept.order.push_back(random);
        }
        let pair = kept.by_random.entry(random).or_default();
        if label == CLIENT_SECRET {
            pair.client = Some(secret.to_vec());
        } else {
            pair.server = Some(secret.to_vec());
        }
    }

    fn will_log(&self, label: &str) -> bool {
        label == CLIENT_SECRET || label == SERVER_SECRET || self.file.will_log(label)
    }
}

impl SecretTap {
    /// Takes the client's and the server's first application traffic secrets of the session
    /// whose ClientHello had `random`.
    pub fn take(&self, random: &[u8; 32]) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let pair = kept.by_random.remove(random)?;
        if let Some(i) = kept.order.iter().position(|r| r == random) {
            kept.order.remove(i);
        }
        Some((pair.client?, pair.server?))
    }
}

/// The random of the ClientHello at the front of `tls` (a handshake record), if it is one.
pub(crate) fn client_hello_random(tls: &[u8]) -> Option<[u8; 32]> {
    // Record header (5), handshake type 1 and length (4), legacy version (2), then the random.
    match tls {
        [22, _, _, _, _, 1, _, _, _, _, _, rest @ ..] => rest.get(..32)?.try_into().ok(),
        _ => None,
    }
}

/// One direction's traffic secret, and what derives keys from it.
pub(crate) struct Secret {
    hash: hkdf::Algorithm,
    secret: Vec<u8>,
}

/// An HKDF output length.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

impl Secret {
    /// The secret of a session whose suite hashes with SHA-384 (`sha384`) or SHA-256.
    pub fn new(secret: Vec<u8>, sha384: bool) -> Secret {
        let hash = if sha384 {
            hkdf::HKDF_SHA384
        } else {
            hkdf::HKDF_SHA256
        };
        Secret { hash, secret }
    }

    /// HKDF-Expand-Label(secret, label, "", len) (RFC 8446 §7.1).
    pub fn expand_label(&self, label: &[u8], len: usize) -> Option<Vec<u8>> {
        let mut info = Vec::with_capacity(10 + label.len());
        info.extend_from_slice(&(len as u16).to_be_bytes());
        info.push((6 + label.len()) as u8);
        info.extend_from_slice(b"tls13 ");
        info.extend_from_slice(label);
        info.push(0);
        let prk = hkdf::Prk::new_less_safe(self.hash, &self.secret);
        let info = [&info[..]];
        let okm = prk.expand(&info, Len(len)).ok()?;
        let mut out = vec![0u8; len];
        okm.fill(&mut out).ok()?;
        Some(out)
    }

    /// Moves to the next generation: `application_traffic_secret_N+1` (RFC 8446 §7.2).
    pub fn update(&mut self) -> Option<()> {
        self.secret = self.expand_label(b"traffic upd", self.secret.len())?;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8448 §3 (a simple 1-RTT handshake): the server's application traffic secret and the
    /// key and IV derived from it.
    #[test]
    fn keys_derive_as_rfc_8448_says() {
        let hex = |s: &str| -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let server = Secret::new(
            hex("a1 1a f9 f0 55 31 f8 56 ad 47 11 6b 45 a9 50 32 82 04 b4 f4 4b fb 6b 3a 4b 4f 1f 3f cb 63 16 43"),
            false,
        );
        assert_eq!(
            server.expand_label(b"key", 16).unwrap(),
            hex("9f 02 28 3b 6c 9c 07 ef c2 6b b9 f2 ac 92 e3 56")
        );
        assert_eq!(
            server.expand_label(b"iv", 12).unwrap(),
            hex("cf 78 2b 88 dd 83 54 9a ad f1 e9 84")
        );
    }

    #[test]
    fn the_random_is_read_from_a_client_hello_only() {
        let mut hello = vec![22, 3, 1, 0, 200, 1, 0, 0, 196, 3, 3];
        hello.extend(0..32u8);
        hello.extend_from_slice(&[0; 20]);
        let random: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(client_hello_random(&hello), Some(random));
        hello[5] = 2;
        assert_eq!(client_hello_random(&hello), None);
        assert_eq!(client_hello_random(&[22, 3, 1]), None);
    }
}
