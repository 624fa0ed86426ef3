//! EDNS options (the OPT RDATA) in a compact, editable text form.
//!
//! Options are separated by commas. Well-known ones get readable forms and everything else a
//! lossless generic one, so any OPT RDATA survives a round trip through text:
//!
//! | option | text |
//! |---|---|
//! | NSID (3) | `nsid` or `nsid=HEX` |
//! | Client subnet (8) | `ecs=ADDRESS/SOURCE/SCOPE`, e.g. `ecs=192.0.2.0/24/0` |
//! | EXPIRE (9) | `expire` or `expire=SECONDS` |
//! | COOKIE (10) | `cookie=HEX` |
//! | TCP keepalive (11) | `keepalive` or `keepalive=UNITS_OF_100MS` |
//! | Padding (12) | `padding=LENGTH` (zero bytes) |
//! | any other | `CODE` or `CODE=HEX`, e.g. `65001=c0ffee` |
//! | undecodable RDATA | `raw=HEX` (the whole RDATA) |

use std::net::{Ipv4Addr, Ipv6Addr};
use thiserror::Error;

/// Why an options string cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad EDNS option `{0}`")]
pub struct OptionsError(pub String);

/// EDNS option codes with a readable text form.
pub mod code {
    /// Name server identifier (RFC 5001).
    pub const NSID: u16 = 3;
    /// Client subnet (RFC 7871).
    pub const ECS: u16 = 8;
    /// SOA expire (RFC 7314).
    pub const EXPIRE: u16 = 9;
    /// DNS cookie (RFC 7873).
    pub const COOKIE: u16 = 10;
    /// TCP keepalive (RFC 7828).
    pub const KEEPALIVE: u16 = 11;
    /// Padding (RFC 7830).
    pub const PADDING: u16 = 12;
}

/// Appends the text form of the OPT RDATA `rdata` to `out` (nothing for no options).
pub fn render_options(rdata: &[u8], out: &mut String) {
    let start = out.len();
    if split(rdata).is_none() {
        out.push_str("raw=");
        push_hex(rdata, out);
        return;
    }
    for (code, data) in split(rdata).into_iter().flatten() {
        if out.len() > start {
            out.push(',');
        }
        render_one(code, data, out);
    }
}

/// Splits RDATA into (code, data) pairs, or `None` when an option overruns the RDATA.
fn split(rdata: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < rdata.len() {
        let head = rdata.get(p..p + 4)?;
        let code = u16::from_be_bytes([head[0], head[1]]);
        let len = u16::from_be_bytes([head[2], head[3]]) as usize;
        out.push((code, rdata.get(p + 4..p + 4 + len)?));
        p += 4 + len;
    }
    Some(out)
}

fn render_one(code: u16, data: &[u8], out: &mut String) {
    use std::fmt::Write;
    match (code, data.len()) {
        (code::NSID, 0) => out.push_str("nsid"),
        (code::NSID, _) => {
            out.push_str("nsid=");
            push_hex(data, out);
        }
        (code::ECS, _) if ecs_text(data).is_some() => {
            out.push_str("ecs=");
            out.push_str(&ecs_text(data).unwrap_or_default());
        }
        (code::EXPIRE, 0) => out.push_str("expire"),
        (code::EXPIRE, 4) => {
            let _ = write!(
                out,
                "expire={}",
                u32::from_be_bytes([data[0], data[1], data[2], data[3]])
            );
        }
        (code::COOKIE, 8..=40) => {
            out.push_str("cookie=");
            push_hex(data, out);
        }
        (code::KEEPALIVE, 0) => out.push_str("keepalive"),
        (code::KEEPALIVE, 2) => {
            let _ = write!(out, "keepalive={}", u16::from_be_bytes([data[0], data[1]]));
        }
        (code::PADDING, n) if data.iter().all(|&b| b == 0) => {
            let _ = write!(out, "padding={n}");
        }
        _ => {
            let _ = write!(out, "{code}");
            if !data.is_empty() {
                out.push('=');
                push_hex(data, out);
            }
        }
    }
}

/// `ADDRESS/SOURCE/SCOPE` when the option is canonical (address exactly as long as the source
/// prefix needs, no bits set past it), so that encoding the text gives back the same bytes.
fn ecs_text(data: &[u8]) -> Option<String> {
    let family = u16::from_be_bytes([*data.first()?, *data.get(1)?]);
    let source = *data.get(2)?;
    let scope = *data.get(3)?;
    let addr = &data[4..];
    let max = match family {
        1 => 32,
        2 => 128,
        _ => return None,
    };
    if source > max || addr.len() != (source as usize).div_ceil(8) {
        return None;
    }
    if !source.is_multiple_of(8) {
        let last = *addr.last()?;
        if last & (0xFFu8 >> (source % 8)) != 0 {
            return None;
        }
    }
    let text = if family == 1 {
        let mut b = [0u8; 4];
        b[..addr.len()].copy_from_slice(addr);
        Ipv4Addr::from(b).to_string()
    } else {
        let mut b = [0u8; 16];
        b[..addr.len()].copy_from_slice(addr);
        Ipv6Addr::from(b).to_string()
    };
    Some(format!("{text}/{source}/{scope}"))
}

/// Encodes the text form back into OPT RDATA.
pub fn parse_options(text: &str) -> Result<Vec<u8>, OptionsError> {
    let mut out = Vec::new();
    if text.is_empty() {
        return Ok(out);
    }
    let bad = |s: &str| OptionsError(s.to_string());
    for item in text.split(',') {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (item, None),
        };
        let (code, data): (u16, Vec<u8>) = match (key, value) {
            ("raw", Some(v)) => {
                out.extend(parse_hex(v).ok_or_else(|| bad(item))?);
                continue;
            }
            ("nsid", v) => (
                code::NSID,
                v.map(parse_hex)
                    .unwrap_or(Some(vec![]))
                    .ok_or_else(|| bad(item))?,
            ),
            ("ecs", Some(v)) => (code::ECS, parse_ecs(v).ok_or_else(|| bad(item))?),
            ("expire", None) => (code::EXPIRE, vec![]),
            ("expire", Some(v)) => (
                code::EXPIRE,
                v.parse::<u32>()
                    .map_err(|_| bad(item))?
                    .to_be_bytes()
                    .to_vec(),
            ),
            ("cookie", Some(v)) => (code::COOKIE, parse_hex(v).ok_or_else(|| bad(item))?),
            ("keepalive", None) => (code::KEEPALIVE, vec![]),
            ("keepalive", Some(v)) => (
                code::KEEPALIVE,
                v.parse::<u16>()
                    .map_err(|_| bad(item))?
                    .to_be_bytes()
                    .to_vec(),
            ),
            ("padding", Some(v)) => (
                code::PADDING,
                vec![0; v.parse::<u16>().map_err(|_| bad(item))? as usize],
            ),
            (k, v) => {
                let code = k.parse::<u16>().map_err(|_| bad(item))?;
                (
                    code,
                    v.map(parse_hex)
                        .unwrap_or(Some(vec![]))
                        .ok_or_else(|| bad(item))?,
                )
            }
        };
        let len = u16::try_from(data.len()).map_err(|_| bad(item))?;
        out.extend_from_slice(&code.to_be_bytes());
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&data);
    }
    Ok(out)
}

fn parse_ecs(v: &str) -> Option<Vec<u8>> {
    let mut parts = v.split('/');
    let addr = parts.next()?;
    let source: u8 = parts.next()?.parse().ok()?;
    let scope: u8 = parts.next().unwrap_or("0").parse().ok()?;
    let (family, bytes, max): (u16, Vec<u8>, u8) = if let Ok(a) = addr.parse::<Ipv4Addr>() {
        (1, a.octets().to_vec(), 32)
    } else {
        (2, addr.parse::<Ipv6Addr>().ok()?.octets().to_vec(), 128)
    };
    if source > max || parts.next().is_some() {
        return None;
    }
    let n = (source as usize).div_ceil(8);
    let mut out = family.to_be_bytes().to_vec();
    out.push(source);
    out.push(scope);
    out.extend_from_slice(&bytes[..n]);
    if !source.is_multiple_of(8) {
        if let Some(last) = out.last_mut() {
            *last &= !(0xFFu8 >> (source % 8));
        }
    }
    Some(out)
}

fn push_hex(data: &[u8], out: &mut String) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in data {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn show(rdata: &[u8]) -> String {
        let mut s = String::new();
        render_options(rdata, &mut s);
        s
    }

    #[test]
    fn readable_forms() {
        let ecs = [0, 8, 0, 7, 0, 1, 24, 0, 192, 0, 2];
        assert_eq!(show(&ecs), "ecs=192.0.2.0/24/0");
        let ka = [0, 11, 0, 0, 0, 12, 0, 3, 0, 0, 0];
        assert_eq!(show(&ka), "keepalive,padding=3");
        assert_eq!(show(&[0xfd, 0xe9, 0, 1, 0xab]), "65001=ab");
        assert_eq!(show(&[0, 8, 0, 9]), "raw=00080009");
        for s in [
            "ecs=192.0.2.0/24/0",
            "keepalive,padding=3",
            "65001=ab",
            "raw=00080009",
            "cookie=0011223344556677",
        ] {
            assert_eq!(show(&parse_options(s).unwrap()), s);
        }
    }

    proptest! {
        #[test]
        fn any_rdata_round_trips(opts in prop::collection::vec((any::<u16>(), prop::collection::vec(any::<u8>(), 0..12)), 0..4), junk in prop::collection::vec(any::<u8>(), 0..3)) {
            let mut rdata = Vec::new();
            for (code, data) in &opts {
                rdata.extend_from_slice(&code.to_be_bytes());
                rdata.extend_from_slice(&(data.len() as u16).to_be_bytes());
                rdata.extend_from_slice(data);
            }
            rdata.extend(junk);
            prop_assert_eq!(parse_options(&show(&rdata)).unwrap(), rdata);
        }
    }
}
