//! The comparison itself: each query's answers, the tested target's against the references',
//! field by field; queries where the references disagree are unstable and kept apart.

use crate::canon::Canon;
use crate::criteria::Criteria;
use crate::field::Field;
use crate::inputs::{Entry, Group, Inputs};
use crate::present::question_of;
use crate::tally::{Example, Shown, Tally};
use ldplayer_dns::Rtype;

/// A differing query remembered for re-asking: its index, the fields it differs in (a bit per
/// [`Field::index`]), and every target's first answer and transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Differing {
    /// Its position in the trace.
    pub index: u64,
    /// The fields it differs in, a bit per field.
    pub fields: u32,
    /// Each target's answer (`None`: none).
    pub answers: Vec<Option<Box<[u8]>>>,
    /// The transport each target was asked over.
    pub protos: Vec<ldplayer_results::Proto>,
}

impl Differing {
    /// The fields it differs in.
    pub fn fields(&self) -> impl Iterator<Item = Field> + '_ {
        Field::ALL
            .into_iter()
            .filter(|f| self.fields & (1 << f.index()) != 0)
    }
}

/// One row of `--csv`: a differing query and field with both values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffRow {
    /// The query's position in the trace.
    pub index: u64,
    /// The name asked.
    pub qname: String,
    /// The type asked.
    pub qtype: Option<Rtype>,
    /// The field.
    pub field: Field,
    /// The tested target's value.
    pub tested: String,
    /// The reference's value.
    pub reference: String,
}

/// The counts of a diff (see [`Differ`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Queries seen (with a result of at least one target).
    pub queries: u64,
    /// Queries compared: every target has a result and the references agree.
    pub compared: u64,
    /// Compared queries where the tested target's answer is the references' in every field.
    pub same: u64,
    /// Compared queries where it differs in some field.
    pub different: u64,
    /// Queries where the references disagree among themselves ("upstream unstable"), kept out
    /// of the other counts.
    pub unstable: u64,
    /// Queries some target has no result for (a file cut short, a damaged block, a result
    /// too late to be waited for): not compared.
    pub not_compared: u64,
}

/// Compares the answers of every query; see the module's documentation.
pub struct Differ {
    criteria: Criteria,
    tested: usize,
    references: Vec<usize>,
    canons: Vec<Canon>,
    counts: Counts,
    tally: Tally,
    /// Queries where the references disagree, by the field they disagree in first.
    unstable_by_field: Vec<u64>,
    keep_differing: usize,
    differing: Vec<Differing>,
    differing_dropped: u64,
}

impl Differ {
    /// A diff of `targets` targets testing `tested` against `references` (at least one, not
    /// `tested`) under `criteria`; the other targets are left out. Remembers up to
    /// `keep_differing` differing queries for re-asking.
    pub fn new(
        criteria: Criteria,
        targets: usize,
        tested: usize,
        references: Vec<usize>,
        keep_differing: usize,
    ) -> Differ {
        Differ {
            criteria,
            tested,
            references,
            canons: vec![Canon::default(); targets],
            counts: Counts::default(),
            tally: Tally::default(),
            unstable_by_field: vec![0; Field::ALL.len()],
            keep_differing,
            differing: Vec::new(),
            differing_dropped: 0,
        }
    }

    /// The criteria.
    pub fn criteria(&self) -> &Criteria {
        &self.criteria
    }

    /// The tested target.
    pub fn tested(&self) -> usize {
        self.tested
    }

    /// The reference targets.
    pub fn references(&self) -> &[usize] {
        &self.references
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The differences by field so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Unstable queries by the first field the references disagree in.
    pub fn unstable_by_field(&self) -> &[u64] {
        &self.unstable_by_field
    }

    /// The differing queries remembered for re-asking, and how many more there were.
    pub fn differing(&self) -> (&[Differing], u64) {
        (&self.differing, self.differing_dropped)
    }

    /// Compares one query's answers; each differing field's row goes to `rows` (for `--csv`;
    /// rows are made only when it is given).
    pub fn group(&mut self, g: &Group, rows: Option<&mut (dyn FnMut(DiffRow) + '_)>) {
        let taking_part = std::iter::once(self.tested).chain(self.references.iter().copied());
        if taking_part.clone().all(|t| g.entries[t].is_none()) {
            // A query of targets left out only.
            return;
        }
        self.counts.queries += 1;
        if taking_part.clone().any(|t| g.entries[t].is_none()) {
            self.counts.not_compared += 1;
            return;
        }
        for t in taking_part {
            let answer = g.entries[t].as_ref().and_then(|e| e.answer.as_deref());
            self.canons[t].fill(answer, &self.criteria);
        }
        let fields = &self.criteria.fields;
        let Some(&first) = self.references.first() else {
            return;
        };
        for &r in &self.references[1..] {
            if let Some(f) = fields
                .iter()
                .find(|&&f| self.canons[first].differs(&self.canons[r], f))
            {
                self.counts.unstable += 1;
                self.unstable_by_field[f.index()] += 1;
                return;
            }
        }
        self.counts.compared += 1;
        let (tested, reference) = (&self.canons[self.tested], &self.canons[first]);
        let mask = fields
            .iter()
            .filter(|&&f| tested.differs(reference, f))
            .fold(0u32, |m, f| m | 1 << f.index());
        if mask == 0 {
            self.counts.same += 1;
            return;
        }
        self.counts.different += 1;
        if self.differing.len() < self.keep_differing {
            self.differing.push(Differing {
                index: g.index,
                fields: mask,
                answers: g
                    .entries
                    .iter()
                    .map(|e| e.as_ref().and_then(|e| e.answer.clone()))
                    .collect(),
                protos: g
                    .entries
                    .iter()
                    .map(|e| {
                        e.as_ref()
                            .map_or(ldplayer_results::Proto::Udp, |e| e.result.proto)
                    })
                    .collect(),
            });
        } else if self.keep_differing > 0 {
            self.differing_dropped += 1;
        }
        let te = g.entries[self.tested].as_ref();
        let re = g.entries[first].as_ref();
        let question = [te, re]
            .into_iter()
            .flatten()
            .find_map(|e| e.answer.as_deref().and_then(question_of));
        let (qname, qtype) = match &question {
            Some((n, t)) => (n.as_str(), Some(*t)),
            None => ("-", None),
        };
        let shown = |e: Option<&Entry>| Shown {
            outcome: Inputs::outcome_name(e),
            answer: e.and_then(|e| e.answer.clone()),
        };
        let mut rows = rows;
        for f in Field::ALL {
            if mask & (1 << f.index()) == 0 {
                continue;
            }
            self.tally.add(f, qname, qtype, || Example {
                index: g.index,
                tested: shown(te),
                reference: shown(re),
            });
            if let Some(rows) = rows.as_deref_mut() {
                let text = |e: Option<&Entry>| {
                    crate::present::field_text(
                        e.and_then(|e| e.answer.as_deref()),
                        Inputs::outcome_name(e),
                        f,
                    )
                };
                rows(DiffRow {
                    index: g.index,
                    qname: qname.to_string(),
                    qtype,
                    field: f,
                    tested: text(te),
                    reference: text(re),
                });
            }
        }
    }

    /// Judges a re-asked differing query: `rounds[r][t]` is target `t`'s answer in round
    /// `r` (`None`: no answer); its first answers are the query's own. The difference reproduces when
    /// in every round the references agree, the tested target differs from them in exactly the
    /// same fields as at first, and no target's answer varies from its first one; otherwise it
    /// is not reproducible, and is taken back from the field counts. Returns whether it
    /// reproduced.
    pub fn reassess(&mut self, d: &Differing, rounds: &[Vec<Option<Vec<u8>>>]) -> bool {
        let n = self.canons.len();
        let fields = self.criteria.fields.clone();
        let mut firsts = vec![Canon::default(); n];
        for (t, c) in firsts.iter_mut().enumerate() {
            c.fill(d.answers.get(t).and_then(|a| a.as_deref()), &self.criteria);
        }
        let mut reproduced = true;
        let taking_part: Vec<usize> = std::iter::once(self.tested)
            .chain(self.references.iter().copied())
            .collect();
        for round in rounds {
            for &t in &taking_part {
                let answer = round.get(t).and_then(|a| a.as_deref());
                self.canons[t].fill(answer, &self.criteria);
                if self.canons[t].differs_in_any(&firsts[t], &fields) {
                    // It varies within one target (rotating addresses, another order that
                    // counts): not a stable answer.
                    reproduced = false;
                }
            }
            let Some(&first) = self.references.first() else {
                continue;
            };
            if self.references[1..]
                .iter()
                .any(|&r| self.canons[first].differs_in_any(&self.canons[r], &fields))
            {
                reproduced = false;
            }
            let mask = fields
                .iter()
                .filter(|&&f| self.canons[self.tested].differs(&self.canons[first], f))
                .fold(0u32, |m, f| m | 1 << f.index());
            if mask != d.fields {
                reproduced = false;
            }
        }
        if !reproduced {
            for f in d.fields() {
                self.tally.take_back(f, 1);
            }
            self.counts.different = self.counts.different.saturating_sub(1);
        }
        reproduced
    }
}
