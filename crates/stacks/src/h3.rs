//! DNS over HTTPS on HTTP/3 (RFC 8484 over RFC 9114), on top of the QUIC client's streams
//! ([`crate::quic`], which knows nothing of HTTP/3): the limits an HTTP/3 connection asks of
//! QUIC, the bytes of a request stream and of the client's control stream (opened with
//! [`Connection::open_uni_stream`](crate::quic::conn::Connection::open_uni_stream)), and the
//! DNS message read back from a response stream.
//!
//! QPACK (RFC 9204) with the static table only: the client says nothing in its SETTINGS, so
//! the server's dynamic table has a capacity of 0 and every field it sends is a static
//! reference or a literal. Requests are built from static references and literals alike.

use crate::doh::is_dns_message;
use crate::hpack::{integer, put_integer};
use crate::quic::wire::{self, Reader};
use httlib_huffman::DecoderSpeed;

/// The client's control stream (RFC 9114 §6.2.1): its type, then an empty SETTINGS frame (a
/// QPACK table capacity of 0 and no blocked streams are the defaults).
pub const CONTROL_STREAM: &[u8] = &[0x00, 0x04, 0x00];

/// The largest response stream read: a DNS message and its HTTP/3 framing and head (the QUIC
/// connection's [`Config::max_stream_recv`](crate::quic::conn::Config::max_stream_recv)).
pub const MAX_RESPONSE: u64 = 65_535 + 4_096;

/// Unidirectional streams an HTTP/3 server may open: its control stream and QPACK's encoder
/// and decoder streams (the QUIC connection's
/// [`Config::peer_uni_streams`](crate::quic::conn::Config::peer_uni_streams)).
pub const SERVER_UNI_STREAMS: u64 = 3;

/// H3_NO_ERROR (RFC 9114 §8.1): the code a client closes its connection with when all is well.
pub const NO_ERROR: u64 = 0x100;

const FRAME_DATA: u64 = 0x00;
const FRAME_HEADERS: u64 = 0x01;

/// How a DoH request is made.
#[derive(Debug, Clone)]
pub struct Request {
    /// GET (`?dns=`, base64url) rather than POST.
    pub get: bool,
    /// The URL path of the DoH endpoint (`/dns-query`).
    pub path: String,
    /// The `:authority` (the server's name, and its port when not 443).
    pub authority: String,
}

/// The QPACK static table (RFC 9204 Appendix A).
const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// Static indexes used in requests.
const METHOD_GET: usize = 17;
const METHOD_POST: usize = 20;
const SCHEME_HTTPS: usize = 23;
const AUTHORITY: usize = 0;
const PATH: usize = 1;
const ACCEPT_DNS: usize = 30;
const CONTENT_TYPE_DNS: usize = 44;
const CONTENT_LENGTH: usize = 4;

/// An indexed field line, static table (RFC 9204 §4.5.2).
fn indexed(out: &mut Vec<u8>, index: usize) {
    put_integer(out, 0xc0, 6, index);
}

/// A literal field line with a static name reference, not Huffman coded (§4.5.4).
fn literal(out: &mut Vec<u8>, name: usize, value: &[u8]) {
    put_integer(out, 0x50, 4, name);
    put_integer(out, 0x00, 7, value.len());
    out.extend_from_slice(value);
}

fn frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    wire::put_varint(out, ty);
    wire::put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// A request stream's bytes for `msg` (its DNS ID already set): HEADERS, and DATA for POST.
pub fn request(req: &Request, msg: &[u8]) -> Vec<u8> {
    let mut fields = Vec::with_capacity(64 + req.path.len() + req.authority.len());
    // Required Insert Count 0, Base 0: no dynamic table.
    fields.extend_from_slice(&[0, 0]);
    indexed(&mut fields, if req.get { METHOD_GET } else { METHOD_POST });
    indexed(&mut fields, SCHEME_HTTPS);
    literal(&mut fields, AUTHORITY, req.authority.as_bytes());
    if req.get {
        use base64::Engine;
        let mut path = req.path.clone().into_bytes();
        path.extend_from_slice(b"?dns=");
        path.extend_from_slice(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(msg)
                .as_bytes(),
        );
        literal(&mut fields, PATH, &path);
    } else {
        literal(&mut fields, PATH, req.path.as_bytes());
    }
    indexed(&mut fields, ACCEPT_DNS);
    if !req.get {
        indexed(&mut fields, CONTENT_TYPE_DNS);
        literal(
            &mut fields,
            CONTENT_LENGTH,
            msg.len().to_string().as_bytes(),
        );
    }
    let mut out = Vec::with_capacity(fields.len() + msg.len() + 8);
    frame(&mut out, FRAME_HEADERS, &fields);
    if !req.get {
        frame(&mut out, FRAME_DATA, msg);
    }
    out
}

/// Why a response stream gave no DNS message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// A final status other than 200.
    #[error("HTTP status {0}")]
    Status(u16),
    /// Status 200, but not `application/dns-message`.
    #[error("a response that is not application/dns-message")]
    NotDns,
    /// The stream broke HTTP/3 or QPACK: a cause key.
    #[error("a malformed HTTP/3 response: {0}")]
    Malformed(&'static str),
}

/// The DNS message of a whole response stream.
pub fn response(stream: &[u8]) -> Result<Vec<u8>, Failure> {
    let mut r = Reader::new(stream);
    let mut head: Option<(u16, bool)> = None;
    let mut body = Vec::new();
    while !r.is_empty() {
        let (Ok(ty), Ok(payload)) = (r.varint(), r.prefixed()) else {
            return Err(Failure::Malformed("h3-frame-error"));
        };
        match ty {
            FRAME_HEADERS if head.is_none() => {
                let (status, dns) = decode_head(payload)?;
                // Informational heads (1xx) come before the final one.
                if status >= 200 {
                    head = Some((status, dns));
                }
            }
            // Trailers.
            FRAME_HEADERS => {}
            FRAME_DATA if head.is_some() => {
                if body.len() + payload.len() > 65_535 {
                    return Err(Failure::Malformed("h3-body-too-large"));
                }
                body.extend_from_slice(payload);
            }
            // CANCEL_PUSH, SETTINGS, PUSH_PROMISE, GOAWAY, MAX_PUSH_ID, and DATA before a head,
            // are errors on a request stream (RFC 9114 §7.2).
            FRAME_DATA | 0x03 | 0x04 | 0x05 | 0x07 | 0x0d => {
                return Err(Failure::Malformed("h3-frame-unexpected"))
            }
            // Reserved and unknown types are skipped (§9).
            _ => {}
        }
    }
    match head {
        None => Err(Failure::Malformed("h3-no-response")),
        Some((200, true)) => Ok(body),
        Some((200, false)) => Err(Failure::NotDns),
        Some((status, _)) => Err(Failure::Status(status)),
    }
}

/// The `:status` and whether `content-type` is `application/dns-message`, from a HEADERS
/// frame's field section (RFC 9204 §4.5).
fn decode_head(block: &[u8]) -> Result<(u16, bool), Failure> {
    const QPACK: Failure = Failure::Malformed("h3-qpack-error");
    let mut pos = 0;
    // Required Insert Count must be 0 (no dynamic table); the Base then means nothing.
    if integer(block, &mut pos, 8).map_err(|_| QPACK)? != 0 {
        return Err(QPACK);
    }
    integer(block, &mut pos, 7).map_err(|_| QPACK)?;
    let mut status = None;
    let mut dns = false;
    let mut scratch = Vec::new();
    while let Some(&first) = block.get(pos) {
        let (name, value): (&[u8], Vec<u8>);
        if first & 0x80 != 0 {
            // Indexed field line; the dynamic table (T = 0) is empty.
            if first & 0x40 == 0 {
                return Err(QPACK);
            }
            let index = integer(block, &mut pos, 6).map_err(|_| QPACK)?;
            let (n, v) = STATIC.get(index).ok_or(QPACK)?;
            (name, value) = (n, v.to_vec());
        } else if first & 0x40 != 0 {
            // Literal with a name reference.
            if first & 0x10 == 0 {
                return Err(QPACK);
            }
            let index = integer(block, &mut pos, 4).map_err(|_| QPACK)?;
            name = STATIC.get(index).ok_or(QPACK)?.0;
            value = string(block, &mut pos, 7, &mut scratch)?;
        } else if first & 0x20 != 0 {
            // Literal with a literal name (its Huffman bit is 0x08, a 3-bit length prefix).
            let n = string(block, &mut pos, 3, &mut scratch)?;
            let v = string(block, &mut pos, 7, &mut scratch)?;
            if n == b"content-type" {
                dns |= is_dns_message(&v);
            } else if n == b":status" {
                status = Some(parse_status(&v)?);
            }
            continue;
        } else {
            // Post-base references: the dynamic table again.
            return Err(QPACK);
        }
        match name {
            b":status" => status = Some(parse_status(&value)?),
            b"content-type" => dns |= is_dns_message(&value),
            _ => {}
        }
    }
    Ok((status.ok_or(QPACK)?, dns))
}

fn parse_status(v: &[u8]) -> Result<u16, Failure> {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or(Failure::Malformed("h3-bad-status"))
}

/// A string literal whose length has an `n`-bit prefix, the Huffman flag the bit above it.
fn string(
    block: &[u8],
    pos: &mut usize,
    n: u32,
    scratch: &mut Vec<u8>,
) -> Result<Vec<u8>, Failure> {
    const QPACK: Failure = Failure::Malformed("h3-qpack-error");
    let huffman = block.get(*pos).ok_or(QPACK)? & (1 << n) != 0;
    let len = integer(block, pos, n).map_err(|_| QPACK)?;
    let end = pos.checked_add(len).ok_or(QPACK)?;
    let bytes = block.get(*pos..end).ok_or(QPACK)?;
    *pos = end;
    if !huffman {
        return Ok(bytes.to_vec());
    }
    scratch.clear();
    httlib_huffman::decode(bytes, scratch, DecoderSpeed::FourBits).map_err(|_| QPACK)?;
    Ok(scratch.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame(&mut out, FRAME_HEADERS, fields);
        out
    }

    #[test]
    fn static_references_and_literals_decode() {
        // :status 200 (index 25), content-type application/dns-message (44), then DATA.
        let mut stream = head(&[0, 0, 0xc0 | 25, 0xc0 | 44]);
        frame(&mut stream, FRAME_DATA, b"dns!");
        assert_eq!(response(&stream), Ok(b"dns!".to_vec()));
        // The same as literals with name references, a parameter on the media type.
        let mut fields = vec![0, 0];
        literal(&mut fields, 24, b"200");
        literal(&mut fields, 44, b"application/dns-message; x=1");
        let mut stream = head(&fields);
        frame(&mut stream, FRAME_DATA, b"ab");
        frame(&mut stream, 0x21, b"reserved frame, skipped");
        frame(&mut stream, FRAME_DATA, b"cd");
        assert_eq!(response(&stream), Ok(b"abcd".to_vec()));
    }

    #[test]
    fn statuses_content_types_and_bad_sections_fail_by_kind() {
        assert_eq!(
            response(&head(&[0, 0, 0xc0 | 27])),
            Err(Failure::Status(404))
        );
        let mut fields = vec![0, 0];
        literal(&mut fields, 24, b"429");
        assert_eq!(response(&head(&fields)), Err(Failure::Status(429)));
        let stream = head(&[0, 0, 0xc0 | 25, 0xc0 | 53]);
        assert_eq!(response(&stream), Err(Failure::NotDns));
        // A dynamic reference (Required Insert Count 1) with no dynamic table.
        let stream = head(&[1, 0, 0x80]);
        assert_eq!(response(&stream), Err(Failure::Malformed("h3-qpack-error")));
        assert_eq!(response(&[]), Err(Failure::Malformed("h3-no-response")));
        let mut stream = Vec::new();
        frame(&mut stream, FRAME_DATA, b"early");
        assert_eq!(
            response(&stream),
            Err(Failure::Malformed("h3-frame-unexpected"))
        );
        // A 103 first, then the final head.
        let mut stream = head(&[0, 0, 0xc0 | 24]);
        stream.extend(head(&[0, 0, 0xc0 | 25, 0xc0 | 44]));
        frame(&mut stream, FRAME_DATA, b"x");
        assert_eq!(response(&stream), Ok(b"x".to_vec()));
        for cut in 0..stream.len() {
            let _ = response(&stream[..cut]);
        }
    }

    #[test]
    fn requests_carry_the_method_path_and_body() {
        let req = Request {
            get: false,
            path: "/dns-query".into(),
            authority: "127.0.0.1".into(),
        };
        let post = request(&req, &[1, 2, 3]);
        let mut r = Reader::new(&post);
        assert_eq!(r.varint(), Ok(FRAME_HEADERS));
        let fields = r.prefixed().unwrap();
        assert_eq!(&fields[..4], &[0, 0, 0xc0 | 20, 0xc0 | 23]);
        assert_eq!(r.varint(), Ok(FRAME_DATA));
        assert_eq!(r.prefixed(), Ok(&[1u8, 2, 3][..]));
        assert!(r.is_empty());
        let get = request(&Request { get: true, ..req }, &[0xfb, 0xff]);
        let text = String::from_utf8_lossy(&get);
        assert!(text.contains("/dns-query?dns=-_8"), "{text}");
        assert_eq!(get[2..5], [0, 0, 0xc0 | 17]);
    }
}
