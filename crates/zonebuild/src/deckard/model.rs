//! What a Deckard scenario holds: its configuration, the recorded answers by nameserver
//! address, and the steps (queries and the answers they must get).

use std::collections::BTreeMap;
use std::net::IpAddr;

use bytes::Bytes;
use domain::base::iana::{Class, Rtype};
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::base::{Message, Name, ParsedName};
use domain::rdata::AllRecordData;

/// One `key: value` line of the configuration block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigItem {
    /// Line number (from 1).
    pub line: usize,
    /// The key, e.g. `stub-addr`.
    pub key: String,
    /// The value, comments and enclosing quotes removed.
    pub value: String,
}

/// The question of an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The name.
    pub name: Name<Bytes>,
    /// The type.
    pub qtype: Rtype,
    /// The class.
    pub class: Class,
}

impl Question {
    /// `name type`, as a line of a names file for `ldplayer lab --names` (absolute name).
    pub fn text(&self) -> String {
        format!("{} {}", self.name.fmt_with_dot(), self.qtype)
    }
}

/// One `ENTRY_BEGIN` .. `ENTRY_END` block: a DNS message and how it is matched.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Line number (from 1) of `ENTRY_BEGIN`.
    pub line: usize,
    /// The `MATCH` elements (`opcode`, `qtype`, `qname`, `subdomain`, `all`, ...).
    pub matches: Vec<String>,
    /// The `ADJUST` elements (`copy_id`, `copy_query`, ...).
    pub adjust: Vec<String>,
    /// The `REPLY` tokens as written: opcode, rcode and flags.
    pub reply: Vec<String>,
    /// The first question, if the entry has one.
    pub question: Option<Question>,
    /// The message the entry describes (message ID 0; an OPT record when `DO` or an extended
    /// rcode is given). Range entries always have QR set: they are responses.
    pub message: Message<Bytes>,
}

impl Entry {
    /// True when the entry compares the answer section (`MATCH answer` or `MATCH all`).
    pub fn matches_answer(&self) -> bool {
        self.matches
            .iter()
            .any(|m| m.eq_ignore_ascii_case("answer") || m.eq_ignore_ascii_case("all"))
    }

    /// True when the entry compares the header's flags (`MATCH flags` or `MATCH all`).
    pub fn matches_flags(&self) -> bool {
        self.matches
            .iter()
            .any(|m| m.eq_ignore_ascii_case("flags") || m.eq_ignore_ascii_case("all"))
    }

    /// True when `REPLY` names `flag` (`AD`, `DO`, `CD`...).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.reply.iter().any(|r| r.eq_ignore_ascii_case(flag))
    }

    /// The answer section as `ldplayer lab` prints a resolver's answer: one record per item,
    /// in presentation format without its TTL, owner, class and type in lowercase (the data as
    /// written), sorted. RRSIG records are left out unless `rrsigs` is true.
    pub fn answer_lines(&self, rrsigs: bool) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(section) = self.message.answer() else {
            return out;
        };
        for rec in section.into_records::<AllRecordData<Bytes, ParsedName<Bytes>>>() {
            let Ok(rec) = rec else { break };
            if rec.rtype() == Rtype::RRSIG && !rrsigs {
                continue;
            }
            let text = rec.display_zonefile(DisplayKind::Simple).to_string();
            out.push(ldplayer_zone::text::answer_line(&text));
        }
        out.sort();
        out
    }
}

/// A `RANGE_BEGIN` .. `RANGE_END` block: the answers of a set of nameserver addresses while
/// the scenario's step is within `first_step..=last_step`.
#[derive(Debug, Clone)]
pub struct Range {
    /// Line number (from 1) of `RANGE_BEGIN`.
    pub line: usize,
    /// First step the range applies to.
    pub first_step: u64,
    /// Last step the range applies to.
    pub last_step: u64,
    /// The nameserver addresses that answer with these entries.
    pub addresses: Vec<IpAddr>,
    /// The answers.
    pub entries: Vec<Entry>,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    /// Send the step's entry to the resolver.
    Query,
    /// The answer to the last query must match the step's entry.
    CheckAnswer,
    /// Another kind (`TIME_PASSES ELAPSE n`, `REPLY`, `CHECK_OUT_QUERY`, ...), as written.
    Other(String),
}

/// One `STEP id TYPE` and its entry.
#[derive(Debug, Clone)]
pub struct Step {
    /// Line number (from 1).
    pub line: usize,
    /// The step's number.
    pub id: u64,
    /// What it does.
    pub kind: StepKind,
    /// Its entry, if it has one.
    pub entry: Option<Entry>,
}

/// A `CHECK_ANSWER` step with the `QUERY` step it checks (the last one before it).
#[derive(Debug, Clone, Copy)]
pub struct Check<'a> {
    /// The query.
    pub query: &'a Step,
    /// The check; its entry holds the expected answer.
    pub check: &'a Step,
}

impl Check<'_> {
    /// The question asked: the query step's.
    pub fn question(&self) -> Option<&Question> {
        self.query.entry.as_ref().and_then(|e| e.question.as_ref())
    }

    /// The expected answer as the line `ldplayer lab --names` writes for the query:
    /// `name type rcode record; record; ...` (see [`Entry::answer_lines`]; RRSIGs only when
    /// the query asks with DO, as the lab then does, or for RRSIG). `None` when the query has
    /// no question or the check no entry.
    pub fn expected_line(&self) -> Option<String> {
        let q = self.question()?;
        let e = self.check.entry.as_ref()?;
        let mut line = format!("{} {}", q.text(), e.message.header().rcode());
        // The lab prints AD when the resolver set it; the check says whether it must be.
        if e.matches_flags() && e.has_flag("AD") {
            line.push_str(" AD");
        }
        let answer = e.answer_lines(q.qtype == Rtype::RRSIG || self.asks("DO"));
        if !answer.is_empty() {
            line.push(' ');
            line.push_str(&answer.join("; "));
        }
        Some(line)
    }

    /// True when the query asks with `flag` (`RD`, `AD`, `CD`, `DO`) on its `REPLY` line.
    pub fn asks(&self, flag: &str) -> bool {
        self.query.entry.as_ref().is_some_and(|e| e.has_flag(flag))
    }

    /// True when the check's own question differs from the query's (by name, without case, or
    /// type): the expected line would then not describe the query's answer.
    pub fn question_mismatch(&self) -> bool {
        let asked = self.question();
        let checked = self.check.entry.as_ref().and_then(|e| e.question.as_ref());
        match (asked, checked) {
            (Some(a), Some(c)) => {
                a.qtype != c.qtype || !a.name.as_slice().eq_ignore_ascii_case(c.name.as_slice())
            }
            _ => false,
        }
    }
}

/// A parsed Deckard scenario.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    /// The text after `SCENARIO_BEGIN`.
    pub title: String,
    /// The configuration block.
    pub config: Vec<ConfigItem>,
    /// The recorded answers, by nameserver addresses.
    pub ranges: Vec<Range>,
    /// The steps, in file order.
    pub steps: Vec<Step>,
    /// What was skipped, by keyword (unknown keywords, raw entries, malformed config lines).
    pub skipped: BTreeMap<String, u64>,
    /// Range entries with an answer section but neither AA nor RA, given AA (see
    /// [`Scenario::parse`]).
    pub aa_added: u64,
}

impl Scenario {
    /// The values of every `key` line of the configuration block.
    pub fn config_values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> {
        self.config
            .iter()
            .filter(move |c| c.key.eq_ignore_ascii_case(key))
            .map(|c| c.value.as_str())
    }

    /// The `stub-addr` addresses: where the resolver under test starts (the root's server).
    pub fn stub_addrs(&self) -> Vec<IpAddr> {
        self.config_values("stub-addr")
            .filter_map(|v| strip_port(v).parse().ok())
            .collect()
    }

    /// Every recorded response with the address that gives it: each range entry once per
    /// address of its range, in file order.
    pub fn responses(&self) -> impl Iterator<Item = (IpAddr, &Entry)> {
        self.ranges.iter().flat_map(|r| {
            r.entries
                .iter()
                .flat_map(|e| r.addresses.iter().map(move |a| (*a, e)))
        })
    }
    /// The `QUERY` steps, in order.
    pub fn queries(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|s| s.kind == StepKind::Query)
    }

    /// Every `CHECK_ANSWER` step that has an entry, with the `QUERY` step before it.
    pub fn checks(&self) -> Vec<Check<'_>> {
        let mut out = Vec::new();
        let mut last_query = None;
        for s in &self.steps {
            match s.kind {
                StepKind::Query => last_query = Some(s),
                StepKind::CheckAnswer => {
                    if let (Some(query), Some(_)) = (last_query, &s.entry) {
                        out.push(Check { query, check: s });
                    }
                }
                StepKind::Other(_) => {}
            }
        }
        out
    }
}

/// `1.2.3.4@53` → `1.2.3.4`.
pub(super) fn strip_port(v: &str) -> &str {
    v.split('@').next().unwrap_or(v).trim()
}
