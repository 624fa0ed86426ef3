//! Deckard scenarios (`.rpl`, the format of CZ-NIC's Deckard and of unbound's testbound): a
//! recorded part of the DNS hierarchy as the answers each nameserver address gave, plus the
//! queries a resolver under test is sent and the answers it must give.
//!
//! A scenario has three parts (see Deckard's `doc/scenario_guide.rst`):
//! 1. a configuration block of `key: value` lines up to `CONFIG_END` (`stub-addr` is the
//!    address of the root's nameserver the resolver starts from);
//! 2. `RANGE_BEGIN first last` blocks, each with `ADDRESS` lines and `ENTRY_BEGIN` ..
//!    `ENTRY_END` answer templates (`MATCH`, `ADJUST`, `REPLY` flags and rcode, `SECTION
//!    QUESTION/ANSWER/AUTHORITY/ADDITIONAL` with records in zone-file syntax);
//! 3. `STEP id TYPE` lines: `QUERY` with an entry to send, `CHECK_ANSWER` with the expected
//!    answer to the last query, and others (`TIME_PASSES`, `REPLY`, ...) that are kept but not
//!    interpreted.
//!
//! [`Scenario::parse`] turns every range entry into the DNS response it describes, and
//! [`Scenario::feed`] gives those responses to a [`ZoneBuilder`] as answered by each of the
//! range's addresses, through [`ZoneBuilder::add_message`], the same path as responses read
//! from a capture: the zones come out as if a resolver's upstream traffic had been recorded.
//!
//! Records are read with `domain`'s zone-file parser, one record (or one parenthesised group
//! of lines) at a time, with the root as origin (Deckard names without a final dot are
//! absolute) and a TTL of 3600 s where none is written. Keywords this reader does not know
//! are skipped and counted in [`Scenario::skipped`]; entries with raw wire data (`RAW`,
//! `HEX_ANSWER_BEGIN`) cannot be turned into records and are skipped and counted too.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use domain::base::iana::{Class, Opcode, OptRcode, Rtype};
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::base::{Message, MessageBuilder, Name, ParsedName, Record, ToName, Ttl};
use domain::rdata::{Aaaa, AllRecordData, Ns, A};
use domain::zonefile::inplace::{Entry as ZoneEntry, ScannedRecord, Zonefile};
use thiserror::Error;

use crate::builder::ZoneBuilder;
use crate::exchange::Rr;
use crate::hierarchy::Hierarchy;

/// Why a scenario could not be read.
#[derive(Debug, Error)]
pub enum DeckardError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// A keyword line that cannot be understood where it stands.
    #[error("line {line}: {message}")]
    Syntax {
        /// Line number (from 1).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A record that `domain`'s zone-file parser rejects.
    #[error("line {line}: bad record: {message}")]
    Record {
        /// Line number (from 1) where the record starts.
        line: usize,
        /// The parser's complaint.
        message: String,
    },
    /// A block left open at the end of the file.
    #[error("line {line}: {block} is never closed")]
    Unclosed {
        /// Line number (from 1) where the block opens.
        line: usize,
        /// The block's keyword.
        block: &'static str,
    },
    /// An entry whose records do not fit in one DNS message.
    #[error("line {line}: the entry does not fit in a DNS message")]
    TooLarge {
        /// Line number (from 1) of the entry's `ENTRY_BEGIN`.
        line: usize,
    },
    /// No `CONFIG_END` line: not a Deckard scenario.
    #[error("no CONFIG_END line: not a Deckard scenario")]
    NotAScenario,
}

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
    /// the question is for RRSIG, since the lab asks without DO). `None` when the query has no
    /// question or the check no entry.
    pub fn expected_line(&self) -> Option<String> {
        let q = self.question()?;
        let e = self.check.entry.as_ref()?;
        let mut line = format!("{} {}", q.text(), e.message.header().rcode());
        let answer = e.answer_lines(q.qtype == Rtype::RRSIG);
        if !answer.is_empty() {
            line.push(' ');
            line.push_str(&answer.join("; "));
        }
        Some(line)
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

/// True when `path` looks like a Deckard scenario: its name ends in `.rpl`, or its first
/// 64 KiB have a `CONFIG_END` line (captures and trace files never do).
pub fn is_scenario(path: &Path) -> bool {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("rpl"))
    {
        return true;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = vec![0u8; 64 * 1024];
    let mut n = 0;
    while n < head.len() {
        match std::io::Read::read(&mut f, &mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    head[..n]
        .split(|&b| b == b'\n')
        .any(|l| l.trim_ascii() == b"CONFIG_END")
}

impl Scenario {
    /// Reads and parses the scenario in `path`.
    pub fn from_file(path: &Path) -> Result<Scenario, DeckardError> {
        let text = std::fs::read(path).map_err(|source| DeckardError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Scenario::parse(&String::from_utf8_lossy(&text))
    }

    /// Parses a scenario.
    ///
    /// A range entry is the answer of the nameservers at its addresses, as they gave it: no
    /// cache stands between them and the resolver. Many entries (hand-written ones above all,
    /// since resolvers accept answers without AA) leave the AA flag out, and the zone
    /// constructor takes answer sections only from authoritative responses; so an entry with an
    /// answer section and neither AA nor RA is given AA (counted in [`Scenario::aa_added`]).
    /// Entries with RA (a recursive server's answers) are left as they are.
    pub fn parse(text: &str) -> Result<Scenario, DeckardError> {
        Parser::new(text).run()
    }

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

    /// Gives every recorded response to `builder` as answered by its address, the way
    /// captured responses are given; returns how many were given.
    pub fn feed(&self, builder: &mut ZoneBuilder) -> u64 {
        let mut n = 0;
        for (address, entry) in self.responses() {
            builder.add_message(address, entry.message.as_slice());
            n += 1;
        }
        n
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

/// Gives the root zone of `hierarchy` an NS set made from a scenario's root hints
/// (`stub-addr`, see [`Scenario::stub_addrs`]) when none was rebuilt; returns the records
/// added, in presentation format (empty when the root has NS records, or there is no root
/// zone or no hint).
///
/// A resolver starts by priming (`. NS` to a hinted address) and gives up when the root has
/// no NS records. Scenarios often do not record the root's NS set in an authoritative answer
/// (Deckard gives the resolver the hints itself, and hand-written entries leave AA out), so
/// the rebuilt root zone lacks it. This completes the root from the resolver's hints, as
/// [`ZoneBuilder`] completes a zone's apex NS set from its parent's referral: each hinted
/// address is named by a name the scenario records with that address (e.g.
/// `K.ROOT-SERVERS.NET.`), else `stub-addr-N.deckard.invalid.`, whose address record is added
/// to the root zone; the address is added to the root zone's servers.
pub fn complete_root(hierarchy: &mut Hierarchy, hints: &[IpAddr]) -> Vec<String> {
    let mut added = Vec::new();
    let Some(ri) = hierarchy.zones.iter().position(|z| z.apex.is_root()) else {
        return added;
    };
    let has_ns = hierarchy.zones[ri]
        .records
        .iter()
        .any(|r| r.owner().is_root() && r.rtype() == Rtype::NS);
    if has_ns || hints.is_empty() {
        return added;
    }
    let ttl = Ttl::from_secs(3600);
    for (i, ip) in hints.iter().enumerate() {
        // A recorded name with this address, the root zone's first.
        let order = std::iter::once(ri).chain((0..hierarchy.zones.len()).filter(|&z| z != ri));
        let recorded = order
            .flat_map(|z| hierarchy.zones[z].records.iter())
            .find(|r| address_of(r) == Some(*ip))
            .map(|r| r.owner().clone());
        let name = match recorded {
            Some(n) => n,
            None => match Name::<Bytes>::from_chars(
                format!("stub-addr-{}.deckard.invalid.", i + 1).chars(),
            ) {
                Ok(n) => n,
                Err(_) => continue,
            },
        };
        let root = &mut hierarchy.zones[ri];
        let ns: Rr = Record::new(
            Name::root_bytes(),
            Class::IN,
            ttl,
            AllRecordData::Ns(Ns::new(name.clone())),
        );
        added.push(ns.display_zonefile(DisplayKind::Simple).to_string());
        root.records.push(ns);
        let has_address = root
            .records
            .iter()
            .any(|r| address_of(r) == Some(*ip) && r.owner().name_eq(&name));
        if !has_address {
            let data = match ip {
                IpAddr::V4(a) => AllRecordData::A(A::new(*a)),
                IpAddr::V6(a) => AllRecordData::Aaaa(Aaaa::new(*a)),
            };
            let rr: Rr = Record::new(name, Class::IN, ttl, data);
            added.push(rr.display_zonefile(DisplayKind::Simple).to_string());
            root.records.push(rr);
        }
        if !root.servers.contains(ip) {
            root.servers.push(*ip);
        }
    }
    added
}

fn address_of(r: &Rr) -> Option<IpAddr> {
    match r.data() {
        AllRecordData::A(a) => Some(IpAddr::V4(a.addr())),
        AllRecordData::Aaaa(a) => Some(IpAddr::V6(a.addr())),
        _ => None,
    }
}

/// `1.2.3.4@53` → `1.2.3.4`.
fn strip_port(v: &str) -> &str {
    v.split('@').next().unwrap_or(v).trim()
}

/// The text before a comment (`;`, and `#` when `hash` is true) outside double quotes.
fn strip_comment(line: &str, hash: bool) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => return &line[..i],
            '#' if hash && !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Open parentheses minus closed ones, outside quotes and comments.
fn paren_depth(line: &str) -> i32 {
    let mut depth = 0;
    let mut quoted = false;
    for c in strip_comment(line, false).chars() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            _ => {}
        }
    }
    depth
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Question,
    Answer,
    Authority,
    Additional,
}

/// An entry being read.
struct EntryDraft {
    line: usize,
    matches: Vec<String>,
    adjust: Vec<String>,
    reply: Vec<String>,
    section: Section,
    questions: Vec<Question>,
    records: [Vec<ScannedRecord>; 3],
    /// A record spread over lines by parentheses: its first line and text so far.
    pending: Option<(usize, String)>,
    /// Holds raw wire data: cannot be turned into records.
    raw: bool,
    /// Inside a `HEX_*_BEGIN` .. `HEX_*_END` block.
    hex_block: Option<String>,
}

impl EntryDraft {
    fn new(line: usize) -> EntryDraft {
        EntryDraft {
            line,
            matches: Vec::new(),
            adjust: Vec::new(),
            reply: Vec::new(),
            section: Section::None,
            questions: Vec::new(),
            records: Default::default(),
            pending: None,
            raw: false,
            hex_block: None,
        }
    }
}

enum Block {
    /// Between `SCENARIO_BEGIN` and the first range or step.
    Top,
    Range(Range),
    Step(Step),
}

struct Parser<'t> {
    text: &'t str,
    scenario: Scenario,
}

impl<'t> Parser<'t> {
    fn new(text: &'t str) -> Parser<'t> {
        Parser {
            text,
            scenario: Scenario::default(),
        }
    }

    fn skip(&mut self, what: impl Into<String>) {
        *self.scenario.skipped.entry(what.into()).or_default() += 1;
    }

    fn run(mut self) -> Result<Scenario, DeckardError> {
        let text = self.text;
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        // 1. Configuration, up to CONFIG_END.
        let mut config_done = false;
        for (n, raw) in lines.by_ref() {
            let line = strip_comment(raw, true).trim();
            if line == "CONFIG_END" {
                config_done = true;
                break;
            }
            if line.is_empty() {
                continue;
            }
            match line.split_once(':') {
                Some((k, v)) => {
                    let v = v.trim();
                    let v = v
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .unwrap_or(v);
                    self.scenario.config.push(ConfigItem {
                        line: n,
                        key: k.trim().to_string(),
                        value: v.to_string(),
                    });
                }
                None => self.skip("config line without ':'"),
            }
        }
        if !config_done {
            return Err(DeckardError::NotAScenario);
        }
        for item in &self.scenario.config {
            if item.key.eq_ignore_ascii_case("stub-addr")
                && strip_port(&item.value).parse::<IpAddr>().is_err()
            {
                return Err(DeckardError::Syntax {
                    line: item.line,
                    message: format!("stub-addr {:?} is not an IP address", item.value),
                });
            }
        }

        // 2. The scenario: ranges and steps.
        let mut begun = None;
        let mut block: Option<Block> = None;
        let mut entry: Option<EntryDraft> = None;
        let mut ended = false;
        for (n, raw) in lines {
            if let Some(e) = entry.as_mut() {
                if Self::entry_line(&mut self.scenario.skipped, e, n, raw)? {
                    continue;
                }
                // ENTRY_END.
                let Some(e) = entry.take() else { continue };
                let in_range = matches!(block, Some(Block::Range(_)));
                let built = self.finish_entry(e, in_range)?;
                match (block.as_mut(), built) {
                    (Some(Block::Range(r)), Some(e)) => r.entries.push(e),
                    (Some(Block::Step(s)), Some(e)) => {
                        if s.entry.is_none() {
                            s.entry = Some(e);
                        } else {
                            self.skip("second entry in a step");
                        }
                    }
                    (_, Some(_)) => self.skip("entry outside a range or step"),
                    (_, None) => {}
                }
                continue;
            }
            let line = strip_comment(raw, false).trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let keyword = words.next().unwrap_or("");
            match keyword {
                "SCENARIO_BEGIN" => {
                    self.scenario.title = line["SCENARIO_BEGIN".len()..].trim().to_string();
                    begun = Some(n);
                    block = Some(Block::Top);
                }
                "SCENARIO_END" => {
                    self.close(block.take());
                    ended = true;
                    break;
                }
                "RANGE_BEGIN" => {
                    self.close(block.take());
                    let mut num = |what: &str| -> Result<u64, DeckardError> {
                        words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
                            DeckardError::Syntax {
                                line: n,
                                message: format!("RANGE_BEGIN needs a {what} step number"),
                            }
                        })
                    };
                    let first_step = num("first")?;
                    let last_step = num("last")?;
                    block = Some(Block::Range(Range {
                        line: n,
                        first_step,
                        last_step,
                        addresses: Vec::new(),
                        entries: Vec::new(),
                    }));
                }
                "RANGE_END" => match block.take() {
                    Some(Block::Range(r)) => {
                        self.close(Some(Block::Range(r)));
                        block = Some(Block::Top);
                    }
                    other => {
                        return Err(DeckardError::Syntax {
                            line: n,
                            message: format!(
                                "RANGE_END outside a range{}",
                                if other.is_none() {
                                    " (before SCENARIO_BEGIN)"
                                } else {
                                    ""
                                }
                            ),
                        })
                    }
                },
                "ADDRESS" => match block.as_mut() {
                    Some(Block::Range(r)) => {
                        let text = words.next().unwrap_or("");
                        let ip: IpAddr =
                            strip_port(text).parse().map_err(|_| DeckardError::Syntax {
                                line: n,
                                message: format!("ADDRESS {text:?} is not an IP address"),
                            })?;
                        if !r.addresses.contains(&ip) {
                            r.addresses.push(ip);
                        }
                    }
                    _ => {
                        return Err(DeckardError::Syntax {
                            line: n,
                            message: "ADDRESS outside a range".into(),
                        })
                    }
                },
                "STEP" => {
                    self.close(block.take());
                    let id = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
                        DeckardError::Syntax {
                            line: n,
                            message: "STEP needs a step number".into(),
                        }
                    })?;
                    let kind = match words.next() {
                        Some("QUERY") => StepKind::Query,
                        Some("CHECK_ANSWER") => StepKind::CheckAnswer,
                        Some(other) => {
                            self.skip(format!("STEP {other}"));
                            let rest: Vec<&str> = std::iter::once(other).chain(words).collect();
                            StepKind::Other(rest.join(" "))
                        }
                        None => {
                            return Err(DeckardError::Syntax {
                                line: n,
                                message: "STEP needs a type".into(),
                            })
                        }
                    };
                    block = Some(Block::Step(Step {
                        line: n,
                        id,
                        kind,
                        entry: None,
                    }));
                }
                "ENTRY_BEGIN" => {
                    if block.is_none() {
                        return Err(DeckardError::Syntax {
                            line: n,
                            message: "ENTRY_BEGIN before SCENARIO_BEGIN".into(),
                        });
                    }
                    entry = Some(EntryDraft::new(n));
                }
                other => self.skip(format!("keyword {other}")),
            }
        }
        if let Some(e) = entry {
            return Err(DeckardError::Unclosed {
                line: e.line,
                block: "ENTRY_BEGIN",
            });
        }
        if let Some(Block::Range(r)) = &block {
            return Err(DeckardError::Unclosed {
                line: r.line,
                block: "RANGE_BEGIN",
            });
        }
        if !ended {
            if let Some(line) = begun {
                return Err(DeckardError::Unclosed {
                    line,
                    block: "SCENARIO_BEGIN",
                });
            }
            return Err(DeckardError::Syntax {
                line: text.lines().count(),
                message: "no SCENARIO_BEGIN".into(),
            });
        }
        Ok(self.scenario)
    }

    /// Ends a range or step.
    fn close(&mut self, block: Option<Block>) {
        match block {
            Some(Block::Range(r)) => self.scenario.ranges.push(r),
            Some(Block::Step(s)) => self.scenario.steps.push(s),
            Some(Block::Top) | None => {}
        }
    }

    /// Takes one line of an entry; false at `ENTRY_END`.
    fn entry_line(
        skipped: &mut BTreeMap<String, u64>,
        e: &mut EntryDraft,
        n: usize,
        raw: &str,
    ) -> Result<bool, DeckardError> {
        let mut skip = |what: String| *skipped.entry(what).or_default() += 1;
        let trimmed = raw.trim();
        if let Some(end) = &e.hex_block {
            if trimmed == end {
                e.hex_block = None;
            }
            return Ok(true);
        }
        if let Some((first, mut text)) = e.pending.take() {
            text.push(' ');
            text.push_str(trimmed);
            if paren_depth(&text) > 0 {
                e.pending = Some((first, text));
            } else {
                Self::record(e, first, &text)?;
            }
            return Ok(true);
        }
        let line = strip_comment(trimmed, false).trim();
        if line.is_empty() {
            return Ok(true);
        }
        let mut words = line.split_whitespace();
        let keyword = words.next().unwrap_or("");
        let list = |w: std::str::SplitWhitespace<'_>| w.map(str::to_string).collect::<Vec<_>>();
        match keyword {
            "ENTRY_END" => return Ok(false),
            "MATCH" => e.matches.extend(list(words)),
            "ADJUST" => e.adjust.extend(list(words)),
            "REPLY" => e.reply.extend(list(words)),
            // Matching and signing details with no bearing on the records.
            "MANDATORY" | "TSIG" | "EDNS" => skip(format!("entry {keyword}")),
            "SECTION" => {
                e.section = match words.next().map(str::to_ascii_uppercase).as_deref() {
                    Some("QUESTION") => Section::Question,
                    Some("ANSWER") => Section::Answer,
                    Some("AUTHORITY") => Section::Authority,
                    Some("ADDITIONAL") => Section::Additional,
                    other => {
                        return Err(DeckardError::Syntax {
                            line: n,
                            message: format!("unknown section {:?}", other.unwrap_or("")),
                        })
                    }
                }
            }
            "RAW" => {
                e.raw = true;
                e.hex_block = None;
                // The hex data follows on the next line; it is not a record.
                e.section = Section::None;
            }
            k if k.starts_with("HEX_") && k.ends_with("_BEGIN") => {
                e.raw = true;
                e.hex_block = Some(format!("{}_END", &k[..k.len() - "_BEGIN".len()]));
            }
            // A line of section data.
            _ => match e.section {
                Section::None => {
                    if e.raw {
                        // The hex line after RAW.
                    } else {
                        skip(format!("keyword {keyword}"));
                    }
                }
                Section::Question => e.questions.push(Self::question(line, n)?),
                _ => {
                    if paren_depth(trimmed) > 0 {
                        e.pending = Some((n, trimmed.to_string()));
                    } else {
                        Self::record(e, n, trimmed)?;
                    }
                }
            },
        }
        Ok(true)
    }

    /// `name [class] type`.
    fn question(line: &str, n: usize) -> Result<Question, DeckardError> {
        let bad = |message: String| DeckardError::Syntax { line: n, message };
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, class, qtype) = match words.as_slice() {
            [name, qtype] => (*name, "IN", *qtype),
            [name, class, qtype] => (*name, *class, *qtype),
            _ => return Err(bad(format!("a question is `name [class] type`: {line:?}"))),
        };
        // A class written after the type, as zone files allow.
        let (class, qtype) = if class.parse::<Rtype>().is_ok() && qtype.parse::<Class>().is_ok() {
            (qtype, class)
        } else {
            (class, qtype)
        };
        Ok(Question {
            name: name
                .parse()
                .map_err(|e| bad(format!("bad name {name:?}: {e}")))?,
            qtype: qtype
                .parse()
                .map_err(|_| bad(format!("unknown type {qtype:?}")))?,
            class: class
                .parse()
                .map_err(|_| bad(format!("unknown class {class:?}")))?,
        })
    }

    /// One record in zone-file syntax, origin the root.
    fn record(e: &mut EntryDraft, n: usize, text: &str) -> Result<(), DeckardError> {
        let mut input = text.as_bytes().to_vec();
        input.push(b'\n');
        let mut zf = Zonefile::from(input.as_slice());
        zf.set_origin(Name::root_bytes());
        zf.set_default_class(Class::IN);
        let bad = |message: String| DeckardError::Record { line: n, message };
        let rec = match zf.next_entry() {
            Ok(Some(ZoneEntry::Record(rec))) => rec,
            Ok(Some(_)) => return Err(bad("not a record".into())),
            Ok(None) => return Ok(()),
            // domain's message starts with its own `line:column:` in the one-record input.
            Err(err) => {
                let text = err.to_string();
                let mut parts = text.splitn(3, ':');
                let message = match (parts.next(), parts.next(), parts.next()) {
                    (Some(l), Some(c), Some(rest))
                        if l.trim().parse::<u64>().is_ok() && c.trim().parse::<u64>().is_ok() =>
                    {
                        rest.trim().to_string()
                    }
                    _ => text.clone(),
                };
                return Err(bad(message));
            }
        };
        let i = match e.section {
            Section::Answer => 0,
            Section::Authority => 1,
            _ => 2,
        };
        e.records[i].push(rec);
        Ok(())
    }

    /// Builds the entry's message; `None` for entries of raw data (skipped and counted).
    fn finish_entry(
        &mut self,
        e: EntryDraft,
        response: bool,
    ) -> Result<Option<Entry>, DeckardError> {
        if let Some((line, _)) = e.pending {
            return Err(DeckardError::Unclosed {
                line,
                block: "a record's '('",
            });
        }
        if e.raw {
            self.skip("entry with raw data");
            return Ok(None);
        }
        let too_large = || DeckardError::TooLarge { line: e.line };
        let mut b = MessageBuilder::new_vec();
        let mut rcode = OptRcode::NOERROR;
        let mut dnssec_ok = false;
        {
            let h = b.header_mut();
            h.set_id(0);
            h.set_qr(response);
            for token in &e.reply {
                match token.to_ascii_uppercase().as_str() {
                    "QR" => h.set_qr(true),
                    "AA" => h.set_aa(true),
                    "TC" => h.set_tc(true),
                    "RD" => h.set_rd(true),
                    "RA" => h.set_ra(true),
                    "AD" => h.set_ad(true),
                    "CD" => h.set_cd(true),
                    "DO" => dnssec_ok = true,
                    t => {
                        if let Ok(r) = t.parse::<OptRcode>() {
                            rcode = r;
                        } else if let Ok(op) = t.parse::<Opcode>() {
                            h.set_opcode(op);
                        } else {
                            *self
                                .scenario
                                .skipped
                                .entry(format!("REPLY {token}"))
                                .or_default() += 1;
                        }
                    }
                }
            }
            h.set_rcode(rcode.rcode());
            if response && !e.records[0].is_empty() && !h.aa() && !h.ra() {
                h.set_aa(true);
                self.scenario.aa_added += 1;
            }
        }
        let mut q = b.question();
        for question in &e.questions {
            q.push((&question.name, question.qtype, question.class))
                .map_err(|_| too_large())?;
        }
        let mut a = q.answer();
        for r in &e.records[0] {
            a.push(r).map_err(|_| too_large())?;
        }
        let mut ns = a.authority();
        for r in &e.records[1] {
            ns.push(r).map_err(|_| too_large())?;
        }
        let mut ad = ns.additional();
        for r in &e.records[2] {
            ad.push(r).map_err(|_| too_large())?;
        }
        if dnssec_ok || rcode.to_parts().1 != 0 {
            ad.opt(|o| {
                o.set_udp_payload_size(4096);
                o.set_dnssec_ok(dnssec_ok);
                o.set_rcode(rcode);
                Ok(())
            })
            .map_err(|_| too_large())?;
        }
        let message = Message::from_octets(Bytes::from(ad.finish())).map_err(|_| too_large())?;
        Ok(Some(Entry {
            line: e.line,
            matches: e.matches,
            adjust: e.adjust,
            reply: e.reply,
            question: e.questions.into_iter().next(),
            message,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::base::iana::Rcode;

    const MINI: &str = "\
; config options
\tquery-minimization: on
\tstub-addr: 193.0.14.129 \t# K.ROOT-SERVERS.NET.
\ttrust-anchor: \". 3600 IN DS 10000 13 4 ABCDEF0123456789\"
CONFIG_END

SCENARIO_BEGIN Test www.example.com.

RANGE_BEGIN 0 100
\tADDRESS 193.0.14.129
\tADDRESS 2001:7fd::1
ENTRY_BEGIN
MATCH opcode qtype qname
ADJUST copy_id
REPLY QR NOERROR
SECTION QUESTION
. IN NS
SECTION ANSWER
. IN NS\tK.ROOT-SERVERS.NET.
SECTION ADDITIONAL
K.ROOT-SERVERS.NET.\tIN\tA\t193.0.14.129
ENTRY_END
ENTRY_BEGIN
MATCH opcode subdomain
REPLY QR DO NOERROR
SECTION QUESTION
\tcom IN NS
\tSECTION AUTHORITY
\tcom. 172800 IN NS a.gtld-servers.net.
\tcom. 86400 IN DS 30909 8 2 E2D3C916F6DEEAC73294E8268FB5885044A833FC5459588F4A9184CF C41A5766
\tSECTION ADDITIONAL
\ta.gtld-servers.net. 172800 IN A 192.5.6.30
ENTRY_END
RANGE_END

STEP 1 QUERY
ENTRY_BEGIN
REPLY RD
SECTION QUESTION
www.example.com IN A
ENTRY_END
STEP 5 TIME_PASSES ELAPSE 10
STEP 10 CHECK_ANSWER
ENTRY_BEGIN
MATCH all
REPLY QR RD RA NXDOMAIN
SECTION QUESTION
www.example.com. IN A
SECTION ANSWER
www.example.com. IN CNAME ( www.next.com.
  )
ENTRY_END
SCENARIO_END
";

    #[test]
    fn reads_config_ranges_and_steps() {
        let s = Scenario::parse(MINI).expect("parses");
        assert_eq!(s.title, "Test www.example.com.");
        assert_eq!(
            s.stub_addrs(),
            vec!["193.0.14.129".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(
            s.config_values("trust-anchor").collect::<Vec<_>>(),
            [". 3600 IN DS 10000 13 4 ABCDEF0123456789"]
        );
        assert_eq!(s.ranges.len(), 1);
        let r = &s.ranges[0];
        assert_eq!((r.first_step, r.last_step, r.addresses.len()), (0, 100, 2));
        assert_eq!(r.entries.len(), 2);
        assert!(
            r.entries[0].message.header().aa(),
            "an answer without AA gets it"
        );
        assert_eq!(s.aa_added, 1);
        let referral = &r.entries[1].message;
        assert!(referral.header().qr() && !referral.header().aa());
        assert_eq!(referral.header_counts().nscount(), 2);
        assert_eq!(referral.header_counts().arcount(), 2, "glue and OPT (DO)");
        assert_eq!(s.responses().count(), 4);

        assert_eq!(s.queries().count(), 1);
        assert_eq!(s.steps.len(), 3);
        assert_eq!(s.skipped.get("STEP TIME_PASSES"), Some(&1));
        let checks = s.checks();
        assert_eq!(checks.len(), 1);
        let q = checks[0]
            .query
            .entry
            .as_ref()
            .and_then(|e| e.question.clone());
        assert_eq!(q.map(|q| q.text()).as_deref(), Some("www.example.com. A"));
        let check = checks[0].check.entry.as_ref().expect("entry");
        assert!(check.matches_answer());
        assert_eq!(check.message.header().rcode(), Rcode::NXDOMAIN);
        let answer: Vec<String> = check
            .message
            .answer()
            .expect("answer")
            .limit_to::<AllRecordData<Bytes, ParsedName<Bytes>>>()
            .map(|r| r.expect("record").data().to_string())
            .collect();
        assert_eq!(answer, ["www.next.com."]);
        assert_eq!(
            checks[0].expected_line().as_deref(),
            Some("www.example.com. A NXDOMAIN www.example.com. in cname www.next.com.")
        );
        assert!(!checks[0].question_mismatch());
    }

    #[test]
    fn feeds_the_builder_like_a_capture() {
        let s = Scenario::parse(MINI).expect("parses");
        let mut b = ZoneBuilder::new();
        assert_eq!(s.feed(&mut b), 4);
        assert_eq!(b.responses(), 4);
        let h = b.build();
        let names: Vec<String> = h.zones.iter().map(|z| z.name()).collect();
        assert_eq!(names, [".", "com."]);
        let root = &h.zones[0];
        assert_eq!(root.servers.len(), 2);
        assert!(
            root.to_text().contains("com. 86400 IN DS 30909 8 2"),
            "{}",
            root.to_text()
        );
    }

    #[test]
    fn root_without_ns_is_completed_from_the_hints() {
        // The root's NS set is recorded: nothing to add.
        let s = Scenario::parse(MINI).expect("parses");
        let mut b = ZoneBuilder::new();
        s.feed(&mut b);
        let mut h = b.build();
        assert!(complete_root(&mut h, &s.stub_addrs()).is_empty());
        // Without it, the hint's address is named by the recorded name that has it.
        let no_root_ns = MINI.replace(". IN NS\tK.ROOT-SERVERS.NET.\n", "");
        let s = Scenario::parse(&no_root_ns).expect("parses");
        let mut b = ZoneBuilder::new();
        s.feed(&mut b);
        let mut h = b.build();
        let added = complete_root(&mut h, &s.stub_addrs());
        assert_eq!(added, [". 3600 IN NS K.ROOT-SERVERS.NET."]);
        assert!(
            complete_root(&mut h, &s.stub_addrs()).is_empty(),
            "only once"
        );
        // An address no record names gets a made-up name and its address record.
        let mut b = ZoneBuilder::new();
        s.feed(&mut b);
        let mut h = b.build();
        let other: IpAddr = "2001:dc3::35".parse().unwrap();
        let added = complete_root(&mut h, &[other]);
        assert_eq!(
            added,
            [
                ". 3600 IN NS stub-addr-1.deckard.invalid.",
                "stub-addr-1.deckard.invalid. 3600 IN AAAA 2001:dc3::35"
            ]
        );
        assert!(h.zones[0].servers.contains(&other));
    }

    #[test]
    fn errors_carry_line_numbers() {
        let bad_record = MINI.replace("192.5.6.30", "192.5.6.300");
        match Scenario::parse(&bad_record) {
            Err(DeckardError::Record { line: 32, .. }) => {}
            other => panic!("{other:?}"),
        }
        let bad_address = MINI.replace("ADDRESS 2001:7fd::1", "ADDRESS nowhere");
        match Scenario::parse(&bad_address) {
            Err(DeckardError::Syntax { line: 11, .. }) => {}
            other => panic!("{other:?}"),
        }
        let unclosed = MINI
            .replace("SCENARIO_END\n", "")
            .replace("RANGE_END\n", "");
        assert!(matches!(
            Scenario::parse(&unclosed),
            Err(DeckardError::Unclosed { .. })
        ));
        assert!(matches!(
            Scenario::parse("$ORIGIN .\n. NS a.\n"),
            Err(DeckardError::NotAScenario)
        ));
    }

    #[test]
    fn unknown_keywords_and_raw_entries_are_counted() {
        let text = MINI.replace(
            "RANGE_END\n",
            "FROBNICATE 3\nENTRY_BEGIN\nRAW\nb5c9ca3d50104320f4120000000000000000\nENTRY_END\nRANGE_END\n",
        );
        let s = Scenario::parse(&text).expect("parses");
        assert_eq!(s.skipped.get("keyword FROBNICATE"), Some(&1));
        assert_eq!(s.skipped.get("entry with raw data"), Some(&1));
        assert_eq!(s.ranges[0].entries.len(), 2);
    }
}
