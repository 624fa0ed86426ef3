//! HPACK header block decoding (RFC 7541) for the DoH client's responses.
//!
//! Written here, around `httlib-huffman`'s table-driven Huffman decoder, because the HPACK
//! crates cost too much per response: `loona-hpack` builds its Huffman decoding table (a hash
//! map) for every Huffman-coded string, which took 70% of a `--fast` DoH replay's CPU (perf,
//! bench/encrypted.sh fast: 24 µs per query against 17–19 µs for dnsperf), and `httlib-hpack`
//! allocates two vectors per field and moves the rest of the block after each one. Here a field
//! is handed over as slices: of the block, of the tables, or of one reused scratch buffer.
//!
//! The client asks for no dynamic table (`SETTINGS_HEADER_TABLE_SIZE` 0), so a server keeps
//! none; the table is still kept as the protocol allows (up to 4,096 bytes) for a server that
//! indexes anyway.

use httlib_huffman::DecoderSpeed;
use std::collections::VecDeque;

/// The largest dynamic table a server may ask for: the protocol's default, which is also the
/// most it may use before it has read the client's SETTINGS.
const MAX_TABLE: usize = 4_096;

/// Each entry's overhead in the table's size (RFC 7541 §4.1).
const ENTRY_OVERHEAD: usize = 32;

/// The static table (RFC 7541 Appendix A), from index 1.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Why a header block could not be decoded (a connection error: the tables are out of step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HpackError;

/// A dynamic table entry: name and value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// The decoding state of one connection: its dynamic table.
#[derive(Default)]
pub(crate) struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    /// The table's size as RFC 7541 §4.1 counts it.
    size: usize,
    /// The table's size limit, as the server last set it.
    max: Option<usize>,
}

/// Where a string of a field is: in the block, or decoded into a scratch buffer.
enum Str {
    Block(usize, usize),
    Scratch(usize, usize),
}

impl Decoder {
    /// Decodes `block`, handing each field's name and value to `field`.
    pub fn decode(
        &mut self,
        block: &[u8],
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut scratch = Vec::new();
        let mut pos = 0;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = integer(block, &mut pos, 7)?;
                let (name, value) = self.entry(index)?;
                field(name, value);
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3).
                let max = integer(block, &mut pos, 5)?;
                if max > MAX_TABLE {
                    return Err(HpackError);
                }
                self.max = Some(max);
                self.evict_to(max);
            } else {
                // Literal, with incremental indexing (§6.2.1), without (§6.2.2) or never
                // indexed (§6.2.3).
                let indexing = first & 0x40 != 0;
                let index = integer(block, &mut pos, if indexing { 6 } else { 4 })?;
                scratch.clear();
                let name = if index == 0 {
                    Some(string(block, &mut pos, &mut scratch)?)
                } else {
                    None
                };
                let value = string(block, &mut pos, &mut scratch)?;
                let slice = |s: &Str| -> &[u8] {
                    match *s {
                        Str::Block(a, b) => &block[a..b],
                        Str::Scratch(a, b) => &scratch[a..b],
                    }
                };
                let name: &[u8] = match &name {
                    Some(s) => slice(s),
                    None => self.entry(index)?.0,
                };
                let value = slice(&value);
                field(name, value);
                if indexing {
                    let entry = (Box::from(name), Box::from(value));
                    self.insert(entry);
                }
            }
        }
        Ok(())
    }

    /// The field at `index` of the static and dynamic tables (§2.3.3).
    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            0 => Err(HpackError),
            1..=61 => Ok(STATIC[index - 1]),
            _ => self
                .table
                .get(index - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(HpackError),
        }
    }

    /// Adds an entry, evicting the oldest ones to make room (§4.4).
    fn insert(&mut self, (name, value): Entry) {
        let max = self.max.unwrap_or(MAX_TABLE);
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > max {
            // Larger than the table: it empties the table and is not added.
            self.evict_to(0);
            return;
        }
        self.evict_to(max - size);
        self.table.push_front((name, value));
        self.size += size;
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + ENTRY_OVERHEAD;
        }
        if self.table.is_empty() {
            self.table = VecDeque::new();
        }
    }
}

/// An integer with an `n`-bit prefix at `block[*pos]` (§5.1); moves `pos` past it.
pub(crate) fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<usize, HpackError> {
    let max = (1usize << n) - 1;
    let mut value = usize::from(*block.get(*pos).ok_or(HpackError)?) & max;
    *pos += 1;
    if value < max {
        return Ok(value);
    }
    for shift in (0..28).step_by(7) {
        let b = *block.get(*pos).ok_or(HpackError)?;
        *pos += 1;
        value += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(HpackError)
}

/// Appends an integer with an `n`-bit prefix after the bits of `first` (§5.1; QPACK's are the
/// same).
pub(crate) fn put_integer(b: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        b.push(first | value as u8);
        return;
    }
    b.push(first | max as u8);
    value -= max;
    while value >= 128 {
        b.push((value % 128 + 128) as u8);
        value /= 128;
    }
    b.push(value as u8);
}

/// A string literal at `block[*pos]` (§5.2): where it is in the block, or, when Huffman
/// coded, where it was decoded to in `scratch`.
fn string(block: &[u8], pos: &mut usize, scratch: &mut Vec<u8>) -> Result<Str, HpackError> {
    let huffman = block.get(*pos).ok_or(HpackError)? & 0x80 != 0;
    let len = integer(block, pos, 7)?;
    let end = pos.checked_add(len).ok_or(HpackError)?;
    let bytes = block.get(*pos..end).ok_or(HpackError)?;
    *pos = end;
    if !huffman {
        return Ok(Str::Block(end - len, end));
    }
    let start = scratch.len();
    httlib_huffman::decode(bytes, scratch, DecoderSpeed::FourBits).map_err(|_| HpackError)?;
    Ok(Str::Scratch(start, scratch.len()))
}

/// Decodes an arbitrary block twice with one decoder (the `doh_response` fuzz target): no
/// panic, and the dynamic table never above the 4,096 bytes the protocol allows.
pub(crate) fn fuzz_block(block: &[u8]) {
    let mut d = Decoder::default();
    for _ in 0..2 {
        let _ = d.decode(block, &mut |name, value| {
            assert!(
                name.len() <= block.len() * 8 / 5 + 61 && value.len() <= block.len() * 8 / 5 + 61
            );
        });
        assert!(d.size <= MAX_TABLE, "table {} bytes", d.size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    fn fields(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(block, &mut |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .expect("a valid block");
        out
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.6: responses with Huffman coding, the dynamic table in use and evicting.
    #[test]
    fn the_rfc_response_examples_decode_with_the_dynamic_table() {
        let mut d = Decoder::default();
        // The examples' table holds 256 bytes.
        d.decode(&[0x3f, 0xe1, 0x01], &mut |_, _| {}).unwrap();
        let date = "Mon, 21 Oct 2013 20:13:21 GMT";
        let first = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        assert_eq!(
            fields(&mut d, &first),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", date),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222);
        let second = hex("4883 640e ff c1 c0 bf");
        assert_eq!(
            fields(&mut d, &second),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", date),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222, "302 evicted for 307");
    }

    /// The same answers as `loona-hpack`, an independent decoder, on blocks it can read.
    #[test]
    fn plain_literals_and_indexed_fields_match_another_decoder() {
        let block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
        let mut d = Decoder::default();
        let ours = fields(&mut d, &block);
        let theirs: Vec<(String, String)> = loona_hpack::Decoder::new()
            .decode(&block)
            .unwrap()
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(ours, theirs);
        assert_eq!(ours[3], pairs(&[(":authority", "www.example.com")])[0]);
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        for bad in [
            &[0x80][..],                           // index 0
            &[0xbf, 0x01],                         // index 64, empty dynamic table
            &[0x3f, 0xe2, 0x1f],                   // a table larger than 4,096
            &[0x00, 0x05, b'a'],                   // a name longer than the block
            &[0x0f],                               // an integer cut short
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // an integer too long
            &[0x00, 0x81, 0xff, 0x00],             // Huffman EOS padding gone wrong
        ] {
            let mut d = Decoder::default();
            assert_eq!(d.decode(bad, &mut |_, _| {}), Err(HpackError), "{bad:02x?}");
        }
    }
}
