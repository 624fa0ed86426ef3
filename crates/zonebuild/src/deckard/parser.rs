//! The reader of Deckard's `.rpl` text: configuration, ranges of entries and steps, each
//! entry's records read with `domain`'s zone-file parser and built into a DNS message.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use domain::base::iana::{Class, Opcode, OptRcode, Rtype};
use domain::base::{Message, MessageBuilder, Name};
use domain::zonefile::inplace::{Entry as ZoneEntry, ScannedRecord, Zonefile};
use thiserror::Error;

use super::model::{strip_port, ConfigItem, Entry, Question, Range, Scenario, Step, StepKind};

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
            // FLAGS is Deckard's older name for REPLY.
            "REPLY" | "FLAGS" => e.reply.extend(list(words)),
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
