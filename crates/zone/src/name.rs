//! Helpers on uncompressed wire-format domain names (a sequence of length-prefixed labels ending
//! with the root label).

/// Longest name in wire format (RFC 1035 §2.3.4).
pub const MAX_NAME: usize = 255;

/// Lowercases a wire-format name in place. Length octets are below 64 and so never ASCII letters,
/// which makes a byte-wise lowercase of the whole buffer correct.
pub fn lowercase_in_place(name: &mut [u8]) {
    name.make_ascii_lowercase();
}

/// The lowercase copy of a name.
pub fn lowercase(name: &[u8]) -> Box<[u8]> {
    let mut v = name.to_vec().into_boxed_slice();
    lowercase_in_place(&mut v);
    v
}

/// Offsets of the label starts of a well-formed name, excluding the root label; returns the count.
pub fn label_starts(name: &[u8], out: &mut [u8; 128]) -> usize {
    let mut n = 0;
    let mut pos = 0;
    while pos < name.len() && name[pos] != 0 && n < 128 {
        out[n] = pos as u8;
        n += 1;
        pos += 1 + name[pos] as usize;
    }
    n
}

/// Number of labels (excluding the root label).
pub fn label_count(name: &[u8]) -> usize {
    let mut n = 0;
    let mut pos = 0;
    while pos < name.len() && name[pos] != 0 {
        n += 1;
        pos += 1 + name[pos] as usize;
    }
    n
}

/// The name without its first label (the parent), or `None` for the root.
pub fn parent(name: &[u8]) -> Option<&[u8]> {
    match name.first() {
        Some(&l) if l != 0 => name.get(1 + l as usize..),
        _ => None,
    }
}

/// True when `name` equals `ancestor` or is below it (both lowercase).
pub fn is_subdomain(name: &[u8], ancestor: &[u8]) -> bool {
    if ancestor.len() > name.len() {
        return false;
    }
    let off = name.len() - ancestor.len();
    if name[off..] != *ancestor {
        return false;
    }
    // The suffix must start at a label boundary.
    let mut pos = 0;
    while pos < off {
        pos += 1 + name[pos] as usize;
    }
    pos == off
}

/// Validates a wire-format name (labels ≤ 63, total ≤ 255, ends in the root label) and returns
/// its length.
pub fn wire_name_len(buf: &[u8]) -> Option<usize> {
    let mut pos = 0;
    loop {
        let l = *buf.get(pos)? as usize;
        if l > 63 {
            return None;
        }
        pos += 1 + l;
        if pos > MAX_NAME || pos > buf.len() {
            return None;
        }
        if l == 0 {
            return Some(pos);
        }
    }
}

/// Appends the canonical sort key of a name (RFC 4034 §6.1): labels from the root down,
/// lowercased, each escaped so that bytes 0 and 1 become `1,1` and `1,2`, and terminated by 0.
/// Byte-wise comparison of keys is the canonical DNS name order.
pub fn canonical_key(name: &[u8], out: &mut Vec<u8>) {
    let mut starts = [0u8; 128];
    let n = label_starts(name, &mut starts);
    for i in (0..n).rev() {
        let s = starts[i] as usize;
        let l = name[s] as usize;
        for &b in &name[s + 1..s + 1 + l] {
            let b = b.to_ascii_lowercase();
            if b <= 1 {
                out.push(1);
                out.push(b + 1);
            } else {
                out.push(b);
            }
        }
        out.push(0);
    }
}

/// Presentation form of a wire name, for messages.
pub fn to_text(name: &[u8]) -> String {
    let mut s = String::new();
    ldplayer_dns::name_to_presentation(name, &mut s);
    s
}

/// Decodes base32hex (RFC 4648 §7, no padding, case-insensitive).
pub fn base32hex_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 5 / 8);
    let mut acc: u64 = 0;
    let mut bits = 0;
    for &c in s {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'v' => c - b'a' + 10,
            b'A'..=b'V' => c - b'A' + 10,
            _ => return None,
        };
        acc = (acc << 5) | v as u64;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Encodes base32hex, lowercase, no padding.
pub fn base32hex_encode(data: &[u8], out: &mut Vec<u8>) {
    const ALPHA: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in data {
        acc = (acc << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHA[((acc >> bits) & 31) as usize]);
        }
        acc &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(ALPHA[((acc << (5 - bits)) & 31) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<u8> {
        ldplayer_dns::name_from_presentation(s).unwrap()
    }

    #[test]
    fn canonical_order() {
        // RFC 4034 §6.1 example order.
        let names = [
            "example.",
            "a.example.",
            "yljkjljk.a.example.",
            "Z.a.example.",
            "zABC.a.EXAMPLE.",
            "z.example.",
            "\\001.z.example.",
            "*.z.example.",
            "\\200.z.example.",
        ];
        let keys: Vec<Vec<u8>> = names
            .iter()
            .map(|n| {
                let mut k = Vec::new();
                canonical_key(&w(n), &mut k);
                k
            })
            .collect();
        for i in 1..keys.len() {
            assert!(keys[i - 1] < keys[i], "{} !< {}", names[i - 1], names[i]);
        }
    }

    #[test]
    fn subdomain() {
        assert!(is_subdomain(&w("a.b.c."), &w("b.c.")));
        assert!(is_subdomain(&w("a.b.c."), &w(".")));
        assert!(!is_subdomain(&w("ab.c."), &w("b.c.")));
    }

    #[test]
    fn base32() {
        let mut out = Vec::new();
        base32hex_encode(&[0xff, 0x00, 0x12, 0x34, 0x56], &mut out);
        assert_eq!(
            base32hex_decode(&out).unwrap(),
            vec![0xff, 0x00, 0x12, 0x34, 0x56]
        );
    }
}
