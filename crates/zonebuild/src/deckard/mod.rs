//! Deckard scenarios (`.rpl`, the format of CZ-NIC's Deckard and of unbound's testbound): a
//! recorded part of the DNS hierarchy as the answers each nameserver address gave, plus the
//! queries a resolver under test is sent and the answers it must give.
//!
//! A scenario has three parts (see Deckard's `doc/scenario_guide.rst`):
//! 1. a configuration block of `key: value` lines up to `CONFIG_END` (`stub-addr` is the
//!    address of the root's nameserver the resolver starts from);
//! 2. `RANGE_BEGIN first last` blocks, each with `ADDRESS` lines and `ENTRY_BEGIN` ..
//!    `ENTRY_END` answer templates (`MATCH`, `ADJUST`, `REPLY` (or `FLAGS`) flags and rcode, `SECTION
//!    QUESTION/ANSWER/AUTHORITY/ADDITIONAL` with records in zone-file syntax);
//! 3. `STEP id TYPE` lines: `QUERY` with an entry to send, `CHECK_ANSWER` with the expected
//!    answer to the last query, and others (`TIME_PASSES`, `REPLY`, ...) that are kept but not
//!    interpreted.
//!
//! [`Scenario::parse`] turns every range entry into the DNS response it describes, and
//! [`Scenario::feed`] gives those responses to a [`crate::ZoneBuilder`] as answered by each of the
//! range's addresses, through [`crate::ZoneBuilder::add_message`], the same path as responses read
//! from a capture: the zones come out as if a resolver's upstream traffic had been recorded.
//!
//! Records are read with `domain`'s zone-file parser, one record (or one parenthesised group
//! of lines) at a time, with the root as origin (Deckard names without a final dot are
//! absolute) and a TTL of 3600 s where none is written. Keywords this reader does not know
//! are skipped and counted in [`Scenario::skipped`]; entries with raw wire data (`RAW`,
//! `HEX_ANSWER_BEGIN`) cannot be turned into records and are skipped and counted too.

mod feed;
mod model;
mod parser;
#[cfg(test)]
mod tests;

pub use feed::complete_root;
pub use model::{Check, ConfigItem, Entry, Question, Range, Scenario, Step, StepKind};
pub use parser::{is_scenario, DeckardError};
