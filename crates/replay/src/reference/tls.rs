//! A TLS client session on rustls' ordinary `ClientConnection`, for the whole session: what a
//! rustls-based DoT or DoH client runs. rustls buffers, decrypts, answers key updates and keeps
//! late session tickets itself; this only moves bytes between it and the querier.

use crate::querier::outgoing::Outgoing;
use ldplayer_stacks::tls::{SessionError, TlsRecords};
use rustls::{ClientConfig, ClientConnection, HandshakeKind};
use rustls_pki_types::ServerName;
use std::io::{self, Read, Write};
use std::sync::Arc;

/// One client's TLS session, reference stack.
pub(crate) struct RustlsSession {
    conn: ClientConnection,
    /// TLS bytes for the socket.
    out: Outgoing,
    peer_closed: bool,
}

impl RustlsSession {
    /// Starts a session to `name` (the ClientHello is queued for [`TlsRecords::output`]).
    pub fn new(
        config: Arc<ClientConfig>,
        name: ServerName<'static>,
    ) -> Result<Self, rustls::Error> {
        let mut conn = ClientConnection::new(config, name)?;
        // The querier bounds what it queues (queries in flight); rustls need not refuse any.
        conn.set_buffer_limit(None);
        let mut s = RustlsSession {
            conn,
            out: Outgoing::default(),
            peer_closed: false,
        };
        s.pull();
        Ok(s)
    }

    /// Moves what rustls has to send into `out`.
    fn pull(&mut self) {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.out) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}

impl TlsRecords for RustlsSession {
    fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    fn queued_total(&self) -> u64 {
        self.out.queued_total()
    }

    fn sent_total(&self) -> u64 {
        self.out.written_total()
    }

    fn handshake_kind(&self) -> Option<HandshakeKind> {
        self.conn.handshake_kind()
    }

    fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    fn write_plain(&mut self, plain: &[u8]) -> Result<usize, SessionError> {
        if self.conn.is_handshaking() {
            return Ok(0);
        }
        self.conn
            .writer()
            .write_all(plain)
            .map_err(|e| SessionError::Tls(rustls::Error::General(e.to_string())))?;
        self.pull();
        Ok(plain.len())
    }

    fn received(&mut self, bytes: &mut [u8], plain: &mut Vec<u8>) -> Result<bool, SessionError> {
        let mut rest: &[u8] = bytes;
        let mut chunk = [0u8; 4096];
        while !rest.is_empty() {
            match self.conn.read_tls(&mut rest) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(SessionError::Tls(rustls::Error::General(e.to_string()))),
            }
            if let Err(e) = self.conn.process_new_packets() {
                // Its alert goes out before the connection is closed.
                self.pull();
                return Err(SessionError::Tls(e));
            }
            loop {
                match self.conn.reader().read(&mut chunk) {
                    Ok(0) => {
                        self.peer_closed = true;
                        break;
                    }
                    Ok(n) => plain.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        self.peer_closed = true;
                        break;
                    }
                }
            }
        }
        // Handshake flights, key update answers.
        self.pull();
        Ok(self.peer_closed)
    }

    fn output(&self) -> &[u8] {
        self.out.output()
    }

    fn consume_output(&mut self, n: usize) {
        self.out.consume(n)
    }

    fn close(&mut self) {
        if !self.conn.is_handshaking() {
            self.conn.send_close_notify();
            self.pull();
        }
    }
}
