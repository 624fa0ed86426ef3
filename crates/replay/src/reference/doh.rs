//! DNS over HTTPS (RFC 8484) on the reference stack: the `h2` crate's HTTP/2 client inside
//! rustls' `ClientConnection` ([`RustlsSession`]), one stream per query.
//!
//! The `h2` crate speaks HTTP/2 over an `AsyncRead + AsyncWrite` transport. Here that transport
//! is a pair of in-memory buffers ([`Pipe`]): the TLS session decrypts what the socket read into
//! the pipe's input, and seals what h2 wrote into the pipe's output; h2's futures are polled
//! with a no-op waker whenever bytes arrive or a query is queued, which is every moment they can
//! make progress. So h2 runs inside the querier's own event loop, without a runtime, and the
//! querier's socket side (send and receive stamps, handshake timing, idle timeouts, session
//! resumption) is the same as for DNS over TLS.
//!
//! Queries are keyed by a number of this connection ([`MatchKey::Stream`]), not by h2's stream
//! ID, which h2 gives only once a stream opens (the server's stream limit may hold it back).
//! Each query is sent with DNS ID 0 (RFC 8484 §4.1: cache friendly). A response other than 200
//! with `application/dns-message` fails its query with a [`Cause`] naming the status or the
//! content type.

use super::tls::RustlsSession;
use crate::cause::Cause;
use crate::config::{DohConfig, DohMethod};
use crate::querier::doh_exchange::{doh_query, tell_ends, Outcomes, RequestEnd, MAX_MESSAGE};
use crate::querier::transport::{MatchKey, Queued, Received, StreamError, StreamProtocol};
use base64::Engine as _;
use bytes::Bytes;
use h2::client::{Connection, ResponseFuture, SendRequest};
use h2::RecvStream;
use ldplayer_dns::HEADER_LEN;
use ldplayer_stacks::tls::TlsRecords;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::Mutex;
use std::task::{Context, Poll, Wake, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client connection preface (RFC 9113 §3.4), which comes before the first frame.
const PREFACE_LEN: usize = 24;

/// The length of an HTTP/2 frame header.
const FRAME_HEADER: usize = 9;

/// Where the plaintext `out` (whose first `preface` bytes are the rest of the connection
/// preface) may be cut for sealing: after the first frame that ends a stream the client opened
/// (returned with its stream ID), or else after the last whole frame.
fn next_boundary(out: &[u8], preface: usize) -> (usize, Option<u32>) {
    let mut pos = preface.min(out.len());
    if pos < preface {
        return (pos, None);
    }
    while let Some(header) = out.get(pos..pos + FRAME_HEADER) {
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let frame_end = pos + FRAME_HEADER + len;
        if frame_end > out.len() {
            break;
        }
        pos = frame_end;
        let (kind, flags) = (header[3], header[4]);
        let stream = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & 0x7fff_ffff;
        // DATA (0) or HEADERS (1) with END_STREAM (0x1), on a client stream (odd).
        if kind <= 1 && flags & 0x1 != 0 && stream % 2 == 1 {
            return (pos, Some(stream));
        }
    }
    (pos, None)
}

/// Buffers of an idle connection larger than this are released.
const KEEP_BUF: usize = 1024;

/// The plaintext between the TLS session and h2.
#[derive(Default)]
struct PipeBuffers {
    /// Decrypted bytes from the server; `input[read..]` is not yet read by h2.
    input: Vec<u8>,
    read: usize,
    /// Bytes h2 wrote, not yet sealed into TLS records.
    output: Vec<u8>,
}

/// h2's transport: reads from and writes to [`PipeBuffers`] shared with the framing.
struct Pipe(Rc<RefCell<PipeBuffers>>);

impl AsyncRead for Pipe {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut b = self.0.borrow_mut();
        let start = b.read;
        if start == b.input.len() {
            // The framing polls again when more bytes arrive.
            return Poll::Pending;
        }
        let n = (b.input.len() - start).min(buf.remaining());
        buf.put_slice(&b.input[start..start + n]);
        b.read += n;
        if b.read == b.input.len() {
            b.input.clear();
            b.read = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Pipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.borrow_mut().output.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

type Handshake =
    Pin<Box<dyn Future<Output = Result<(SendRequest<Bytes>, Connection<Pipe, Bytes>), h2::Error>>>>;

/// Where the HTTP/2 connection is.
enum H2 {
    /// The client preface and SETTINGS are being written.
    Starting(Handshake),
    /// Requests may be sent.
    Open(Box<OpenH2>),
    /// The connection ended (GOAWAY, an HTTP/2 error); nothing more goes out.
    Ended,
}

/// An HTTP/2 connection that takes requests.
struct OpenH2 {
    send: SendRequest<Bytes>,
    conn: Connection<Pipe, Bytes>,
}

/// A query's stream, from the request to the whole body.
enum Exchange {
    /// Not yet given to h2 (waiting for the connection or for a stream to open).
    Waiting { wire: Bytes },
    /// The request went out; the response head has not come.
    Requested(ResponseFuture),
    /// The head was 200 with a DNS body; the body so far.
    Body { body: RecvStream, got: Vec<u8> },
}

/// The keys of the queries whose stream h2 woke (a response head or body data came): only
/// they are polled. Polling every stream in flight after each read cost 20% of the CPU at
/// 100 streams per connection (perf, `bench/doh.sh fast`).
#[derive(Default)]
struct Woken(Mutex<Vec<u64>>);

impl Woken {
    fn push(&self, key: u64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(key);
    }

    fn take(&self, into: &mut Vec<u64>) {
        std::mem::swap(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()), into);
    }
}

/// A query's waker: marks its key as woken.
struct StreamWaker {
    key: u64,
    woken: Arc<Woken>,
}

impl Wake for StreamWaker {
    fn wake(self: Arc<Self>) {
        self.woken.push(self.key);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.push(self.key);
    }
}

/// One query on the connection, in the order queued: sealed in that order.
struct Query {
    key: u64,
    /// Polls its stream, so that h2 says when it can go on.
    waker: Option<Waker>,
    exchange: Option<Exchange>,
    /// It was handed to h2 (or failed before).
    written: bool,
    /// Its HTTP/2 stream, once handed to h2.
    stream: Option<u32>,
    /// Where its request ends, and whether that was told.
    end: RequestEnd,
}

/// DNS over HTTPS on one connection: rustls with ALPN h2 and an h2 client on top.
pub(crate) struct H2Doh {
    session: RustlsSession,
    pipe: Rc<RefCell<PipeBuffers>>,
    h2: H2,
    config: Arc<DohConfig>,
    /// The `:authority` of every request.
    authority: Arc<str>,
    /// The URI of every POST.
    post_uri: http::Uri,
    next_key: u64,
    /// Queries in queue order, from queued until answered or failed.
    queries: VecDeque<Query>,
    /// Bytes of the client connection preface (not a frame) still at the front of the
    /// plaintext output.
    preface_left: usize,
    /// The streams h2 woke since they were last polled.
    woken: Arc<Woken>,
    /// The keys taken from `woken`, kept for its allocation.
    to_poll: Vec<u64>,
    /// Answers and failures for the querier; the connection fails as a whole for no h2 by
    /// ALPN or an HTTP/2 connection error.
    outcomes: Outcomes,
    /// Whether ALPN was checked after the TLS handshake.
    alpn_checked: bool,
}

impl H2Doh {
    /// Starts a session to `name` (its ClientHello is the first output); requests go to
    /// `authority` at `config`'s path.
    pub fn new(
        tls: Arc<ClientConfig>,
        name: ServerName<'static>,
        authority: Arc<str>,
        config: Arc<DohConfig>,
    ) -> Result<Self, rustls::Error> {
        let pipe = Rc::new(RefCell::new(PipeBuffers::default()));
        let handshake = h2::client::Builder::new()
            .enable_push(false)
            .handshake::<_, Bytes>(Pipe(pipe.clone()));
        let post_uri = http::Uri::try_from(format!("https://{authority}{}", config.path))
            .map_err(|e| rustls::Error::General(format!("DoH URI: {e}")))?;
        Ok(H2Doh {
            post_uri,
            session: RustlsSession::new(tls, name)?,
            pipe,
            h2: H2::Starting(Box::pin(handshake)),
            config,
            authority,
            next_key: 0,
            queries: VecDeque::new(),
            preface_left: PREFACE_LEN,
            woken: Arc::default(),
            to_poll: Vec::new(),
            outcomes: Outcomes::default(),
            alpn_checked: false,
        })
    }

    /// The HTTP request of a query, and its body for POST.
    fn request(&self, wire: &[u8]) -> Result<(http::Request<()>, Option<Bytes>), http::Error> {
        const DNS_MESSAGE: http::HeaderValue =
            http::HeaderValue::from_static("application/dns-message");
        let mut request = http::Request::new(());
        *request.version_mut() = http::Version::HTTP_2;
        request
            .headers_mut()
            .insert(http::header::ACCEPT, DNS_MESSAGE);
        Ok(match self.config.method {
            DohMethod::Post => {
                *request.method_mut() = http::Method::POST;
                // The same URI for every POST: parsed once, shared.
                *request.uri_mut() = self.post_uri.clone();
                let headers = request.headers_mut();
                headers.insert(http::header::CONTENT_TYPE, DNS_MESSAGE);
                headers.insert(http::header::CONTENT_LENGTH, wire.len().into());
                (request, Some(Bytes::copy_from_slice(wire)))
            }
            DohMethod::Get => {
                let dns = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(wire);
                let sep = if self.config.path.contains('?') {
                    '&'
                } else {
                    '?'
                };
                *request.uri_mut() = http::Uri::try_from(format!(
                    "https://{}{}{sep}dns={dns}",
                    self.authority, self.config.path
                ))?;
                (request, None)
            }
        })
    }

    /// Fails every query still open on the connection for `cause` (kept as the connection's
    /// own failure when nothing was open).
    fn fail_all(&mut self, cause: impl Fn() -> Cause) {
        for q in &mut self.queries {
            if q.exchange.take().is_some() {
                q.written = true;
                self.outcomes.failed.push((q.key, cause()));
            }
        }
        if self.outcomes.fatal.is_none() {
            self.outcomes.fatal = Some(cause());
        }
        self.h2 = H2::Ended;
    }

    /// Lets h2 do all it can now: finish its start, send waiting requests, read what arrived,
    /// and collect the responses that are complete.
    fn drive(&mut self) {
        if !self.alpn_checked && !self.session.is_handshaking() {
            self.alpn_checked = true;
            if self.session.alpn() != Some(b"h2".as_slice()) {
                self.fail_all(|| Cause::NoHttp2);
                return;
            }
        }
        let mut cx = Context::from_waker(Waker::noop());
        if let H2::Starting(handshake) = &mut self.h2 {
            match handshake.as_mut().poll(&mut cx) {
                Poll::Pending => return,
                Poll::Ready(Ok((send, conn))) => {
                    self.h2 = H2::Open(Box::new(OpenH2 { send, conn }))
                }
                Poll::Ready(Err(e)) => {
                    let key = h2_key(&e);
                    self.fail_all(|| Cause::Http2(key));
                    return;
                }
            }
        }
        // Reading bodies releases flow-control capacity; the WINDOW_UPDATE goes out with the
        // next drive, which follows every read (the querier flushes after reading).
        self.send_waiting(&mut cx);
        let H2::Open(open) = &mut self.h2 else {
            return;
        };
        match Pin::new(&mut open.conn).poll(&mut cx) {
            Poll::Pending => {}
            Poll::Ready(Ok(())) => {
                // The server said GOAWAY and every stream is done.
                self.collect();
                self.fail_all(|| Cause::PeerClosed);
                return;
            }
            Poll::Ready(Err(e)) => {
                self.collect();
                let key = h2_key(&e);
                self.fail_all(|| Cause::Http2(key));
                return;
            }
        }
        self.collect();
    }

    /// Hands waiting queries to h2 while it takes new streams.
    fn send_waiting(&mut self, cx: &mut Context<'_>) {
        let mut i = self
            .queries
            .iter()
            .position(|q| !q.written)
            .unwrap_or(self.queries.len());
        while i < self.queries.len() {
            let H2::Open(open) = &mut self.h2 else {
                return;
            };
            match open.send.poll_ready(cx) {
                Poll::Pending => return,
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => {
                    let key = h2_key(&e);
                    self.fail_all(|| Cause::Http2(key));
                    return;
                }
            }
            let q = &self.queries[i];
            let wire = match &q.exchange {
                Some(Exchange::Waiting { wire }) => wire.clone(),
                _ => {
                    i += 1;
                    continue;
                }
            };
            let key = q.key;
            let outcome = self
                .request(&wire)
                .map_err(|_| Cause::Unframeable)
                .and_then(|(request, body)| {
                    let H2::Open(open) = &mut self.h2 else {
                        return Err(Cause::ClosedLocally);
                    };
                    let (response, mut stream) = open
                        .send
                        .send_request(request, body.is_none())
                        .map_err(|e| Cause::Http2(h2_key(&e)))?;
                    if let Some(body) = body {
                        stream
                            .send_data(body, true)
                            .map_err(|e| Cause::Http2(h2_key(&e)))?;
                    }
                    Ok((stream.stream_id().as_u32(), response))
                });
            let q = &mut self.queries[i];
            q.written = true;
            match outcome {
                Ok((stream, response)) => {
                    q.stream = Some(stream);
                    q.exchange = Some(Exchange::Requested(response));
                    q.waker = Some(Waker::from(Arc::new(StreamWaker {
                        key,
                        woken: self.woken.clone(),
                    })));
                    // Its first poll registers the waker.
                    self.woken.push(key);
                }
                Err(cause) => {
                    q.exchange = None;
                    self.outcomes.failed.push((key, cause));
                }
            }
            i += 1;
        }
    }

    /// Moves responses along: heads checked, bodies read; complete answers and failures are
    /// set aside for the querier.
    fn collect(&mut self) {
        let mut keys = std::mem::take(&mut self.to_poll);
        self.woken.take(&mut keys);
        let first = self.queries.front().map_or(0, |q| q.key);
        for &key in &keys {
            let Some(q) = key
                .checked_sub(first)
                .and_then(|i| self.queries.get_mut(i as usize))
            else {
                continue;
            };
            let Some(waker) = q.waker.clone() else {
                continue;
            };
            let cx = &mut Context::from_waker(&waker);
            loop {
                match q.exchange.take() {
                    Some(Exchange::Requested(mut response)) => {
                        match Pin::new(&mut response).poll(cx) {
                            Poll::Pending => {
                                q.exchange = Some(Exchange::Requested(response));
                                break;
                            }
                            Poll::Ready(Err(e)) => {
                                self.outcomes.failed.push((q.key, Cause::Http2(h2_key(&e))));
                                break;
                            }
                            Poll::Ready(Ok(response)) => {
                                let status = response.status().as_u16();
                                if status != 200 {
                                    self.outcomes
                                        .failed
                                        .push((q.key, Cause::HttpStatus(status)));
                                    break;
                                }
                                let dns = response
                                    .headers()
                                    .get(http::header::CONTENT_TYPE)
                                    .is_some_and(|v| {
                                        ldplayer_stacks::doh::is_dns_message(v.as_bytes())
                                    });
                                if !dns {
                                    self.outcomes.failed.push((q.key, Cause::NotDnsContent));
                                    break;
                                }
                                q.exchange = Some(Exchange::Body {
                                    body: response.into_body(),
                                    got: Vec::new(),
                                });
                            }
                        }
                    }
                    Some(Exchange::Body { mut body, mut got }) => match body.poll_data(cx) {
                        Poll::Pending => {
                            q.exchange = Some(Exchange::Body { body, got });
                            break;
                        }
                        Poll::Ready(Some(Ok(chunk))) => {
                            let _ = body.flow_control().release_capacity(chunk.len());
                            if got.len() + chunk.len() > MAX_MESSAGE {
                                self.outcomes.failed.push((q.key, Cause::Unframeable));
                                break;
                            }
                            got.extend_from_slice(&chunk);
                            q.exchange = Some(Exchange::Body { body, got });
                        }
                        Poll::Ready(Some(Err(e))) => {
                            self.outcomes.failed.push((q.key, Cause::Http2(h2_key(&e))));
                            break;
                        }
                        Poll::Ready(None) => {
                            q.waker = None;
                            self.outcomes.answers.push((q.key, got));
                            break;
                        }
                    },
                    other => {
                        q.exchange = other;
                        break;
                    }
                }
            }
        }
        keys.clear();
        self.to_poll = keys;
    }

    /// Forgets the queries that are answered or failed and whose end was told.
    fn forget_done(&mut self) {
        while self
            .queries
            .front()
            .is_some_and(|q| q.exchange.is_none() && q.end.told)
        {
            self.queries.pop_front();
        }
        // Most connections are idle most of the time: give back what a burst grew.
        if self.queries.is_empty() {
            self.queries = VecDeque::new();
            self.to_poll = Vec::new();
            self.outcomes.release_if_idle();
            let mut pipe = self.pipe.borrow_mut();
            if pipe.input.is_empty() && pipe.input.capacity() > KEEP_BUF {
                pipe.input = Vec::new();
            }
            if pipe.output.is_empty() && pipe.output.capacity() > KEEP_BUF {
                pipe.output = Vec::new();
            }
        }
    }
}

impl StreamProtocol for H2Doh {
    type Session = RustlsSession;

    fn matches_by_id(&self) -> bool {
        false
    }

    fn queue_query(&mut self, wire: &[u8]) -> Result<Queued, StreamError> {
        let wire = doh_query(wire)?;
        let key = self.next_key;
        self.next_key += 1;
        self.queries.push_back(Query {
            key,
            waker: None,
            exchange: Some(Exchange::Waiting { wire: wire.into() }),
            written: false,
            stream: None,
            end: RequestEnd::default(),
        });
        Ok(Queued {
            key: MatchKey::Stream(key),
            wire_end: None,
        })
    }

    /// Runs h2, then seals what it wrote into TLS records, frame by frame: a request ends
    /// where the frame that ends its stream (HEADERS or DATA with END_STREAM) ends in the TLS
    /// byte stream. h2 opens streams as the server's stream limit allows, so a request handed
    /// to it may go out later than the next one's; its frames say when.
    fn seal(&mut self, sealed: &mut impl FnMut(u64)) -> Result<(), StreamError> {
        self.drive();
        // Cut at each request's end; the sealed bytes are dropped once, at the end (dropping
        // them per request moved the rest of the buffer each time).
        let mut taken = 0;
        let result = loop {
            let (boundary, ended) = {
                let pipe = self.pipe.borrow();
                next_boundary(&pipe.output[taken..], self.preface_left)
            };
            if boundary == 0 {
                break Ok(());
            }
            let written = {
                let pipe = self.pipe.borrow();
                self.session
                    .write_plain(&pipe.output[taken..taken + boundary])
            };
            match written {
                Ok(0) => break Ok(()), // The TLS handshake is not over.
                Ok(n) => {
                    taken += n;
                    self.preface_left -= self.preface_left.min(n);
                }
                Err(e) => break Err(e),
            }
            if let Some(stream) = ended {
                let at = self.session.queued_total();
                if let Some(q) = self.queries.iter_mut().find(|q| q.stream == Some(stream)) {
                    q.end.at = Some(at);
                }
            }
        };
        {
            let mut pipe = self.pipe.borrow_mut();
            if taken == pipe.output.len() {
                pipe.output.clear();
            } else {
                pipe.output.drain(..taken);
            }
        }
        result?;
        if self.session.is_handshaking() {
            return Ok(());
        }
        // Done without bytes of its own on the wire: failed before or as it was handed to h2.
        let now = self.session.queued_total();
        tell_ends(
            self.queries
                .iter_mut()
                .map(|q| (q.written && q.exchange.is_none(), &mut q.end)),
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
        let peer_closed = {
            let mut pipe = self.pipe.borrow_mut();
            self.session.received(bytes, &mut pipe.input)?
        };
        self.drive();
        let mut malformed = 0;
        for (key, body) in std::mem::take(&mut self.outcomes.answers) {
            if body.len() < HEADER_LEN {
                malformed += 1;
                self.outcomes.failed.push((key, Cause::NotDnsContent));
                continue;
            }
            message(MatchKey::Stream(key), &body);
        }
        self.forget_done();
        Ok(Received {
            peer_closed,
            malformed,
        })
    }

    fn take_failures(&mut self, failed: &mut impl FnMut(MatchKey, Cause)) {
        self.outcomes.take_failures(failed)
    }

    fn fatal(&mut self) -> Option<Cause> {
        self.outcomes.fatal.take()
    }

    // The socket side (output, what the socket took, handshake, close) is the session's.
    fn session(&self) -> &RustlsSession {
        &self.session
    }

    fn session_mut(&mut self) -> &mut RustlsSession {
        &mut self.session
    }
}

/// How an HTTP/2 stream or connection failed, as a stable key (the lean client's keys).
fn h2_key(e: &h2::Error) -> &'static str {
    if e.is_go_away() {
        return "h2-goaway";
    }
    if e.is_io() {
        return "h2-io";
    }
    match e.reason() {
        Some(h2::Reason::REFUSED_STREAM) => "h2-refused-stream",
        Some(h2::Reason::PROTOCOL_ERROR) => "h2-protocol-error",
        Some(h2::Reason::FLOW_CONTROL_ERROR) => "h2-flow-control-error",
        Some(h2::Reason::FRAME_SIZE_ERROR) => "h2-frame-size-error",
        Some(h2::Reason::COMPRESSION_ERROR) => "h2-compression-error",
        Some(h2::Reason::CANCEL) => "h2-cancel",
        Some(h2::Reason::ENHANCE_YOUR_CALM) => "h2-enhance-your-calm",
        Some(h2::Reason::INTERNAL_ERROR) => "h2-internal-error",
        Some(_) => "h2-reset",
        None => "h2-error",
    }
}
