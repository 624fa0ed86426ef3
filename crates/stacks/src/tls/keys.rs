//! TLS 1.3 record protection with the traffic keys alone (RFC 8446 §5.2).
//!
//! Once a session has done its handshake and received its first answer (by then the server's
//! session tickets have arrived), rustls hands over the traffic keys and sequence numbers and its
//! connection state is dropped: ≈ 1 KB of AEAD keys instead of ≈ 4 KB of rustls state per idle
//! connection, which brings a simulated TLS client under 4 KiB. A server's key update (RFC 8446
//! §4.6.3) is followed with the session's traffic secrets ([`super::secrets`]), and an
//! update request answered with the client's own before its next record. An update that comes
//! before the first answer is rustls' to follow, and rustls keeps its answer to a request
//! until its next application data: a session handed over then cannot send it, and the
//! server then fails it. Later session tickets are ignored.

use super::secrets::Secret;
use ring::aead::{
    Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305, NONCE_LEN,
};
use rustls::{ConnectionTrafficSecrets, ExtractedSecrets};

/// The record header: type, legacy version, length.
const HEADER: usize = 5;
/// Largest plaintext per record.
const MAX_PLAIN: usize = 16 * 1024;
/// Largest protected record body (RFC 8446 §5.2).
const MAX_BODY: usize = MAX_PLAIN + 256;
const TAG: usize = 16;
const APPLICATION_DATA: u8 = 23;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
/// Handshake message types that may follow the handshake.
const NEW_SESSION_TICKET: u8 = 4;
const KEY_UPDATE: u8 = 24;

/// Why a record could not be protected or opened.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RecordError;

/// One direction's key, static IV and next sequence number.
struct Direction {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    seq: u64,
}

impl Direction {
    fn new(seq: u64, secrets: ConnectionTrafficSecrets) -> Option<Direction> {
        let (alg, key, iv) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => (&CHACHA20_POLY1305, key, iv),
            _ => return None,
        };
        Direction::from_raw(alg, key.as_ref(), iv.as_ref(), seq)
    }

    fn from_raw(
        alg: &'static ring::aead::Algorithm,
        key: &[u8],
        iv: &[u8],
        seq: u64,
    ) -> Option<Direction> {
        let key = LessSafeKey::new(UnboundKey::new(alg, key).ok()?);
        let iv = iv.try_into().ok()?;
        Some(Direction { key, iv, seq })
    }

    /// The direction under the next generation of `secret`, which is moved on (sequence
    /// numbers start again at 0).
    fn updated(&self, secret: &mut Secret) -> Option<Direction> {
        secret.update()?;
        let alg = self.key.algorithm();
        let key = secret.expand_label(b"key", alg.key_len())?;
        let iv = secret.expand_label(b"iv", NONCE_LEN)?;
        Direction::from_raw(alg, &key, &iv, 0)
    }

    /// The per-record nonce: the IV XOR the sequence number, which then advances.
    fn next_nonce(&mut self) -> Nonce {
        let mut n = self.iv;
        for (b, s) in n[NONCE_LEN - 8..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        self.seq += 1;
        Nonce::assume_unique_for_key(n)
    }
}

/// Both directions of an established TLS 1.3 session.
pub(crate) struct TrafficKeys {
    tx: Direction,
    rx: Direction,
    /// The traffic secrets of both directions (client, server), for key updates; without
    /// them a key update fails the session.
    secrets: Option<Box<[Secret; 2]>>,
}

/// What opening records gave.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Opened {
    /// Bytes of whole records consumed from the front of the buffer.
    pub consumed: usize,
    /// The peer sent close_notify.
    pub closed: bool,
    /// The peer updated its keys and asked for an update in turn: the caller seals one
    /// ([`TrafficKeys::seal_key_update`]) before its next record.
    pub update_requested: bool,
}

impl TrafficKeys {
    /// The keys rustls extracted, if their cipher is one this layer implements.
    pub fn new(secrets: ExtractedSecrets) -> Option<TrafficKeys> {
        let (tx_seq, tx) = secrets.tx;
        let (rx_seq, rx) = secrets.rx;
        Some(TrafficKeys {
            tx: Direction::new(tx_seq, tx)?,
            rx: Direction::new(rx_seq, rx)?,
            secrets: None,
        })
    }

    /// Keeps the session's first application traffic secrets (client, server) for key
    /// updates, moved on to the generation of the keys in use (rustls may have followed an
    /// update before it let go). False, and nothing kept, if they are not these keys' secrets.
    pub fn follow_updates(&mut self, client: Vec<u8>, server: Vec<u8>) -> bool {
        let sha384 = self.tx.key.algorithm() == &AES_256_GCM;
        let mut secrets = [Secret::new(client, sha384), Secret::new(server, sha384)];
        for (secret, dir) in secrets.iter_mut().zip([&self.tx, &self.rx]) {
            let matches = |s: &Secret| s.expand_label(b"iv", NONCE_LEN).as_deref() == Some(&dir.iv);
            let mut generation = 0;
            while !matches(secret) {
                generation += 1;
                if generation > 8 || secret.update().is_none() {
                    return false;
                }
            }
        }
        self.secrets = Some(Box::new(secrets));
        true
    }

    /// Appends a KeyUpdate (update_not_requested) to `out` under the current keys, then moves
    /// the sending direction to the next generation.
    pub fn seal_key_update(&mut self, out: &mut Vec<u8>) -> Result<(), RecordError> {
        let secrets = self.secrets.as_mut().ok_or(RecordError)?;
        let next = self.tx.updated(&mut secrets[0]).ok_or(RecordError)?;
        self.seal_record(HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, 0], out)?;
        self.tx = next;
        Ok(())
    }

    /// Appends `plain` to `out` as application-data records.
    pub fn seal(&mut self, plain: &[u8], out: &mut Vec<u8>) -> Result<(), RecordError> {
        for chunk in plain.chunks(MAX_PLAIN) {
            self.seal_record(APPLICATION_DATA, chunk, out)?;
        }
        Ok(())
    }

    /// Appends a close_notify alert to `out`.
    pub fn seal_close_notify(&mut self, out: &mut Vec<u8>) -> Result<(), RecordError> {
        self.seal_record(ALERT, &[1, 0], out)
    }

    fn seal_record(
        &mut self,
        content_type: u8,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), RecordError> {
        let len = data.len() + 1 + TAG;
        let header = [APPLICATION_DATA, 3, 3, (len >> 8) as u8, len as u8];
        let at = out.len();
        out.extend_from_slice(&header);
        out.extend_from_slice(data);
        out.push(content_type);
        let nonce = self.tx.next_nonce();
        let tag = self
            .tx
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(header), &mut out[at + HEADER..])
            .map_err(|_| RecordError)?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Opens the whole records at the front of `buf` in place, appending their application
    /// data to `plain`; an incomplete last record is left for later.
    pub fn open(&mut self, buf: &mut [u8], plain: &mut Vec<u8>) -> Result<Opened, RecordError> {
        let mut out = Opened::default();
        while buf.len() - out.consumed >= HEADER && !out.closed {
            let at = out.consumed;
            let mut header = [0u8; HEADER];
            header.copy_from_slice(&buf[at..at + HEADER]);
            let len = u16::from_be_bytes([header[3], header[4]]) as usize;
            if header[0] != APPLICATION_DATA || !(TAG + 1..=MAX_BODY).contains(&len) {
                return Err(RecordError);
            }
            if buf.len() - at - HEADER < len {
                break;
            }
            let nonce = self.rx.next_nonce();
            let body = &mut buf[at + HEADER..at + HEADER + len];
            let inner = self
                .rx
                .key
                .open_in_place(nonce, Aad::from(header), body)
                .map_err(|_| RecordError)?;
            // The real content type is the last non-zero byte (zeros after it are padding).
            let end = inner.iter().rposition(|&b| b != 0).ok_or(RecordError)?;
            let (data, content_type) = (&inner[..end], inner[end]);
            match content_type {
                APPLICATION_DATA => plain.extend_from_slice(data),
                // close_notify (any level); other alerts end the session as errors.
                ALERT if data.get(1) == Some(&0) => out.closed = true,
                HANDSHAKE if data.first() == Some(&NEW_SESSION_TICKET) => {}
                HANDSHAKE if data.len() == 5 && data[..4] == [KEY_UPDATE, 0, 0, 1] => {
                    // The records after it are under the server's next secret.
                    let request = data[4];
                    let secrets = self.secrets.as_mut().ok_or(RecordError)?;
                    self.rx = self.rx.updated(&mut secrets[1]).ok_or(RecordError)?;
                    match request {
                        0 => {}
                        1 => out.update_requested = true,
                        _ => return Err(RecordError),
                    }
                }
                _ => return Err(RecordError),
            }
            out.consumed = at + HEADER + len;
        }
        Ok(out)
    }
}

/// Arbitrary bytes as what a server sends a session on its traffic keys (the `tls_records`
/// fuzz target): as they come, and as valid records whose bytes the fuzzer's then flip and
/// cut. Checks: no panic, no read past the buffer, never more consumed than given.
pub(crate) fn fuzz_records(data: &[u8]) {
    use rustls::crypto::cipher::{AeadKey, Iv};
    let secrets = |k: u8, i: u8| ConnectionTrafficSecrets::Aes256Gcm {
        key: AeadKey::from([k; 32]),
        iv: Iv::new([i; NONCE_LEN]),
    };
    let keys = |tx, rx| {
        TrafficKeys::new(ExtractedSecrets {
            tx: (0, secrets(tx, tx)),
            rx: (0, secrets(rx, rx)),
        })
    };
    let (Some(mut server), Some(mut client)) = (keys(1, 2), keys(2, 1)) else {
        return;
    };
    let mut plain = Vec::new();
    let mut raw = data.to_vec();
    if let Ok(opened) = client.open(&mut raw, &mut plain) {
        assert!(opened.consumed <= data.len());
    }
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut wire = Vec::new();
    if server.seal(rest, &mut wire).is_err() {
        return;
    }
    if !wire.is_empty() {
        let at = usize::from(control) % wire.len();
        wire[at] ^= control | 1;
        wire.truncate(wire.len() - usize::from(control >> 4).min(wire.len()));
    }
    let Some(mut client) = keys(2, 1) else {
        return;
    };
    let len = wire.len();
    if let Ok(opened) = client.open(&mut wire, &mut plain) {
        assert!(opened.consumed <= len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::cipher::{AeadKey, Iv};

    fn pair() -> (TrafficKeys, TrafficKeys) {
        let secrets = |k: u8, i: u8| ConnectionTrafficSecrets::Aes256Gcm {
            key: AeadKey::from([k; 32]),
            iv: Iv::new([i; NONCE_LEN]),
        };
        let client = TrafficKeys::new(ExtractedSecrets {
            tx: (3, secrets(1, 2)),
            rx: (5, secrets(3, 4)),
        })
        .unwrap();
        let server = TrafficKeys::new(ExtractedSecrets {
            tx: (5, secrets(3, 4)),
            rx: (3, secrets(1, 2)),
        })
        .unwrap();
        (client, server)
    }

    #[test]
    fn records_round_trip_and_split_reads_wait_for_the_rest() {
        let (mut client, mut server) = pair();
        let mut wire = Vec::new();
        client.seal(b"first query", &mut wire).unwrap();
        client.seal(&vec![7u8; 20_000], &mut wire).unwrap(); // two records
        let mut plain = Vec::new();
        // Most of the second record is missing: only the first is opened.
        let first = HEADER + 11 + 1 + TAG;
        let opened = server.open(&mut wire[..first + 100], &mut plain).unwrap();
        assert_eq!(opened.consumed, first);
        assert!(plain == b"first query", "{} bytes opened", plain.len());
        let mut rest = wire[opened.consumed..].to_vec();
        let opened = server.open(&mut rest, &mut plain).unwrap();
        assert_eq!(plain.len(), 11 + 20_000);
        assert_eq!(opened.consumed, rest.len());
        // The other direction, then close_notify.
        let mut back = Vec::new();
        server.seal(b"answer", &mut back).unwrap();
        server.seal_close_notify(&mut back).unwrap();
        let mut answer = Vec::new();
        let opened = client.open(&mut back, &mut answer).unwrap();
        assert_eq!(answer, b"answer");
        assert!(opened.closed);
    }

    /// The `tls_records` fuzz target's entry point on a few inputs: empty, a record header,
    /// and records damaged at each place the control byte picks.
    #[test]
    fn the_fuzz_entry_point_takes_anything() {
        fuzz_records(&[]);
        fuzz_records(&[23, 3, 3, 0, 40, 1, 2, 3]);
        for control in 0..=255u8 {
            let mut data = vec![control];
            data.extend_from_slice(b"a query of some length");
            fuzz_records(&data);
        }
    }

    /// Whatever the network sends, opening gives records or an error, never a panic or a
    /// read past the buffer: random bytes, and valid records with random cuts and flips.
    #[test]
    fn arbitrary_input_never_panics() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let (mut client, mut server) = pair();
            let mut buf = Vec::new();
            if round % 2 == 0 {
                let len = (next() % 64) as usize;
                buf.extend((0..len).map(|_| next() as u8));
                // Often a plausible header, so the length checks are reached.
                if len >= 5 && round % 4 == 0 {
                    buf[..3].copy_from_slice(&[APPLICATION_DATA, 3, 3]);
                }
            } else {
                client
                    .seal(&vec![1u8; (next() % 300) as usize], &mut buf)
                    .unwrap();
                let cut = (next() as usize) % (buf.len() + 1);
                buf.truncate(cut);
                if !buf.is_empty() && next() % 2 == 0 {
                    let i = (next() as usize) % buf.len();
                    buf[i] ^= 1 << (next() % 8);
                }
            }
            let mut plain = Vec::new();
            if let Ok(opened) = server.open(&mut buf, &mut plain) {
                assert!(opened.consumed <= buf.len());
            }
        }
    }

    #[test]
    fn tampered_or_replayed_records_are_refused() {
        let (mut client, mut server) = pair();
        let mut wire = Vec::new();
        client.seal(b"query", &mut wire).unwrap();
        let mut tampered = wire.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(
            server.open(&mut tampered, &mut Vec::new()),
            Err(RecordError)
        );
        // The sequence number moved on: the same record does not open again.
        let (_, mut fresh) = pair();
        let mut copy = wire.clone();
        fresh.open(&mut copy, &mut Vec::new()).unwrap();
        assert_eq!(fresh.open(&mut wire, &mut Vec::new()), Err(RecordError));
        // Not a TLS 1.3 protected record.
        assert_eq!(
            server.open(&mut [22, 3, 3, 0, 40], &mut Vec::new()),
            Err(RecordError)
        );
    }
}
