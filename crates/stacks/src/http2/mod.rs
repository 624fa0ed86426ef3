//! The client side of HTTP/2 (RFC 9113) as DNS over HTTPS needs it, without I/O: requests in,
//! frames out; frames in, responses out.
//!
//! Written by hand rather than with the `h2` crate, for two measured reasons (bench/encrypted.sh):
//! h2 keeps 24 KiB of buffers per connection for the connection's whole life (an idle DoH
//! session cost 24.2 KB against 3.5 KB for DoT), and its streams, wakers and futures made a
//! `--fast` DoH query cost 13.8 µs of CPU against 16.3 µs for dnsperf, short of the ⅔ asked.
//! DoH needs little of HTTP/2: one request per stream, small bodies, no push, no priorities.
//! Responses are decoded by the crate's `hpack` module; requests are encoded with the static
//! table and literals, which needs no encoder state.
//!
//! What the server sends is bounded: frames above 16,384 bytes (our `SETTINGS_MAX_FRAME_SIZE`)
//! and bodies above 65,535 bytes are errors, header blocks are capped, and every buffer is
//! given back when the connection has nothing in flight.

use crate::doh::is_dns_message;
use crate::hpack::put_integer;
use std::collections::VecDeque;

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types (RFC 9113 §6).
mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags.
mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// The length of a frame header.
const FRAME_HEADER: usize = 9;

/// The largest frame payload accepted: the protocol's default `SETTINGS_MAX_FRAME_SIZE`,
/// which the client does not raise.
const MAX_FRAME: usize = 16_384;

/// The largest response body: a DNS message.
const MAX_BODY: usize = 65_535;

/// The largest header block (all its CONTINUATION frames together).
const MAX_HEADER_BLOCK: usize = 16_384;

/// The receive window the client gives the connection at the start (and tops up): answers on
/// many streams at once are never held back by the connection's window. Each stream keeps the
/// default 65,535 bytes, which holds any DNS message.
const CONNECTION_WINDOW: u32 = (1 << 30) - 1;

/// The default initial window (RFC 9113 §6.9.2), for streams and the connection.
const DEFAULT_WINDOW: i64 = 65_535;

/// The largest flow-control window (RFC 9113 §6.9.1).
const MAX_WINDOW: i64 = (1 << 31) - 1;

/// Error codes (RFC 9113 §7).
fn error_key(code: u32) -> &'static str {
    match code {
        0x0 => "h2-no-error",
        0x1 => "h2-protocol-error",
        0x2 => "h2-internal-error",
        0x3 => "h2-flow-control-error",
        0x6 => "h2-frame-size-error",
        0x7 => "h2-refused-stream",
        0x8 => "h2-cancel",
        0x9 => "h2-compression-error",
        0xb => "h2-enhance-your-calm",
        _ => "h2-reset",
    }
}

/// How one request ended, for the caller's query `key`.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Status 200 with `application/dns-message`: the body.
    Answer(Vec<u8>),
    /// Another status.
    Status(u16),
    /// Status 200 with another content type.
    NotDns,
    /// The stream failed: reset by the server, refused, cut by GOAWAY (a key such as
    /// `h2-refused-stream`), or a body too large (`h2-body-too-large`).
    Failed(&'static str),
}

/// Why the connection as a whole cannot go on (the key of the HTTP/2 error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/2 connection error: {0}")]
pub struct ConnectionError(pub &'static str);

/// The streams opened before the server's first SETTINGS frame says its limit: RFC 9113 §5.1.2
/// recommends servers allow at least 100, and h2, nghttp2 and Go's client assume 100 until
/// then. Assuming no limit, as the RFC's initial value says, sent a whole burst at once, and a
/// server refused every stream past its limit (`h2-refused-stream`: 2,866 of 60,000 queries with
/// 300 in flight a connection against `ldplayer serve`, whose limit is 100).
const ASSUMED_MAX_STREAMS: u32 = 100;

/// A request waiting to be written: its caller's key, the encoded header block, and the body
/// (POST).
struct Pending {
    key: u64,
    headers: Vec<u8>,
    body: Option<Vec<u8>>,
}

/// A stream the client opened, until its response is complete.
struct Stream {
    id: u32,
    key: u64,
    /// The response status, once its head came (1xx heads are skipped).
    status: Option<u16>,
    /// The head said `content-type: application/dns-message`.
    dns: bool,
    body: Vec<u8>,
    /// The stream's send window (RFC 9113 §6.9): the server's `SETTINGS_INITIAL_WINDOW_SIZE`
    /// at the start, moved by its WINDOW_UPDATE frames on the stream and by later SETTINGS.
    window: i64,
    /// The request body still to send (`None`: all sent, END_STREAM with it, or a GET): it goes
    /// in DATA frames as the stream's and the connection's windows allow.
    unsent: Option<Vec<u8>>,
}

/// One HTTP/2 client connection.
pub struct Http2Client {
    /// Bytes for the server (the preface first); `out[out_start..]` are not yet taken.
    out: Vec<u8>,
    /// Where the untaken output starts: bytes are taken by moving it, and `out` is emptied
    /// once all are taken (draining per request moved the rest of a batch each time).
    out_start: usize,
    /// The position of `out[0]` in the connection's byte stream.
    out_base: u64,
    /// Each request's end in the byte stream, in the order written, with its key.
    ends: VecDeque<(u64, u64)>,
    /// Bytes from the server not yet making a whole frame.
    input: Vec<u8>,
    hpack: crate::hpack::Decoder,
    /// The header block being gathered (HEADERS, then CONTINUATION): its stream, whether the
    /// HEADERS frame ended the stream, the fragments so far.
    block: Option<(u32, bool, Vec<u8>)>,
    /// Requests waiting for a stream (the server's limit).
    waiting: VecDeque<Pending>,
    /// Open streams, by increasing ID.
    streams: VecDeque<Stream>,
    next_id: u32,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`; [`ASSUMED_MAX_STREAMS`] until its first
    /// SETTINGS frame.
    max_streams: u32,
    /// The server's first SETTINGS frame has come.
    settings_seen: bool,
    /// The server's `SETTINGS_MAX_FRAME_SIZE`.
    max_frame: usize,
    /// The server's `SETTINGS_INITIAL_WINDOW_SIZE`: each new stream's send window.
    stream_window: i64,
    /// The connection's send window.
    send_window: i64,
    /// The connection's receive window left before it is topped up.
    recv_window: i64,
    /// The server said GOAWAY: streams above this ID are not processed.
    goaway: Option<u32>,
    /// Completed requests not yet taken.
    done: Vec<(u64, Outcome)>,
    /// The connection failed.
    error: Option<ConnectionError>,
}

impl Default for Http2Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Http2Client {
    /// A connection whose preface and SETTINGS are the first output: no push, no dynamic
    /// table for the server's headers (so that an idle connection keeps none), and a large
    /// connection window.
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(PREFACE.len() + 2 * FRAME_HEADER + 16);
        out.extend_from_slice(PREFACE);
        // SETTINGS_HEADER_TABLE_SIZE = 0, SETTINGS_ENABLE_PUSH = 0.
        frame_header(&mut out, 12, kind::SETTINGS, 0, 0);
        out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]);
        frame_header(&mut out, 4, kind::WINDOW_UPDATE, 0, 0);
        out.extend_from_slice(&(CONNECTION_WINDOW - DEFAULT_WINDOW as u32).to_be_bytes());
        Http2Client {
            out,
            out_start: 0,
            out_base: 0,
            ends: VecDeque::new(),
            input: Vec::new(),
            hpack: crate::hpack::Decoder::default(),
            block: None,
            waiting: VecDeque::new(),
            streams: VecDeque::new(),
            next_id: 1,
            max_streams: ASSUMED_MAX_STREAMS,
            settings_seen: false,
            max_frame: MAX_FRAME,
            stream_window: DEFAULT_WINDOW,
            send_window: DEFAULT_WINDOW,
            recv_window: i64::from(CONNECTION_WINDOW),
            goaway: None,
            done: Vec::new(),
            error: None,
        }
    }

    /// Queues a request: `headers` an encoded header block ([`request_headers`]), `body` the
    /// POST body. It is written at once if the server's limits allow, else when they do.
    pub fn request(&mut self, key: u64, headers: Vec<u8>, body: Option<Vec<u8>>) {
        if let Some(ConnectionError(why)) = self.error {
            self.done.push((key, Outcome::Failed(why)));
            return;
        }
        if self.goaway.is_some() {
            self.done.push((key, Outcome::Failed("h2-goaway")));
            return;
        }
        self.waiting.push_back(Pending { key, headers, body });
        self.write_waiting();
    }

    /// The bytes for the server.
    #[inline]
    pub fn output(&self) -> &[u8] {
        &self.out[self.out_start..]
    }

    /// Forgets the first `n` bytes of [`output`](Self::output).
    #[inline]
    pub fn consume_output(&mut self, n: usize) {
        self.out_start = (self.out_start + n).min(self.out.len());
        if self.out_start == self.out.len() {
            self.out_base += self.out.len() as u64;
            self.out.clear();
            self.out_start = 0;
        } else if self.out_start > 64 * 1024 {
            // A socket that takes little at a time: keep the buffer from growing.
            self.out.drain(..self.out_start);
            self.out_base += self.out_start as u64;
            self.out_start = 0;
        }
    }

    /// Where in the output the next request still to be told of ends, and its key: the byte
    /// count (from [`output`](Self::output)'s start) up to and including its last frame.
    #[inline]
    pub fn next_end(&self) -> Option<(u64, usize)> {
        let &(key, end) = self.ends.front()?;
        let taken = self.out_base + self.out_start as u64;
        Some((key, end.saturating_sub(taken) as usize))
    }

    /// The request of [`next_end`](Self::next_end) was told of.
    #[inline]
    pub fn pop_end(&mut self) {
        self.ends.pop_front();
    }

    /// Completed requests since the last call.
    #[inline]
    pub fn take_done(&mut self) -> std::vec::Drain<'_, (u64, Outcome)> {
        self.done.drain(..)
    }

    /// The connection's failure, if it failed (every request in flight has failed with it).
    #[inline]
    pub fn error(&self) -> Option<ConnectionError> {
        self.error
    }

    /// Whether the server said GOAWAY and nothing it will still answer is in flight: the
    /// connection is done.
    #[inline]
    pub fn finished(&self) -> bool {
        self.goaway.is_some() && self.streams.is_empty()
    }

    /// Whether requests are waiting or in flight.
    #[inline]
    pub fn busy(&self) -> bool {
        !self.streams.is_empty() || !self.waiting.is_empty()
    }

    /// Gives back what a burst grew, when nothing is in flight.
    pub fn shrink(&mut self, keep: usize) {
        if self.busy() {
            return;
        }
        for buf in [&mut self.out, &mut self.input] {
            if buf.is_empty() && buf.capacity() > keep {
                *buf = Vec::new();
            }
        }
        if self.done.is_empty() {
            self.done = Vec::new();
        }
        self.ends.shrink_to(4);
        self.waiting = VecDeque::new();
        self.streams = VecDeque::new();
    }

    /// Takes bytes from the server: whole frames are handled, the rest kept for later.
    pub fn received(&mut self, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        // The usual case: whole frames, read straight from `bytes`.
        let mut at = 0;
        if self.input.is_empty() {
            at = self.frames(bytes);
            if self.error.is_some() {
                return;
            }
            if at == bytes.len() {
                self.write_waiting();
                return;
            }
        }
        self.input.extend_from_slice(&bytes[at..]);
        let input = std::mem::take(&mut self.input);
        let used = self.frames(&input);
        self.input = input;
        self.input.drain(..used);
        if self.error.is_none() {
            self.write_waiting();
        }
    }

    /// Handles the whole frames at the start of `bytes`; returns the bytes used.
    fn frames(&mut self, bytes: &[u8]) -> usize {
        let mut pos = 0;
        while let Some(header) = bytes.get(pos..pos + FRAME_HEADER) {
            let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
            if len > MAX_FRAME {
                self.fail_connection("h2-frame-size-error");
                return pos;
            }
            let Some(payload) = bytes.get(pos + FRAME_HEADER..pos + FRAME_HEADER + len) else {
                break;
            };
            let stream =
                u32::from_be_bytes([header[5], header[6], header[7], header[8]]) & !(1 << 31);
            self.frame(header[3], header[4], stream, payload);
            pos += FRAME_HEADER + len;
            if self.error.is_some() {
                return pos;
            }
        }
        pos
    }

    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        if self.block.is_some() && kind != kind::CONTINUATION {
            return self.fail_connection("h2-protocol-error");
        }
        match kind {
            kind::DATA => self.data(flags, stream, payload),
            kind::HEADERS => self.headers(flags, stream, payload),
            kind::CONTINUATION => self.continuation(flags, stream, payload),
            kind::RST_STREAM => {
                let code = payload
                    .get(..4)
                    .map_or(0x1, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
                self.end_stream(stream, Outcome::Failed(error_key(code)));
            }
            kind::SETTINGS => self.settings(flags, stream, payload),
            kind::PING if flags & flag::ACK == 0 => {
                if payload.len() != 8 || stream != 0 {
                    return self.fail_connection("h2-protocol-error");
                }
                frame_header(&mut self.out, 8, kind::PING, flag::ACK, 0);
                self.out.extend_from_slice(payload);
            }
            kind::GOAWAY => {
                let Some(last) = payload.get(..4) else {
                    return self.fail_connection("h2-protocol-error");
                };
                let last = u32::from_be_bytes([last[0], last[1], last[2], last[3]]) & !(1 << 31);
                self.goaway = Some(last);
                // Streams above `last` were not processed; nothing more goes out.
                while self.streams.back().is_some_and(|s| s.id > last) {
                    if let Some(s) = self.streams.pop_back() {
                        self.done.push((s.key, Outcome::Failed("h2-goaway")));
                    }
                }
                for w in self.waiting.drain(..) {
                    self.done.push((w.key, Outcome::Failed("h2-goaway")));
                }
            }
            kind::WINDOW_UPDATE => {
                let Some(inc) = payload.get(..4) else {
                    return self.fail_connection("h2-frame-size-error");
                };
                let inc =
                    i64::from(u32::from_be_bytes([inc[0], inc[1], inc[2], inc[3]]) & !(1 << 31));
                self.window_update(stream, inc);
            }
            kind::PUSH_PROMISE => self.fail_connection("h2-protocol-error"),
            // PRIORITY, unknown and extension frames are ignored (RFC 9113 §4.1).
            _ => {}
        }
    }

    fn settings(&mut self, flags: u8, stream: u32, payload: &[u8]) {
        if stream != 0 || (flags & flag::ACK == 0 && !payload.len().is_multiple_of(6)) {
            return self.fail_connection("h2-protocol-error");
        }
        if flags & flag::ACK != 0 {
            return;
        }
        if !self.settings_seen {
            // The server's limit replaces the assumed one; a server that names none has none.
            self.settings_seen = true;
            self.max_streams = u32::MAX;
        }
        for s in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            match u16::from_be_bytes([s[0], s[1]]) {
                0x3 => self.max_streams = value,
                0x4 => {
                    if value > MAX_WINDOW as u32 {
                        return self.fail_connection("h2-flow-control-error");
                    }
                    // RFC 9113 §6.9.2: the change moves every open stream's window too.
                    let delta = i64::from(value) - self.stream_window;
                    self.stream_window = i64::from(value);
                    for s in &mut self.streams {
                        s.window += delta;
                        if s.window > MAX_WINDOW {
                            return self.fail_connection("h2-flow-control-error");
                        }
                    }
                }
                0x5 => self.max_frame = (value as usize).clamp(MAX_FRAME, 16_777_215),
                _ => {}
            }
        }
        frame_header(&mut self.out, 0, kind::SETTINGS, flag::ACK, 0);
    }

    fn data(&mut self, flags: u8, stream: u32, payload: &[u8]) {
        if stream == 0 {
            return self.fail_connection("h2-protocol-error");
        }
        // Flow control counts the whole payload, padding included.
        self.recv_window -= payload.len() as i64;
        if self.recv_window < i64::from(CONNECTION_WINDOW / 2) {
            let inc = i64::from(CONNECTION_WINDOW) - self.recv_window;
            frame_header(&mut self.out, 4, kind::WINDOW_UPDATE, 0, 0);
            self.out.extend_from_slice(&(inc as u32).to_be_bytes());
            self.recv_window = i64::from(CONNECTION_WINDOW);
        }
        let Some(data) = unpad(flags, payload) else {
            return self.fail_connection("h2-protocol-error");
        };
        let Some(i) = self.stream_index(stream) else {
            return; // A stream already ended (reset, or failed here).
        };
        let s = &mut self.streams[i];
        if s.body.len() + data.len() > MAX_BODY {
            self.reset(stream, 0x8);
            return self.end_stream(stream, Outcome::Failed("h2-body-too-large"));
        }
        s.body.extend_from_slice(data);
        if flags & flag::END_STREAM != 0 {
            self.complete(stream);
        }
    }

    fn headers(&mut self, flags: u8, stream: u32, payload: &[u8]) {
        if stream == 0 {
            return self.fail_connection("h2-protocol-error");
        }
        let Some(mut fragment) = unpad(flags, payload) else {
            return self.fail_connection("h2-protocol-error");
        };
        if flags & flag::PRIORITY != 0 {
            let Some(rest) = fragment.get(5..) else {
                return self.fail_connection("h2-protocol-error");
            };
            fragment = rest;
        }
        let ends_stream = flags & flag::END_STREAM != 0;
        if flags & flag::END_HEADERS != 0 {
            self.header_block(stream, ends_stream, fragment);
        } else {
            self.block = Some((stream, ends_stream, fragment.to_vec()));
        }
    }

    fn continuation(&mut self, flags: u8, stream: u32, payload: &[u8]) {
        let Some((id, ends_stream, mut block)) = self.block.take() else {
            return self.fail_connection("h2-protocol-error");
        };
        if id != stream || block.len() + payload.len() > MAX_HEADER_BLOCK {
            return self.fail_connection("h2-protocol-error");
        }
        block.extend_from_slice(payload);
        if flags & flag::END_HEADERS != 0 {
            self.header_block(id, ends_stream, &block);
        } else {
            self.block = Some((id, ends_stream, block));
        }
    }

    /// A whole header block: decoded (always, to keep the HPACK state), then applied to its
    /// stream.
    fn header_block(&mut self, stream: u32, ends_stream: bool, block: &[u8]) {
        let (mut status, mut dns) = (None, false);
        let decoded = self.hpack.decode(block, &mut |name, value| match name {
            b":status" => {
                status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u16>().ok());
            }
            b"content-type" => dns = is_dns_message(value),
            _ => {}
        });
        if decoded.is_err() {
            return self.fail_connection("h2-compression-error");
        }
        let Some(i) = self.stream_index(stream) else {
            return;
        };
        let s = &mut self.streams[i];
        if s.status.is_none() {
            match status {
                // Informational heads come before the real one.
                Some(100..=199) if !ends_stream => return,
                Some(code) => {
                    s.status = Some(code);
                    s.dns = dns;
                }
                None => {
                    self.reset(stream, 0x1);
                    return self.end_stream(stream, Outcome::Failed("h2-protocol-error"));
                }
            }
        }
        // Otherwise trailers: nothing in them matters here.
        if ends_stream {
            self.complete(stream);
        }
    }

    /// The stream's response is complete.
    fn complete(&mut self, stream: u32) {
        let Some(i) = self.stream_index(stream) else {
            return;
        };
        let s = &mut self.streams[i];
        let outcome = match s.status {
            Some(200) if s.dns => Outcome::Answer(std::mem::take(&mut s.body)),
            Some(200) => Outcome::NotDns,
            Some(code) => Outcome::Status(code),
            None => Outcome::Failed("h2-protocol-error"),
        };
        self.end_stream(stream, outcome);
    }

    /// Ends `stream` (if open) with `outcome`.
    fn end_stream(&mut self, stream: u32, outcome: Outcome) {
        if let Some(i) = self.stream_index(stream) {
            if let Some(s) = self.streams.remove(i) {
                self.done.push((s.key, outcome));
            }
        }
    }

    fn stream_index(&self, id: u32) -> Option<usize> {
        self.streams.binary_search_by_key(&id, |s| s.id).ok()
    }

    /// Tells the server to drop `stream`.
    fn reset(&mut self, stream: u32, code: u32) {
        frame_header(&mut self.out, 4, kind::RST_STREAM, 0, stream);
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    /// A WINDOW_UPDATE of `inc` bytes on `stream` (0: the connection's window).
    fn window_update(&mut self, stream: u32, inc: i64) {
        if stream == 0 {
            if inc == 0 {
                return self.fail_connection("h2-protocol-error");
            }
            self.send_window += inc;
            if self.send_window > MAX_WINDOW {
                self.fail_connection("h2-flow-control-error");
            }
            return;
        }
        let Some(i) = self.stream_index(stream) else {
            return; // An ended stream's (or one never opened): ignored.
        };
        let s = &mut self.streams[i];
        s.window += inc;
        let why = if inc == 0 {
            Some(("h2-protocol-error", 0x1))
        } else if s.window > MAX_WINDOW {
            Some(("h2-flow-control-error", 0x3))
        } else {
            None
        };
        if let Some((key, code)) = why {
            self.reset(stream, code);
            self.end_stream(stream, Outcome::Failed(key));
        }
    }

    /// Writes the request bodies still to send, in DATA frames as large as the stream's
    /// window, the connection's and the server's frame size allow (RFC 9113 §6.9.1); the
    /// rest waits for the server's WINDOW_UPDATE.
    fn write_bodies(&mut self) {
        for i in 0..self.streams.len() {
            let s = &mut self.streams[i];
            let Some(unsent) = s.unsent.as_mut() else {
                continue;
            };
            loop {
                let room = s.window.min(self.send_window).max(0) as usize;
                let n = unsent.len().min(room).min(self.max_frame);
                if n == 0 && !unsent.is_empty() {
                    break; // Until a WINDOW_UPDATE.
                }
                let last = n == unsent.len();
                let flags = if last { flag::END_STREAM } else { 0 };
                frame_header(&mut self.out, n, kind::DATA, flags, s.id);
                self.out.extend_from_slice(&unsent[..n]);
                s.window -= n as i64;
                self.send_window -= n as i64;
                if last {
                    s.unsent = None;
                    self.ends
                        .push_back((s.key, self.out_base + self.out.len() as u64));
                    break;
                }
                unsent.drain(..n);
            }
            if self.send_window <= 0 {
                return;
            }
        }
    }

    /// Writes waiting requests while the server's stream limit allows, then the bodies the
    /// windows allow.
    fn write_waiting(&mut self) {
        if self.error.is_some() {
            return;
        }
        while let Some(p) = self.waiting.front() {
            if self.goaway.is_some() {
                break;
            }
            if self.streams.len() as u64 >= u64::from(self.max_streams) {
                break;
            }
            if p.headers.len() > self.max_frame || self.next_id > (1 << 31) - 1 {
                if let Some(p) = self.waiting.pop_front() {
                    self.done
                        .push((p.key, Outcome::Failed("h2-frame-size-error")));
                }
                continue;
            }
            let Some(p) = self.waiting.pop_front() else {
                break;
            };
            let id = self.next_id;
            self.next_id += 2;
            let headers_flags = flag::END_HEADERS
                | if p.body.is_none() {
                    flag::END_STREAM
                } else {
                    0
                };
            frame_header(
                &mut self.out,
                p.headers.len(),
                kind::HEADERS,
                headers_flags,
                id,
            );
            self.out.extend_from_slice(&p.headers);
            if p.body.is_none() {
                self.ends
                    .push_back((p.key, self.out_base + self.out.len() as u64));
            }
            self.streams.push_back(Stream {
                id,
                key: p.key,
                status: None,
                dns: false,
                body: Vec::new(),
                window: self.stream_window,
                unsent: p.body,
            });
        }
        self.write_bodies();
    }

    /// The connection cannot go on: every request fails with `key`.
    fn fail_connection(&mut self, key: &'static str) {
        if self.error.is_some() {
            return;
        }
        self.error = Some(ConnectionError(key));
        for s in self.streams.drain(..) {
            self.done.push((s.key, Outcome::Failed(key)));
        }
        for w in self.waiting.drain(..) {
            self.done.push((w.key, Outcome::Failed(key)));
        }
        // GOAWAY with the error, as the protocol asks.
        let code: u32 = match key {
            "h2-frame-size-error" => 0x6,
            "h2-compression-error" => 0x9,
            "h2-flow-control-error" => 0x3,
            _ => 0x1,
        };
        frame_header(&mut self.out, 8, kind::GOAWAY, 0, 0);
        self.out.extend_from_slice(&0u32.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
    }
}

/// Appends a frame header.
fn frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A DATA or HEADERS payload without its padding; `None` when the padding does not fit.
fn unpad(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & flag::PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|end| &rest[..end])
}

/// The HPACK header block of a DoH request, with the static table and literals without
/// indexing (no encoder state to keep): `:method` (GET or POST), `:scheme https`, `:path`,
/// `:authority`, `accept`, and for POST `content-type` and `content-length`.
pub fn request_headers(post: bool, authority: &str, path: &str, body_len: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(48 + authority.len() + path.len());
    // Indexed fields: :method GET (2) or POST (3), :scheme https (7).
    b.push(0x80 | if post { 3 } else { 2 });
    b.push(0x80 | 7);
    literal(&mut b, 4, path.as_bytes()); // :path
    literal(&mut b, 1, authority.as_bytes()); // :authority
    literal(&mut b, 19, b"application/dns-message"); // accept
    if post {
        literal(&mut b, 31, b"application/dns-message"); // content-type
        literal(&mut b, 28, body_len.to_string().as_bytes()); // content-length
    }
    b
}

/// A literal field without indexing whose name is static table entry `name` (RFC 7541
/// §6.2.2), its value not Huffman coded.
fn literal(b: &mut Vec<u8>, name: usize, value: &[u8]) {
    put_integer(b, 0x00, 4, name);
    put_integer(b, 0x00, 7, value.len());
    b.extend_from_slice(value);
}

/// Drives a client with requests and arbitrary server bytes, checking what must hold whatever
/// the server sends (the `doh_response` fuzz target): no panic; each request ends at most once;
/// after a connection error nothing stays in flight; the buffers stay bounded.
pub(crate) fn fuzz_server_bytes(data: &[u8]) {
    let Some((&control, bytes)) = data.split_first() else {
        return;
    };
    let mut c = Http2Client::new();
    let requests = u64::from(control & 0x7) + 1;
    for key in 0..requests {
        let post = control & 0x8 != 0;
        let body = post.then(|| vec![0u8; 12 + key as usize]);
        c.request(key, request_headers(post, "a.test", "/dns-query", 12), body);
    }
    let chunk = usize::from(control >> 4) * 7 + 1;
    let mut ended = std::collections::HashSet::new();
    for piece in bytes.chunks(chunk) {
        c.received(piece);
        for (key, outcome) in c.take_done() {
            assert!(key < requests, "an outcome for a request never made");
            assert!(ended.insert(key), "request {key} ended twice");
            if let Outcome::Answer(body) = outcome {
                assert!(body.len() <= MAX_BODY);
            }
        }
        assert!(
            c.input.len() <= FRAME_HEADER + MAX_FRAME,
            "a frame's worth kept at most"
        );
        assert!(c
            .block
            .as_ref()
            .is_none_or(|b| b.2.len() <= MAX_HEADER_BLOCK));
        if c.error().is_some() {
            assert!(!c.busy(), "nothing in flight after a connection error");
        }
        let taken = c.output().len();
        c.consume_output(taken);
        while c.next_end().is_some_and(|(_, end)| end == 0) {
            c.pop_end();
        }
    }
}

#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod tests;
