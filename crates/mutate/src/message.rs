//! Edits to the DNS message of a query, through `ldplayer_dns::Fields` and `apply` only.

use crate::choice::Share;
use crate::DEFAULT_UDP_SIZE;
use ldplayer_dns::{apply, flag, EdnsFields, Fields, Message, MAX_NAME_LEN};

/// The message edits of a configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageEdits {
    pub strip_edns: bool,
    pub add_edns: Option<u16>,
    pub udp_size: Option<u16>,
    pub set_do: Option<Share>,
    pub clear_do: bool,
    pub recursion_desired: Option<bool>,
    pub qname_prefix: Option<Vec<u8>>,
}

impl MessageEdits {
    /// True when there is nothing to do.
    pub fn is_empty(&self) -> bool {
        !self.strip_edns
            && self.add_edns.is_none()
            && self.udp_size.is_none()
            && self.set_do.is_none()
            && !self.clear_do
            && self.recursion_desired.is_none()
            && self.qname_prefix.is_none()
    }

    /// Edits the query `msg`, `seq` being its record's position in the input and `draw` a
    /// uniform number for the DO choice. Writes the rewritten message to `out` and returns true
    /// when anything changed (false: the original bytes stand); names each change in `changed`.
    /// An error is the reason to drop the record.
    pub fn edit(
        &self,
        msg: &Message<'_>,
        seq: u64,
        draw: u64,
        out: &mut Vec<u8>,
        changed: &mut Vec<&'static str>,
    ) -> Result<bool, &'static str> {
        let mut f = Fields::of(msg);
        let before = changed.len();
        if self.strip_edns && f.edns.take().is_some() {
            changed.push("edns-strip");
        }
        if let Some(udp_size) = self.add_edns {
            if f.edns.is_none() {
                f.edns = Some(new_edns(udp_size));
                changed.push("edns-add");
            }
        }
        if let Some(size) = self.udp_size {
            if let Some(e) = f.edns.as_mut().filter(|e| e.udp_size != size) {
                e.udp_size = size;
                changed.push("udp-size");
            }
        }
        if self.set_do.is_some_and(|s| s.hit(draw)) {
            let e = f.edns.get_or_insert_with(|| new_edns(DEFAULT_UDP_SIZE));
            if !e.dnssec_ok {
                e.dnssec_ok = true;
                changed.push("do-set");
            }
        }
        if self.clear_do {
            if let Some(e) = f.edns.as_mut().filter(|e| e.dnssec_ok) {
                e.dnssec_ok = false;
                changed.push("do-clear");
            }
        }
        if let Some(rd) = self.recursion_desired {
            if (f.flags & flag::RD != 0) != rd {
                f.flags ^= flag::RD;
                changed.push(if rd { "rd-set" } else { "rd-clear" });
            }
        }
        if let (Some(prefix), Some(q)) = (&self.qname_prefix, f.question.as_mut()) {
            let mut name = Vec::with_capacity(q.name.len() + 64);
            name.push(0);
            name.extend_from_slice(prefix);
            name.extend_from_slice(format!("{seq:x}").as_bytes());
            name[0] = (name.len() - 1) as u8;
            name.extend_from_slice(&q.name);
            if name.len() > MAX_NAME_LEN {
                return Err("qname-too-long");
            }
            q.name = name;
            changed.push("qname-prefix");
        }
        if changed.len() == before {
            return Ok(false);
        }
        out.clear();
        out.extend_from_slice(msg.wire());
        apply(out, &f).map_err(|_| "edit-failed")?;
        Ok(true)
    }
}

fn new_edns(udp_size: u16) -> EdnsFields {
    EdnsFields {
        version: 0,
        udp_size,
        dnssec_ok: false,
        options: Vec::new(),
    }
}
