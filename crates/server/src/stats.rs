//! Counters kept by the server threads and their snapshots: queries and responses by transport,
//! kind and response code, truncated, dropped and malformed messages, bytes in and out, the
//! stream connections (open, peak, accepted, closed idle or evicted) and the TLS sessions
//! (accepted, handshakes, resumptions, errors).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ldplayer_dns::Rcode;
use ldplayer_zone::{Kind, Outcome};
use serde::Serialize;

use crate::doh::{DohError, DOH_ERROR_KINDS};
use crate::doq::{DoqError, DOQ_ERROR_KINDS};

/// Responses sent, by [`Kind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCounts {
    /// Authoritative data in the answer section ([`Kind::Answer`]).
    pub answer: u64,
    /// Referrals to a child zone ([`Kind::Referral`]).
    pub referral: u64,
    /// NXDOMAIN ([`Kind::NxDomain`]).
    pub nxdomain: u64,
    /// NOERROR without data ([`Kind::NoData`]).
    pub nodata: u64,
    /// REFUSED: the name is in no served zone ([`Kind::Refused`]).
    pub refused: u64,
    /// FORMERR ([`Kind::FormErr`]).
    pub formerr: u64,
    /// NOTIMP ([`Kind::NotImp`]).
    pub notimp: u64,
    /// BADVERS ([`Kind::BadVers`]).
    pub badvers: u64,
    /// YXDOMAIN after a DNAME substitution ([`Kind::YxDomain`]).
    pub yxdomain: u64,
}

impl KindCounts {
    /// The count for one kind.
    pub fn get(&self, kind: Kind) -> u64 {
        match kind {
            Kind::Answer => self.answer,
            Kind::Referral => self.referral,
            Kind::NxDomain => self.nxdomain,
            Kind::NoData => self.nodata,
            Kind::Refused => self.refused,
            Kind::FormErr => self.formerr,
            Kind::NotImp => self.notimp,
            Kind::BadVers => self.badvers,
            Kind::YxDomain => self.yxdomain,
        }
    }

    /// The sum over all kinds.
    pub fn total(&self) -> u64 {
        self.answer
            + self.referral
            + self.nxdomain
            + self.nodata
            + self.refused
            + self.formerr
            + self.notimp
            + self.badvers
            + self.yxdomain
    }
}

/// Response codes counted one by one (0 to 23, BADCOOKIE, covers every code the server sends
/// and more); higher ones share one more slot, the last.
pub const RCODE_SLOTS: usize = 25;

/// Responses sent, by response code (extended, as answered).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RcodeCounts {
    /// `counts[c]`: responses with code `c`, for `c` below [`RCODE_SLOTS`] − 1; the last slot
    /// counts every higher code.
    pub counts: [u64; RCODE_SLOTS],
}

impl RcodeCounts {
    /// The slot of a response code.
    pub fn slot(rcode: Rcode) -> usize {
        (rcode.0 as usize).min(RCODE_SLOTS - 1)
    }

    /// The codes with at least one response and their counts, lowest code first; the last
    /// slot's code stands for itself and every higher one.
    pub fn nonzero(&self) -> impl Iterator<Item = (Rcode, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(c, &n)| (Rcode(c as u16), n))
    }

    /// The sum over all codes.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Responses by the level of the zone that answered (the root, a TLD, or below) and their
/// response code (NOERROR, NXDOMAIN, or another): a recursive resolver's upstream queries
/// against an emulated hierarchy, as a root or TLD operator would count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// `counts[level][class]`: level 0 the root, 1 a TLD, 2 below; class 0 NOERROR, 1
    /// NXDOMAIN, 2 any other code.
    pub counts: [[u64; 3]; 3],
}

impl LevelCounts {
    /// The names of the levels, as the JSON report has them.
    pub const LEVELS: [&'static str; 3] = ["root", "tld", "below"];
    /// The names of the response-code classes.
    pub const CLASSES: [&'static str; 3] = ["NOERROR", "NXDOMAIN", "other"];

    /// The slot (level × 3 + class) of a response, or `None` when no zone answered.
    pub fn slot(o: &Outcome) -> Option<usize> {
        let level = usize::from(o.zone_labels?).min(2);
        let class = match o.rcode {
            Rcode::NOERROR => 0,
            Rcode::NXDOMAIN => 1,
            _ => 2,
        };
        Some(level * 3 + class)
    }

    /// Responses from zones of one level.
    pub fn level_total(&self, level: usize) -> u64 {
        self.counts.get(level).map_or(0, |c| c.iter().sum())
    }
}

/// A snapshot of the server's counters (summed over all threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Datagrams received over UDP (including those dropped).
    pub udp_queries: u64,
    /// Length-framed messages received over TCP (including those dropped); not those over TLS.
    pub tcp_queries: u64,
    /// Length-framed messages received over TLS (including those dropped).
    pub tls_queries: u64,
    /// Responses produced (UDP, TCP and TLS); those that then failed to send are in
    /// [`send_errors`](Self::send_errors) too.
    pub responses: u64,
    /// Responses produced over UDP.
    pub udp_responses: u64,
    /// Responses produced over TCP (not TLS).
    pub tcp_responses: u64,
    /// Responses produced over TLS.
    pub tls_responses: u64,
    /// Responses with TC set.
    pub truncated: u64,
    /// Responses by kind (response code class).
    pub kinds: KindCounts,
    /// Queries that got no response: no reply was due (shorter than a header, QR set) or the
    /// datagram was longer than the receive buffer.
    pub dropped: u64,
    /// UDP responses the kernel refused to send.
    pub send_errors: u64,
    /// TCP connections accepted, those on TLS listeners included (they share one connection
    /// table, cap and idle timeout).
    pub tcp_accepted: u64,
    /// TCP connections (TLS ones included) closed after being idle for the idle timeout.
    pub tcp_idle_closed: u64,
    /// TCP connections (TLS ones included) closed to make room for a new one beyond the
    /// connection cap.
    pub tcp_evicted: u64,
    /// TCP connections (TLS ones included) closed for a malformed length prefix (shorter than a
    /// DNS header) or for ending in the middle of a message.
    pub tcp_malformed: u64,
    /// Connections accepted on TLS listeners (also in [`tcp_accepted`](Self::tcp_accepted)).
    pub tls_accepted: u64,
    /// TLS handshakes completed, resumed ones included.
    pub tls_handshakes: u64,
    /// TLS handshakes that resumed an earlier session (a ticket or session ID), so no
    /// certificate was sent.
    pub tls_resumed: u64,
    /// TLS connections closed for a TLS error: a failed handshake (garbage instead of a
    /// ClientHello, no common version or cipher suite) or a bad record later.
    pub tls_errors: u64,
    /// Queries refused because they were sent to an address that no view (nameserver) has, in
    /// split-horizon mode; also counted in [`KindCounts::refused`].
    pub no_view: u64,
    /// Responses by response code.
    pub rcodes: RcodeCounts,
    /// Responses by the level of the zone that answered, and response code.
    pub levels: LevelCounts,
    /// Bytes of DNS messages received (UDP payloads, TCP messages without their length prefix,
    /// including those dropped).
    pub bytes_in: u64,
    /// Bytes of the responses produced (as [`responses`](Self::responses) counts them).
    pub bytes_out: u64,
    /// TCP connections (TLS ones included) open now.
    pub tcp_open: u64,
    /// Most TCP connections (TLS ones included) open at once so far (the TCP thread's peak;
    /// there is one).
    pub tcp_peak_open: u64,
    /// DNS queries received over DNS over HTTPS (requests that carried a message of at least a
    /// header; those answered 400 for not being a query included).
    pub doh_queries: u64,
    /// Responses produced over DNS over HTTPS (sent with status 200).
    pub doh_responses: u64,
    /// Connections accepted on DoH listeners (those then refused for the cap included).
    pub doh_accepted: u64,
    /// TLS handshakes completed on DoH listeners, resumed ones included.
    pub doh_handshakes: u64,
    /// DoH TLS handshakes that resumed an earlier session.
    pub doh_resumed: u64,
    /// DoH connections closed for opening no stream (or not finishing their handshakes) within
    /// the idle timeout.
    pub doh_idle_closed: u64,
    /// DoH connections open now.
    pub doh_open: u64,
    /// Most DoH connections open at once so far.
    pub doh_peak_open: u64,
    /// DoH requests refused and connections closed, by kind.
    pub doh_errors: DohErrors,
    /// DNS queries received over DNS over QUIC (one per stream that carried a whole message
    /// with ID 0).
    pub doq_queries: u64,
    /// Responses produced over DNS over QUIC.
    pub doq_responses: u64,
    /// QUIC connections the DoQ listeners were offered (those refused for the cap included).
    pub doq_accepted: u64,
    /// QUIC handshakes completed.
    pub doq_handshakes: u64,
    /// Handshakes that presented a valid session ticket (resumed an earlier session).
    pub doq_resumed: u64,
    /// Queries that arrived in 0-RTT (before the handshake was over), on resumed sessions.
    pub doq_zero_rtt: u64,
    /// DoQ connections closed by QUIC's idle timeout.
    pub doq_idle_closed: u64,
    /// DoQ connections open now.
    pub doq_open: u64,
    /// Most DoQ connections open at once so far.
    pub doq_peak_open: u64,
    /// DoQ streams and connections refused, by kind.
    pub doq_errors: DoqErrors,
}

/// DNS over QUIC streams reset and connections closed for an error, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DoqErrors {
    /// Connections closed with `DOQ_PROTOCOL_ERROR` for a query whose message ID is not 0
    /// (RFC 9250 §4.2.1).
    pub nonzero_id: u64,
    /// Streams reset for not being one whole message (a length that does not match, bytes
    /// after the message, shorter than a header, longer than 65,535 bytes, a response).
    pub bad_stream: u64,
    /// Streams the client reset or did not finish in time.
    pub incomplete: u64,
    /// Connections whose handshake failed (no `doq` in the client's ALPN included).
    pub handshake: u64,
    /// Connections refused because [`DoqConfig::max_connections`](crate::DoqConfig) were open.
    pub refused_connections: u64,
}

impl DoqErrors {
    /// Adds another count to this one.
    pub fn add(&mut self, o: &DoqErrors) {
        self.nonzero_id += o.nonzero_id;
        self.bad_stream += o.bad_stream;
        self.incomplete += o.incomplete;
        self.handshake += o.handshake;
        self.refused_connections += o.refused_connections;
    }
}

/// DNS over HTTPS requests answered with an HTTP error, and connections closed for an error,
/// by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DohErrors {
    /// 400: no `dns` parameter, bad base64url, a body that is no DNS query.
    pub bad_request: u64,
    /// 404: a path other than the DoH path.
    pub not_found: u64,
    /// 405: a method other than GET and POST.
    pub method_not_allowed: u64,
    /// 413 or 414: a message longer than 65535 bytes.
    pub too_large: u64,
    /// 415: a POST whose content type is not `application/dns-message`.
    pub unsupported_media_type: u64,
    /// Connections closed for a failed TLS handshake (no `h2` in the client's ALPN included).
    pub tls: u64,
    /// Connections closed for an HTTP/2 protocol error (e.g. no HTTP/2 preface).
    pub http: u64,
    /// Connections closed on accept because [`DohConfig::max_connections`](crate::DohConfig)
    /// were open.
    pub refused_connections: u64,
}

impl DohErrors {
    /// Requests answered with an HTTP error status.
    pub fn requests(&self) -> u64 {
        self.bad_request
            + self.not_found
            + self.method_not_allowed
            + self.too_large
            + self.unsupported_media_type
    }

    /// Adds another count to this one.
    pub fn add(&mut self, o: &DohErrors) {
        self.bad_request += o.bad_request;
        self.not_found += o.not_found;
        self.method_not_allowed += o.method_not_allowed;
        self.too_large += o.too_large;
        self.unsupported_media_type += o.unsupported_media_type;
        self.tls += o.tls;
        self.http += o.http;
        self.refused_connections += o.refused_connections;
    }
}

impl ServerStats {
    /// Adds another snapshot to this one.
    pub fn add(&mut self, o: &ServerStats) {
        self.udp_queries += o.udp_queries;
        self.tcp_queries += o.tcp_queries;
        self.tls_queries += o.tls_queries;
        self.responses += o.responses;
        self.udp_responses += o.udp_responses;
        self.tcp_responses += o.tcp_responses;
        self.tls_responses += o.tls_responses;
        self.truncated += o.truncated;
        self.dropped += o.dropped;
        self.send_errors += o.send_errors;
        self.tcp_accepted += o.tcp_accepted;
        self.tcp_idle_closed += o.tcp_idle_closed;
        self.tcp_evicted += o.tcp_evicted;
        self.tcp_malformed += o.tcp_malformed;
        self.tls_accepted += o.tls_accepted;
        self.tls_handshakes += o.tls_handshakes;
        self.tls_resumed += o.tls_resumed;
        self.tls_errors += o.tls_errors;
        self.no_view += o.no_view;
        for (a, b) in self.rcodes.counts.iter_mut().zip(o.rcodes.counts) {
            *a += b;
        }
        for (a, b) in self.levels.counts.iter_mut().zip(o.levels.counts) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.tcp_open += o.tcp_open;
        self.tcp_peak_open += o.tcp_peak_open;
        self.doh_queries += o.doh_queries;
        self.doh_responses += o.doh_responses;
        self.doh_accepted += o.doh_accepted;
        self.doh_handshakes += o.doh_handshakes;
        self.doh_resumed += o.doh_resumed;
        self.doh_idle_closed += o.doh_idle_closed;
        self.doh_open += o.doh_open;
        self.doh_peak_open += o.doh_peak_open;
        self.doh_errors.add(&o.doh_errors);
        self.doq_queries += o.doq_queries;
        self.doq_responses += o.doq_responses;
        self.doq_accepted += o.doq_accepted;
        self.doq_handshakes += o.doq_handshakes;
        self.doq_resumed += o.doq_resumed;
        self.doq_zero_rtt += o.doq_zero_rtt;
        self.doq_idle_closed += o.doq_idle_closed;
        self.doq_open += o.doq_open;
        self.doq_peak_open += o.doq_peak_open;
        self.doq_errors.add(&o.doq_errors);
        let (k, ok) = (&mut self.kinds, &o.kinds);
        k.answer += ok.answer;
        k.referral += ok.referral;
        k.nxdomain += ok.nxdomain;
        k.nodata += ok.nodata;
        k.refused += ok.refused;
        k.formerr += ok.formerr;
        k.notimp += ok.notimp;
        k.badvers += ok.badvers;
        k.yxdomain += ok.yxdomain;
    }
}

const KINDS: usize = 9;

fn kind_index(k: Kind) -> usize {
    match k {
        Kind::Answer => 0,
        Kind::Referral => 1,
        Kind::NxDomain => 2,
        Kind::NoData => 3,
        Kind::Refused => 4,
        Kind::FormErr => 5,
        Kind::NotImp => 6,
        Kind::BadVers => 7,
        Kind::YxDomain => 8,
    }
}

/// One thread's counters: written by that thread only, read by [`crate::RunningServer::stats`].
/// Aligned so that two threads' counters never share a cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Counters {
    pub udp_queries: AtomicU64,
    pub tcp_queries: AtomicU64,
    pub tls_queries: AtomicU64,
    pub udp_responses: AtomicU64,
    pub tcp_responses: AtomicU64,
    pub tls_responses: AtomicU64,
    pub truncated: AtomicU64,
    pub kinds: [AtomicU64; KINDS],
    pub dropped: AtomicU64,
    pub send_errors: AtomicU64,
    pub tcp_accepted: AtomicU64,
    pub tcp_idle_closed: AtomicU64,
    pub tcp_evicted: AtomicU64,
    pub tcp_malformed: AtomicU64,
    pub tls_accepted: AtomicU64,
    pub tls_handshakes: AtomicU64,
    pub tls_resumed: AtomicU64,
    pub tls_errors: AtomicU64,
    pub no_view: AtomicU64,
    pub rcodes: [AtomicU64; RCODE_SLOTS],
    pub levels: [AtomicU64; 9],
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// A gauge: connections open now (the TCP thread stores it).
    pub tcp_open: AtomicU64,
    /// The most connections open at once (the TCP thread stores it).
    pub tcp_peak_open: AtomicU64,
    pub doh_queries: AtomicU64,
    pub doh_responses: AtomicU64,
    pub doh_accepted: AtomicU64,
    pub doh_handshakes: AtomicU64,
    pub doh_resumed: AtomicU64,
    pub doh_idle_closed: AtomicU64,
    /// By [`DohError`], in its order.
    pub doh_errors: [AtomicU64; DOH_ERROR_KINDS],
    /// A gauge: DoH connections open now (the DoH thread stores it).
    pub doh_open: AtomicU64,
    /// The most DoH connections open at once.
    pub doh_peak_open: AtomicU64,
    pub doq_queries: AtomicU64,
    pub doq_responses: AtomicU64,
    pub doq_accepted: AtomicU64,
    pub doq_handshakes: AtomicU64,
    /// Shared with the rustls ticketer of the DoQ listeners, which runs on the DoQ thread.
    pub doq_resumed: std::sync::Arc<AtomicU64>,
    pub doq_zero_rtt: AtomicU64,
    pub doq_idle_closed: AtomicU64,
    /// By [`DoqError`], in its order.
    pub doq_errors: [AtomicU64; DOQ_ERROR_KINDS],
    /// A gauge: DoQ connections open now (the DoQ thread stores it).
    pub doq_open: AtomicU64,
    /// The most DoQ connections open at once.
    pub doq_peak_open: AtomicU64,
}

/// The transport a message came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Udp,
    Tcp,
    Tls,
    Doh,
    Doq,
}

/// Adds one to a counter that only this thread writes (a load and a store, no locked op).
#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

/// Adds `n` to a counter that only this thread writes.
#[inline]
pub(crate) fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

impl Counters {
    /// Counts a query of `len` bytes.
    #[inline]
    pub fn query(&self, len: usize, over: Transport) {
        bump(match over {
            Transport::Udp => &self.udp_queries,
            Transport::Tcp => &self.tcp_queries,
            Transport::Tls => &self.tls_queries,
            Transport::Doh => &self.doh_queries,
            Transport::Doq => &self.doq_queries,
        });
        add(&self.bytes_in, len as u64);
    }

    /// Counts a response of `len` bytes.
    #[inline]
    pub fn response(&self, o: &Outcome, len: usize, over: Transport) {
        bump(match over {
            Transport::Udp => &self.udp_responses,
            Transport::Tcp => &self.tcp_responses,
            Transport::Tls => &self.tls_responses,
            Transport::Doh => &self.doh_responses,
            Transport::Doq => &self.doq_responses,
        });
        if o.truncated {
            bump(&self.truncated);
        }
        bump(&self.kinds[kind_index(o.kind)]);
        bump(&self.rcodes[RcodeCounts::slot(o.rcode)]);
        if let Some(slot) = LevelCounts::slot(o) {
            bump(&self.levels[slot]);
        }
        add(&self.bytes_out, len as u64);
    }

    /// Records the number of TCP connections open now, and the peak.
    pub fn tcp_open(&self, open: usize) {
        let open = open as u64;
        self.tcp_open.store(open, Relaxed);
        if open > self.tcp_peak_open.load(Relaxed) {
            self.tcp_peak_open.store(open, Relaxed);
        }
    }

    /// Records the number of DoH connections open now, and the peak.
    pub fn doh_open(&self, open: usize) {
        let open = open as u64;
        self.doh_open.store(open, Relaxed);
        if open > self.doh_peak_open.load(Relaxed) {
            self.doh_peak_open.store(open, Relaxed);
        }
    }

    /// Records the number of DoQ connections open now, and the peak.
    pub fn doq_open(&self, open: usize) {
        let open = open as u64;
        self.doq_open.store(open, Relaxed);
        if open > self.doq_peak_open.load(Relaxed) {
            self.doq_peak_open.store(open, Relaxed);
        }
    }

    /// The current values.
    pub fn snapshot(&self) -> ServerStats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        let k = |kind: Kind| g(&self.kinds[kind_index(kind)]);
        let udp_responses = g(&self.udp_responses);
        let tcp_responses = g(&self.tcp_responses);
        let tls_responses = g(&self.tls_responses);
        let doh_responses = g(&self.doh_responses);
        let doq_responses = g(&self.doq_responses);
        let e = |kind: DohError| g(&self.doh_errors[kind as usize]);
        let q = |kind: DoqError| g(&self.doq_errors[kind as usize]);
        ServerStats {
            udp_queries: g(&self.udp_queries),
            tcp_queries: g(&self.tcp_queries),
            tls_queries: g(&self.tls_queries),
            responses: udp_responses
                + tcp_responses
                + tls_responses
                + doh_responses
                + doq_responses,
            udp_responses,
            tcp_responses,
            tls_responses,
            truncated: g(&self.truncated),
            kinds: KindCounts {
                answer: k(Kind::Answer),
                referral: k(Kind::Referral),
                nxdomain: k(Kind::NxDomain),
                nodata: k(Kind::NoData),
                refused: k(Kind::Refused),
                formerr: k(Kind::FormErr),
                notimp: k(Kind::NotImp),
                badvers: k(Kind::BadVers),
                yxdomain: k(Kind::YxDomain),
            },
            dropped: g(&self.dropped),
            send_errors: g(&self.send_errors),
            tcp_accepted: g(&self.tcp_accepted),
            tcp_idle_closed: g(&self.tcp_idle_closed),
            tcp_evicted: g(&self.tcp_evicted),
            tcp_malformed: g(&self.tcp_malformed),
            tls_accepted: g(&self.tls_accepted),
            tls_handshakes: g(&self.tls_handshakes),
            tls_resumed: g(&self.tls_resumed),
            tls_errors: g(&self.tls_errors),
            no_view: g(&self.no_view),
            rcodes: RcodeCounts {
                counts: std::array::from_fn(|i| g(&self.rcodes[i])),
            },
            levels: LevelCounts {
                counts: std::array::from_fn(|l| {
                    std::array::from_fn(|c| g(&self.levels[l * 3 + c]))
                }),
            },
            bytes_in: g(&self.bytes_in),
            bytes_out: g(&self.bytes_out),
            tcp_open: g(&self.tcp_open),
            tcp_peak_open: g(&self.tcp_peak_open),
            doh_queries: g(&self.doh_queries),
            doh_responses,
            doh_accepted: g(&self.doh_accepted),
            doh_handshakes: g(&self.doh_handshakes),
            doh_resumed: g(&self.doh_resumed),
            doh_idle_closed: g(&self.doh_idle_closed),
            doh_open: g(&self.doh_open),
            doh_peak_open: g(&self.doh_peak_open),
            doh_errors: DohErrors {
                bad_request: e(DohError::BadRequest),
                not_found: e(DohError::NotFound),
                method_not_allowed: e(DohError::MethodNotAllowed),
                too_large: e(DohError::TooLarge),
                unsupported_media_type: e(DohError::UnsupportedMediaType),
                tls: e(DohError::Tls),
                http: e(DohError::Http),
                refused_connections: e(DohError::Refused),
            },
            doq_queries: g(&self.doq_queries),
            doq_responses,
            doq_accepted: g(&self.doq_accepted),
            doq_handshakes: g(&self.doq_handshakes),
            doq_resumed: g(&self.doq_resumed),
            doq_zero_rtt: g(&self.doq_zero_rtt),
            doq_idle_closed: g(&self.doq_idle_closed),
            doq_open: g(&self.doq_open),
            doq_peak_open: g(&self.doq_peak_open),
            doq_errors: DoqErrors {
                nonzero_id: q(DoqError::NonzeroId),
                bad_stream: q(DoqError::BadStream),
                incomplete: q(DoqError::Incomplete),
                handshake: q(DoqError::Handshake),
                refused_connections: q(DoqError::Refused),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_count_by_the_level_of_their_zone() {
        let c = Counters::default();
        let outcome = |labels: Option<u8>, rcode| Outcome {
            rcode,
            kind: Kind::Answer,
            truncated: false,
            zone_labels: labels,
        };
        c.response(&outcome(Some(0), Rcode::NOERROR), 10, Transport::Udp);
        c.response(&outcome(Some(0), Rcode::NXDOMAIN), 10, Transport::Udp);
        c.response(&outcome(Some(1), Rcode::NOERROR), 10, Transport::Udp);
        c.response(&outcome(Some(4), Rcode::SERVFAIL), 10, Transport::Udp);
        c.response(&outcome(None, Rcode::REFUSED), 10, Transport::Udp);
        let s = c.snapshot();
        assert_eq!(s.levels.counts, [[1, 1, 0], [1, 0, 0], [0, 0, 1]]);
        assert_eq!(s.levels.level_total(0), 2);
        let mut twice = s;
        twice.add(&s);
        assert_eq!(twice.levels.level_total(2), 2);
    }
}
