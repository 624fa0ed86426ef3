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
//! session ticket has come (or a little later), the TLS connection is dropped: an idle
//! connection keeps its 1-RTT keys, the secrets for key updates and a few counters, about
//! 2.5 KB.
//!
//! This file holds the connection's state, its opening, its public calls and its timers. Each
//! job with state of its own is a type of its own that owns that state: `recovery::Recovery`
//! (RFC 9002: packets in flight per space, acknowledgements, loss, probes, the congestion
//! window, with the RTT estimator `rtt::Rtt`), `streams::Streams` (the streams and flow
//! control), `cids::Cids` (connection IDs, Retry, the path), `space::Space` (a packet number
//! space's keys, packet numbers, ACKs and CRYPTO data) and `key_phase::OneRtt` (the 1-RTT
//! keys and their updates). What ties them together stays on the connection, in two
//! files with explicit imports: `receive` (packets unprotected, frames dispatched, the TLS
//! handshake's data and keys) and `transmit` (which space sends, packets assembled and
//! protected).

mod cids;
mod key_phase;
mod receive;
mod recovery;
mod rtt;
mod space;
mod streams;
mod transmit;

use super::wire::{self, Frame, ServerParams};
use cids::Cids;
use key_phase::OneRtt;
use recovery::{KeyState, Recovery, Sent};
use rustls::quic::{DirectionalKeys, Version};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use space::Space;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use streams::{Chunk, Streams};

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
    /// Start a key update (RFC 9001 §6) once this many packets have been sent with the
    /// current 1-RTT keys, as other stacks do ([`DEFAULT_KEY_UPDATE_PACKETS`]); 0: none but
    /// the one the suite's confidentiality limit forces (§6.6), which a DNS session never
    /// reaches. A count past that limit is cut to it.
    pub key_update_packets: u64,
}

/// The key update interval the replay uses unless told otherwise: the top of quinn's range for
/// its first update (a random count in 10..1000; quic-go's first comes at the 100th packet), so
/// that a busy session updates its keys as a client of those stacks does, while a session of a
/// few queries never does. quinn and quic-go then wait for the confidentiality limit (or 100,000
/// packets): a replay that wants that sets the count higher.
pub const DEFAULT_KEY_UPDATE_PACKETS: u64 = 1_000;

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
    StreamDataBlocked(u64),
}

/// A QUIC client connection; see the module's documentation.
pub struct Connection {
    tls: Option<Box<rustls::quic::ClientConnection>>,
    spaces: [Space; 3],
    /// The space TLS writes its handshake data to.
    write_space: usize,
    zero_rtt_keys: Option<DirectionalKeys>,
    one_rtt: Option<Box<OneRtt>>,
    /// The connection IDs and what they call for.
    cids: Cids,
    /// A server packet has been processed (no more Retry or Version Negotiation).
    heard_server: bool,
    peer: ServerParams,
    handshake_done: bool,
    confirmed: bool,
    tls_drop_at: Option<i64>,
    zero_rtt: bool,

    /// The streams and flow control.
    streams: Streams,
    /// Packets sent with one set of 1-RTT keys before a key update ([`Config::key_update_packets`]).
    key_update_packets: u64,

    /// Loss detection and congestion control (RFC 9002).
    recovery: Recovery,

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The TLS configuration cannot do QUIC (no TLS 1.3, no QUIC cipher suite).
    #[error("the TLS configuration cannot do QUIC (TLS 1.3 and a QUIC cipher suite)")]
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
        let peer = ServerParams::default();
        let mut spaces: [Space; 3] = Default::default();
        spaces[INITIAL].keys = Some(suite.keys(&dcid, rustls::Side::Client, Version::V1));
        let mut conn = Connection {
            tls: Some(Box::new(tls)),
            spaces,
            write_space: INITIAL,
            zero_rtt_keys: None,
            one_rtt: None,
            cids: Cids::new(scid, dcid),
            heard_server: false,
            recovery: Recovery::new(now, peer.max_ack_delay_ms),
            peer,
            handshake_done: false,
            confirmed: false,
            tls_drop_at: None,
            zero_rtt: false,
            streams: Streams::new(config.max_stream_recv, config.peer_uni_streams),
            key_update_packets: config.key_update_packets,
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
    #[inline]
    pub fn zero_rtt(&self) -> bool {
        self.zero_rtt
    }

    /// Packets declared lost so far by loss detection (RFC 9002 §6.1), their frames sent again.
    #[inline]
    pub fn lost_packets(&self) -> u64 {
        self.recovery.lost_packets()
    }

    /// Why the connection ended, once it has.
    #[inline]
    pub fn closed(&self) -> Option<Closed> {
        self.closed
    }

    /// Whether queries can go now (1-RTT or 0-RTT keys), rather than after the handshake.
    #[inline]
    pub fn can_send_now(&self) -> bool {
        self.one_rtt.is_some() || self.zero_rtt_keys.is_some()
    }

    /// Opens the client's unidirectional stream with these bytes (HTTP/3's control stream),
    /// never finished: it stays open for the connection's life. It goes out before the
    /// requests opened after it, once the server allows a unidirectional stream. A client has
    /// one at most: a second call opens nothing and returns `None`.
    pub fn open_uni_stream(&mut self, data: &'static [u8]) -> Option<u64> {
        self.streams.open_uni(data)
    }

    /// Opens a bidirectional stream for one request (its bytes as sent, the stream then
    /// finished); it goes out as soon as keys, the server's limits and congestion allow.
    pub fn open_stream(&mut self, query: Vec<u8>) -> u64 {
        self.streams.open(query)
    }

    /// Forgets a stream (its request timed out): nothing more is sent or told for it.
    pub fn forget_stream(&mut self, id: u64) {
        self.streams.forget(id);
    }

    /// Key updates this client started (RFC 9001 §6), after
    /// [`Config::key_update_packets`] packets each.
    #[inline]
    pub fn key_updates_started(&self) -> u64 {
        self.one_rtt.as_ref().map_or(0, |k| k.started())
    }

    /// The current key phase bit.
    #[cfg(test)]
    pub fn key_phase(&self) -> bool {
        self.one_rtt.as_ref().is_some_and(|k| k.phase())
    }

    /// Whether the previous phase's read key is still kept.
    #[cfg(test)]
    pub fn holds_previous_keys(&self) -> bool {
        self.one_rtt.as_ref().is_some_and(|k| k.holds_previous())
    }

    /// Changes the key update interval of a running connection.
    #[cfg(test)]
    pub fn set_key_update_packets(&mut self, n: u64) {
        self.key_update_packets = n;
    }

    /// The congestion window, in bytes.
    #[cfg(test)]
    pub fn cwnd(&self) -> u64 {
        self.recovery.cwnd()
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
        take("recovery", &mut || self.recovery.compact());
        take("streams", &mut || self.streams.compact());
        take("peer", &mut || self.peer = Default::default());
        take("cids", &mut || {
            self.cids.drop_heap();
        });
        take("queues", &mut || {
            self.events = VecDeque::new();
        });
        parts
    }

    /// The next thing to tell the caller.
    #[inline]
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
            && self.recovery.is_empty()
            && self.tls.is_none()
    }

    /// Gives back the memory of the queues and tables an idle connection does not use: a
    /// connection keeps what its busiest moment needed otherwise, 7 KB per idle connection
    /// (`an_idle_connection_keeps_a_few_kilobytes`).
    fn compact(&mut self) {
        self.streams.compact();
        self.events = VecDeque::new();
        self.recovery.compact();
        for s in &mut self.spaces {
            s.compact();
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
        self.streams.forget_all();
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
        at(self.one_rtt.as_ref().and_then(|k| k.previous_until()));
        at(self.spaces[DATA].ack_deadline());
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
        let idle = idle.max(3 * self.recovery.pto_base(DATA));
        self.last_activity.saturating_add(idle)
    }

    /// Runs the timers that are due.
    pub fn on_timeout(&mut self, now: i64) {
        if self.closed.is_some() {
            return;
        }
        if now >= self.idle_deadline() {
            self.closed = Some(Closed::TimedOut);
            self.streams.forget_all();
            return;
        }
        if self.tls_drop_at.is_some_and(|t| t <= now) {
            self.drop_tls();
        }
        if let Some(k) = self.one_rtt.as_mut() {
            k.on_timeout(now);
        }
        if let Some((t, space, loss)) = self.loss_or_pto() {
            if t <= now {
                if loss {
                    let lost = self.recovery.detect_lost(space, now, &[]);
                    self.requeue_lost(space, lost);
                } else {
                    self.on_pto(space);
                }
            }
        }
    }

    fn drop_tls(&mut self) {
        self.tls = None;
        self.tls_drop_at = None;
        for s in &mut self.spaces {
            s.drop_crypto();
        }
    }

    fn violation(&mut self, code: u64, why: &'static str) {
        self.close_with(Closed::Violation(why), code, false);
    }

    /// What loss recovery needs to know of the keys and the handshake.
    fn key_state(&self) -> KeyState {
        KeyState {
            keys: [
                self.spaces[INITIAL].keys.is_some(),
                self.spaces[HANDSHAKE].keys.is_some(),
                self.one_rtt.is_some() || self.zero_rtt_keys.is_some(),
            ],
            handshake_done: self.handshake_done,
            keep_alive: !self.confirmed && self.closed.is_none(),
        }
    }

    /// The earliest loss-detection deadline: (time, space, whether a loss timer rather than a
    /// PTO).
    fn loss_or_pto(&self) -> Option<(i64, usize, bool)> {
        self.recovery.loss_or_pto(self.key_state())
    }

    /// RFC 9002 §6.2.4: a probe timeout sends two ack-eliciting probes, with new data if
    /// there is some, else data in flight again ([`Connection::queue_probe_data`]). (This
    /// client used to move the whole flight back to its queues on a PTO: every ACK later than
    /// the PTO, as quinn's for 0-RTT data, counted a packet lost and sent it again.)
    fn on_pto(&mut self, space: usize) {
        self.recovery.on_pto(space);
    }

    /// A probe is due in `space` and it has no new data: the frames of the oldest packet in
    /// flight go again in it, so that each of a PTO's two probes carries data (as quinn's do),
    /// and the loss of one probe does not leave the other a bare PING. In the Initial space,
    /// a bare PING cannot start the server's handshake: with the first probe lost, it cost the
    /// client a round trip and another PTO.
    pub(super) fn queue_probe_data(&mut self, space: usize) {
        if self.recovery.probes(space) == 0 {
            return;
        }
        let new_data = match space {
            DATA => self.streams.has_data(),
            _ => self.spaces[space].has_crypto(),
        };
        if new_data {
            return;
        }
        for f in self.recovery.take_oldest_frames(space) {
            self.requeue(space, f);
        }
    }

    /// An ACK frame came in `space`.
    fn on_ack(&mut self, now: i64, space: usize, frame: &Frame<'_>, delay: u64) {
        let Frame::Ack { largest, .. } = *frame else {
            return;
        };
        if largest >= self.spaces[space].next_pn {
            self.violation(PROTOCOL_VIOLATION, "quic-protocol-violation");
            return;
        }
        if space == DATA {
            if let Some(k) = self.one_rtt.as_mut() {
                k.on_ack(largest);
            }
        }
        let ranges: Vec<(u64, u64)> = frame.ack_ranges().collect();
        let (peer, confirmed) = (&self.peer, self.confirmed);
        // RFC 9002 §5.3: the peer's delay, no more than its max_ack_delay once the handshake
        // is confirmed; Initial acknowledgements are not delayed.
        let ack_delay = || {
            if space == DATA {
                let d = (delay << peer.ack_delay_exponent.min(20)) as i64 * 1000;
                if confirmed {
                    d.min(peer.max_ack_delay_ms as i64 * 1_000_000)
                } else {
                    d
                }
            } else {
                0
            }
        };
        let lost =
            self.recovery
                .on_ack(now, space, &ranges, largest, self.handshake_done, ack_delay);
        self.requeue_lost(space, lost);
    }

    /// Queues the frames of packets of `space` that will not be acknowledged again.
    fn requeue_lost(&mut self, space: usize, lost: Vec<Sent>) {
        for p in lost {
            for f in p.frames {
                self.requeue(space, f);
            }
        }
    }

    /// Queues a frame of a packet of `space` that will not be acknowledged again.
    fn requeue(&mut self, space: usize, frame: Retx) {
        match frame {
            Retx::Crypto { offset, len } => self.spaces[space].requeue_crypto(offset, len),
            Retx::RetireCid(seq) => self.cids.requeue_retire(seq),
            Retx::Stream(_) | Retx::MaxData | Retx::StreamDataBlocked(_) => {
                self.streams.requeue(frame)
            }
        }
    }
}
