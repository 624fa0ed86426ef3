//! A QUIC client written for the replay: [`conn::Connection`] is one connection, sans IO, and
//! `wire` its packets and frames. It carries streams and knows nothing of what is on them: DNS
//! over QUIC ([`crate::doq`]) and HTTP/3 ([`crate::h3`]) sit on top.
//!
//! quinn, which the replay used first, held 48.7 KB per idle DoQ session (its per-connection
//! task, event channel, stream tables and a receive buffer per endpoint: heaptrack over 1,000
//! idle clients, bench/encrypted.sh doq-idle), six times the 8 KiB the replay must reach with
//! 20,000 idle clients. A client that only opens bidirectional streams of one query each needs
//! far less, and once its handshake is over it can let TLS go and keep its keys.

pub mod conn;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

/// Arbitrary bytes into the client: as a datagram (headers, header protection, decryption),
/// and, past the crypto, as the plaintext of packets in each space (frames, acknowledgements,
/// streams, flow control), then the timers and what it sends.
pub(crate) fn fuzz_client(data: &[u8]) {
    use std::sync::{Arc, OnceLock};
    static TLS: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    let odd = data.first().is_some_and(|b| b & 1 == 1);
    let tls = TLS.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut c = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .expect("TLS 1.3 is supported")
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        c.alpn_protocols = vec![b"doq".to_vec()];
        Arc::new(c)
    });
    let config = conn::Config {
        tls: tls.clone(),
        server_name: rustls_pki_types::ServerName::try_from("fuzz.example")
            .expect("a valid name")
            .to_owned(),
        idle_timeout_ns: 30_000_000_000,
        zero_rtt: false,
        max_stream_recv: 2 + 65_535,
        // With the first byte odd, as HTTP/3 uses it: the server's unidirectional streams and
        // the client's own.
        peer_uni_streams: if odd { 3 } else { 0 },
        // Key updates as often as possible: every few packets.
        key_update_packets: u64::from(data.get(1).copied().unwrap_or(0) % 4),
    };
    let Ok(mut c) = conn::Connection::new(config, 0) else {
        return;
    };
    if odd {
        c.open_uni_stream(&[0x00, 0x04, 0x00]);
    }
    let mut out = Vec::new();
    let _ = c.poll_transmit(0, &mut out);
    for i in 0..4 {
        c.open_stream(vec![0, 2, i, i]);
    }
    let mut datagram = data.to_vec();
    c.handle(1, &mut datagram);
    for (i, chunk) in data.split(|&b| b == 0xff).enumerate() {
        let space = usize::from(chunk.first().copied().unwrap_or(0) % 3);
        c.on_plaintext(2 + i as i64, space, i as u64, chunk.get(1..).unwrap_or(&[]));
        while c.poll_event().is_some() {}
        while c.poll_transmit(3 + i as i64, &mut out) {}
    }
    if let Some(t) = c.next_timeout() {
        c.on_timeout(t);
    }
    while c.poll_transmit(i64::MAX / 2, &mut out) {}
}
