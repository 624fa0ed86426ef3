//! Sans-IO client protocol stacks for DNS over encrypted transports, the lean stacks of
//! `ldplayer replay`: bytes and datagrams in, bytes and datagrams out, timers and events for the
//! caller, and no sockets, threads or clocks of their own.
//!
//! - [`tls`]: a TLS client session on rustls' unbuffered API that lets rustls go after the
//!   first answer and keeps only its traffic keys (DoT, and DoH's TLS).
//! - [`http2`]: the client side of HTTP/2 as DNS over HTTPS needs it, with its own HPACK decoder (RFC 9113,
//!   RFC 7541).
//! - [`quic`]: a QUIC version 1 client connection (RFC 9000, 9001, 9002) whose streams carry
//!   whatever the application puts on them; it knows no HTTP/3 and no DNS.
//! - On top of QUIC's streams: [`doq`] (DNS over QUIC, RFC 9250) and [`h3`] (DNS over HTTPS on
//!   HTTP/3 with QPACK's static table, RFC 9114, RFC 9204).
//! - [`doh`]: what DNS over HTTPS asks of both HTTP versions (RFC 8484).
//!
//! Each exists for a measured reason (its module says which): the general-purpose crates
//! (`h2`, `quinn`) held five to eight times the memory per idle session that the replay can
//! afford for tens of thousands of simulated clients. The replay (`ldplayer-replay`) owns the
//! sockets, the kernel's timestamps, the schedule and the results, and reaches these stacks,
//! as it reaches the reference ones (`h2`, `quinn`), through its own transport seam.

pub mod alloc_count;
pub mod doh;
pub mod doq;
pub mod h3;
pub(crate) mod hpack;
pub mod http2;
pub mod quic;
pub mod tls;

/// The test binary counts what it allocates: tests bound what a connection keeps.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

/// Entry points for the fuzz targets (`fuzz/`): not an API.
#[doc(hidden)]
pub mod fuzzing {
    /// The DoH client's HTTP/2 layer fed arbitrary server bytes; the first byte shapes the
    /// requests and the read sizes.
    pub fn doh_server_bytes(data: &[u8]) {
        crate::http2::fuzz_server_bytes(data)
    }

    /// The DoQ client's QUIC connection fed arbitrary datagrams and decrypted packets, and
    /// the same bytes as an HTTP/3 response stream.
    pub fn quic_client(data: &[u8]) {
        crate::quic::fuzz_client(data);
        let _ = crate::h3::response(data);
    }

    /// The TLS record layer on traffic keys (after rustls lets go) fed arbitrary server bytes
    /// and damaged records.
    pub fn tls_records(data: &[u8]) {
        crate::tls::fuzz_records(data)
    }

    /// The DoH client's HPACK decoder fed an arbitrary header block.
    pub fn hpack_block(block: &[u8]) {
        crate::hpack::fuzz_block(block)
    }
}
