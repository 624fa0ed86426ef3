//! Counters kept by the server threads and their snapshots.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ldplayer_zone::{Kind, Outcome};

/// Responses sent, by [`Kind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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

/// A snapshot of the server's counters (summed over all threads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Datagrams received over UDP (including those dropped).
    pub udp_queries: u64,
    /// Length-framed messages received over TCP (including those dropped).
    pub tcp_queries: u64,
    /// Responses produced (UDP and TCP); those that then failed to send are in
    /// [`send_errors`](Self::send_errors) too.
    pub responses: u64,
    /// Responses produced over UDP.
    pub udp_responses: u64,
    /// Responses produced over TCP.
    pub tcp_responses: u64,
    /// Responses with TC set.
    pub truncated: u64,
    /// Responses by kind (response code class).
    pub kinds: KindCounts,
    /// Queries that got no response: no reply was due (shorter than a header, QR set) or the
    /// datagram was longer than the receive buffer.
    pub dropped: u64,
    /// UDP responses the kernel refused to send.
    pub send_errors: u64,
    /// TCP connections accepted.
    pub tcp_accepted: u64,
    /// TCP connections closed after being idle for the idle timeout.
    pub tcp_idle_closed: u64,
    /// TCP connections closed to make room for a new one beyond the connection cap.
    pub tcp_evicted: u64,
    /// TCP connections closed for a malformed length prefix (shorter than a DNS header) or for
    /// ending in the middle of a message.
    pub tcp_malformed: u64,
    /// Queries refused because they were sent to an address that no view (nameserver) has, in
    /// split-horizon mode; also counted in [`KindCounts::refused`].
    pub no_view: u64,
}

impl ServerStats {
    /// Adds another snapshot to this one.
    pub fn add(&mut self, o: &ServerStats) {
        self.udp_queries += o.udp_queries;
        self.tcp_queries += o.tcp_queries;
        self.responses += o.responses;
        self.udp_responses += o.udp_responses;
        self.tcp_responses += o.tcp_responses;
        self.truncated += o.truncated;
        self.dropped += o.dropped;
        self.send_errors += o.send_errors;
        self.tcp_accepted += o.tcp_accepted;
        self.tcp_idle_closed += o.tcp_idle_closed;
        self.tcp_evicted += o.tcp_evicted;
        self.tcp_malformed += o.tcp_malformed;
        self.no_view += o.no_view;
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
    pub udp_responses: AtomicU64,
    pub tcp_responses: AtomicU64,
    pub truncated: AtomicU64,
    pub kinds: [AtomicU64; KINDS],
    pub dropped: AtomicU64,
    pub send_errors: AtomicU64,
    pub tcp_accepted: AtomicU64,
    pub tcp_idle_closed: AtomicU64,
    pub tcp_evicted: AtomicU64,
    pub tcp_malformed: AtomicU64,
    pub no_view: AtomicU64,
}

/// Adds one to a counter that only this thread writes (a load and a store, no locked op).
#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

impl Counters {
    /// Counts a response.
    #[inline]
    pub fn response(&self, o: &Outcome, tcp: bool) {
        bump(if tcp {
            &self.tcp_responses
        } else {
            &self.udp_responses
        });
        if o.truncated {
            bump(&self.truncated);
        }
        bump(&self.kinds[kind_index(o.kind)]);
    }

    /// The current values.
    pub fn snapshot(&self) -> ServerStats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        let k = |kind: Kind| g(&self.kinds[kind_index(kind)]);
        let udp_responses = g(&self.udp_responses);
        let tcp_responses = g(&self.tcp_responses);
        ServerStats {
            udp_queries: g(&self.udp_queries),
            tcp_queries: g(&self.tcp_queries),
            responses: udp_responses + tcp_responses,
            udp_responses,
            tcp_responses,
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
            no_view: g(&self.no_view),
        }
    }
}
