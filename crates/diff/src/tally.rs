//! Counting differences by field in bounded memory: for each field, how many queries differ in
//! it, and its most frequent differing (qname, qtype) pairs, each with an example (both answers)
//! to show.
//!
//! The pairs are counted with the Space-Saving algorithm (Metwally, Agrawal and El Abbadi,
//! 2005): at most [`TOP_CAPACITY`] pairs are tracked per field; a new pair takes the place of
//! the least counted one and inherits its count as its possible error. Every pair more frequent
//! than `differences / TOP_CAPACITY` is tracked, and the counts of the tracked pairs are exact
//! whenever a field has no more distinct pairs than that (the common case for tests), so the
//! memory of a diff does not grow with the number of queries.

use crate::field::Field;
use ldplayer_dns::Rtype;
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Pairs tracked per field.
pub const TOP_CAPACITY: usize = 256;

/// One answer of an example: the target's outcome and its message, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The outcome's name (`answered`, `timeout`...).
    pub outcome: &'static str,
    /// The answer, byte for byte.
    pub answer: Option<Box<[u8]>>,
}

/// A differing query kept as an example: its index and both answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// Its position in the trace.
    pub index: u64,
    /// The tested target's answer.
    pub tested: Shown,
    /// The (first) reference's answer.
    pub reference: Shown,
}

/// A (qname, qtype) pair with how many differing queries asked it.
#[derive(Debug, Clone)]
pub struct Top {
    /// The name asked, presentation format (`-` when no answer says).
    pub qname: String,
    /// The type asked.
    pub qtype: Option<Rtype>,
    /// Differing queries that asked it (at most `error` too many).
    pub count: u64,
    /// How much `count` may overstate.
    pub error: u64,
    /// Its first differing query seen.
    pub example: Example,
}

/// One field's differences.
#[derive(Debug, Default, Clone)]
pub struct FieldTally {
    /// Queries that differ in the field.
    pub queries: u64,
    top: Vec<Top>,
    at: FxHashMap<(String, Option<Rtype>), usize>,
}

impl FieldTally {
    fn add(&mut self, qname: &str, qtype: Option<Rtype>, example: impl FnOnce() -> Example) {
        self.queries += 1;
        let key = (qname.to_string(), qtype);
        if let Some(&i) = self.at.get(&key) {
            self.top[i].count += 1;
            return;
        }
        if self.top.len() < TOP_CAPACITY {
            self.at.insert(key, self.top.len());
            self.top.push(Top {
                qname: qname.to_string(),
                qtype,
                count: 1,
                error: 0,
                example: example(),
            });
            return;
        }
        // Replace the least counted pair.
        let (i, least) = self
            .top
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| t.count)
            .map(|(i, t)| (i, t.count))
            .unwrap_or((0, 0));
        let old = (self.top[i].qname.clone(), self.top[i].qtype);
        self.at.remove(&old);
        self.at.insert(key, i);
        self.top[i] = Top {
            qname: qname.to_string(),
            qtype,
            count: least + 1,
            error: least,
            example: example(),
        };
    }

    /// The most frequent pairs, most frequent first (ties: by name and type).
    pub fn top(&self, n: usize) -> Vec<&Top> {
        let mut v: Vec<&Top> = self.top.iter().collect();
        v.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.qname.cmp(&b.qname))
                .then_with(|| a.qtype.map(|t| t.0).cmp(&b.qtype.map(|t| t.0)))
        });
        v.truncate(n);
        v
    }
}

/// Every field's differences.
#[derive(Debug, Clone)]
pub struct Tally {
    fields: Vec<FieldTally>,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            fields: vec![FieldTally::default(); Field::ALL.len()],
        }
    }
}

impl Tally {
    /// Counts a query differing in `field`, asking `qname` `qtype`; `example` makes its
    /// example when the pair is new.
    pub fn add(
        &mut self,
        field: Field,
        qname: &str,
        qtype: Option<Rtype>,
        example: impl FnOnce() -> Example,
    ) {
        self.fields[field.index()].add(qname, qtype, example);
    }

    /// The differences in `field`.
    pub fn field(&self, field: Field) -> &FieldTally {
        &self.fields[field.index()]
    }

    /// Takes back `n` queries counted in `field` (differences that did not reproduce).
    pub fn take_back(&mut self, field: Field, n: u64) {
        let f = &mut self.fields[field.index()];
        f.queries = f.queries.saturating_sub(n);
    }
}

/// A pair's row in reports.
#[derive(Debug, Clone, Serialize)]
pub struct TopRow {
    /// The name asked.
    pub qname: String,
    /// The type asked (mnemonic).
    pub qtype: Option<String>,
    /// Differing queries that asked it.
    pub count: u64,
    /// How much `count` may overstate (0: exact).
    pub count_error: u64,
}

impl From<&Top> for TopRow {
    fn from(t: &Top) -> TopRow {
        TopRow {
            qname: t.qname.clone(),
            qtype: t.qtype.map(|q| q.to_string()),
            count: t.count,
            count_error: t.error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(index: u64) -> Example {
        let shown = Shown {
            outcome: "answered",
            answer: None,
        };
        Example {
            index,
            tested: shown.clone(),
            reference: shown,
        }
    }

    #[test]
    fn the_most_frequent_pairs_come_first_and_memory_stays_bounded() {
        let mut t = Tally::default();
        for i in 0..10_000u64 {
            // A frequent name among many once-only ones.
            let name = if i % 3 == 0 {
                "hot.example.".to_string()
            } else {
                format!("n{i}.example.")
            };
            t.add(Field::Rcode, &name, Some(Rtype::A), || example(i));
        }
        let f = t.field(Field::Rcode);
        assert_eq!(f.queries, 10_000);
        assert!(f.top.len() <= TOP_CAPACITY);
        let top = f.top(1);
        assert_eq!(top[0].qname, "hot.example.");
        assert_eq!(top[0].example.index, 0);
        assert!(top[0].count >= 3334 && top[0].count - top[0].error <= 3334);
        t.take_back(Field::Rcode, 10);
        assert_eq!(t.field(Field::Rcode).queries, 9_990);
    }
}
