//! DNS over TLS (RFC 7858): the TCP framing inside a TLS session, one record per message.

use super::tcp_framing::TcpFraming;
use super::transport::{MatchKey, Queued, Received, StreamError, StreamProtocol};
use ldplayer_stacks::tls::{TlsRecords, TlsSession};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::sync::Arc;

/// A TLS session carrying TCP-framed messages: queries wait in the framing until the handshake
/// is over, then each is sealed into records of its own; answers are decrypted and deframed.
/// The session is the lean [`TlsSession`], or the reference stack's (see [`TlsRecords`]).
pub(crate) struct TlsFraming<S = TlsSession> {
    session: S,
    /// The plaintext side: framed queries not yet sealed, and the start of an answer.
    framing: TcpFraming,
    /// Bytes of the message being sealed that the session has not taken yet (0: the next
    /// plaintext byte starts a frame).
    frame_left: usize,
}

impl TlsFraming {
    /// Starts a session to `name`; its ClientHello is the first output.
    pub fn new(
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> Result<Self, rustls::Error> {
        Ok(TlsFraming {
            session: TlsSession::new(config, name)?,
            framing: TcpFraming::default(),
            frame_left: 0,
        })
    }
}

impl<S: TlsRecords> TlsFraming<S> {
    /// The framing over a session already started (its ClientHello queued).
    pub fn over(session: S) -> Self {
        TlsFraming {
            session,
            framing: TcpFraming::default(),
            frame_left: 0,
        }
    }
}

impl<S: TlsRecords> StreamProtocol for TlsFraming<S> {
    type Session = S;

    fn matches_by_id(&self) -> bool {
        true
    }

    fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError> {
        let framed = self.framing.queue_query(wire)?;
        Ok(Queued {
            key: framed.key,
            wire_end: None,
        })
    }

    /// One TLS record per DNS message, as stub resolvers send them: nsd 4.6 answers only the
    /// first of several queries that arrive in one record (the rest wait in its TLS buffer
    /// until the socket is readable again), which timed out pipelined queries queued during the
    /// handshake.
    fn seal(&mut self, sealed: &mut impl FnMut(u64)) -> Result<(), StreamError> {
        loop {
            let plain = self.framing.output();
            let frame = match (self.frame_left, plain) {
                (_, []) => return Ok(()),
                (0, [a, b, ..]) => (2 + u16::from_be_bytes([*a, *b]) as usize).min(plain.len()),
                (0, _) => plain.len(),
                (left, _) => left.min(plain.len()),
            };
            let n = self.session.write_plain(&plain[..frame])?;
            if n == 0 {
                // The handshake is not over.
                return Ok(());
            }
            self.framing.consume_output(n);
            self.frame_left = frame - n;
            if self.frame_left == 0 {
                sealed(self.session.queued_total());
            }
        }
    }

    fn received(
        &mut self,
        bytes: &mut [u8],
        message: &mut impl FnMut(MatchKey, &[u8]),
    ) -> Result<Received, StreamError> {
        let peer_closed = self.session.received(bytes, self.framing.partial_mut())?;
        let malformed = self.framing.deframe_partial(message);
        Ok(Received {
            peer_closed,
            malformed,
        })
    }

    fn pending_frame(&self) -> Option<(usize, &[u8])> {
        self.framing.pending_frame()
    }

    // The socket side (output, what the socket took, handshake, close) is the session's.
    fn session(&self) -> &S {
        &self.session
    }

    fn session_mut(&mut self) -> &mut S {
        &mut self.session
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TlsConfig;
    use crate::querier::test_messages::{answer, query};
    use crate::tls::TlsBase;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::{ServerConfig, ServerConnection};
    use std::io::{Read, Write};
    use std::net::Ipv4Addr;

    /// A rustls server in memory and a client configuration that trusts its certificate.
    struct Peer {
        server: ServerConnection,
        client: Arc<ClientConfig>,
        _dir: tempfile::TempDir,
    }

    fn peer() -> Peer {
        let dir = tempfile::tempdir().unwrap();
        let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_file(&key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        // The client's configuration as the replay makes it.
        let tls = TlsConfig {
            ca_file: Some(ca),
            ..TlsConfig::default()
        };
        let base = TlsBase::new(&tls, Ipv4Addr::LOCALHOST.into()).unwrap();
        Peer {
            server: ServerConnection::new(Arc::new(server)).unwrap(),
            client: base.for_client(),
            _dir: dir,
        }
    }

    /// Moves the client's output to the server; returns the ends the client sealed.
    fn to_server(c: &mut TlsFraming, s: &mut ServerConnection) -> Vec<u64> {
        let mut ends = Vec::new();
        c.seal(&mut |e| ends.push(e)).unwrap();
        while !c.output().is_empty() {
            let n = s.read_tls(&mut c.output()).unwrap();
            c.consume_output(n);
            s.process_new_packets().unwrap();
        }
        ends
    }

    /// Moves the server's output to the client, `cut` bytes at a time; returns the messages.
    fn to_client(
        s: &mut ServerConnection,
        c: &mut TlsFraming,
        cut: usize,
    ) -> Vec<(MatchKey, Vec<u8>)> {
        let mut tls = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut tls).unwrap();
        }
        let mut got = Vec::new();
        for piece in tls.chunks_mut(cut.max(1)) {
            let r = c
                .received(piece, &mut |k, m| got.push((k, m.to_vec())))
                .unwrap();
            assert_eq!(r.malformed, 0);
        }
        got
    }

    /// The server's plaintext: the framed queries it got.
    fn server_plain(s: &mut ServerConnection) -> Vec<u8> {
        let mut plain = Vec::new();
        match s.reader().read_to_end(&mut plain) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
        plain
    }

    fn framed(msgs: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in msgs {
            out.extend_from_slice(&(m.len() as u16).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    /// Queries queued during the handshake wait for it, are sealed one record each with their
    /// ends in order, and answers split across reads at any point come out whole.
    #[test]
    fn queries_wait_for_the_handshake_and_answers_come_back_whole() {
        let Peer {
            mut server,
            client,
            _dir,
        } = peer();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut c = TlsFraming::new(client, name).unwrap();
        assert!(c.is_handshaking());
        assert!(!c.output().is_empty(), "the ClientHello");
        let q: Vec<Vec<u8>> = (1..=3).map(query).collect();
        for (i, query) in q.iter().enumerate() {
            let queued = c.queue_query(query).unwrap();
            assert_eq!(queued.key, MatchKey::Id(i as u16 + 1));
            assert_eq!(queued.wire_end, None, "known once sealed");
        }
        // ClientHello → server flight → client Finished (and the queries).
        assert!(
            to_server(&mut c, &mut server).is_empty(),
            "nothing sealed yet"
        );
        assert!(to_client(&mut server, &mut c, usize::MAX).is_empty());
        assert!(!c.is_handshaking());
        assert!(!c.resumed());
        let before = c.written_total();
        let ends = to_server(&mut c, &mut server);
        assert_eq!(ends.len(), 3, "one end per query");
        assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
        assert_eq!(*ends.last().unwrap(), c.written_total());
        assert!(ends[0] > before);
        assert_eq!(server_plain(&mut server), framed(&q));

        // Answers, in another order, split at every byte count.
        let answers = [answer(3), answer(1), answer(2)];
        let plain = framed(&answers);
        for cut in [1, 2, 5, 13, 64, usize::MAX] {
            server.writer().write_all(&plain).unwrap();
            let got = to_client(&mut server, &mut c, cut);
            let expected: Vec<_> = answers
                .iter()
                .map(|a| (MatchKey::Id(u16::from_be_bytes([a[0], a[1]])), a.clone()))
                .collect();
            assert_eq!(got, expected, "read {cut} bytes at a time");
        }
        assert!(
            c.session.on_traffic_keys(),
            "after the answers, the traffic keys alone open the records"
        );

        // Later queries are sealed at once, and the server reads them under the traffic keys.
        c.queue_query(&query(9)).unwrap();
        assert_eq!(to_server(&mut c, &mut server).len(), 1);
        assert_eq!(server_plain(&mut server), framed(&[query(9)]));

        // Goodbye: the server sees close_notify.
        c.close();
        to_server(&mut c, &mut server);
        let mut rest = Vec::new();
        assert_eq!(server.reader().read_to_end(&mut rest).unwrap(), 0);
    }

    /// A server that is not the one the certificate names fails the handshake as TLS.
    #[test]
    fn a_certificate_for_another_name_fails_the_session() {
        let Peer {
            mut server,
            client,
            _dir,
        } = peer();
        let name = ServerName::try_from("not-the-server.example").unwrap();
        let mut c = TlsFraming::new(client, name).unwrap();
        to_server(&mut c, &mut server);
        let mut tls = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut tls).unwrap();
        }
        let err = c
            .received(&mut tls, &mut |_, _| panic!("no message"))
            .unwrap_err();
        assert!(matches!(err, StreamError::Tls(_)), "{err:?}");
        let cause = err.into_cause();
        assert_eq!(cause.key(), "name-mismatch");
    }
}
