//! What DNS over HTTPS (RFC 8484) asks of both HTTP versions ([`crate::http2`] and
//! [`crate::h3`]), and of the reference stacks' responses too.

/// Whether a `content-type` value is `application/dns-message` (parameters allowed): a
/// response carries a DNS message only with it (RFC 8484 §6).
pub fn is_dns_message(value: &[u8]) -> bool {
    let media = value.split(|&b| b == b';').next().unwrap_or_default();
    media
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/dns-message")
}
