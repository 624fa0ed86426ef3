//! One client QUIC connection, sans IO: datagrams in ([`Connection::handle`]),
//! datagrams out ([`Connection::poll_transmit`]), timers ([`Connection::next_timeout`]) and
//! events for the caller ([`Connection::poll_event`]). rustls does the TLS 1.3 handshake and
//! derives the keys; everything else (packets, frames, acknowledgements, loss recovery,
//! NewReno congestion control, flow control, 0-RTT, key updates) is here.
//!
//! It does only what a client of a request/response protocol on QUIC needs (DNS over QUIC,
//! [`crate::doq`]; DNS over HTTPS on HTTP/3, [`crate::h3`]), and knows neither: bidirectional
//! streams it opens itself, one request each, sent whole and finished, each response read
//! whole; at most one unidirectional stream of its own, of fixed bytes and never finished
//! (HTTP/3's control stream, [`Connection::open_uni_stream`]); unidirectional streams the
//! server may open ([`Config::peer_uni_streams`]), read and dropped. The application on top
//! chooses those limits and what goes on the streams. Once the handshake is confirmed and a
//! session ticket has
//! come (or a little later), the TLS connection is dropped: an idle connection keeps its
//! 1-RTT keys, the secrets for key updates and a few counters, about 2.5 KB.

use super::wire::{self, Frame, Header, LongType, Malformed, Reader, ServerParams};
use rustls::quic::{DirectionalKeys, KeyChange, Keys, PacketKeySet, Secrets, Version};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

/// The length of the connection IDs this client chooses.
pub const LOCAL_CID_LEN: usize = 8;
/// The largest datagram this client sends (RFC 9000 §14: every path carries 1,200 bytes).
const MAX_DATAGRAM: usize = 1200;
/// What the server may send over the connection before this client raises the limit.
const RECEIVE_WINDOW: u64 = 4 << 20;
/// Out-of-order CRYPTO data buffered per packet number space (RFC 9000 §7.5 asks for 4 KiB).
const MAX_CRYPTO_BUFFER: usize = 64 << 10;
/// Received packet number ranges remembered for ACK frames.
const MAX_ACK_RANGES: usize = 16;
/// Delayed acknowledgements: at most this long, or every second ack-eliciting packet.
const MAX_ACK_DELAY_NS: i64 = 25_000_000;
/// The TLS connection is dropped this long after the handshake is confirmed, if no session
/// ticket came before.
const TLS_LINGER_NS: i64 = 2_000_000_000;
/// RFC 9002 §6.2.2: the RTT assumed before a sample.
const INITIAL_RTT_NS: i64 = 333_000_000;
const GRANULARITY_NS: i64 = 1_000_000;
const INITIAL_WINDOW: u64 = 10 * MAX_DATAGRAM as u64;
const MIN_WINDOW: u64 = 2 * MAX_DATAGRAM as u64;
/// Transport error codes (RFC 9000 §20.1).
const PROTOCOL_VIOLATION: u64 = 0x0a;
const TRANSPORT_PARAMETER_ERROR: u64 = 0x08;
const FRAME_ENCODING_ERROR: u64 = 0x07;
const CRYPTO_BUFFER_EXCEEDED: u64 = 0x0d;
const CRYPTO_ERROR: u64 = 0x100;

/// The packet number spaces (RFC 9000 §12.3).
pub(crate) const INITIAL: usize = 0;
pub(crate) const HANDSHAKE: usize = 1;
pub(crate) const DATA: usize = 2;

/// How a connection is opened.
pub struct Config {
    /// The client's TLS configuration (ALPN `doq`, its session store; early data enabled for
    /// 0-RTT).
    pub tls: Arc<ClientConfig>,
    /// The name the server's certificate must have (and the SNI sent).
    pub server_name: ServerName<'static>,
    /// How long the connection may stay idle (this client's side; the server's may be
    /// shorter).
    pub idle_timeout_ns: i64,
    /// Whether to send requests in 0-RTT when the session store has a ticket that allows it.
    pub zero_rtt: bool,
    /// The longest response stream taken (and each stream's receive limit told to the server,
    /// `initial_max_stream_data_bidi_local`): a longer one fails its stream. The application
    /// sets it: a DNS message and its framing ([`crate::doq::MAX_STREAM_RECV`],
    /// [`crate::h3::MAX_RESPONSE`]).
    pub max_stream_recv: u64,
    /// Unidirectional streams the server may open (HTTP/3's control and QPACK streams: 3;
    /// DoQ: none). Their bytes are read and dropped, counted for flow control only: the
    /// applications on this client need nothing from them.
    pub peer_uni_streams: u64,
}

/// The first client-initiated unidirectional stream, the only one this client opens.
const UNI_STREAM_ID: u64 = 2;

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Nothing came for the idle timeout (or the handshake never finished).
    TimedOut,
    /// The server closed it (CONNECTION_CLOSE): its error code, and whether its application
    /// did (0x1d).
    ByPeer {
        /// The error code of the CONNECTION_CLOSE.
        code: u64,
        /// Whether the application closed it (frame type 0x1d) rather than the transport.
        application: bool,
    },
    /// The TLS handshake failed here (a certificate refused, no common ALPN...): the alert.
    Tls,
    /// The server broke the protocol: why.
    Violation(&'static str),
    /// The server speaks no QUIC version 1.
    VersionMismatch,
    /// A stateless reset: the server has lost the connection's state.
    Reset,
    /// This client closed it.
    Locally,
}

/// What a connection tells its caller.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// The handshake finished: whether it resumed a session, and whether the server took the
    /// 0-RTT data (`None` without).
    Connected {
        /// Whether the TLS handshake resumed an earlier session.
        resumed: bool,
        /// Whether the server took the 0-RTT data (`None`: none was sent).
        zero_rtt_accepted: Option<bool>,
    },
    /// A stream's request went out for the first time.
    Sent {
        /// The stream's ID.
        stream: u64,
    },
    /// A stream's whole answer (as sent: the 2-byte length and the message).
    Answer {
        /// The stream's ID.
        stream: u64,
        /// Every byte the server sent on it.
        data: Vec<u8>,
    },
    /// A stream ended without an answer: why (a cause key).
    StreamFailed {
        /// The stream's ID.
        stream: u64,
        /// Why, as a cause key (`quic-stream-reset`, `quic-response-too-long`...).
        cause: &'static str,
    },
}

/// A frame to send again if the packet that carried it is lost.
#[derive(Debug, Clone, Copy)]
enum Retx {
    Crypto { offset: u64, len: u32 },
    Stream(Chunk),
    MaxData,
    RetireCid(u64),
}

/// A piece of a stream to send.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    id: u64,
    offset: u32,
    len: u32,
    fin: bool,
}

/// An ack-eliciting packet in flight.
struct Sent {
    pn: u64,
    time: i64,
    size: u32,
    frames: Vec<Retx>,
}

/// One packet number space.
#[derive(Default)]
struct Space {
    /// Initial and Handshake keys (the data space's are in [`OneRtt`]).
    keys: Option<Keys>,
    next_pn: u64,
    largest_acked: Option<u64>,
    sent: VecDeque<Sent>,
    loss_time: Option<i64>,
    last_eliciting_sent: i64,
    /// Received packet numbers, ascending inclusive ranges.
    received: Vec<(u64, u64)>,
    largest_received_at: i64,
    /// Ack-eliciting packets received since the last ACK sent.
    unacked_eliciting: u32,
    ack_deadline: Option<i64>,
    /// Every CRYPTO byte written, and how far it has been sent once.
    crypto_out: Vec<u8>,
    crypto_sent: usize,
    crypto_retx: VecDeque<(u64, u32)>,
    /// CRYPTO data received: the next offset for TLS, and what came ahead of it.
    crypto_next: u64,
    crypto_ahead: Vec<(u64, Vec<u8>)>,
    /// When the newest packet acknowledged so far was sent (persistent congestion counts
    /// only losses after it).
    newest_acked_sent: i64,
    /// Probes due (a PTO fired): the next packets must be ack-eliciting, and may go beyond
    /// the congestion window.
    probes: u8,
}

impl Space {
    fn ack_due(&self, now: i64) -> bool {
        self.unacked_eliciting > 0 && self.ack_deadline.is_none_or(|d| d <= now)
    }

    fn has_crypto(&self) -> bool {
        !self.crypto_retx.is_empty() || self.crypto_sent < self.crypto_out.len()
    }

    /// Records a received packet number; false if it came before.
    fn record(&mut self, pn: u64) -> bool {
        let r = &mut self.received;
        let at = r.partition_point(|&(_, hi)| hi.saturating_add(1) < pn);
        match r.get_mut(at) {
            Some((lo, hi)) if *lo <= pn && pn <= *hi => return false,
            Some((lo, _)) if *lo == pn + 1 => *lo = pn,
            Some((_, hi)) if *hi + 1 == pn => {
                *hi = pn;
                if let Some(&(next_lo, next_hi)) = r.get(at + 1) {
                    if next_lo == pn + 1 {
                        r[at].1 = next_hi;
                        r.remove(at + 1);
                    }
                }
            }
            _ => r.insert(at, (pn, pn)),
        }
        if r.len() > MAX_ACK_RANGES {
            r.remove(0);
        }
        true
    }

    fn largest_received(&self) -> Option<u64> {
        self.received.last().map(|&(_, hi)| hi)
    }
}

/// The 1-RTT keys and what key updates need.
struct OneRtt {
    local: DirectionalKeys,
    remote: DirectionalKeys,
    /// The secrets of the next key phase.
    next: Secrets,
    phase: bool,
}

/// One request's stream.
struct Stream {
    query: Vec<u8>,
    sent: bool,
    /// The answer so far (contiguous), what came ahead of it, and its length once known.
    recv: Vec<u8>,
    ahead: Vec<(u64, Vec<u8>)>,
    fin: Option<u64>,
    /// The highest offset received (for connection-level flow control).
    recv_max: u64,
}

/// A QUIC client connection; see the module's documentation.
pub struct Connection {
    tls: Option<Box<rustls::quic::ClientConnection>>,
    spaces: [Space; 3],
    /// The space TLS writes its handshake data to.
    write_space: usize,
    zero_rtt_keys: Option<DirectionalKeys>,
    one_rtt: Option<Box<OneRtt>>,
    scid: [u8; LOCAL_CID_LEN],
    dcid: Vec<u8>,
    dcid_seq: u64,
    original_dcid: Vec<u8>,
    retry_scid: Option<Vec<u8>>,
    token: Vec<u8>,
    /// A server packet has been processed (no more Retry or Version Negotiation).
    heard_server: bool,
    peer: ServerParams,
    handshake_done: bool,
    confirmed: bool,
    tls_drop_at: Option<i64>,
    zero_rtt: bool,

    streams: rustc_hash::FxHashMap<u64, Stream>,
    next_stream: u64,
    /// Streams opened and not yet sent, in order.
    unsent: VecDeque<u64>,
    stream_retx: VecDeque<Chunk>,
    max_streams: u64,
    data_sent: u64,
    max_data: u64,
    data_received: u64,
    local_max_data: u64,
    max_data_pending: bool,
    path_response: Option<[u8; 8]>,
    retire_cid: Option<u64>,
    /// The client's unidirectional stream's bytes (kept for retransmission), if it opened one.
    uni: Option<&'static [u8]>,
    /// The unidirectional streams the server may open, the highest offset seen on each of
    /// those it did (for flow control), and how many the server lets this client open.
    peer_uni_streams: u64,
    server_uni: Vec<u64>,
    max_streams_uni: u64,
    /// The longest response stream taken.
    max_stream_recv: u64,

    srtt: i64,
    rttvar: i64,
    latest_rtt: i64,
    /// The smallest RTT sample (RFC 9002 §5.2).
    min_rtt: i64,
    /// When the first RTT sample was taken: persistent congestion counts later losses only.
    first_sample_at: Option<i64>,
    has_rtt: bool,
    pto_count: u32,
    cwnd: u64,
    ssthresh: u64,
    in_flight: u64,
    recovery_start: i64,
    /// Packets declared lost (their frames queued again) over the connection's life.
    lost_packets: u64,

    idle_timeout_ns: i64,
    last_activity: i64,
    /// An ack-eliciting packet has gone since the last packet received.
    sent_since_receipt: bool,
    closed: Option<Closed>,
    /// A CONNECTION_CLOSE to send before the connection is gone: code, application.
    close_pending: Option<(u64, bool)>,
    events: VecDeque<Event>,
}

/// The suite of Initial packets (RFC 9001 §5.2).
fn initial_suite() -> Option<rustls::quic::Suite> {
    static SUITE: OnceLock<Option<rustls::quic::Suite>> = OnceLock::new();
    *SUITE.get_or_init(
        || match rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256 {
            rustls::SupportedCipherSuite::Tls13(s) => s.quic_suite(),
            _ => None,
        },
    )
}

/// Why a connection could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// The TLS configuration cannot do QUIC (no TLS 1.3, no QUIC cipher suite).
    TlsConfig,
}

impl Connection {
    /// Starts a connection: its first flight is ready for [`Connection::poll_transmit`].
    pub fn new(config: Config, now: i64) -> Result<Connection, OpenError> {
        let suite = initial_suite().ok_or(OpenError::TlsConfig)?;
        let mut scid = [0u8; LOCAL_CID_LEN];
        let mut dcid = vec![0u8; 8];
        let rng = ring::rand::SystemRandom::new();
        ring::rand::SecureRandom::fill(&rng, &mut scid).map_err(|_| OpenError::TlsConfig)?;
        ring::rand::SecureRandom::fill(&rng, &mut dcid).map_err(|_| OpenError::TlsConfig)?;
        let idle_ms = (config.idle_timeout_ns / 1_000_000).max(0) as u64;
        let params = wire::ClientParams {
            initial_scid: &scid,
            max_idle_timeout_ms: idle_ms,
            initial_max_data: RECEIVE_WINDOW,
            initial_max_stream_data_bidi_local: config.max_stream_recv,
            initial_max_streams_uni: config.peer_uni_streams,
            initial_max_stream_data_uni: 64 << 10,
        }
        .encode();
        let tls = rustls::quic::ClientConnection::new(
            config.tls,
            Version::V1,
            config.server_name,
            params,
        )
        .map_err(|_| OpenError::TlsConfig)?;
        let mut spaces: [Space; 3] = Default::default();
        spaces[INITIAL].keys = Some(suite.keys(&dcid, rustls::Side::Client, Version::V1));
        let mut conn = Connection {
            tls: Some(Box::new(tls)),
            spaces,
            write_space: INITIAL,
            zero_rtt_keys: None,
            one_rtt: None,
            scid,
            original_dcid: dcid.clone(),
            dcid,
            dcid_seq: 0,
            retry_scid: None,
            token: Vec::new(),
            heard_server: false,
            peer: ServerParams::default(),
            handshake_done: false,
            confirmed: false,
            tls_drop_at: None,
            zero_rtt: false,
            streams: Default::default(),
            next_stream: 0,
            unsent: VecDeque::new(),
            stream_retx: VecDeque::new(),
            max_streams: 0,
            data_sent: 0,
            max_data: 0,
            data_received: 0,
            local_max_data: RECEIVE_WINDOW,
            max_data_pending: false,
            path_response: None,
            retire_cid: None,
            uni: None,
            peer_uni_streams: config.peer_uni_streams,
            server_uni: Vec::new(),
            max_streams_uni: 0,
            max_stream_recv: config.max_stream_recv,
            srtt: INITIAL_RTT_NS,
            rttvar: INITIAL_RTT_NS / 2,
            latest_rtt: INITIAL_RTT_NS,
            min_rtt: INITIAL_RTT_NS,
            first_sample_at: None,
            has_rtt: false,
            pto_count: 0,
            cwnd: INITIAL_WINDOW,
            ssthresh: u64::MAX,
            in_flight: 0,
            recovery_start: now,
            lost_packets: 0,
            idle_timeout_ns: config.idle_timeout_ns,
            last_activity: now,
            sent_since_receipt: false,
            closed: None,
            close_pending: None,
            events: VecDeque::new(),
        };
        conn.drive_tls(now);
        if config.zero_rtt {
            if let Some(tls) = conn.tls.as_ref() {
                let remembered = tls
                    .quic_transport_parameters()
                    .and_then(|p| ServerParams::decode(p).ok());
                if let (Some(keys), Some(p)) = (tls.zero_rtt_keys(), remembered) {
                    conn.zero_rtt_keys = Some(keys);
                    conn.zero_rtt = true;
                    conn.take_limits(&p);
                }
            }
        }
        Ok(conn)
    }

    /// Whether this connection sends its first queries in 0-RTT.
    pub fn zero_rtt(&self) -> bool {
        self.zero_rtt
    }

    /// Packets declared lost so far by loss detection (RFC 9002 §6.1), their frames sent again.
    pub fn lost_packets(&self) -> u64 {
        self.lost_packets
    }

    /// Why the connection ended, once it has.
    pub fn closed(&self) -> Option<Closed> {
        self.closed
    }

    /// Whether queries can go now (1-RTT or 0-RTT keys), rather than after the handshake.
    pub fn can_send_now(&self) -> bool {
        self.one_rtt.is_some() || self.zero_rtt_keys.is_some()
    }

    /// Opens the client's unidirectional stream with these bytes (HTTP/3's control stream),
    /// never finished: it stays open for the connection's life. It goes out before the
    /// requests opened after it, once the server allows a unidirectional stream. A client has
    /// one at most: a second call opens nothing and returns `None`.
    pub fn open_uni_stream(&mut self, data: &'static [u8]) -> Option<u64> {
        if self.uni.is_some() {
            return None;
        }
        self.uni = Some(data);
        self.unsent.push_back(UNI_STREAM_ID);
        Some(UNI_STREAM_ID)
    }

    /// Opens a bidirectional stream for one request (its bytes as sent, the stream then
    /// finished); it goes out as soon as keys, the server's limits and congestion allow.
    pub fn open_stream(&mut self, query: Vec<u8>) -> u64 {
        let id = self.next_stream;
        self.next_stream += 4;
        self.streams.insert(
            id,
            Stream {
                query,
                sent: false,
                recv: Vec::new(),
                ahead: Vec::new(),
                fin: None,
                recv_max: 0,
            },
        );
        self.unsent.push_back(id);
        id
    }

    /// Forgets a stream (its request timed out): nothing more is sent or told for it.
    pub fn forget_stream(&mut self, id: u64) {
        self.streams.remove(&id);
    }

    /// The congestion window, in bytes.
    #[cfg(test)]
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Whether the TLS connection is still held (until the handshake is confirmed and a
    /// ticket has come).
    #[cfg(test)]
    pub fn holds_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Heap bytes held by each part, measured by dropping them (the connection is useless
    /// afterwards).
    #[cfg(test)]
    pub fn heap_breakdown(&mut self) -> Vec<(&'static str, isize)> {
        let live = crate::alloc_count::thread_live;
        let mut parts = Vec::new();
        let mut take = |name, f: &mut dyn FnMut()| {
            let before = live();
            f();
            parts.push((name, before - live()));
        };
        take("one_rtt", &mut || drop(self.one_rtt.take()));
        take("spaces", &mut || self.spaces = Default::default());
        take("streams", &mut || self.streams = Default::default());
        take("peer", &mut || self.peer = Default::default());
        take("cids", &mut || {
            self.dcid = Vec::new();
            self.original_dcid = Vec::new();
            self.token = Vec::new();
            self.retry_scid = None;
        });
        take("queues", &mut || {
            self.events = VecDeque::new();
            self.unsent = VecDeque::new();
            self.stream_retx = VecDeque::new();
        });
        parts
    }

    /// The next thing to tell the caller.
    pub fn poll_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front();
        if e.is_none() && self.events.capacity() > 0 && self.is_quiet() {
            self.compact();
        }
        e
    }

    /// Nothing in flight either way, nothing queued.
    fn is_quiet(&self) -> bool {
        self.streams.is_empty()
            && self.events.is_empty()
            && self.spaces.iter().all(|s| s.sent.is_empty())
            && self.tls.is_none()
    }

    /// Gives back the memory of the queues and tables an idle connection does not use: a
    /// connection keeps what its busiest moment needed otherwise, 7 KB per idle connection
    /// (`an_idle_connection_keeps_a_few_kilobytes`).
    fn compact(&mut self) {
        self.streams = Default::default();
        self.unsent = VecDeque::new();
        self.stream_retx = VecDeque::new();
        self.events = VecDeque::new();
        for s in &mut self.spaces {
            s.sent = VecDeque::new();
            s.received.shrink_to_fit();
        }
    }

    /// Closes the connection with the application's error code (DOQ_NO_ERROR,
    /// [`crate::doq::NO_ERROR`]; H3_NO_ERROR, [`crate::h3::NO_ERROR`]), told to the server if it
    /// has keys to tell it with.
    pub fn close(&mut self, code: u64) {
        if self.closed.is_none() {
            self.close_with(Closed::Locally, code, true);
        }
    }

    fn close_with(&mut self, why: Closed, code: u64, application: bool) {
        self.closed = Some(why);
        // An application close needs 1-RTT keys; before them, a transport close says the same.
        let application = application && self.one_rtt.is_some();
        self.close_pending = Some((code, application));
        self.streams.clear();
    }

    /// When [`Connection::on_timeout`] wants to run next (realtime ns).
    pub fn next_timeout(&self) -> Option<i64> {
        if self.closed.is_some() {
            return None;
        }
        let mut t = self.idle_deadline();
        let mut at = |d: Option<i64>| {
            if let Some(d) = d {
                t = t.min(d);
            }
        };
        at(self.tls_drop_at);
        at(self.spaces[DATA].ack_deadline);
        at(self.loss_or_pto().map(|(t, _, _)| t));
        Some(t)
    }

    fn idle_deadline(&self) -> i64 {
        let peer = (self.peer.max_idle_timeout_ms as i64).saturating_mul(1_000_000);
        let mut idle = match (self.idle_timeout_ns, peer) {
            (0, p) => p,
            (l, 0) => l,
            (l, p) => l.min(p),
        };
        if idle == 0 {
            idle = 30_000_000_000;
        }
        // RFC 9000 §10.1: never shorter than three PTOs.
        let idle = idle.max(3 * self.pto_base(DATA));
        self.last_activity.saturating_add(idle)
    }

    fn pto_base(&self, space: usize) -> i64 {
        let ack_delay = if space == DATA {
            (self.peer.max_ack_delay_ms as i64) * 1_000_000
        } else {
            0
        };
        self.srtt + (4 * self.rttvar).max(GRANULARITY_NS) + ack_delay
    }

    /// The earliest loss-detection deadline: (time, space, whether a loss timer rather than a
    /// PTO).
    fn loss_or_pto(&self) -> Option<(i64, usize, bool)> {
        let mut best: Option<(i64, usize, bool)> = None;
        for (i, s) in self.spaces.iter().enumerate() {
            if let Some(t) = s.loss_time {
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, i, true));
                }
            }
        }
        if best.is_some() {
            return best;
        }
        let backoff = 1i64 << self.pto_count.min(16);
        for (i, s) in self.spaces.iter().enumerate() {
            let keys = if i == DATA {
                self.one_rtt.is_some() || self.zero_rtt_keys.is_some()
            } else {
                s.keys.is_some()
            };
            if !keys || s.sent.is_empty() {
                continue;
            }
            // RFC 9002 §6.2.1: no PTO for application data before the handshake completes.
            if i == DATA && !self.handshake_done {
                continue;
            }
            let t = s.last_eliciting_sent + self.pto_base(i) * backoff;
            if best.is_none_or(|b| t < b.0) {
                best = Some((t, i, false));
            }
        }
        if best.is_none() && !self.confirmed && self.closed.is_none() {
            // The client keeps the handshake going when nothing is in flight (§6.2.2.1).
            let space = if self.spaces[HANDSHAKE].keys.is_some() {
                HANDSHAKE
            } else {
                INITIAL
            };
            if self.spaces[space].keys.is_some() && !self.handshake_done {
                let last = self.spaces[space].last_eliciting_sent;
                best = Some((last + self.pto_base(space) * backoff, space, false));
            }
        }
        best
    }

    /// Runs the timers that are due.
    pub fn on_timeout(&mut self, now: i64) {
        if self.closed.is_some() {
            return;
        }
        if now >= self.idle_deadline() {
            self.closed = Some(Closed::TimedOut);
            self.streams.clear();
            return;
        }
        if self.tls_drop_at.is_some_and(|t| t <= now) {
            self.drop_tls();
        }
        if let Some((t, space, loss)) = self.loss_or_pto() {
            if t <= now {
                if loss {
                    self.detect_lost(space, now, &[]);
                } else {
                    self.on_pto(space);
                }
            }
        }
    }

    /// RFC 9002 §6.2.4: a probe timeout sends two ack-eliciting probes, with new data if
    /// there is some, else the oldest data in flight again. What is in flight stays in
    /// flight: a late acknowledgement still acknowledges it (and gives its RTT sample), and
    /// only loss detection declares it lost. A PTO is not a loss: the congestion window stays.
    /// (This client used to move the whole flight back to its queues on a PTO: every ACK later
    /// than the PTO, as quinn's for 0-RTT data, counted a packet lost and sent it again.)
    fn on_pto(&mut self, space: usize) {
        self.pto_count += 1;
        self.spaces[space].probes = 2;
        let new_data = match space {
            DATA => {
                !self.stream_retx.is_empty()
                    || self.unsent.front().is_some_and(|&id| self.may_open(id))
            }
            _ => self.spaces[space].has_crypto(),
        };
        if new_data {
            return;
        }
        let oldest = self.spaces[space]
            .sent
            .front()
            .map(|p| p.frames.clone())
            .unwrap_or_default();
        for f in oldest {
            self.requeue(space, f);
        }
    }

    fn drop_tls(&mut self) {
        self.tls = None;
        self.tls_drop_at = None;
        for s in &mut self.spaces {
            s.crypto_out = Vec::new();
            s.crypto_ahead = Vec::new();
            s.crypto_retx = VecDeque::new();
        }
    }

    /// Takes one received datagram (decrypted in place).
    pub fn handle(&mut self, now: i64, datagram: &mut [u8]) {
        let mut at = 0;
        let mut server_cid: Option<Vec<u8>> = None;
        while at < datagram.len() && self.closed.is_none() {
            let Ok(parsed) = wire::parse_header(&datagram[at..], LOCAL_CID_LEN) else {
                return;
            };
            let len = parsed.len;
            let pn_offset = parsed.pn_offset;
            let space = match parsed.header {
                Header::VersionNegotiation => {
                    if !self.heard_server {
                        self.closed = Some(Closed::VersionMismatch);
                        self.streams.clear();
                    }
                    return;
                }
                Header::Retry { scid, token } => {
                    let (scid, token) = (scid.to_vec(), token.to_vec());
                    self.on_retry(&datagram[at..], &scid, token);
                    return;
                }
                Header::Long {
                    ty,
                    version,
                    dcid,
                    scid,
                } => {
                    if version != wire::VERSION_1 || dcid != self.scid {
                        at += len;
                        continue;
                    }
                    let space = match ty {
                        LongType::Initial => INITIAL,
                        LongType::Handshake => HANDSHAKE,
                        _ => {
                            at += len;
                            continue;
                        }
                    };
                    if space == INITIAL && !self.heard_server {
                        // The server's own connection ID, used from now on if the packet
                        // proves to be the server's (it decrypts).
                        server_cid = Some(scid.to_vec());
                    }
                    space
                }
                Header::Short { dcid } => {
                    if dcid != self.scid {
                        return;
                    }
                    DATA
                }
            };
            let packet = &mut datagram[at..at + len];
            self.on_packet(now, space, packet, pn_offset, server_cid.take());
            at += len;
        }
    }

    fn on_retry(&mut self, packet: &[u8], scid: &[u8], token: Vec<u8>) {
        if self.heard_server || self.retry_scid.is_some() || token.is_empty() {
            return;
        }
        if !retry_tag_valid(&self.original_dcid, packet) {
            return;
        }
        let Some(suite) = initial_suite() else {
            return;
        };
        self.retry_scid = Some(scid.to_vec());
        self.dcid = scid.to_vec();
        self.token = token;
        let s = &mut self.spaces[INITIAL];
        s.keys = Some(suite.keys(&self.dcid, rustls::Side::Client, Version::V1));
        // Everything sent so far goes again under the new keys, with the token.
        let sent: Vec<Sent> = s.sent.drain(..).collect();
        let data: Vec<Sent> = self.spaces[DATA].sent.drain(..).collect();
        for p in sent.iter().chain(&data) {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
        }
        self.spaces[INITIAL].crypto_sent = 0;
        self.spaces[INITIAL].crypto_retx.clear();
        for p in data {
            for f in p.frames {
                self.requeue(DATA, f);
            }
        }
    }

    /// Removes header protection, decrypts and processes one packet.
    fn on_packet(
        &mut self,
        now: i64,
        space: usize,
        packet: &mut [u8],
        pn_offset: usize,
        server_cid: Option<Vec<u8>>,
    ) {
        if packet.len() < pn_offset + 4 + 16 {
            return;
        }
        let mut sample = [0u8; 16];
        sample.copy_from_slice(&packet[pn_offset + 4..pn_offset + 20]);
        let (head, rest) = packet.split_at_mut(pn_offset);
        let (first, _) = head.split_at_mut(1);
        let header_key = match space {
            DATA => self.one_rtt.as_ref().map(|k| &k.remote.header),
            _ => self.spaces[space].keys.as_ref().map(|k| &k.remote.header),
        };
        let Some(header_key) = header_key else {
            return;
        };
        let original_first = first[0];
        if header_key
            .decrypt_in_place(&sample, &mut first[0], &mut rest[..4])
            .is_err()
        {
            return;
        }
        let pn_len = usize::from(first[0] & 3) + 1;
        let truncated = rest[..pn_len]
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b));
        let pn = wire::decode_packet_number(
            self.spaces[space].largest_received(),
            truncated,
            8 * pn_len as u32,
        );
        let header_len = pn_offset + pn_len;
        let key_phase = first[0] & 0x04 != 0;
        let (header, payload) = packet.split_at_mut(header_len);
        let plain_len = match space {
            DATA => self.decrypt_one_rtt(pn, key_phase, header, payload),
            _ => self.spaces[space]
                .keys
                .as_ref()
                .and_then(|k| k.remote.packet.decrypt_in_place(pn, header, payload).ok())
                .map(|p| p.len()),
        };
        let Some(plain_len) = plain_len else {
            if space == DATA && self.is_stateless_reset(original_first, packet) {
                self.closed = Some(Closed::Reset);
                self.streams.clear();
            }
            return;
        };
        if let Some(cid) = server_cid {
            self.dcid = cid;
        }
        let payload = &packet[header_len..header_len + plain_len];
        self.on_plaintext(now, space, pn, payload);
    }

    /// Processes a decrypted packet's frames (fuzz targets enter here, past the crypto).
    pub(crate) fn on_plaintext(&mut self, now: i64, space: usize, pn: u64, payload: &[u8]) {
        if !self.spaces[space].record(pn) {
            return;
        }
        self.heard_server = true;
        self.last_activity = now;
        self.sent_since_receipt = false;
        if space == HANDSHAKE && self.spaces[INITIAL].keys.is_some() {
            // RFC 9001 §4.9.1: a client drops its Initial keys once it has Handshake packets.
            self.discard(INITIAL);
        }
        let mut eliciting = false;
        let mut r = Reader::new(payload);
        while !r.is_empty() {
            let frame = match wire::next_frame(&mut r) {
                Ok(f) => f,
                Err(Malformed) => {
                    self.violation(FRAME_ENCODING_ERROR, "quic-protocol-violation");
                    return;
                }
            };
            eliciting |= frame.is_ack_eliciting();
            self.on_frame(now, space, frame);
            if self.closed.is_some() {
                return;
            }
        }
        if self.confirmed
            && self
                .tls
                .as_ref()
                .is_some_and(|t| t.tls13_tickets_received() > 0)
        {
            // A session ticket for the next connection has come: TLS has nothing left to do.
            self.drop_tls();
        }
        let s = &mut self.spaces[space];
        if pn == s.largest_received().unwrap_or(pn) {
            s.largest_received_at = now;
        }
        if eliciting {
            s.unacked_eliciting += 1;
            if space != DATA || s.unacked_eliciting >= 2 {
                s.ack_deadline = None;
            } else if s.ack_deadline.is_none() {
                s.ack_deadline = Some(now + MAX_ACK_DELAY_NS);
            }
        }
    }

    fn decrypt_one_rtt(
        &mut self,
        pn: u64,
        key_phase: bool,
        header: &[u8],
        payload: &mut [u8],
    ) -> Option<usize> {
        let keys = self.one_rtt.as_mut()?;
        if key_phase == keys.phase {
            return keys
                .remote
                .packet
                .decrypt_in_place(pn, header, payload)
                .ok()
                .map(|p| p.len());
        }
        // The server updated its keys (RFC 9001 §6): try the next phase's, and follow.
        let mut next = keys.next.clone();
        let PacketKeySet { local, remote } = next.next_packet_keys();
        let len = remote.decrypt_in_place(pn, header, payload).ok()?.len();
        keys.local.packet = local;
        keys.remote.packet = remote;
        keys.next = next;
        keys.phase = key_phase;
        Some(len)
    }

    fn is_stateless_reset(&self, first: u8, packet: &[u8]) -> bool {
        first & 0x80 == 0
            && packet.len() >= 21
            && self
                .peer
                .stateless_reset_token
                .is_some_and(|t| packet[packet.len() - 16..] == t)
    }

    fn violation(&mut self, code: u64, why: &'static str) {
        self.close_with(Closed::Violation(why), code, false);
    }

    fn on_frame(&mut self, now: i64, space: usize, frame: Frame<'_>) {
        match frame {
            Frame::Padding | Frame::Ping | Frame::Ignored => {}
            Frame::Ack { delay, .. } => self.on_ack(now, space, &frame, delay),
            Frame::Crypto { offset, data } => self.on_crypto(now, space, offset, data),
            Frame::Stream {
                id,
                offset,
                data,
                fin,
            } if space == DATA => self.on_stream(id, offset, data, fin),
            Frame::ResetStream { id } if space == DATA => {
                if self.streams.remove(&id).is_some() {
                    self.events.push_back(Event::StreamFailed {
                        stream: id,
                        cause: "quic-stream-reset",
                    });
                }
            }
            Frame::StopSending { id } if space == DATA => {
                if self.streams.remove(&id).is_some() {
                    self.events.push_back(Event::StreamFailed {
                        stream: id,
                        cause: "quic-stream-stopped",
                    });
                }
            }
            Frame::MaxData(max) if space == DATA => self.max_data = self.max_data.max(max),
            Frame::MaxStreamsBidi(max) if space == DATA => {
                self.max_streams = self.max_streams.max(max)
            }
            Frame::MaxStreamsUni(max) if space == DATA => {
                self.max_streams_uni = self.max_streams_uni.max(max)
            }
            Frame::NewConnectionId {
                seq,
                retire_prior_to,
                cid,
                reset_token,
            } if space == DATA => {
                if retire_prior_to > self.dcid_seq && seq >= retire_prior_to {
                    self.retire_cid = Some(self.dcid_seq);
                    self.dcid = cid.to_vec();
                    self.dcid_seq = seq;
                    self.peer.stateless_reset_token = Some(reset_token);
                }
            }
            Frame::PathChallenge(data) if space == DATA => self.path_response = Some(data),
            Frame::ConnectionClose { code, application } => {
                self.closed = Some(Closed::ByPeer { code, application });
                self.streams.clear();
            }
            Frame::HandshakeDone if space == DATA => {
                if !self.confirmed {
                    self.confirmed = true;
                    self.discard(HANDSHAKE);
                    self.tls_drop_at = Some(now + TLS_LINGER_NS);
                }
            }
            // Stream and 1-RTT-only frames in a handshake packet.
            _ => self.violation(PROTOCOL_VIOLATION, "quic-protocol-violation"),
        }
    }

    fn on_crypto(&mut self, now: i64, space: usize, offset: u64, data: &[u8]) {
        let Some(tls) = self.tls.as_mut() else {
            // Session tickets after the connection let TLS go: acknowledged and dropped.
            return;
        };
        let s = &mut self.spaces[space];
        let end = offset + data.len() as u64;
        if end <= s.crypto_next {
            return;
        }
        if offset > s.crypto_next {
            let buffered: usize = s.crypto_ahead.iter().map(|(_, d)| d.len()).sum();
            if buffered + data.len() > MAX_CRYPTO_BUFFER {
                self.violation(CRYPTO_BUFFER_EXCEEDED, "quic-protocol-violation");
                return;
            }
            s.crypto_ahead.push((offset, data.to_vec()));
            return;
        }
        let skip = (s.crypto_next - offset) as usize;
        let mut result = tls.read_hs(&data[skip..]);
        s.crypto_next = end;
        // What came ahead and now follows on.
        while result.is_ok() {
            let next = s.crypto_next;
            let Some(i) = s.crypto_ahead.iter().position(|(o, _)| *o <= next) else {
                break;
            };
            let (o, d) = s.crypto_ahead.swap_remove(i);
            let end = o + d.len() as u64;
            if end > next {
                result = tls.read_hs(&d[(next - o) as usize..]);
                s.crypto_next = end;
            }
        }
        if result.is_err() {
            let alert = tls.alert().map_or(0x50, u8::from);
            self.close_with(Closed::Tls, CRYPTO_ERROR + u64::from(alert), false);
            return;
        }
        self.drive_tls(now);
    }

    /// Takes what TLS has to send, and its new keys.
    fn drive_tls(&mut self, now: i64) {
        loop {
            let Some(tls) = self.tls.as_mut() else {
                return;
            };
            let mut out = Vec::new();
            let change = tls.write_hs(&mut out);
            self.spaces[self.write_space]
                .crypto_out
                .extend_from_slice(&out);
            match change {
                None => break,
                Some(KeyChange::Handshake { keys }) => {
                    self.spaces[HANDSHAKE].keys = Some(keys);
                    self.write_space = HANDSHAKE;
                }
                Some(KeyChange::OneRtt { keys, next }) => {
                    self.one_rtt = Some(Box::new(OneRtt {
                        local: keys.local,
                        remote: keys.remote,
                        next,
                        phase: false,
                    }));
                    self.write_space = DATA;
                }
            }
        }
        let Some(tls) = self.tls.as_ref() else {
            return;
        };
        if self.handshake_done || tls.is_handshaking() {
            return;
        }
        self.handshake_done = true;
        let params = tls
            .quic_transport_parameters()
            .map(ServerParams::decode)
            .unwrap_or(Err(Malformed));
        let Ok(params) = params else {
            self.violation(TRANSPORT_PARAMETER_ERROR, "quic-bad-transport-parameters");
            return;
        };
        let ids_match = params.original_dcid.as_deref() == Some(&self.original_dcid)
            && params.initial_scid.as_deref() == Some(&self.dcid)
            && params.retry_scid == self.retry_scid;
        if !ids_match {
            self.violation(TRANSPORT_PARAMETER_ERROR, "quic-bad-transport-parameters");
            return;
        }
        let accepted = self.zero_rtt.then(|| tls.is_early_data_accepted());
        let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        self.peer = params.clone();
        self.take_limits(&params);
        self.zero_rtt_keys = None;
        if accepted == Some(false) {
            // RFC 9001 §4.6.2: nothing sent in 0-RTT arrived; it goes again in 1-RTT.
            let s = &mut self.spaces[DATA];
            let rejected: Vec<Sent> = s.sent.drain(..).collect();
            for p in rejected {
                self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
                for f in p.frames {
                    self.requeue(DATA, f);
                }
            }
        }
        let _ = now;
        self.events.push_back(Event::Connected {
            resumed,
            zero_rtt_accepted: accepted,
        });
    }

    fn take_limits(&mut self, p: &ServerParams) {
        self.max_data = self.max_data.max(p.initial_max_data);
        self.max_streams = self.max_streams.max(p.initial_max_streams_bidi);
        self.max_streams_uni = self.max_streams_uni.max(p.initial_max_streams_uni);
        if self.peer.max_idle_timeout_ms == 0 {
            self.peer.max_idle_timeout_ms = p.max_idle_timeout_ms;
        }
    }

    fn discard(&mut self, space: usize) {
        let s = &mut self.spaces[space];
        s.keys = None;
        for p in s.sent.drain(..) {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
        }
        s.loss_time = None;
        s.unacked_eliciting = 0;
        s.crypto_retx.clear();
        s.crypto_out = Vec::new();
        s.crypto_ahead = Vec::new();
        s.probes = 0;
        s.received = Vec::new();
        self.pto_count = 0;
    }

    fn on_stream(&mut self, id: u64, offset: u64, data: &[u8], fin: bool) {
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
        let Some(s) = self.streams.get_mut(&id) else {
            // An answered, failed or forgotten stream, or one the server may not open.
            return;
        };
        if end > self.max_stream_recv || s.fin.is_some_and(|f| end > f) {
            self.streams.remove(&id);
            self.events.push_back(Event::StreamFailed {
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
                self.streams.remove(&id);
                self.events.push_back(Event::StreamFailed {
                    stream: id,
                    cause: "quic-protocol-violation",
                });
                return;
            }
            s.ahead.push((offset, data.to_vec()));
        }
        if s.fin == Some(s.recv.len() as u64) {
            if let Some(s) = self.streams.remove(&id) {
                self.events.push_back(Event::Answer {
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

    fn on_ack(&mut self, now: i64, space: usize, frame: &Frame<'_>, delay: u64) {
        let Frame::Ack { largest, .. } = *frame else {
            return;
        };
        if largest >= self.spaces[space].next_pn {
            self.violation(PROTOCOL_VIOLATION, "quic-protocol-violation");
            return;
        }
        let ranges: Vec<(u64, u64)> = frame.ack_ranges().collect();
        let s = &mut self.spaces[space];
        let mut newest: Option<(u64, i64)> = None;
        let mut acked_bytes = 0u64;
        let mut kept = VecDeque::with_capacity(s.sent.len());
        let mut acked_any = false;
        let mut acked_times = Vec::new();
        for p in s.sent.drain(..) {
            if ranges.iter().any(|&(lo, hi)| lo <= p.pn && p.pn <= hi) {
                acked_any = true;
                acked_times.push(p.time);
                acked_bytes += u64::from(p.size);
                if newest.is_none_or(|(pn, _)| p.pn > pn) {
                    newest = Some((p.pn, p.time));
                }
                if p.time > self.recovery_start {
                    // Congestion avoidance grows by a datagram per window; slow start by what
                    // was acknowledged.
                    if self.cwnd < self.ssthresh {
                        self.cwnd += u64::from(p.size);
                    } else {
                        self.cwnd += MAX_DATAGRAM as u64 * u64::from(p.size) / self.cwnd.max(1);
                    }
                }
            } else {
                kept.push_back(p);
            }
        }
        s.sent = kept;
        s.largest_acked = Some(s.largest_acked.map_or(largest, |l| l.max(largest)));
        self.in_flight = self.in_flight.saturating_sub(acked_bytes);
        if !acked_any {
            return;
        }
        if let Some((pn, time)) = newest {
            if pn == largest {
                // RFC 9002 §5.3: the peer's delay, no more than its max_ack_delay once the
                // handshake is confirmed; Initial acknowledgements are not delayed.
                let ack_delay = if space == DATA {
                    let d = (delay << self.peer.ack_delay_exponent.min(20)) as i64 * 1000;
                    if self.confirmed {
                        d.min(self.peer.max_ack_delay_ms as i64 * 1_000_000)
                    } else {
                        d
                    }
                } else {
                    0
                };
                self.rtt_sample(now, now - time, ack_delay);
            }
        }
        if self.handshake_done || space != INITIAL {
            self.pto_count = 0;
        }
        self.detect_lost(space, now, &acked_times);
        let s = &mut self.spaces[space];
        if let Some(&newest) = acked_times.iter().max() {
            s.newest_acked_sent = s.newest_acked_sent.max(newest);
        }
    }

    /// RFC 9002 §5: a sample taken at `now` of `latest`, of which the peer delayed its
    /// acknowledgement `ack_delay`.
    fn rtt_sample(&mut self, now: i64, latest: i64, ack_delay: i64) {
        let latest = latest.max(1);
        self.latest_rtt = latest;
        if !self.has_rtt {
            self.has_rtt = true;
            self.first_sample_at = Some(now);
            self.min_rtt = latest;
            self.srtt = latest;
            self.rttvar = latest / 2;
            return;
        }
        self.min_rtt = self.min_rtt.min(latest);
        // §5.3: the delay comes off only as far as it leaves the sample above min_rtt.
        let adjusted = if latest >= self.min_rtt + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        self.rttvar = (3 * self.rttvar + (self.srtt - adjusted).abs()) / 4;
        self.srtt = (7 * self.srtt + adjusted) / 8;
    }

    /// RFC 9002 §6.1: packets three below the largest acknowledged, or sent a little longer
    /// than an RTT before it, are lost; `acked` are the send times of the packets the ACK that
    /// runs this acknowledged (none for the loss timer).
    fn detect_lost(&mut self, space: usize, now: i64, acked: &[i64]) {
        let s = &mut self.spaces[space];
        s.loss_time = None;
        let Some(largest) = s.largest_acked else {
            return;
        };
        let delay = (self.latest_rtt.max(self.srtt) * 9 / 8).max(GRANULARITY_NS);
        let mut lost = Vec::new();
        let mut kept = VecDeque::with_capacity(s.sent.len());
        for p in s.sent.drain(..) {
            if p.pn > largest {
                kept.push_back(p);
            } else if p.time + delay <= now || largest >= p.pn + 3 {
                lost.push(p);
            } else {
                s.loss_time = Some(
                    s.loss_time
                        .map_or(p.time + delay, |t| t.min(p.time + delay)),
                );
                kept.push_back(p);
            }
        }
        s.sent = kept;
        self.lost_packets += lost.len() as u64;
        let persistent = self.persistent_congestion(space, &lost, acked);
        let mut congestion = false;
        for p in lost {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
            congestion |= p.time > self.recovery_start;
            for f in p.frames {
                self.requeue(space, f);
            }
        }
        if congestion {
            self.recovery_start = now;
            self.ssthresh = (self.cwnd / 2).max(MIN_WINDOW);
            self.cwnd = self.ssthresh;
        }
        if persistent {
            // §7.6.2: the window collapses to its minimum.
            self.recovery_start = now;
            self.cwnd = MIN_WINDOW;
        }
    }

    /// RFC 9002 §7.6: whether `lost` (in the order sent) hold two ack-eliciting packets sent
    /// further apart than three PTOs (without backoff), after the first RTT sample, with no
    /// packet sent between them acknowledged (`acked` now, or earlier).
    fn persistent_congestion(&self, space: usize, lost: &[Sent], acked: &[i64]) -> bool {
        let Some(first_sample) = self.first_sample_at else {
            return false;
        };
        let after = first_sample.max(self.spaces[space].newest_acked_sent);
        let mut span = lost.iter().map(|p| p.time).filter(|&t| t > after);
        let Some(start) = span.next() else {
            return false;
        };
        // The run of losses ends at the first packet acknowledged after its start.
        let end_limit = acked.iter().copied().filter(|&t| t > start).min();
        let end = span
            .filter(|&t| end_limit.is_none_or(|limit| t < limit))
            .max()
            .unwrap_or(start);
        let max_ack_delay = self.peer.max_ack_delay_ms as i64 * 1_000_000;
        let duration =
            (self.srtt + (4 * self.rttvar).max(GRANULARITY_NS) + max_ack_delay).saturating_mul(3);
        end - start > duration
    }

    fn requeue(&mut self, space: usize, frame: Retx) {
        match frame {
            Retx::Crypto { offset, len } => {
                if !self.spaces[space].crypto_out.is_empty() {
                    self.spaces[space].crypto_retx.push_back((offset, len));
                }
            }
            Retx::Stream(c) => {
                if self.stream_bytes(c.id).is_some() {
                    self.stream_retx.push_back(c);
                }
            }
            Retx::MaxData => self.max_data_pending = true,
            Retx::RetireCid(seq) => self.retire_cid = Some(seq),
        }
    }

    /// Writes the next datagram to send into `out` (cleared first); false if there is none.
    pub fn poll_transmit(&mut self, now: i64, out: &mut Vec<u8>) -> bool {
        out.clear();
        if let Some((code, application)) = self.close_pending.take() {
            return self.write_close(now, out, code, application);
        }
        if self.closed.is_some() {
            return false;
        }
        if self.spaces[INITIAL].keys.is_some() && self.space_wants(INITIAL, now) {
            // A datagram with an Initial is padded to 1,200 bytes (RFC 9000 §14.1): the
            // Initial itself, or the 0-RTT packet after it. Queries in 0-RTT go in the same
            // datagram as the ClientHello, so that the server has them before the handshake
            // can finish (as other clients do; quinn's server counts a stream as 0-RTT only
            // if it takes it before the client's Finished).
            let early = self.zero_rtt_keys.is_some()
                && self.one_rtt.is_none()
                && self.spaces[INITIAL].crypto_sent == 0
                && self.stream_ready();
            self.write_packet(now, out, INITIAL, MAX_DATAGRAM, !early);
            let room = MAX_DATAGRAM.saturating_sub(out.len());
            if early && room > 128 {
                self.write_packet(now, out, DATA, room, true);
            }
            if early && out.len() < MAX_DATAGRAM {
                // Nothing went after the Initial: it goes again, padded, in the next one.
                out.clear();
                self.requeue_last(INITIAL);
                self.write_packet(now, out, INITIAL, MAX_DATAGRAM, true);
            }
            return !out.is_empty();
        }
        if self.spaces[HANDSHAKE].keys.is_some() && self.space_wants(HANDSHAKE, now) {
            self.write_packet(now, out, HANDSHAKE, MAX_DATAGRAM, false);
        }
        let room = MAX_DATAGRAM.saturating_sub(out.len());
        if room > 64 && self.space_wants(DATA, now) {
            self.write_packet(now, out, DATA, room, false);
        }
        !out.is_empty()
    }

    /// Whether a space has something to send now.
    fn space_wants(&self, space: usize, now: i64) -> bool {
        let s = &self.spaces[space];
        if s.probes > 0 || s.ack_due(now) || s.has_crypto() {
            return true;
        }
        if space != DATA || !self.can_send_now() {
            return false;
        }
        let control = self.one_rtt.is_some()
            && (self.max_data_pending || self.path_response.is_some() || self.retire_cid.is_some());
        control || self.stream_ready()
    }

    /// Whether stream data may go now (keys, limits and the congestion window allowing).
    fn stream_ready(&self) -> bool {
        if self.in_flight + MAX_DATAGRAM as u64 > self.cwnd {
            return false;
        }
        if !self.stream_retx.is_empty() {
            return true;
        }
        self.unsent.front().is_some_and(|&id| self.may_open(id))
    }

    fn may_open(&self, id: u64) -> bool {
        if id == UNI_STREAM_ID {
            return self.max_streams_uni > 0;
        }
        let len = self.streams.get(&id).map_or(0, |s| s.query.len() as u64);
        id / 4 < self.max_streams && self.data_sent + len <= self.max_data
    }

    /// A stream's bytes as sent: a request's, or the client's unidirectional stream's.
    fn stream_bytes(&self, id: u64) -> Option<&[u8]> {
        match self.uni {
            Some(c) if id == UNI_STREAM_ID => Some(c),
            _ => self.streams.get(&id).map(|s| &s.query[..]),
        }
    }

    /// Writes one packet of `space` into `out`, within `room` bytes; with `pad`, padded so that
    /// the datagram (`out`) is a full 1,200 bytes.
    fn write_packet(&mut self, now: i64, out: &mut Vec<u8>, space: usize, room: usize, pad: bool) {
        self.write_packet_with(now, out, space, room, None, pad)
    }

    /// Forgets the last packet sent in `space` and queues its frames again (a datagram that
    /// was not sent after all).
    fn requeue_last(&mut self, space: usize) {
        let s = &mut self.spaces[space];
        if let Some(p) = s.sent.pop_back() {
            self.in_flight = self.in_flight.saturating_sub(u64::from(p.size));
            for f in p.frames {
                self.requeue(space, f);
            }
        }
    }

    /// [`Connection::write_packet`], or with `close` a packet of only a CONNECTION_CLOSE.
    fn write_packet_with(
        &mut self,
        now: i64,
        out: &mut Vec<u8>,
        space: usize,
        room: usize,
        close: Option<(u64, bool)>,
        pad: bool,
    ) {
        let start = out.len();
        let zero_rtt = space == DATA && self.one_rtt.is_none();
        let pn = self.spaces[space].next_pn;
        let (length_at, pn_at) = match space {
            DATA if !zero_rtt => {
                let phase = self.one_rtt.as_ref().is_some_and(|k| k.phase);
                (
                    None,
                    wire::put_short_header(out, &self.dcid, phase, pn as u32),
                )
            }
            _ => {
                let ty = match space {
                    INITIAL => LongType::Initial,
                    HANDSHAKE => LongType::Handshake,
                    _ => LongType::ZeroRtt,
                };
                let token = (space == INITIAL).then_some(&self.token[..]);
                let (l, p) =
                    wire::put_long_header(out, ty, &self.dcid, &self.scid, token, pn as u32);
                (Some(l), p)
            }
        };
        let payload_at = pn_at + 4;
        let limit = (start + room).saturating_sub(16);
        let mut frames: Vec<Retx> = Vec::new();
        let mut eliciting = false;
        let s = &mut self.spaces[space];
        if let Some((code, application)) = close {
            wire::put_close(out, code, application);
        }
        let normal = close.is_none();
        // ACK (never in 0-RTT).
        if normal && !zero_rtt && s.unacked_eliciting > 0 && !s.received.is_empty() {
            let delay = ((now - s.largest_received_at).max(0) / 1000) >> 3;
            wire::put_ack(out, &s.received, delay as u64);
            s.unacked_eliciting = 0;
            s.ack_deadline = None;
        }
        // CRYPTO: what was lost first, then what is new.
        while normal && out.len() + 32 < limit {
            let (offset, len, new) = match s.crypto_retx.pop_front() {
                Some((o, l)) => (o as usize, l as usize, false),
                None if s.crypto_sent < s.crypto_out.len() => {
                    (s.crypto_sent, s.crypto_out.len() - s.crypto_sent, true)
                }
                None => break,
            };
            let fit = len.min(limit - out.len() - 16);
            let end = (offset + fit).min(s.crypto_out.len());
            if end <= offset {
                break;
            }
            wire::put_crypto(out, offset as u64, &s.crypto_out[offset..end]);
            let sent = end - offset;
            if new {
                s.crypto_sent = end;
            } else if sent < len {
                s.crypto_retx
                    .push_front(((offset + sent) as u64, (len - sent) as u32));
            }
            frames.push(Retx::Crypto {
                offset: offset as u64,
                len: sent as u32,
            });
            eliciting = true;
        }
        if normal && space == DATA && !zero_rtt {
            if let Some(data) = self.path_response.take() {
                out.push(0x1b);
                out.extend_from_slice(&data);
                eliciting = true;
            }
            if let Some(seq) = self.retire_cid.take() {
                out.push(0x19);
                wire::put_varint(out, seq);
                frames.push(Retx::RetireCid(seq));
                eliciting = true;
            }
            if self.max_data_pending {
                self.max_data_pending = false;
                out.push(0x10);
                wire::put_varint(out, self.local_max_data);
                frames.push(Retx::MaxData);
                eliciting = true;
            }
        }
        if normal && space == DATA {
            eliciting |= self.write_streams(out, limit, &mut frames);
        }
        let s = &mut self.spaces[space];
        if normal && s.probes > 0 && !eliciting {
            out.push(0x01);
            eliciting = true;
        }
        if eliciting {
            s.probes = s.probes.saturating_sub(1);
        }
        if out.len() == payload_at {
            out.truncate(start);
            return;
        }
        if pad {
            // PADDING frames up to a full datagram (`out` holds this datagram alone).
            let want = MAX_DATAGRAM - 16;
            if out.len() < want {
                out.resize(want, 0);
            }
        }
        if let Some(at) = length_at {
            let len = out.len() - pn_at + 16;
            wire::patch_varint2(out, at, len as u16);
        }
        let local = match space {
            DATA if zero_rtt => self.zero_rtt_keys.as_ref(),
            DATA => self.one_rtt.as_ref().map(|k| &k.local),
            _ => self.spaces[space].keys.as_ref().map(|k| &k.local),
        };
        let Some(local) = local else {
            out.truncate(start);
            return;
        };
        let (header, payload) = out[start..].split_at_mut(payload_at - start);
        let Ok(tag) = local.packet.encrypt_in_place(pn, header, payload) else {
            out.truncate(start);
            return;
        };
        out.extend_from_slice(tag.as_ref());
        let mut sample = [0u8; 16];
        sample.copy_from_slice(&out[payload_at..payload_at + 16]);
        let (head, rest) = out[start..].split_at_mut(pn_at - start);
        if local
            .header
            .encrypt_in_place(&sample, &mut head[0], &mut rest[..4])
            .is_err()
        {
            out.truncate(start);
            return;
        }
        let size = (out.len() - start) as u32;
        let s = &mut self.spaces[space];
        s.next_pn += 1;
        if eliciting {
            s.last_eliciting_sent = now;
            s.sent.push_back(Sent {
                pn,
                time: now,
                size,
                frames,
            });
            self.in_flight += u64::from(size);
            // RFC 9000 §10.1: the first ack-eliciting packet after one is received restarts
            // the idle timer; probes to a silent server do not keep it alive.
            if !self.sent_since_receipt {
                self.sent_since_receipt = true;
                self.last_activity = self.last_activity.max(now);
            }
        }
        if space == HANDSHAKE && self.spaces[INITIAL].keys.is_some() {
            self.discard(INITIAL);
        }
    }

    /// Writes the STREAM frames that fit: lost pieces first, then new queries.
    fn write_streams(&mut self, out: &mut Vec<u8>, limit: usize, frames: &mut Vec<Retx>) -> bool {
        let mut wrote = false;
        let probe = self.spaces[DATA].probes > 0;
        if !probe && self.in_flight + MAX_DATAGRAM as u64 > self.cwnd {
            return false;
        }
        loop {
            let room = limit.saturating_sub(out.len() + wire::STREAM_OVERHEAD);
            if room == 0 {
                break;
            }
            let chunk = match self.stream_retx.pop_front() {
                Some(c) => c,
                None => match self.unsent.front() {
                    Some(&id) if self.may_open(id) => {
                        self.unsent.pop_front();
                        let Some(bytes) = self.stream_bytes(id) else {
                            continue;
                        };
                        let len = bytes.len() as u32;
                        self.data_sent += u64::from(len);
                        Chunk {
                            id,
                            offset: 0,
                            len,
                            // The unidirectional stream stays open for the connection's life.
                            fin: id != UNI_STREAM_ID,
                        }
                    }
                    _ => break,
                },
            };
            let fit = (chunk.len as usize).min(room) as u32;
            if fit < chunk.len && room < 64 {
                self.stream_retx.push_front(chunk);
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
                self.stream_retx.push_front(Chunk {
                    id: chunk.id,
                    offset: chunk.offset + fit,
                    len: chunk.len - fit,
                    fin: chunk.fin,
                });
            }
            if let Some(s) = self.streams.get_mut(&chunk.id) {
                if !s.sent {
                    s.sent = true;
                    self.events.push_back(Event::Sent { stream: chunk.id });
                }
            }
            wrote = true;
        }
        wrote
    }

    /// A datagram with a CONNECTION_CLOSE, in the highest space with keys.
    fn write_close(&mut self, now: i64, out: &mut Vec<u8>, code: u64, application: bool) -> bool {
        let space = if self.one_rtt.is_some() {
            DATA
        } else if self.spaces[HANDSHAKE].keys.is_some() {
            HANDSHAKE
        } else if self.spaces[INITIAL].keys.is_some() {
            INITIAL
        } else {
            return false;
        };
        let start = out.len();
        let pad = space == INITIAL;
        self.write_packet_with(
            now,
            out,
            space,
            MAX_DATAGRAM,
            Some((code, application)),
            pad,
        );
        out.len() > start
    }
}

/// Whether a Retry packet's integrity tag is right (RFC 9001 §5.8).
fn retry_tag_valid(original_dcid: &[u8], packet: &[u8]) -> bool {
    use ring::aead;
    const KEY: [u8; 16] = [
        0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8,
        0x4e,
    ];
    const NONCE: [u8; 12] = [
        0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
    ];
    let Some(split) = packet.len().checked_sub(16) else {
        return false;
    };
    let (body, tag) = packet.split_at(split);
    let mut pseudo = Vec::with_capacity(1 + original_dcid.len() + body.len());
    pseudo.push(original_dcid.len() as u8);
    pseudo.extend_from_slice(original_dcid);
    pseudo.extend_from_slice(body);
    let Ok(key) = aead::UnboundKey::new(&aead::AES_128_GCM, &KEY) else {
        return false;
    };
    let key = aead::LessSafeKey::new(key);
    let mut tag = tag.to_vec();
    key.open_in_place(
        aead::Nonce::assume_unique_for_key(NONCE),
        aead::Aad::from(&pseudo),
        &mut tag,
    )
    .is_ok()
}
