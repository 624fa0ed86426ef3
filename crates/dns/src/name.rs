//! Domain names in presentation format (RFC 1035 §5.1) and back.

use thiserror::Error;

/// Longest name in wire form, root label included.
pub const MAX_NAME_LEN: usize = 255;

/// Why a presentation-format name cannot be turned into wire form.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    /// An empty label, as in `a..b`.
    #[error("empty label")]
    EmptyLabel,
    /// A label longer than 63 bytes.
    #[error("label longer than 63 bytes")]
    LongLabel,
    /// A name longer than 255 bytes in wire form.
    #[error("name longer than 255 bytes")]
    LongName,
    /// A backslash not followed by a character or by three decimal digits up to 255.
    #[error("bad escape")]
    BadEscape,
    /// An empty string.
    #[error("empty name")]
    Empty,
}

/// Appends the presentation form of an uncompressed wire name to `out`: labels joined by dots
/// with a trailing dot, `.` for the root; special characters escaped with a backslash and
/// non-printable bytes (space and tab included, so names never break a tab-separated line) as
/// `\DDD`.
pub fn name_to_presentation(wire_name: &[u8], out: &mut String) {
    let mut p = 0;
    if wire_name.first().is_none_or(|&b| b == 0) {
        out.push('.');
        return;
    }
    while let Some(&len) = wire_name.get(p) {
        if len == 0 {
            break;
        }
        let label = wire_name.get(p + 1..p + 1 + len as usize).unwrap_or(&[]);
        for &b in label {
            match b {
                b'.' | b'\\' | b'"' | b';' | b'(' | b')' | b'@' | b'$' => {
                    out.push('\\');
                    out.push(b as char);
                }
                0x21..=0x7E => out.push(b as char),
                _ => {
                    out.push('\\');
                    out.push((b'0' + b / 100) as char);
                    out.push((b'0' + b / 10 % 10) as char);
                    out.push((b'0' + b % 10) as char);
                }
            }
        }
        out.push('.');
        p += 1 + len as usize;
    }
}

/// Parses a presentation-format name into uncompressed wire form. Names are taken as absolute
/// whether or not they end in a dot.
pub fn name_from_presentation(s: &str) -> Result<Vec<u8>, NameError> {
    if s.is_empty() {
        return Err(NameError::Empty);
    }
    let mut out = Vec::with_capacity(s.len() + 2);
    if s == "." {
        out.push(0);
        return Ok(out);
    }
    let bytes = s.as_bytes();
    let mut label_start = 0;
    out.push(0);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'.' => {
                close_label(&mut out, label_start)?;
                label_start = out.len();
                out.push(0);
                i += 1;
                if i == bytes.len() {
                    // Trailing dot: the placeholder just pushed becomes the root label.
                    return finish(out);
                }
                continue;
            }
            b'\\' => {
                let rest = &bytes[i + 1..];
                match rest {
                    [d0 @ b'0'..=b'9', d1 @ b'0'..=b'9', d2 @ b'0'..=b'9', ..] => {
                        let v =
                            (d0 - b'0') as u32 * 100 + (d1 - b'0') as u32 * 10 + (d2 - b'0') as u32;
                        let v = u8::try_from(v).map_err(|_| NameError::BadEscape)?;
                        out.push(v);
                        i += 4;
                    }
                    [c, ..] if !c.is_ascii_digit() => {
                        out.push(*c);
                        i += 2;
                    }
                    _ => return Err(NameError::BadEscape),
                }
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    close_label(&mut out, label_start)?;
    out.push(0);
    finish(out)
}

fn close_label(out: &mut [u8], label_start: usize) -> Result<(), NameError> {
    let len = out.len() - label_start - 1;
    if len == 0 {
        return Err(NameError::EmptyLabel);
    }
    if len > 63 {
        return Err(NameError::LongLabel);
    }
    out[label_start] = len as u8;
    Ok(())
}

fn finish(out: Vec<u8>) -> Result<Vec<u8>, NameError> {
    if out.len() > MAX_NAME_LEN {
        Err(NameError::LongName)
    } else {
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn show(wire: &[u8]) -> String {
        let mut s = String::new();
        name_to_presentation(wire, &mut s);
        s
    }

    #[test]
    fn presentation_examples() {
        assert_eq!(show(b"\0"), ".");
        assert_eq!(show(b"\x03www\x07example\x03com\0"), "www.example.com.");
        assert_eq!(show(b"\x03a.b\x02\t \0"), "a\\.b.\\009\\032.");
        assert_eq!(
            name_from_presentation("www.example.com").unwrap(),
            b"\x03www\x07example\x03com\0"
        );
        assert_eq!(
            name_from_presentation("www.example.com.").unwrap(),
            b"\x03www\x07example\x03com\0"
        );
        assert_eq!(name_from_presentation(".").unwrap(), b"\0");
        assert_eq!(
            name_from_presentation("a\\.b.\\009\\032").unwrap(),
            b"\x03a.b\x02\t \0"
        );
        assert_eq!(name_from_presentation("a..b"), Err(NameError::EmptyLabel));
        assert_eq!(name_from_presentation("a\\256"), Err(NameError::BadEscape));
        assert_eq!(
            name_from_presentation(&"a".repeat(64)),
            Err(NameError::LongLabel)
        );
    }

    fn wire_name() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(prop::collection::vec(any::<u8>(), 1..20), 0..8).prop_map(|labels| {
            let mut out = Vec::new();
            for l in labels {
                out.push(l.len() as u8);
                out.extend(l);
            }
            out.push(0);
            out
        })
    }

    proptest! {
        #[test]
        fn presentation_round_trips(name in wire_name()) {
            let text = show(&name);
            prop_assert!(!text.contains('\t') && !text.contains(' ') && !text.contains('\n'));
            prop_assert_eq!(name_from_presentation(&text).unwrap(), name);
        }
    }
}
