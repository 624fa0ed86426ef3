//! TCP stream reassembly and DNS message framing (RFC 1035 §4.2.2, RFC 7766).
//!
//! Each direction of a connection is reassembled on its own: in-order data is framed at once
//! (without copying when a segment holds whole messages), out-of-order segments wait in a bounded
//! buffer, duplicates and overlaps are trimmed. A hole that cannot be filled — the peer
//! acknowledged data that the capture does not hold, the buffer limit, a timeout, FIN/RST, the
//! end of the capture — is skipped, and framing resynchronizes by looking for a length prefix
//! followed by a DNS message that parses.

use super::net::{tcp_flag, TcpHeader};
use super::options::Keep;
use crate::{Proto, Record, Sink, SinkError, SkipReason};
use ldplayer_dns::{DnsError, Message};
use rustc_hash::FxHashMap;
use std::net::SocketAddr;

/// Where decoded messages and skips go.
pub(crate) struct Out<'a> {
    pub sink: &'a mut dyn Sink,
    /// Number of the packet being decoded (for skip locations).
    pub packet: u64,
    pub keep: Keep,
    /// Keep malformed messages (noted to the sink) rather than skipping them.
    pub keep_malformed: bool,
}

impl Out<'_> {
    #[inline]
    pub(crate) fn skip(&mut self, reason: SkipReason) {
        self.sink.skipped(reason, self.packet);
    }

    #[inline]
    fn message(&mut self, t: &Tmpl, wire: &[u8], time: i64) -> Result<(), SinkError> {
        self.record(t.src, t.dst, Proto::Tcp, t.conn, wire, time)
    }

    /// Passes on a message unless the QR filter drops it.
    #[inline]
    pub(crate) fn record(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        proto: Proto,
        conn: u64,
        wire: &[u8],
        time: i64,
    ) -> Result<(), SinkError> {
        if !self.keep.keeps(wire) {
            return Ok(());
        }
        self.sink.record(&Record {
            time_ns: time,
            src,
            dst,
            proto,
            conn,
            wire,
        })
    }

    /// A message of at least a header's length that does not parse: kept and noted, or
    /// skipped with its reason, as the options say.
    pub(crate) fn malformed(
        &mut self,
        error: DnsError,
        wire: &[u8],
        make: impl FnOnce(&mut Self, &[u8]) -> Result<(), SinkError>,
    ) -> Result<(), SinkError> {
        if !self.keep_malformed || wire.len() < ldplayer_dns::HEADER_LEN {
            self.skip(SkipReason::Dns(error));
        } else if self.keep.keeps(wire) {
            make(self, wire)?;
            self.sink.malformed(error, self.packet);
        }
        Ok(())
    }
}

/// The record fields shared by the messages of one direction.
#[derive(Clone, Copy)]
struct Tmpl {
    src: SocketAddr,
    dst: SocketAddr,
    conn: u64,
}

/// Why a direction is resynchronizing: decides what skipped bytes count as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resync {
    /// After a gap (already counted).
    Gap,
    /// At the first bytes seen of a connection whose start was not captured.
    Start,
    /// After bytes that do not frame a message.
    Junk,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Synced,
    Resync(Resync),
}

/// Framing state of one direction.
struct Framer {
    mode: Mode,
    /// Stream offset of the first byte not yet framed.
    base: u64,
    /// A frame that did not parse: its error and the stream offset of its end. If resync finds
    /// the next message right there (or the stream ends there), the frame was a malformed DNS
    /// message, not junk.
    pending_err: Option<(DnsError, u64)>,
    /// The bytes and time of that frame, when malformed messages are kept: at most one message
    /// (64 KiB) per direction.
    pending_msg: Option<(Vec<u8>, i64)>,
    /// Bytes were skipped since resync started.
    skipping: bool,
}

/// Plausibility of a DNS header seen while resynchronizing (before the message is complete).
#[inline]
fn plausible_header(h: &[u8]) -> bool {
    if h.len() < 12 {
        return h.len() < 3 || !matches!((h[2] >> 3) & 0xF, 3 | 7..=15);
    }
    let opcode = (h[2] >> 3) & 0xF;
    let qd = u16::from_be_bytes([h[4], h[5]]);
    !matches!(opcode, 3 | 7..=15) && qd <= 1
}

impl Framer {
    fn new(mode: Mode) -> Self {
        Framer {
            mode,
            base: 0,
            pending_err: None,
            pending_msg: None,
            skipping: false,
        }
    }

    /// Forgets a frame that did not parse.
    fn clear_pending(&mut self) {
        self.pending_err = None;
        self.pending_msg = None;
    }

    /// Counts the bytes skipped by a resync that ends (at stream offset `at`); a malformed
    /// message that ends right there is passed on (or counted by its DNS reason).
    fn end_skip(
        &mut self,
        reason: Resync,
        at: u64,
        t: &Tmpl,
        out: &mut Out<'_>,
    ) -> Result<(), SinkError> {
        let msg = self.pending_msg.take();
        if self.skipping {
            match self.pending_err.take() {
                Some((e, end)) if end == at => match msg {
                    Some((wire, time)) => {
                        out.malformed(e, &wire, |out, w| out.message(t, w, time))?
                    }
                    None => out.skip(SkipReason::Dns(e)),
                },
                Some(_) => out.skip(SkipReason::TcpJunk),
                None => match reason {
                    Resync::Junk => out.skip(SkipReason::TcpJunk),
                    Resync::Start => out.skip(SkipReason::TcpGap),
                    Resync::Gap => {}
                },
            }
        }
        self.clear_pending();
        self.skipping = false;
        Ok(())
    }

    /// Frames messages in `data` (the unframed bytes of the stream); returns how many bytes
    /// were used up. `last`: no more bytes will follow.
    fn frame(
        &mut self,
        data: &[u8],
        last: bool,
        time: i64,
        t: &Tmpl,
        out: &mut Out<'_>,
    ) -> Result<usize, SinkError> {
        let mut pos = 0;
        loop {
            match self.mode {
                Mode::Synced => {
                    if data.len() - pos < 2 {
                        break;
                    }
                    let len = u16::from_be_bytes([data[pos], data[pos + 1]]) as usize;
                    if len < 12 {
                        self.mode = Mode::Resync(Resync::Junk);
                        self.skipping = true;
                        pos += 1;
                        continue;
                    }
                    let end = pos + 2 + len;
                    if end > data.len() {
                        break;
                    }
                    let wire = &data[pos + 2..end];
                    match Message::parse(wire) {
                        Ok(_) => {
                            out.message(t, wire, time)?;
                            pos = end;
                        }
                        Err(e) => {
                            self.pending_err = Some((e, self.base + end as u64));
                            if out.keep_malformed {
                                self.pending_msg = Some((wire.to_vec(), time));
                            }
                            self.mode = Mode::Resync(Resync::Junk);
                            self.skipping = true;
                            pos += 1;
                        }
                    }
                }
                Mode::Resync(reason) => {
                    let mut found = None;
                    let mut waiting = None;
                    let mut q = pos;
                    while q + 2 <= data.len() {
                        let len = u16::from_be_bytes([data[q], data[q + 1]]) as usize;
                        if len >= 12 {
                            let end = q + 2 + len;
                            let h = &data[q + 2..end.min(data.len())];
                            if plausible_header(h) {
                                if end <= data.len() {
                                    if Message::parse(h).is_ok() {
                                        found = Some(q);
                                        break;
                                    }
                                } else if waiting.is_none() && !last {
                                    waiting = Some(q);
                                }
                            }
                        }
                        q += 1;
                    }
                    if let Some(q) = found {
                        if q > pos {
                            self.skipping = true;
                        }
                        self.end_skip(reason, self.base + q as u64, t, out)?;
                        self.mode = Mode::Synced;
                        pos = q;
                        continue;
                    }
                    let keep_from = match waiting {
                        Some(q) => q,
                        None if last => data.len(),
                        // The last byte may start a length prefix.
                        None => data.len().saturating_sub(1).max(pos),
                    };
                    if keep_from > pos {
                        self.skipping = true;
                    }
                    pos = keep_from;
                    if last && pos == data.len() {
                        self.end_skip(reason, self.base + pos as u64, t, out)?;
                    }
                    break;
                }
            }
        }
        self.base += pos as u64;
        Ok(pos)
    }
}

/// An out-of-order segment.
struct Seg {
    seq: u32,
    time: i64,
    data: Vec<u8>,
}

/// One direction of a connection.
struct Dir {
    started: bool,
    syn_isn: Option<u32>,
    /// Next expected sequence number.
    next: u32,
    /// Sequence number of the FIN, once seen.
    fin_seq: Option<u32>,
    /// Highest acknowledgment number the peer sent.
    acked: Option<u32>,
    finished: bool,
    framer: Framer,
    /// Unframed in-order bytes (a partial message), ending at `next`.
    buf: Vec<u8>,
    ooo: Vec<Seg>,
    ooo_bytes: usize,
    /// Capture time since which the direction has been waiting on a hole.
    hole_since: i64,
}

/// Signed distance from `b` to `a` in sequence space.
#[inline]
fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl Dir {
    fn new() -> Self {
        Dir {
            started: false,
            syn_isn: None,
            next: 0,
            fin_seq: None,
            acked: None,
            finished: false,
            framer: Framer::new(Mode::Synced),
            buf: Vec::new(),
            ooo: Vec::new(),
            ooo_bytes: 0,
            hole_since: 0,
        }
    }

    fn start(&mut self, next: u32, mode: Mode) {
        self.started = true;
        self.next = next;
        self.framer = Framer::new(mode);
    }

    /// Takes in-order bytes.
    fn consume(
        &mut self,
        chunk: &[u8],
        time: i64,
        t: &Tmpl,
        out: &mut Out<'_>,
    ) -> Result<(), SinkError> {
        self.next = self.next.wrapping_add(chunk.len() as u32);
        if self.buf.is_empty() {
            let used = self.framer.frame(chunk, false, time, t, out)?;
            self.buf.extend_from_slice(&chunk[used..]);
        } else {
            self.buf.extend_from_slice(chunk);
            let used = self.framer.frame(&self.buf, false, time, t, out)?;
            self.buf.drain(..used);
        }
        Ok(())
    }

    /// Moves buffered segments that have become in-order into the stream.
    fn drain_ooo(&mut self, t: &Tmpl, out: &mut Out<'_>) -> Result<(), SinkError> {
        while let Some(i) = self
            .ooo
            .iter()
            .position(|s| seq_diff(s.seq, self.next) <= 0)
        {
            let seg = self.ooo.swap_remove(i);
            self.ooo_bytes -= seg.data.len();
            let skip = seq_diff(self.next, seg.seq) as usize;
            if skip < seg.data.len() {
                self.consume(&seg.data[skip..], seg.time, t, out)?;
            }
        }
        Ok(())
    }

    /// Sequence number of the earliest buffered segment.
    fn first_ooo(&self) -> Option<u32> {
        let next = self.next;
        self.ooo
            .iter()
            .map(|s| s.seq)
            .min_by_key(|&s| seq_diff(s, next))
    }

    /// Gives up the bytes up to `to`: what was buffered of a partial message is lost.
    fn skip_to(
        &mut self,
        to: u32,
        reason: SkipReason,
        t: &Tmpl,
        out: &mut Out<'_>,
    ) -> Result<(), SinkError> {
        out.skip(reason);
        self.framer.base += self.buf.len() as u64;
        self.buf.clear();
        self.framer.clear_pending();
        self.framer.skipping = false;
        self.framer.mode = Mode::Resync(Resync::Gap);
        self.next = to;
        self.drain_ooo(t, out)
    }

    /// Skips the hole before the earliest buffered segment, if any.
    fn skip_hole(
        &mut self,
        reason: SkipReason,
        t: &Tmpl,
        out: &mut Out<'_>,
    ) -> Result<(), SinkError> {
        if let Some(first) = self.first_ooo() {
            self.skip_to(first, reason, t, out)?;
        }
        Ok(())
    }

    /// The peer acknowledged up to `acked`: if that covers a hole before buffered data, the
    /// bytes of the hole were sent but not captured, and will never be.
    fn check_acked_hole(&mut self, t: &Tmpl, out: &mut Out<'_>) -> Result<(), SinkError> {
        if let (Some(acked), Some(first)) = (self.acked, self.first_ooo()) {
            if seq_diff(acked, self.next) > 0 && seq_diff(first, acked) <= 0 {
                self.skip_to(first, SkipReason::TcpGap, t, out)?;
            }
        }
        Ok(())
    }

    /// No more data will come: skips remaining holes and frames what is left.
    fn finish(&mut self, time: i64, t: &Tmpl, out: &mut Out<'_>) -> Result<(), SinkError> {
        if self.finished || !self.started {
            self.finished = true;
            return Ok(());
        }
        while !self.ooo.is_empty() {
            self.skip_hole(SkipReason::TcpGap, t, out)?;
        }
        let buf = std::mem::take(&mut self.buf);
        let used = self.framer.frame(&buf, true, time, t, out)?;
        if used < buf.len() {
            // A message cut short: by the sender (the stream ended cleanly with a FIN after
            // all its data: junk) or by the end of the capture (a gap).
            let clean = self.fin_seq.is_some_and(|f| seq_diff(self.next, f) >= 0);
            match self.framer.mode {
                Mode::Synced if clean => out.skip(SkipReason::TcpJunk),
                Mode::Synced => out.skip(SkipReason::TcpGap),
                Mode::Resync(r) => {
                    self.framer.skipping = true;
                    self.framer.end_skip(r, u64::MAX, t, out)?;
                }
            }
        }
        self.finished = true;
        Ok(())
    }

    fn buffered(&self) -> usize {
        self.buf.len() + self.ooo_bytes
    }
}

/// Key of a connection: its two endpoints, the lower first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    a: SocketAddr,
    b: SocketAddr,
}

struct Flow {
    conn: u64,
    last_seen: i64,
    touched: u64,
    closed: bool,
    dirs: [Dir; 2],
}

impl Flow {
    fn new(conn: u64, time: i64, touched: u64) -> Self {
        Flow {
            conn,
            last_seen: time,
            touched,
            closed: false,
            dirs: [Dir::new(), Dir::new()],
        }
    }

    fn tmpl(&self, key: &FlowKey, d: usize) -> Tmpl {
        let (src, dst) = if d == 0 {
            (key.a, key.b)
        } else {
            (key.b, key.a)
        };
        Tmpl {
            src,
            dst,
            conn: self.conn,
        }
    }

    fn finish(&mut self, key: &FlowKey, out: &mut Out<'_>) -> Result<(), SinkError> {
        for d in 0..2 {
            let t = self.tmpl(key, d);
            self.dirs[d].finish(self.last_seen, &t, out)?;
        }
        self.closed = true;
        Ok(())
    }
}

/// Limits of a [`TcpTable`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpLimits {
    pub max_flows: usize,
    pub max_buffer: usize,
    pub gap_timeout_ns: i64,
    pub idle_timeout_ns: i64,
}

/// The connections being reassembled.
pub(crate) struct TcpTable {
    flows: FxHashMap<FlowKey, Flow>,
    next_conn: u64,
    tick: u64,
    limits: TcpLimits,
}

impl TcpTable {
    pub(crate) fn new(limits: TcpLimits) -> Self {
        TcpTable {
            flows: FxHashMap::default(),
            next_conn: 1,
            tick: 0,
            limits: TcpLimits {
                max_flows: limits.max_flows.max(1),
                max_buffer: limits.max_buffer.max(2 * 65_538),
                ..limits
            },
        }
    }

    /// Number of connections tracked.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.flows.len()
    }

    fn new_conn(&mut self) -> u64 {
        let c = self.next_conn;
        self.next_conn += 1;
        c
    }

    /// Takes one TCP segment.
    pub(crate) fn segment(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        h: &TcpHeader,
        payload: &[u8],
        time: i64,
        out: &mut Out<'_>,
    ) -> Result<(), SinkError> {
        let (key, d) = if src <= dst {
            (FlowKey { a: src, b: dst }, 0)
        } else {
            (FlowKey { a: dst, b: src }, 1)
        };
        let syn = h.flags & tcp_flag::SYN != 0;
        let ack = h.flags & tcp_flag::ACK != 0;
        let fin = h.flags & tcp_flag::FIN != 0;
        let rst = h.flags & tcp_flag::RST != 0;
        self.tick += 1;
        let tick = self.tick;

        // Find or make the connection.
        let exists = self.flows.contains_key(&key);
        if !exists {
            if rst || (!syn && payload.is_empty()) {
                return Ok(());
            }
            if self.flows.len() >= self.limits.max_flows {
                self.evict(out)?;
            }
            let conn = self.new_conn();
            self.flows.insert(key, Flow::new(conn, time, tick));
        } else if syn && !ack {
            let f = &self.flows[&key];
            let retransmit = f.dirs[d].syn_isn == Some(h.seq) && !f.closed;
            let fresh = !f.dirs[0].started && !f.dirs[1].started;
            if !retransmit && !fresh {
                // A new connection on the same 4-tuple.
                let conn = self.new_conn();
                if let Some(mut old) = self.flows.remove(&key) {
                    old.finish(&key, out)?;
                }
                self.flows.insert(key, Flow::new(conn, time, tick));
            }
        }
        let Some(flow) = self.flows.get_mut(&key) else {
            return Ok(());
        };
        flow.last_seen = time;
        flow.touched = tick;
        let t = flow.tmpl(&key, d);
        let rt = flow.tmpl(&key, 1 - d);
        let max_buffer = self.limits.max_buffer;

        let mut data_seq = h.seq;
        if syn {
            data_seq = h.seq.wrapping_add(1);
            let dir = &mut flow.dirs[d];
            if dir.syn_isn.is_none() && !dir.started {
                dir.start(data_seq, Mode::Synced);
            }
            dir.syn_isn.get_or_insert(h.seq);
            if ack {
                // A SYN-ACK tells where the other direction starts.
                let other = &mut flow.dirs[1 - d];
                if !other.started {
                    other.start(h.ack, Mode::Synced);
                }
            }
        }

        // What the peer acknowledged may reveal an uncaptured hole in the other direction.
        if ack && !rst {
            let other = &mut flow.dirs[1 - d];
            if other.started && !other.finished {
                let newer = match other.acked {
                    Some(a) => seq_diff(h.ack, a) > 0,
                    None => true,
                };
                if newer {
                    other.acked = Some(h.ack);
                }
                other.check_acked_hole(&rt, out)?;
            }
        }

        let dir = &mut flow.dirs[d];
        if !payload.is_empty() && !dir.finished {
            if !dir.started {
                dir.start(data_seq, Mode::Resync(Resync::Start));
            }
            let off = seq_diff(data_seq, dir.next);
            if off <= 0 {
                let skip = (-(off as i64)) as usize;
                if skip < payload.len() {
                    dir.consume(&payload[skip..], time, &t, out)?;
                    if !dir.ooo.is_empty() {
                        dir.drain_ooo(&t, out)?;
                        dir.hole_since = time;
                    }
                }
            } else {
                // Out of order: keep it for later, unless it is already buffered.
                let dup = dir
                    .ooo
                    .iter()
                    .any(|s| s.seq == data_seq && s.data.len() >= payload.len());
                if !dup {
                    if dir.ooo.is_empty() {
                        dir.hole_since = time;
                    }
                    dir.ooo.push(Seg {
                        seq: data_seq,
                        time,
                        data: payload.to_vec(),
                    });
                    dir.ooo_bytes += payload.len();
                    if dir.buffered() > max_buffer {
                        while dir.buffered() > max_buffer && !dir.ooo.is_empty() {
                            dir.skip_hole(SkipReason::TcpOverflow, &t, out)?;
                        }
                    } else {
                        dir.check_acked_hole(&t, out)?;
                    }
                }
            }
        }
        if fin && dir.started {
            dir.fin_seq = Some(data_seq.wrapping_add(payload.len() as u32));
        }
        if let Some(f) = dir.fin_seq {
            if dir.started && !dir.finished && seq_diff(dir.next, f) >= 0 {
                dir.finish(time, &t, out)?;
            }
        }
        if rst {
            flow.finish(&key, out)?;
        } else if flow.dirs[0].finished && flow.dirs[1].finished {
            flow.closed = true;
        }
        Ok(())
    }

    /// Drops the least recently used eighth of the table to make room.
    fn evict(&mut self, out: &mut Out<'_>) -> Result<(), SinkError> {
        let mut ages: Vec<(u64, FlowKey)> =
            self.flows.iter().map(|(k, f)| (f.touched, *k)).collect();
        let n = (ages.len() / 8).max(1).min(ages.len());
        if n == 0 {
            return Ok(());
        }
        ages.select_nth_unstable_by_key(n - 1, |a| a.0);
        ages.truncate(n);
        ages.sort_unstable_by_key(|a| a.0);
        for (_, k) in ages {
            if let Some(mut f) = self.flows.remove(&k) {
                if !f.closed {
                    out.skip(SkipReason::TcpOverflow);
                }
                f.finish(&k, out)?;
            }
        }
        Ok(())
    }

    /// Periodic housekeeping at capture time `now`: gives up holes older than the gap timeout,
    /// forgets idle and closed connections.
    pub(crate) fn sweep(&mut self, now: i64, out: &mut Out<'_>) -> Result<(), SinkError> {
        let limits = self.limits;
        let mut result = Ok(());
        self.flows.retain(|key, flow| {
            if result.is_err() {
                return true;
            }
            let idle = now.saturating_sub(flow.last_seen);
            if idle > limits.idle_timeout_ns || (flow.closed && idle > 1_000_000_000) {
                result = flow.finish(key, out);
                return false;
            }
            for d in 0..2 {
                let t = flow.tmpl(key, d);
                let dir = &mut flow.dirs[d];
                if !dir.ooo.is_empty() && now.saturating_sub(dir.hole_since) > limits.gap_timeout_ns
                {
                    if let Err(e) = dir.skip_hole(SkipReason::TcpGap, &t, out) {
                        result = Err(e);
                        return true;
                    }
                    dir.hole_since = now;
                }
            }
            true
        });
        result
    }

    /// End of the capture: frames what can be framed of every connection, in connection order.
    pub(crate) fn finish(&mut self, out: &mut Out<'_>) -> Result<(), SinkError> {
        let mut flows: Vec<(FlowKey, Flow)> = self.flows.drain().collect();
        flows.sort_unstable_by_key(|(_, f)| f.conn);
        for (k, mut f) in flows {
            f.finish(&k, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
