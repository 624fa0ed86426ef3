//! What the mutator did, for the command line's summary.

use std::collections::BTreeMap;

/// Counts of what the mutator did to the records it received.
///
/// Every record received ends up in exactly one of `records_out`, `filtered` or `dropped`
/// (unless the inner sink failed on it); `unedited` counts records passed on that kept their
/// message. Keys are stable kebab-case names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MutateStats {
    /// Records received.
    pub records_in: u64,
    /// Records passed on to the inner sink.
    pub records_out: u64,
    /// Records removed, by the first filter they failed: `direction`, `time-window`,
    /// `client-prefix`, `client-share`, `qtype`, `qname-suffix`.
    pub filtered: BTreeMap<&'static str, u64>,
    /// Records changed, by mutation (a record changed by several counts under each): `transport`,
    /// `edns-strip`, `edns-add`, `udp-size`, `do-set`, `do-clear`, `qname-prefix`, `time-scale`,
    /// `time-shift`, `anonymize`. A mutation that leaves a record as it was does not count.
    pub changed: BTreeMap<&'static str, u64>,
    /// Records that passed the filters but could not be edited as asked, by reason:
    /// `qname-too-long` (no room for the prefix label), `edit-failed` (the edited message would
    /// be invalid, e.g. too large).
    pub dropped: BTreeMap<&'static str, u64>,
    /// Records passed on without the message edits asked for, by reason: `malformed` (a query
    /// whose message does not parse goes on byte for byte, as servers receive such queries;
    /// transport, time and address changes still apply).
    pub unedited: BTreeMap<&'static str, u64>,
}

impl MutateStats {
    /// All records filtered out.
    pub fn filtered_total(&self) -> u64 {
        self.filtered.values().sum()
    }

    /// All records dropped.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    pub(crate) fn count(map: &mut BTreeMap<&'static str, u64>, key: &'static str) {
        *map.entry(key).or_insert(0) += 1;
    }
}
