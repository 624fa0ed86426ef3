//! Why queries failed, beyond their error kind.
//!
//! "20000 errors (tls 20000)" tells a user nothing they can act on. Each failure the querier
//! sees carries a [`Cause`]; queries are counted by kind *and* cause, and the first failure of
//! each cause is kept in words, with the way out where one is known (a CA certificate used as a
//! server's own, a name the certificate is not for, `--source-prefix` addresses that are not
//! local...). Counting needs only the cause's static key; the words are made once per cause.

use ldplayer_results::ErrorKind;
use rustls::{CertificateError, Error as TlsError};
use std::io;

/// What ended a send, a connection or a TLS session, as the querier saw it.
#[derive(Debug)]
pub(crate) enum Cause {
    /// A system call failed.
    Io(io::Error),
    /// rustls failed the handshake or a record.
    Tls(TlsError),
    /// A record protected by the session's traffic keys did not open (damaged, or a key update
    /// the keys do not follow).
    TlsRecord,
    /// The server closed the connection before the TLS handshake was over.
    ClosedInHandshake,
    /// The server closed the connection while queries were in flight on it.
    PeerClosed,
    /// The server's host answered a UDP query with ICMP port unreachable.
    PortUnreachable,
    /// The engine closed the connection (end of the replay, or too many connections) while
    /// queries were in flight on it.
    ClosedLocally,
    /// The query's transport has no TLS configuration.
    NoTlsConfig,
    /// Every DNS ID of the socket or connection is in flight.
    IdsExhausted,
    /// The transport's framing cannot carry the query.
    Unframeable,
    /// A DoH server answered with this HTTP status, not 200.
    HttpStatus(u16),
    /// A DoH response was not `application/dns-message`, or its body not a DNS message.
    NotDnsContent,
    /// The server did not agree to HTTP/2 in the TLS handshake (ALPN).
    NoHttp2,
    /// An HTTP/2 stream or connection failed; the key names how (`h2-refused-stream`,
    /// `h2-protocol-error`, `h2-goaway`, ...).
    Http2(&'static str),
    /// An HTTP/3 response stream broke the protocol (DoH over HTTP/3); the key names how
    /// (`h3-qpack-error`, `h3-frame-unexpected`, ...).
    Http3(&'static str),
    /// A DNS-over-QUIC connection or stream failed; the key names how.
    Quic(&'static str),
    /// The message that came back with the query's ID (or on its stream) is not a response: QR
    /// clear, or another opcode than the query's (a server that echoes queries back).
    NotAResponse,
    /// The response that came back with the query's ID (or on its stream) is for another
    /// question.
    QuestionMismatch,
    /// A TCP or TLS connection carried something that is not a DNS response to a query in flight
    /// on it (what, in words): its framing cannot be trusted any more, so it was closed.
    StreamGarbage(String),
}

/// What the querier knows that makes a cause's description useful.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    /// `--source-prefix` is in use.
    pub source_prefix: bool,
    /// The name checked against the server's certificate.
    pub server_name: &'a str,
}

impl Cause {
    /// A short, stable, kebab-case key: counted per kind, shown in summaries and JSON.
    pub fn key(&self) -> &'static str {
        match self {
            Cause::Io(e) => errno_name(e),
            Cause::Tls(e) => tls_key(e),
            Cause::TlsRecord => "bad-record",
            Cause::ClosedInHandshake => "closed-in-handshake",
            Cause::PeerClosed => "closed-by-server",
            Cause::PortUnreachable => "port-unreachable",
            Cause::ClosedLocally => "closed-by-replay",
            Cause::NoTlsConfig => "no-tls-config",
            Cause::IdsExhausted => "ids-exhausted",
            Cause::Unframeable => "unframeable",
            Cause::HttpStatus(status) => http_status_key(*status),
            Cause::NotDnsContent => "not-dns-content",
            Cause::NoHttp2 => "no-http2",
            Cause::Http2(key) | Cause::Http3(key) => key,
            Cause::Quic(key) => key,
            Cause::NotAResponse => "not-a-response",
            Cause::QuestionMismatch => "question-mismatch",
            Cause::StreamGarbage(_) => "stream-garbage",
        }
    }

    /// The failure in words, with what to do about it where that is known.
    pub fn describe(&self, ctx: &Context<'_>) -> String {
        match self {
            Cause::Io(e) => format!("{e}{}", io_hint(e, ctx)),
            Cause::Tls(e) => format!("{e}{}", tls_hint(e, ctx)),
            Cause::TlsRecord => "a TLS record from the server did not decrypt (damaged, or a key \
                                 update, which the replay does not follow)"
                .into(),
            Cause::ClosedInHandshake => {
                "the server closed the connection during the TLS handshake (is it speaking TLS \
                 on this port?)"
                    .into()
            }
            Cause::PeerClosed => {
                "the server closed the connection with queries in flight (its idle timeout, a \
                 limit on queries per connection, or a restart)"
                    .into()
            }
            Cause::PortUnreachable => {
                "ICMP port unreachable: nothing listens on the server's UDP port".into()
            }
            Cause::ClosedLocally => {
                "the replay closed the connection with queries in flight (the end of the run, or \
                 the limit on open connections)"
                    .into()
            }
            Cause::NoTlsConfig => "TLS is not set up for this replay".into(),
            Cause::IdsExhausted => {
                "every DNS ID of this client's socket or connection is in flight: the client sends \
                 faster than one socket can carry within the timeout"
                    .into()
            }
            Cause::Unframeable => "the query does not fit the transport's framing".into(),
            Cause::HttpStatus(status) => format!(
                "the DoH server answered HTTP {status}{}",
                match status {
                    404 => " (is --doh-path the server's path?)",
                    405 => " (the server may take only POST or only GET: try --doh-method)",
                    415 => " (the server refused application/dns-message)",
                    _ => "",
                }
            ),
            Cause::NotDnsContent => {
                "the DoH response was not application/dns-message, or its body was not a DNS \
                 message"
                    .into()
            }
            Cause::NoHttp2 => {
                "the server did not offer HTTP/2 (ALPN h2) in the TLS handshake: is it a DoH \
                 server on this port?"
                    .into()
            }
            Cause::Http2(key) => format!("HTTP/2 failed ({key})"),
            Cause::Http3(key) => format!("HTTP/3 failed ({key})"),
            Cause::Quic(key) => format!(
                "DNS over QUIC failed ({key}){}",
                match *key {
                    "quic-tls-alert" =>
                        ": the TLS handshake failed (the certificate, its name, or no ALPN doq)",
                    "quic-timed-out" =>
                        ": no answer from the server (is it a DoQ server on this UDP port?)",
                    "quic-stream-reset" => ": the server reset the query's stream",
                    "quic-bad-response" => ": the answer was not one length-prefixed DNS message",
                    _ => "",
                }
            ),
            Cause::NotAResponse => {
                "the server sent back a message with the query's ID that is not a response (QR \
                 clear, or another opcode): does it echo queries back, or is it a DNS server at \
                 all?"
                    .into()
            }
            Cause::QuestionMismatch => {
                "the server answered with the query's ID but for another question (name, type \
                 or class), and no answer to the query's own question came before the timeout"
                    .into()
            }
            Cause::StreamGarbage(what) => format!(
                "the server sent {what} on the connection, which is not a DNS response to a \
                 query in flight: the replay closed the connection, failed its queries and \
                 reconnects for the next ones (is it a DNS server on this port?)"
            ),
        }
    }
}

/// A failed query's kind as it follows from its cause, for callers that have only the cause.
pub(crate) fn kind_of_io(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::Refused,
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::UnexpectedEof => ErrorKind::Reset,
        _ => ErrorKind::Send,
    }
}

/// The key of an HTTP status other than 200: the common ones by number, others by class.
fn http_status_key(status: u16) -> &'static str {
    const NAMED: [(u16, &str); 12] = [
        (400, "http-400"),
        (403, "http-403"),
        (404, "http-404"),
        (405, "http-405"),
        (413, "http-413"),
        (414, "http-414"),
        (415, "http-415"),
        (429, "http-429"),
        (500, "http-500"),
        (502, "http-502"),
        (503, "http-503"),
        (504, "http-504"),
    ];
    if let Some((_, key)) = NAMED.iter().find(|(s, _)| *s == status) {
        return key;
    }
    match status / 100 {
        1 => "http-1xx",
        2 => "http-2xx",
        3 => "http-3xx",
        4 => "http-4xx",
        5 => "http-5xx",
        _ => "http-status",
    }
}

fn errno_name(e: &io::Error) -> &'static str {
    let Some(code) = e.raw_os_error() else {
        return "io-error";
    };
    match code {
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::EPIPE => "EPIPE",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOBUFS => "ENOBUFS",
        libc::ENOMEM => "ENOMEM",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETDOWN => "ENETDOWN",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::EMSGSIZE => "EMSGSIZE",
        _ => "io-error",
    }
}

fn io_hint(e: &io::Error, ctx: &Context<'_>) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL | libc::EINVAL) if ctx.source_prefix => {
            ": the --source-prefix addresses must be local to this host (add them to an \
             interface, or route the whole prefix to lo: `ip route add local PREFIX dev lo`)"
        }
        Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => {
            ": no local address and port left (--source-prefix spreads the clients over more \
             local addresses)"
        }
        Some(libc::EMFILE | libc::ENFILE) => {
            ": too many open files (raise the limit with `ulimit -n`, or spread the replay over \
             more processes)"
        }
        Some(libc::ENOBUFS | libc::ENOMEM) => ": the kernel ran out of buffers",
        Some(libc::ENETUNREACH | libc::EHOSTUNREACH) => ": no route to the server",
        Some(libc::EPERM | libc::EACCES) => ": refused by this host (a firewall rule?)",
        _ => "",
    }
}

fn tls_key(e: &TlsError) -> &'static str {
    match e {
        TlsError::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "unknown-issuer",
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "name-mismatch"
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "expired",
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "not-yet-valid"
            }
            CertificateError::Revoked => "revoked",
            CertificateError::BadSignature => "bad-certificate-signature",
            CertificateError::BadEncoding => "bad-certificate-encoding",
            CertificateError::Other(o) if is_ca_as_end_entity(o) => "ca-used-as-end-entity",
            _ => "invalid-certificate",
        },
        TlsError::AlertReceived(_) => "alert-received",
        TlsError::NoCertificatesPresented => "no-certificate",
        TlsError::PeerIncompatible(_) => "peer-incompatible",
        TlsError::PeerMisbehaved(_) => "peer-misbehaved",
        TlsError::InvalidMessage(_) | TlsError::InappropriateMessage { .. } => "bad-message",
        TlsError::DecryptError => "decrypt-error",
        _ => "tls-error",
    }
}

/// rustls reports webpki's `CaUsedAsEndEntity` only as an opaque "other" certificate error.
fn is_ca_as_end_entity(e: &rustls::OtherError) -> bool {
    format!("{e:?}").contains("CaUsedAsEndEntity")
}

fn tls_hint(e: &TlsError, ctx: &Context<'_>) -> String {
    let TlsError::InvalidCertificate(c) = e else {
        return String::new();
    };
    match c {
        CertificateError::UnknownIssuer => format!(
            ": the server's certificate for {} is not signed by a certificate given with \
             --tls-ca (or no --tls-ca was given); give its CA with --tls-ca, or use \
             --tls-insecure for a test server",
            ctx.server_name
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!(
                ": the server's certificate is not for {}; give the name it is for with \
                 --tls-name",
                ctx.server_name
            )
        }
        CertificateError::Expired
        | CertificateError::ExpiredContext { .. }
        | CertificateError::NotValidYet
        | CertificateError::NotValidYetContext { .. } => {
            ": check the server's certificate dates and this host's clock".into()
        }
        CertificateError::Other(o) if is_ca_as_end_entity(o) => {
            ": the server presents a CA certificate (basicConstraints CA:TRUE, as `openssl req \
             -x509` makes by default) as its own, which rustls refuses; give the server a \
             certificate with CA:FALSE (self-signed with `openssl req -x509 ... -addext \
             basicConstraints=critical,CA:FALSE` and given with --tls-ca, or signed by a CA \
             given with --tls-ca), or use --tls-insecure for a test server"
                .into()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_have_stable_keys_and_helpful_words() {
        let ctx = Context {
            source_prefix: true,
            server_name: "127.0.0.1",
        };
        let e = Cause::Io(io::Error::from_raw_os_error(libc::EADDRNOTAVAIL));
        assert_eq!(e.key(), "EADDRNOTAVAIL");
        assert!(
            e.describe(&ctx).contains("ip route add local"),
            "{}",
            e.describe(&ctx)
        );
        let t = Cause::Tls(TlsError::InvalidCertificate(
            CertificateError::UnknownIssuer,
        ));
        assert_eq!(t.key(), "unknown-issuer");
        assert!(t.describe(&ctx).contains("--tls-ca"));
        let n = Cause::Tls(TlsError::InvalidCertificate(
            CertificateError::NotValidForName,
        ));
        assert_eq!(n.key(), "name-mismatch");
        assert!(n.describe(&ctx).contains("--tls-name"));
        assert_eq!(
            kind_of_io(&io::Error::from_raw_os_error(libc::ECONNREFUSED)),
            ErrorKind::Refused
        );
        assert_eq!(
            kind_of_io(&io::Error::from_raw_os_error(libc::EPIPE)),
            ErrorKind::Reset
        );
        assert_eq!(
            kind_of_io(&io::Error::from_raw_os_error(libc::EMFILE)),
            ErrorKind::Send
        );
    }
}
