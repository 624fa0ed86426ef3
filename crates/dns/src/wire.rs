//! Low-level walking of names and records, shared by the parser, the editor and decompression.

use crate::error::DnsError;
use crate::message::HEADER_LEN;
use crate::Rtype;

/// Longest name on the wire, root label included (RFC 1035 §3.1).
const MAX_WIRE_NAME: usize = 255;

/// Reads a big-endian u16 at `pos`, or fails with [`DnsError::Truncated`].
#[inline]
pub(crate) fn u16_at(wire: &[u8], pos: usize) -> Result<u16, DnsError> {
    match wire.get(pos..pos + 2) {
        Some(b) => Ok(u16::from_be_bytes([b[0], b[1]])),
        None => Err(DnsError::Truncated),
    }
}

/// Skips the name starting at `pos` and returns the position just after it.
///
/// Compression pointers are followed only to validate them: each must point strictly before the
/// start of the label run it ends (so chains always terminate) and past the header, and the
/// expanded name must fit in 255 bytes.
#[inline]
pub(crate) fn skip_name(wire: &[u8], pos: usize) -> Result<usize, DnsError> {
    skip_name_reach(wire, pos).map(|(next, _)| next)
}

/// Like [`skip_name`], also returning how far into the message the name's bytes reach (a pointer
/// may lead into the middle of a later record, or past the last one).
#[inline]
pub(crate) fn skip_name_reach(wire: &[u8], pos: usize) -> Result<(usize, usize), DnsError> {
    let mut reach = pos;
    let mut p = pos;
    let mut run_start = pos;
    let mut len = 0usize;
    let mut end = None;
    loop {
        let b = *wire.get(p).ok_or(DnsError::Truncated)?;
        match b & 0xC0 {
            0x00 => {
                len += b as usize + 1;
                if len > MAX_WIRE_NAME {
                    return Err(DnsError::NameTooLong);
                }
                if b == 0 {
                    reach = reach.max(p + 1);
                    return Ok((end.unwrap_or(p + 1), reach));
                }
                p += 1 + b as usize;
                reach = reach.max(p);
                if p > wire.len() {
                    return Err(DnsError::Truncated);
                }
            }
            0xC0 => {
                let low = *wire.get(p + 1).ok_or(DnsError::Truncated)?;
                let target = (((b & 0x3F) as usize) << 8) | low as usize;
                if target >= run_start || target < HEADER_LEN {
                    return Err(DnsError::BadPointer);
                }
                if end.is_none() {
                    end = Some(p + 2);
                }
                run_start = target;
                p = target;
            }
            _ => return Err(DnsError::BadLabel),
        }
    }
}

/// Appends the expanded (uncompressed) wire form of the name at `pos` to `out` and returns the
/// position just after the name in the message.
pub(crate) fn read_name(wire: &[u8], pos: usize, out: &mut Vec<u8>) -> Result<usize, DnsError> {
    let next = skip_name(wire, pos)?;
    let mut p = pos;
    loop {
        let b = wire[p];
        if b & 0xC0 == 0xC0 {
            p = (((b & 0x3F) as usize) << 8) | wire[p + 1] as usize;
            continue;
        }
        let n = b as usize;
        out.extend_from_slice(&wire[p..p + 1 + n]);
        if n == 0 {
            return Ok(next);
        }
        p += 1 + n;
    }
}

/// Where the domain names sit inside the RDATA of a record type that may carry compressed names.
///
/// Only the types of RFC 1035 may be compressed (RFC 3597 §4); a few later types are listed
/// because some servers compress them anyway and decoders are told to accept that. TKEY and TSIG
/// (RFC 2930, RFC 8945) start with an algorithm name that must not be compressed, but decoders
/// (tshark's, dnspython's) follow a pointer there, so it is validated and expanded like the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdataNames {
    /// No names that can be compressed.
    None,
    /// One name at this offset into the RDATA.
    At(usize),
    /// Two consecutive names at the start of the RDATA (SOA, MINFO, RP).
    Two,
    /// NAPTR: a name after two u16 and three character strings.
    Naptr,
}

/// Where a record type's RDATA holds names that a message may compress: the decoder expands
/// them, and a zone checks them before it compresses its own answers.
pub fn rdata_names(rr_type: Rtype) -> RdataNames {
    match rr_type {
        Rtype::NS
        | Rtype::MD
        | Rtype::MF
        | Rtype::CNAME
        | Rtype::MB
        | Rtype::MG
        | Rtype::MR
        | Rtype::PTR
        | Rtype::DNAME => RdataNames::At(0),
        Rtype::SOA | Rtype::MINFO | Rtype::RP => RdataNames::Two,
        Rtype::MX | Rtype::AFSDB | Rtype::RT | Rtype::KX => RdataNames::At(2),
        Rtype::SRV => RdataNames::At(6),
        Rtype::NAPTR => RdataNames::Naptr,
        Rtype::TKEY | Rtype::TSIG => RdataNames::At(0),
        _ => RdataNames::None,
    }
}

/// One resource record as located by [`walk`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordPos {
    /// Start of the owner name.
    pub owner: usize,
    /// Start of the TYPE field, just after the owner name.
    pub fixed: usize,
    /// Record type.
    pub rr_type: Rtype,
    /// Start of the RDATA.
    pub rdata: usize,
    /// End of the RDATA (exclusive).
    pub end: usize,
}

/// Visits every question (as `None` RDATA) and record of a message in order.
///
/// `visit(section, pos)` is called with section 0 for questions (only `owner` and `fixed` are
/// meaningful), 1–3 for answer, authority and additional records. Returns the end of the last
/// record. RDATA names of compressible types are validated too.
pub(crate) fn walk(
    wire: &[u8],
    mut visit: impl FnMut(u8, RecordPos) -> Result<(), DnsError>,
) -> Result<usize, DnsError> {
    if wire.len() < HEADER_LEN {
        return Err(DnsError::ShortHeader);
    }
    let counts = [
        u16_at(wire, 4)?,
        u16_at(wire, 6)?,
        u16_at(wire, 8)?,
        u16_at(wire, 10)?,
    ];
    // Every question takes at least 5 bytes and every record at least 11: reject counts the
    // message cannot hold before walking, so absurd counts cost nothing.
    let min = counts[0] as usize * 5
        + (counts[1] as usize + counts[2] as usize + counts[3] as usize) * 11;
    if HEADER_LEN + min > wire.len() {
        return Err(DnsError::AbsurdCounts);
    }
    // The furthest byte any name reaches: a pointer into the middle of a label can make a name
    // read past the last record, where its meaning would change with any byte added there.
    let mut reach = 0usize;
    let mut p = HEADER_LEN;
    for _ in 0..counts[0] {
        let (fixed, r) = skip_name_reach(wire, p)?;
        reach = reach.max(r);
        if fixed + 4 > wire.len() {
            return Err(DnsError::Truncated);
        }
        let rr_type = Rtype(u16_at(wire, fixed)?);
        visit(
            0,
            RecordPos {
                owner: p,
                fixed,
                rr_type,
                rdata: fixed + 4,
                end: fixed + 4,
            },
        )?;
        p = fixed + 4;
    }
    for (section, &count) in counts[1..].iter().enumerate() {
        for _ in 0..count {
            let (fixed, r) = skip_name_reach(wire, p)?;
            reach = reach.max(r);
            if fixed + 10 > wire.len() {
                return Err(DnsError::Truncated);
            }
            let rr_type = Rtype(u16_at(wire, fixed)?);
            let rdlen = u16_at(wire, fixed + 8)? as usize;
            let rdata = fixed + 10;
            let end = rdata + rdlen;
            if end > wire.len() {
                return Err(DnsError::Truncated);
            }
            for name in rdata_name_positions(wire, rr_type, rdata, end) {
                let (after, r) = skip_name_reach(wire, name?)?;
                if after > end {
                    return Err(DnsError::Truncated);
                }
                reach = reach.max(r);
            }
            visit(
                section as u8 + 1,
                RecordPos {
                    owner: p,
                    fixed,
                    rr_type,
                    rdata,
                    end,
                },
            )?;
            p = end;
        }
    }
    if reach > p {
        return Err(DnsError::BadPointer);
    }
    Ok(p)
}

/// Positions of the compressible names inside one record's RDATA.
///
/// An empty RDATA holds no name whatever the type: dynamic updates (RFC 2136 §2.4, §2.5) use
/// records of class ANY or NONE with RDLENGTH 0 to say "this RRset exists", "this name has no
/// CNAME" or "delete this RRset", for name-holding types (CNAME, PTR, NS, SRV, ...) too.
fn rdata_name_positions(
    wire: &[u8],
    rr_type: Rtype,
    rdata: usize,
    end: usize,
) -> impl Iterator<Item = Result<usize, DnsError>> {
    let mut out: [Option<Result<usize, DnsError>>; 2] = [None, None];
    let names = if rdata == end {
        RdataNames::None
    } else {
        rdata_names(rr_type)
    };
    match names {
        RdataNames::None => {}
        RdataNames::At(off) => {
            out[0] = Some(if rdata + off < end {
                Ok(rdata + off)
            } else {
                Err(DnsError::Truncated)
            })
        }
        RdataNames::Two => {
            out[0] = Some(Ok(rdata));
            out[1] = Some(skip_name(wire, rdata).and_then(|p| {
                if p < end {
                    Ok(p)
                } else {
                    Err(DnsError::Truncated)
                }
            }));
        }
        RdataNames::Naptr => {
            let mut p = rdata + 4;
            let mut res = Ok(());
            for _ in 0..3 {
                match wire.get(p) {
                    Some(&n) if p < end => p += 1 + n as usize,
                    _ => res = Err(DnsError::Truncated),
                }
            }
            out[0] = Some(res.and(if p < end {
                Ok(p)
            } else {
                Err(DnsError::Truncated)
            }));
        }
    }
    out.into_iter().flatten()
}

/// Rewrites a message with every name expanded (no compression pointers left), so that bytes can
/// be inserted or removed anywhere without breaking pointers. RDATA lengths are adjusted; bytes
/// after the last record are kept.
pub fn decompress(wire: &[u8]) -> Result<Vec<u8>, DnsError> {
    let mut out = Vec::with_capacity(wire.len() * 2);
    out.extend_from_slice(&wire[..HEADER_LEN.min(wire.len())]);
    let end = walk(wire, |section, rr| {
        read_name(wire, rr.owner, &mut out)?;
        if section == 0 {
            out.extend_from_slice(&wire[rr.fixed..rr.fixed + 4]);
            return Ok(());
        }
        out.extend_from_slice(&wire[rr.fixed..rr.fixed + 8]);
        let len_pos = out.len();
        out.extend_from_slice(&[0, 0]);
        let start = out.len();
        let names: Vec<usize> =
            rdata_name_positions(wire, rr.rr_type, rr.rdata, rr.end).collect::<Result<_, _>>()?;
        let mut p = rr.rdata;
        for name in names {
            out.extend_from_slice(&wire[p..name]);
            p = skip_name(wire, name)?;
            read_name(wire, name, &mut out)?;
        }
        out.extend_from_slice(&wire[p..rr.end]);
        let len = out.len() - start;
        let len = u16::try_from(len).map_err(|_| DnsError::Truncated)?;
        out[len_pos..len_pos + 2].copy_from_slice(&len.to_be_bytes());
        Ok(())
    })?;
    out.extend_from_slice(&wire[end..]);
    Ok(out)
}

/// True when some compression pointer in the message points at `pos` or later.
pub(crate) fn has_pointer_at_or_after(wire: &[u8], pos: usize) -> Result<bool, DnsError> {
    let mut found = false;
    let mut check = |start: usize| -> Result<(), DnsError> {
        let mut p = start;
        loop {
            let b = wire[p];
            if b & 0xC0 == 0xC0 {
                let target = (((b & 0x3F) as usize) << 8) | wire[p + 1] as usize;
                if target >= pos {
                    found = true;
                }
                return Ok(());
            }
            if b == 0 {
                return Ok(());
            }
            p += 1 + b as usize;
        }
    };
    walk(wire, |section, rr| {
        check(rr.owner)?;
        if section > 0 {
            let names: Vec<usize> = rdata_name_positions(wire, rr.rr_type, rr.rdata, rr.end)
                .collect::<Result<_, _>>()?;
            for n in names {
                check(n)?;
            }
        }
        Ok(())
    })?;
    Ok(found)
}
