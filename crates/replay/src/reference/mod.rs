//! The reference stacks (`--stack reference`): the clients other people's DNS tools are built
//! on, behind the same seams as the replay's own lean stacks, so that one build measures both
//! with everything else alike (schedule, sockets, one connection per client, resumption and
//! 0-RTT, timeouts, results).
//!
//! - **DoT** ([`tls::RustlsSession`] under the querier's `TlsFraming`): rustls' ordinary
//!   buffered `ClientConnection` for the whole session, not the replay's record layer; it
//!   follows key updates and reads late session tickets as any rustls client does.
//! - **DoH over HTTP/2** ([`doh::H2Doh`]): the `h2` crate over a [`tls::RustlsSession`], polled
//!   inside the querier's event loop (its transport is a pair of in-memory buffers).
//! - **DoQ and DoH over HTTP/3** ([`quic::start`]): `quinn` (and `h3` with `h3-quinn` for
//!   HTTP/3) on a tokio runtime on a thread beside the querier, one endpoint (UDP socket) per
//!   client, speaking the DoQ thread's language (`DoqQuery` in, `DoqEvent` out).
//!
//! The seams: a stream transport is a `StreamProtocol` (the querier's socket side is shared, so
//! DoT and DoH take the kernel's send and receive stamps on either stack); QUIC transports are
//! a thread that takes queries and tells events (send and answer times are user-space clock
//! reads on either stack, since the QUIC stacks own their sockets' packets).

pub(crate) mod doh;
pub(crate) mod quic;
pub(crate) mod tls;
