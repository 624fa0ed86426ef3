//! A fast, validating view of DNS messages on the wire, their presentation format, and in-place
//! editing.
//!
//! This crate is the hot path of ldplayer's trace pipeline: every captured packet that might be
//! DNS goes through [`Message::parse`], so the parser reads only what the trace formats need (the
//! header, the first question and the EDNS OPT record) while still walking every record so that
//! malformed messages (bad labels, compression loops, absurd counts) are rejected with a reason.
//! A general-purpose crate such as `domain` takes about 1 µs for a full walk of a 214-byte
//! response; this walker takes well under 100 ns, which is what the 2 million messages per second
//! goal of `ldplayer convert` needs.
//!
//! Malformed messages are not thrown away by the callers: [`Partial`] reads what still can be
//! read of one (the header, the first question), so traces keep them with their bytes.
//!
//! Dynamic updates (RFC 2136) parse like any message (the zone section is the question section;
//! prerequisites and updates are the answer and authority sections, with their empty RDATA of
//! class NONE or ANY); [`Message::records`] walks the records and [`Rr::tsig`] / [`Rr::tkey`]
//! decode the transaction signatures and key exchanges that secure them (GSS-TSIG).
//!
//! The vocabulary every ldplayer crate speaks is here: [`Rtype`], [`Class`] and [`Rcode`] are
//! `u16` newtypes with a constant per registered value (`Rtype::AAAA`, `Rcode::NXDOMAIN`), the
//! standard mnemonics as `Display` and `FromStr`, and the RFC 3597 generic forms (`TYPE65280`)
//! for numbers without one. Each is generated from one table, so a mnemonic is written once.
//!
//! Editing goes through one mechanism: [`Fields`] is everything the text format's columns express;
//! [`Fields::of`] reads them off a message and [`apply`] rewrites a message so it carries a given
//! set of fields, touching only what differs, so an unedited message stays byte-identical.

#![forbid(unsafe_code)]

mod class;
mod edit;
mod edns;
mod error;
mod message;
mod mnemonic;
mod name;
mod partial;
mod rcode;
mod records;
mod rtype;
mod tlds;
mod tsig;
mod wire;

pub use class::Class;
pub use edit::{apply, apply_header, build, EditError, EdnsFields, Fields, Question};
pub use edns::{code as option_code, parse_options, render_options, OptionsError};
pub use error::DnsError;
pub use message::{flag, Edns, Header, Message, HEADER_LEN};
pub use mnemonic::{opcode_from_str, opcode_to_string, UnknownMnemonic};
pub use name::{name_from_presentation, name_to_presentation, NameError, MAX_NAME_LEN};
pub use partial::Partial;
pub use rcode::{Rcode, MAIN_RCODES};
pub use records::{Records, Rr, Section};
pub use rtype::Rtype;
pub use tlds::BUSY_TLDS;
pub use tsig::{Tkey, Tsig};
pub use wire::{decompress, rdata_names, RdataNames};
