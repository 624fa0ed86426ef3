//! DNS over HTTPS (RFC 8484): an HTTP/2 connection inside a TLS session, one stream per query.
//!
//! The TLS session decrypts what the socket read and hands the plaintext to the HTTP/2 client
//! ([`Http2Client`], written for DoH, without I/O); what the client writes is sealed into TLS
//! records. So HTTP/2 runs inside the querier's own event loop, and the querier's socket side
//! (send and receive stamps, handshake timing, idle timeouts, session resumption) is the same
//! as for DNS over TLS.
//!
//! Queries are keyed by a number of this connection ([`MatchKey::Stream`]), not by the HTTP/2
//! stream ID, which a request gets only once the server's stream limit lets it out. Each query
//! is sent with DNS ID 0 (RFC 8484 §4.1: cache friendly). A response other than 200 with
//! `application/dns-message` fails its query with a [`Cause`] naming the status or the content
//! type.

use super::doh_exchange::{doh_query, tell_ends, Outcomes, RequestEnd};
use super::transport::{MatchKey, Queued, Received, StreamError, StreamProtocol};
use super::KEEP_BUF;
use crate::cause::Cause;
use crate::config::{DohConfig, DohMethod};
use base64::Engine as _;
use ldplayer_dns::HEADER_LEN;
use ldplayer_stacks::http2::{request_headers, Http2Client, Outcome};
use ldplayer_stacks::tls::TlsSession;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::collections::VecDeque;
use std::sync::Arc;

/// One query on the connection, in the order queued: its end is told in that order.
struct Query {
    key: u64,
    /// Where its request ends, and whether that was told.
    end: RequestEnd,
    /// Answered or failed.
    done: bool,
}

/// DNS over HTTPS on one connection: TLS with ALPN h2 and an HTTP/2 client on top.
pub(crate) struct DohFraming {
    session: TlsSession,
    h2: Http2Client,
    config: Arc<DohConfig>,
    /// The `:authority` of every request.
    authority: Arc<str>,
    next_key: u64,
    /// Queries in queue order, from queued until done and told.
    queries: VecDeque<Query>,
    /// Decrypted bytes for the HTTP/2 client (kept for its allocation while busy).
    plain: Vec<u8>,
    /// Answers and failures for the querier; the connection fails as a whole for no h2 by
    /// ALPN, an HTTP/2 connection error, or the server's GOAWAY once its streams are done.
    outcomes: Outcomes,
    /// Whether ALPN was checked after the TLS handshake.
    alpn_checked: bool,
    /// The connection's failure was set once: it is not set again.
    ended: bool,
}

impl DohFraming {
    /// Starts a session to `name` (its ClientHello is the first output); requests go to
    /// `authority` at `config`'s path.
    pub fn new(
        tls: Arc<ClientConfig>,
        name: ServerName<'static>,
        authority: Arc<str>,
        config: Arc<DohConfig>,
    ) -> Result<Self, rustls::Error> {
        Ok(DohFraming {
            session: TlsSession::new(tls, name)?,
            h2: Http2Client::new(),
            config,
            authority,
            next_key: 0,
            queries: VecDeque::new(),
            plain: Vec::new(),
            outcomes: Outcomes::default(),
            alpn_checked: false,
            ended: false,
        })
    }

    /// The header block and body (POST) of a query's request.
    fn request(&self, wire: &[u8]) -> (Vec<u8>, Option<Vec<u8>>) {
        match self.config.method {
            DohMethod::Post => (
                request_headers(true, &self.authority, &self.config.path, wire.len()),
                Some(wire.to_vec()),
            ),
            DohMethod::Get => {
                let sep = if self.config.path.contains('?') {
                    '&'
                } else {
                    '?'
                };
                let mut path =
                    String::with_capacity(self.config.path.len() + 5 + wire.len() * 4 / 3 + 4);
                path.push_str(&self.config.path);
                path.push(sep);
                path.push_str("dns=");
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode_string(wire, &mut path);
                (request_headers(false, &self.authority, &path, 0), None)
            }
        }
    }

    /// The connection as a whole cannot go on: the querier is told once.
    fn end(&mut self, cause: Cause) {
        if !self.ended {
            self.ended = true;
            self.outcomes.fatal = Some(cause);
        }
    }

    /// Checks ALPN once the TLS handshake is over, and moves what the HTTP/2 client finished
    /// to the outcomes.
    fn collect(&mut self) {
        if !self.alpn_checked && !self.session.is_handshaking() {
            self.alpn_checked = true;
            if self.session.alpn() != Some(b"h2".as_slice()) {
                for q in &mut self.queries {
                    if !q.done {
                        q.done = true;
                        self.outcomes.failed.push((q.key, Cause::NoHttp2));
                    }
                }
                self.end(Cause::NoHttp2);
                return;
            }
        }
        let first = self.queries.front().map_or(0, |q| q.key);
        for (key, outcome) in self.h2.take_done() {
            if let Some(q) = key
                .checked_sub(first)
                .and_then(|i| self.queries.get_mut(i as usize))
            {
                q.done = true;
            }
            let failed = &mut self.outcomes.failed;
            match outcome {
                Outcome::Answer(body) if body.len() >= HEADER_LEN => {
                    self.outcomes.answers.push((key, body))
                }
                Outcome::Answer(_) | Outcome::NotDns => failed.push((key, Cause::NotDnsContent)),
                Outcome::Status(code) => failed.push((key, Cause::HttpStatus(code))),
                Outcome::Failed(why) => failed.push((key, Cause::Http2(why))),
            }
        }
        if let Some(e) = self.h2.error() {
            self.end(Cause::Http2(e.0));
        } else if self.h2.finished() {
            // The server said GOAWAY and answered what it took: a new connection takes the
            // next queries.
            self.end(Cause::PeerClosed);
        }
    }

    /// Notes the end in the TLS byte stream of each request whose last byte was just sealed.
    fn note_ends(&mut self) {
        let first = self.queries.front().map_or(0, |q| q.key);
        while let Some((key, 0)) = self.h2.next_end() {
            self.h2.pop_end();
            let at = self.session.queued_total();
            if let Some(q) = key
                .checked_sub(first)
                .and_then(|i| self.queries.get_mut(i as usize))
            {
                q.end.at = Some(at);
            }
        }
    }

    /// Forgets the queries that are done and whose end was told; gives back what a burst grew
    /// once nothing is in flight (most connections are idle most of the time).
    fn forget_done(&mut self) {
        while self.queries.front().is_some_and(|q| q.done && q.end.told) {
            self.queries.pop_front();
        }
        if self.queries.is_empty() {
            self.queries = VecDeque::new();
            self.h2.shrink(KEEP_BUF);
            if self.plain.capacity() > KEEP_BUF {
                self.plain = Vec::new();
            }
            self.outcomes.release_if_idle();
        }
    }
}

impl StreamProtocol for DohFraming {
    type Session = TlsSession;

    fn matches_by_id(&self) -> bool {
        false
    }

    fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError> {
        let wire = doh_query(wire)?;
        let key = self.next_key;
        self.next_key += 1;
        self.queries.push_back(Query {
            key,
            end: RequestEnd::default(),
            done: false,
        });
        let (headers, body) = self.request(&wire);
        self.h2.request(key, headers, body);
        Ok(Queued {
            key: MatchKey::Stream(key),
            wire_end: None,
        })
    }

    /// Seals what the HTTP/2 client wrote into TLS records, cut at each request's end: a
    /// request ends where its last frame ends in the TLS byte stream. Requests held back by the
    /// server's stream limit go out (and are told) later than the ones after them were queued,
    /// but always in queue order.
    fn seal(&mut self, sealed: &mut impl FnMut(u64)) -> Result<(), StreamError> {
        self.collect();
        self.note_ends();
        loop {
            let out = self.h2.output();
            if out.is_empty() {
                break;
            }
            let cut = match self.h2.next_end() {
                Some((_, end)) => end.min(out.len()),
                None => out.len(),
            };
            let n = self.session.write_plain(&out[..cut])?;
            if n == 0 {
                break; // The TLS handshake is not over.
            }
            self.h2.consume_output(n);
            self.note_ends();
        }
        if self.session.is_handshaking() {
            return Ok(());
        }
        let now = self.session.queued_total();
        tell_ends(
            self.queries.iter_mut().map(|q| (q.done, &mut q.end)),
            now,
            sealed,
        );
        self.forget_done();
        Ok(())
    }

    fn received(
        &mut self,
        bytes: &mut [u8],
        message: &mut impl FnMut(MatchKey, &[u8]),
    ) -> Result<Received, StreamError> {
        let peer_closed = self.session.received(bytes, &mut self.plain)?;
        if !self.plain.is_empty() {
            self.h2.received(&self.plain);
            self.plain.clear();
        }
        self.collect();
        for (key, body) in std::mem::take(&mut self.outcomes.answers) {
            message(MatchKey::Stream(key), &body);
        }
        self.forget_done();
        Ok(Received {
            peer_closed,
            malformed: 0,
        })
    }

    fn take_failures(&mut self, failed: &mut impl FnMut(MatchKey, Cause)) {
        self.outcomes.take_failures(failed)
    }

    fn fatal(&mut self) -> Option<Cause> {
        self.outcomes.fatal.take()
    }

    // The socket side (output, what the socket took, handshake, close) is the session's.
    fn session(&self) -> &TlsSession {
        &self.session
    }

    fn session_mut(&mut self) -> &mut TlsSession {
        &mut self.session
    }
}
