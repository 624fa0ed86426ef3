//! The connection's streams (RFC 9000 §2-§4): the requests' bidirectional streams, opened,
//! sent within the server's limits (per stream and per connection) and their answers
//! reassembled; the client's one unidirectional stream; the server's unidirectional streams,
//! read and dropped; and the connection-level flow control both ways.
//!
//! It writes and reads STREAM frames and the flow-control frames; the connection decides when
//! (keys, the congestion window) and tells the caller the events it queues.

use super::super::wire::{self, ServerParams};
use super::{Event, Retx, RECEIVE_WINDOW};
use std::collections::VecDeque;

/// The first client-initiated unidirectional stream, the only one this client opens.
pub(super) const UNI_STREAM_ID: u64 = 2;

/// A piece of a stream to send.
#[derive(Debug, Clone, Copy)]
pub(super) struct Chunk {
    id: u64,
    offset: u32,
    len: u32,
    fin: bool,
}

/// One request's stream.
struct Stream {
    query: Vec<u8>,
    sent: bool,
    /// How far the request has been sent once (the rest waits for flow control credit), the
    /// server's limit from its MAX_STREAM_DATA frames (its transport parameter counts too:
    /// [`Streams::stream_limit`]), and the limit a STREAM_DATA_BLOCKED was sent at.
    sent_to: u64,
    send_max: u64,
    blocked_at: Option<u64>,
    /// The answer so far (contiguous), what came ahead of it, and its length once known.
    recv: Vec<u8>,
    ahead: Vec<(u64, Vec<u8>)>,
    fin: Option<u64>,
    /// The highest offset received (for connection-level flow control).
    recv_max: u64,
}

/// The streams of one connection and its flow control.
pub(super) struct Streams {
    open: rustc_hash::FxHashMap<u64, Stream>,
    next_stream: u64,
    /// Streams opened and not yet sent, in order.
    unsent: VecDeque<u64>,
    /// Pieces sent in packets declared lost, to send again first.
    retx: VecDeque<Chunk>,
    max_streams: u64,
    /// What the server takes on each stream this client opens at the start
    /// (`initial_max_stream_data_bidi_remote`).
    stream_data_limit: u64,
    /// A STREAM_DATA_BLOCKED to send: the stream and its limit.
    blocked: Option<(u64, u64)>,
    data_sent: u64,
    max_data: u64,
    data_received: u64,
    local_max_data: u64,
    max_data_pending: bool,
    /// The client's unidirectional stream's bytes (kept for retransmission), if it opened one.
    uni: Option<&'static [u8]>,
    /// The unidirectional streams the server may open, the highest offset seen on each of
    /// those it did (for flow control), and how many the server lets this client open.
    peer_uni_streams: u64,
    server_uni: Vec<u64>,
    max_streams_uni: u64,
    /// The longest response stream taken.
    max_stream_recv: u64,
}

impl Streams {
    /// No stream yet; `max_stream_recv` and `peer_uni_streams` as in
    /// [`super::Config`].
    pub(super) fn new(max_stream_recv: u64, peer_uni_streams: u64) -> Streams {
        Streams {
            open: Default::default(),
            next_stream: 0,
            unsent: VecDeque::new(),
            retx: VecDeque::new(),
            max_streams: 0,
            stream_data_limit: 0,
            blocked: None,
            data_sent: 0,
            max_data: 0,
            data_received: 0,
            local_max_data: RECEIVE_WINDOW,
            max_data_pending: false,
            uni: None,
            peer_uni_streams,
            server_uni: Vec::new(),
            max_streams_uni: 0,
            max_stream_recv,
        }
    }

    /// See [`super::Connection::open_uni_stream`].
    pub(super) fn open_uni(&mut self, data: &'static [u8]) -> Option<u64> {
        if self.uni.is_some() {
            return None;
        }
        self.uni = Some(data);
        self.unsent.push_back(UNI_STREAM_ID);
        Some(UNI_STREAM_ID)
    }

    /// See [`super::Connection::open_stream`].
    pub(super) fn open(&mut self, query: Vec<u8>) -> u64 {
        let id = self.next_stream;
        self.next_stream += 4;
        self.open.insert(
            id,
            Stream {
                query,
                sent: false,
                sent_to: 0,
                send_max: 0,
                blocked_at: None,
                recv: Vec::new(),
                ahead: Vec::new(),
                fin: None,
                recv_max: 0,
            },
        );
        self.unsent.push_back(id);
        id
    }

    /// Forgets a stream: nothing more is sent or told for it.
    pub(super) fn forget(&mut self, id: u64) {
        self.open.remove(&id);
    }

    /// Forgets every request's stream (the connection is closed).
    pub(super) fn forget_all(&mut self) {
        self.open.clear();
    }

    /// Whether no request's stream is open.
    pub(super) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Gives back the memory of the table and queues (an idle connection).
    pub(super) fn compact(&mut self) {
        self.open = Default::default();
        self.unsent = VecDeque::new();
        self.retx = VecDeque::new();
    }

    /// Takes the server's limits from its transport parameters (or those remembered for
    /// 0-RTT).
    pub(super) fn take_limits(&mut self, p: &ServerParams) {
        self.max_data = self.max_data.max(p.initial_max_data);
        self.max_streams = self.max_streams.max(p.initial_max_streams_bidi);
        self.stream_data_limit = self
            .stream_data_limit
            .max(p.initial_max_stream_data_bidi_remote);
        self.max_streams_uni = self.max_streams_uni.max(p.initial_max_streams_uni);
    }

    /// Whether stream data may go, the congestion window aside: pieces lost, or new data.
    pub(super) fn has_data(&self) -> bool {
        !self.retx.is_empty() || self.new_stream_data_ready()
    }

    /// Whether a flow-control frame waits to go (MAX_DATA, STREAM_DATA_BLOCKED).
    pub(super) fn control_pending(&self) -> bool {
        self.max_data_pending || self.blocked.is_some()
    }

    /// What the server takes on stream `id` (RFC 9000 §4.1): its transport parameter, or more
    /// from its MAX_STREAM_DATA frames.
    fn stream_limit(&self, id: u64) -> u64 {
        let max = self.open.get(&id).map_or(0, |s| s.send_max);
        max.max(self.stream_data_limit)
    }

    /// How much of stream `id`'s request may go now (from `sent_to`), within the stream's
    /// limit and the connection's; `None` for a stream the server's stream count does not let
    /// open yet, or one forgotten.
    fn new_stream_credit(&self, id: u64) -> Option<u64> {
        if id == UNI_STREAM_ID {
            // A few bytes (HTTP/3's SETTINGS), sent whole once the server allows the stream.
            return (self.max_streams_uni > 0).then_some(u64::MAX);
        }
        let s = self.open.get(&id)?;
        if id / 4 >= self.max_streams {
            return None;
        }
        let left = (s.query.len() as u64).checked_sub(s.sent_to)?;
        let stream = self.stream_limit(id).saturating_sub(s.sent_to);
        let connection = self.max_data.saturating_sub(self.data_sent);
        Some(left.min(stream).min(connection))
    }

    /// Whether some new stream data (or a request's FIN) may go now.
    fn new_stream_data_ready(&self) -> bool {
        self.unsent.iter().any(|&id| {
            let left = self
                .open
                .get(&id)
                .map_or(1, |s| (s.query.len() as u64).saturating_sub(s.sent_to));
            self.new_stream_credit(id)
                .is_some_and(|n| n > 0 || left == 0)
        })
    }

    /// The next piece of new stream data that may go: from the first stream that has some
    /// and the server's limits allow (RFC 9000 §4), the rest of it kept for when the server
    /// raises them. A stream held at its own limit has a STREAM_DATA_BLOCKED queued (§19.13),
    /// once per limit.
    fn next_new_chunk(&mut self) -> Option<Chunk> {
        let mut i = 0;
        while let Some(&id) = self.unsent.get(i) {
            if id != UNI_STREAM_ID && !self.open.contains_key(&id) {
                // Forgotten.
                self.unsent.remove(i);
                continue;
            }
            let Some(credit) = self.new_stream_credit(id) else {
                i += 1;
                continue;
            };
            if id == UNI_STREAM_ID {
                self.unsent.remove(i);
                let len = self.uni.map_or(0, <[u8]>::len) as u32;
                self.data_sent += u64::from(len);
                // The unidirectional stream stays open for the connection's life.
                return Some(Chunk {
                    id,
                    offset: 0,
                    len,
                    fin: false,
                });
            }
            let limit = self.stream_limit(id);
            let Some(s) = self.open.get_mut(&id) else {
                self.unsent.remove(i);
                continue;
            };
            let total = s.query.len() as u64;
            if credit == 0 && s.sent_to < total {
                if s.sent_to >= limit && s.blocked_at != Some(limit) {
                    s.blocked_at = Some(limit);
                    self.blocked = Some((id, limit));
                }
                i += 1;
                continue;
            }
            let offset = s.sent_to;
            s.sent_to += credit;
            self.data_sent += credit;
            let fin = s.sent_to == total;
            if fin {
                self.unsent.remove(i);
            }
            return Some(Chunk {
                id,
                offset: offset as u32,
                len: credit as u32,
                fin,
            });
        }
        None
    }

    /// A stream's bytes as sent: a request's, or the client's unidirectional stream's.
    fn stream_bytes(&self, id: u64) -> Option<&[u8]> {
        match self.uni {
            Some(c) if id == UNI_STREAM_ID => Some(c),
            _ => self.open.get(&id).map(|s| &s.query[..]),
        }
    }

    /// Writes the STREAM_DATA_BLOCKED due, if one is; whether it did.
    pub(super) fn write_blocked(&mut self, out: &mut Vec<u8>, frames: &mut Vec<Retx>) -> bool {
        let Some((id, limit)) = self.blocked.take() else {
            return false;
        };
        wire::put_stream_data_blocked(out, id, limit);
        frames.push(Retx::StreamDataBlocked(id));
        true
    }

    /// Writes the MAX_DATA due, if one is; whether it did.
    pub(super) fn write_max_data(&mut self, out: &mut Vec<u8>, frames: &mut Vec<Retx>) -> bool {
        if !self.max_data_pending {
            return false;
        }
        self.max_data_pending = false;
        out.push(0x10);
        wire::put_varint(out, self.local_max_data);
        frames.push(Retx::MaxData);
        true
    }

    /// Writes the STREAM frames that fit before `limit`: lost pieces first, then new queries;
    /// a request's first piece queues its [`Event::Sent`]. Whether it wrote any.
    pub(super) fn write(
        &mut self,
        out: &mut Vec<u8>,
        limit: usize,
        frames: &mut Vec<Retx>,
        events: &mut VecDeque<Event>,
    ) -> bool {
        let mut wrote = false;
        loop {
            let room = limit.saturating_sub(out.len() + wire::STREAM_OVERHEAD);
            if room == 0 {
                break;
            }
            let chunk = match self.retx.pop_front() {
                Some(c) => c,
                None => match self.next_new_chunk() {
                    Some(c) => c,
                    None => break,
                },
            };
            let fit = (chunk.len as usize).min(room) as u32;
            if fit < chunk.len && room < 64 {
                self.retx.push_front(chunk);
                break;
            }
            let (from, to) = (chunk.offset as usize, (chunk.offset + fit) as usize);
            let Some(data) = self.stream_bytes(chunk.id).and_then(|b| b.get(from..to)) else {
                continue;
            };
            let fin = chunk.fin && fit == chunk.len;
            wire::put_stream(out, chunk.id, u64::from(chunk.offset), data, fin);
            frames.push(Retx::Stream(Chunk {
                id: chunk.id,
                offset: chunk.offset,
                len: fit,
                fin,
            }));
            if fit < chunk.len {
                self.retx.push_front(Chunk {
                    id: chunk.id,
                    offset: chunk.offset + fit,
                    len: chunk.len - fit,
                    fin: chunk.fin,
                });
            }
            if let Some(s) = self.open.get_mut(&chunk.id) {
                if !s.sent {
                    s.sent = true;
                    events.push_back(Event::Sent { stream: chunk.id });
                }
            }
            wrote = true;
        }
        wrote
    }

    /// Queues again a frame of this module's from a packet that will not be acknowledged
    /// (others are ignored).
    pub(super) fn requeue(&mut self, frame: Retx) {
        match frame {
            Retx::Stream(c) => {
                if self.stream_bytes(c.id).is_some() {
                    self.retx.push_back(c);
                }
            }
            Retx::MaxData => self.max_data_pending = true,
            Retx::StreamDataBlocked(id) => {
                // Again if the stream is still blocked at the same limit.
                let limit = self.stream_limit(id);
                if let Some(s) = self.open.get(&id) {
                    if s.blocked_at == Some(limit) && s.sent_to < s.query.len() as u64 {
                        self.blocked = Some((id, limit));
                    }
                }
            }
            Retx::Crypto { .. } | Retx::RetireCid(_) => {}
        }
    }

    /// The server ended stream `id` (RESET_STREAM, STOP_SENDING): it fails with `cause`.
    pub(super) fn on_ended(&mut self, id: u64, cause: &'static str, events: &mut VecDeque<Event>) {
        if self.open.remove(&id).is_some() {
            events.push_back(Event::StreamFailed { stream: id, cause });
        }
    }

    /// A MAX_DATA frame.
    pub(super) fn on_max_data(&mut self, max: u64) {
        self.max_data = self.max_data.max(max);
    }

    /// A MAX_STREAM_DATA frame.
    pub(super) fn on_max_stream_data(&mut self, id: u64, max: u64) {
        if let Some(s) = self.open.get_mut(&id) {
            s.send_max = s.send_max.max(max);
        }
    }

    /// A MAX_STREAMS frame (bidirectional streams).
    pub(super) fn on_max_streams_bidi(&mut self, max: u64) {
        self.max_streams = self.max_streams.max(max)
    }

    /// A MAX_STREAMS frame (unidirectional streams).
    pub(super) fn on_max_streams_uni(&mut self, max: u64) {
        self.max_streams_uni = self.max_streams_uni.max(max)
    }

    /// A STREAM frame: a piece of an answer, reassembled; a whole answer, or a stream that
    /// breaks its limits, queues its event. Raises the connection's receive limit as the
    /// server uses it.
    pub(super) fn on_stream(
        &mut self,
        id: u64,
        offset: u64,
        data: &[u8],
        fin: bool,
        events: &mut VecDeque<Event>,
    ) {
        let end = offset + data.len() as u64;
        if id % 4 == 3 {
            // A server's unidirectional stream: read and dropped (the application needs
            // nothing from it), counted for connection-level flow control.
            let n = (id / 4) as usize;
            if n < self.server_uni.len() + 1 && (n as u64) < self.peer_uni_streams {
                if n == self.server_uni.len() {
                    self.server_uni.push(0);
                }
                if end > self.server_uni[n] {
                    self.data_received += end - self.server_uni[n];
                    self.server_uni[n] = end;
                }
            }
            return;
        }
        let Some(s) = self.open.get_mut(&id) else {
            // An answered, failed or forgotten stream, or one the server may not open.
            return;
        };
        if end > self.max_stream_recv || s.fin.is_some_and(|f| end > f) {
            self.open.remove(&id);
            events.push_back(Event::StreamFailed {
                stream: id,
                cause: "quic-response-too-long",
            });
            return;
        }
        if end > s.recv_max {
            self.data_received += end - s.recv_max;
            s.recv_max = end;
        }
        if fin {
            s.fin = Some(end);
        }
        let have = s.recv.len() as u64;
        if offset <= have {
            if end > have {
                s.recv.extend_from_slice(&data[(have - offset) as usize..]);
            }
            while let Some(i) = s.ahead.iter().position(|(o, _)| *o <= s.recv.len() as u64) {
                let (o, d) = s.ahead.swap_remove(i);
                let have = s.recv.len() as u64;
                if o + d.len() as u64 > have {
                    s.recv.extend_from_slice(&d[(have - o) as usize..]);
                }
            }
        } else {
            // Pieces ahead of the answer so far: bounded by the stream's limit, however
            // the server cuts and repeats them.
            let ahead: usize = s.ahead.iter().map(|(_, d)| d.len()).sum();
            if (ahead + data.len()) as u64 > self.max_stream_recv {
                self.open.remove(&id);
                events.push_back(Event::StreamFailed {
                    stream: id,
                    cause: "quic-protocol-violation",
                });
                return;
            }
            s.ahead.push((offset, data.to_vec()));
        }
        if s.fin == Some(s.recv.len() as u64) {
            if let Some(s) = self.open.remove(&id) {
                events.push_back(Event::Answer {
                    stream: id,
                    data: s.recv,
                });
            }
        }
        if self.data_received + RECEIVE_WINDOW / 2 > self.local_max_data {
            self.local_max_data = self.data_received + RECEIVE_WINDOW;
            self.max_data_pending = true;
        }
    }
}
