//! The RDATA of TSIG (RFC 8945) and TKEY (RFC 2930) records: transaction signatures and the key
//! exchange that sets them up (GSS-TSIG, RFC 3645, as Windows uses for its dynamic updates).

use crate::error::DnsError;
use crate::records::Rr;
use crate::wire::read_name;
use crate::Rtype;

/// A TSIG record's RDATA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tsig<'a> {
    /// Algorithm name, uncompressed wire form (e.g. `gss-tsig.`, `hmac-sha256.`).
    pub algorithm: Vec<u8>,
    /// Seconds since the epoch when the message was signed (48 bits).
    pub time_signed: u64,
    /// Seconds of error permitted in `time_signed`.
    pub fudge: u16,
    /// The message authentication code.
    pub mac: &'a [u8],
    /// The message ID of the message as it was first signed.
    pub original_id: u16,
    /// Extended RCODE of the signature (BADSIG 16, BADKEY 17, BADTIME 18, BADTRUNC 22).
    pub error: u16,
    /// Other data (the server's time with BADTIME).
    pub other: &'a [u8],
}

/// A TKEY record's RDATA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tkey<'a> {
    /// Algorithm name, uncompressed wire form (`gss-tsig.` for GSS-TSIG).
    pub algorithm: Vec<u8>,
    /// Start of the key's validity, seconds since the epoch.
    pub inception: u32,
    /// End of the key's validity, seconds since the epoch.
    pub expiration: u32,
    /// Key agreement mode (3 GSS-API negotiation, 5 key deletion, ...).
    pub mode: u16,
    /// Extended RCODE of the exchange.
    pub error: u16,
    /// The key data (for GSS-API, the security context token: often more than a kilobyte).
    pub key: &'a [u8],
    /// Other data.
    pub other: &'a [u8],
}

/// Reads fields off one record's RDATA, never past its end.
struct Cursor<'a> {
    wire: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    /// Starts at the RDATA of `rr`, reading its leading algorithm name.
    fn after_algorithm(rr: &Rr<'a>) -> Result<(Cursor<'a>, Vec<u8>), DnsError> {
        let wire = rr.message();
        let mut algorithm = Vec::new();
        let pos = read_name(wire, rr.rdata_offset, &mut algorithm)?;
        if pos > rr.end {
            return Err(DnsError::Truncated);
        }
        Ok((
            Cursor {
                wire,
                pos,
                end: rr.end,
            },
            algorithm,
        ))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DnsError> {
        if self.pos + n > self.end {
            return Err(DnsError::Truncated);
        }
        let b = self
            .wire
            .get(self.pos..self.pos + n)
            .ok_or(DnsError::Truncated)?;
        self.pos += n;
        Ok(b)
    }

    fn u16(&mut self) -> Result<u16, DnsError> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, DnsError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A u16 length, then that many bytes.
    fn counted(&mut self) -> Result<&'a [u8], DnsError> {
        let n = self.u16()? as usize;
        self.bytes(n)
    }
}

impl<'a> Rr<'a> {
    /// The TSIG fields of a TSIG record; `None` for other types, an error when the RDATA ends
    /// before its fields do.
    pub fn tsig(&self) -> Option<Result<Tsig<'a>, DnsError>> {
        (self.rtype == Rtype::TSIG).then(|| {
            let (mut c, algorithm) = Cursor::after_algorithm(self)?;
            let t = c.bytes(6)?;
            let time_signed = t.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64);
            Ok(Tsig {
                algorithm,
                time_signed,
                fudge: c.u16()?,
                mac: c.counted()?,
                original_id: c.u16()?,
                error: c.u16()?,
                other: c.counted()?,
            })
        })
    }

    /// The TKEY fields of a TKEY record; `None` for other types, an error when the RDATA ends
    /// before its fields do.
    pub fn tkey(&self) -> Option<Result<Tkey<'a>, DnsError>> {
        (self.rtype == Rtype::TKEY).then(|| {
            let (mut c, algorithm) = Cursor::after_algorithm(self)?;
            Ok(Tkey {
                algorithm,
                inception: c.u32()?,
                expiration: c.u32()?,
                mode: c.u16()?,
                error: c.u16()?,
                key: c.counted()?,
                other: c.counted()?,
            })
        })
    }
}
