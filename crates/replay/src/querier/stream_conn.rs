//! A stream connection's parts: the connection itself (its socket, protocol and queries), and
//! the socket-side helpers of [`super::stream::StreamSessions`]: reads with the kernel's
//! receive stamps, the last words before a close, queries marked sent as their bytes reach the
//! kernel.

use super::inflight::Slot;
use super::send_times::SendTimes;
use super::transport::StreamTransport;
use crate::tls::TlsBase;
use ldplayer_trace::Proto;
use mio::net::TcpStream;
use rustls_pki_types::ServerName;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Bytes read from a socket at a time: a TLS record's most, and then some.
pub(super) const READ_CHUNK: usize = 16 * 1024 + 256;

/// Whether a connection's non-blocking connect has completed.
#[derive(PartialEq, Eq, Clone, Copy)]
pub(super) enum ConnState {
    Connecting,
    Open,
}

/// A client's TCP or TLS connection: its socket, its protocol and the queries in flight on it.
pub(super) struct Conn {
    pub(super) uid: u64,
    pub(super) client: u32,
    pub(super) proto: Proto,
    pub(super) sock: TcpStream,
    /// Framing (and TLS): what the socket reads and writes, without I/O.
    pub(super) protocol: StreamTransport,
    pub(super) state: ConnState,
    /// Queries whose bytes have not all reached the kernel, in the order of their bytes.
    pub(super) unsent: VecDeque<Unsent>,
    /// When the connect started (realtime ns).
    pub(super) opened_ns: i64,
    /// Queries waiting for the kernel's send stamps; `None` without them.
    pub(super) send_times: Option<SendTimes>,
    /// The connection is ready for queries (connected, and for TLS the handshake is over).
    pub(super) ready: bool,
    pub(super) inflight: Vec<u32>,
    pub(super) queries: u64,
    /// A query sent on it timed out: a response with an ID that no query in flight has may be
    /// its late answer, not garbage (under overload, more queries time out than the querier
    /// remembers by ID).
    pub(super) timed_out: bool,
    pub(super) last_active_ns: i64,
    pub(super) idle_ns: i64,
}

/// A query on its way into a connection: its last byte lies at `wire_end` in the stream of
/// bytes on the socket once that is known (at once for TCP; once sealed for TLS).
pub(super) struct Unsent {
    pub(super) slot: u32,
    pub(super) gen: u32,
    pub(super) wire_end: Option<u64>,
}

/// Reads a socket with the kernel's receive times, keeping the last one.
pub(super) struct StampedRead {
    pub(super) fd: RawFd,
    pub(super) at: Option<i64>,
}

impl Read for StampedRead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, at) = ldplayer_udp::recv_stream(self.fd, buf)?;
        if at.is_some() {
            self.at = at;
        }
        Ok(n)
    }
}

/// The `:authority` of DoH requests to `dest`: the TLS server name when it is a DNS name, else
/// the address connected to.
pub(super) fn doh_authority(base: &TlsBase, dest: SocketAddr) -> Arc<str> {
    match &base.server_name {
        ServerName::DnsName(name) if dest.port() == 443 => name.as_ref().into(),
        ServerName::DnsName(name) => format!("{}:{}", name.as_ref(), dest.port()).into(),
        _ => dest.to_string().into(),
    }
}

/// Writes what the protocol has for the socket as far as the socket takes it now: the last
/// words (a TLS alert or close_notify) before a connection is closed.
pub(super) fn write_out(sock: &mut TcpStream, protocol: &mut StreamTransport) {
    while !protocol.output().is_empty() {
        match sock.write(protocol.output()) {
            Ok(0) => break,
            Ok(n) => protocol.consume_output(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Marks the queries whose bytes all reached the kernel (up to `on_wire` of the socket's byte
/// stream) as sent at `at`, hands them to `kernel` to wait for their stamps, forgets them, and
/// returns how many were sent for the first time.
pub(super) fn mark_sent(
    slots: &mut [Slot],
    unsent: &mut VecDeque<Unsent>,
    mut kernel: Option<&mut SendTimes>,
    on_wire: u64,
    at: i64,
) -> u64 {
    let mut first = 0;
    while let Some(u) = unsent.front() {
        match u.wire_end {
            Some(end) if end <= on_wire => {}
            _ => break,
        }
        let slot = &mut slots[u.slot as usize];
        if slot.live && slot.gen == u.gen && slot.sent_ns == 0 {
            slot.sent_ns = at;
            first += 1;
            if let (Some(k), Some(end)) = (kernel.as_deref_mut(), u.wire_end) {
                k.expect(u.slot, u.gen, end);
            }
        }
        unsent.pop_front();
    }
    first
}
