//! [`Outgoing`]: the bytes a connection has queued for its socket, and how many the socket
//! took over the connection's life.
//!
//! Plain TCP's framing queues its frames here, and the reference stack's TLS session
//! (`crate::reference::tls::RustlsSession`) its records: both write into the buffer, the
//! socket side takes from its front.

use std::io;

/// Bytes for the socket: `buf[sent..]` is still to be written.
#[derive(Debug, Default)]
pub(crate) struct Outgoing {
    buf: Vec<u8>,
    sent: usize,
    /// Bytes the socket took over the connection's life.
    sent_total: u64,
}

impl Outgoing {
    /// Queues `bytes` after what is waiting.
    #[inline]
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes waiting for the socket.
    #[inline]
    pub fn output(&self) -> &[u8] {
        &self.buf[self.sent..]
    }

    /// Forgets the first `n` bytes of [`output`](Self::output) (the socket took them); once
    /// all are taken the buffer starts again from its front.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len() - self.sent);
        self.sent += n;
        self.sent_total += n as u64;
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        }
    }

    /// Gives back the buffer's memory if nothing waits and it grew beyond `keep` bytes: most
    /// connections are idle most of the time.
    #[inline]
    pub fn release_if_idle(&mut self, keep: usize) {
        if self.buf.is_empty() && self.buf.capacity() > keep {
            self.buf = Vec::new();
        }
    }

    /// Drops what was not written yet, and the buffer's memory.
    pub fn discard(&mut self) {
        self.buf = Vec::new();
        self.sent = 0;
    }

    /// Bytes the socket took over the connection's life.
    #[inline]
    pub fn written_total(&self) -> u64 {
        self.sent_total
    }

    /// Bytes queued over the connection's life, written or not: where the last byte queued so
    /// far lies in the connection's byte stream (counted from 1).
    #[inline]
    pub fn queued_total(&self) -> u64 {
        self.sent_total + (self.buf.len() - self.sent) as u64
    }
}

/// Writing queues, as writing to a `Vec` does: what a TLS library writes its records to.
impl io::Write for Outgoing {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.write(bytes)
    }

    /// All the slices at once (rustls writes its records so).
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.buf.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_run_on_over_the_connections_life() {
        let mut out = Outgoing::default();
        out.extend(b"hello");
        out.extend(b" world");
        assert_eq!(out.output(), b"hello world");
        assert_eq!(out.queued_total(), 11);
        out.consume(6);
        assert_eq!(out.output(), b"world");
        assert_eq!((out.written_total(), out.queued_total()), (6, 11));
        // More than is waiting is taken as all of it.
        out.consume(100);
        assert!(out.output().is_empty());
        assert_eq!((out.written_total(), out.queued_total()), (11, 11));
        out.extend(b"again");
        assert_eq!(out.queued_total(), 16);
        out.discard();
        assert!(out.output().is_empty());
        assert_eq!((out.written_total(), out.queued_total()), (11, 11));
    }

    #[test]
    fn an_idle_buffer_gives_back_what_it_grew() {
        let mut out = Outgoing::default();
        out.extend(&[7; 4096]);
        out.release_if_idle(1024);
        assert!(out.buf.capacity() >= 4096, "kept while bytes wait");
        out.consume(4096);
        out.release_if_idle(8192);
        assert!(out.buf.capacity() >= 4096, "kept under the limit");
        out.release_if_idle(1024);
        assert_eq!(out.buf.capacity(), 0);
    }
}
