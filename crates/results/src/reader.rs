//! Reading a results file (layout in [`file`](mod@crate::file)), block by block, in bounded
//! memory, losing only what is damaged.
//!
//! Every block is checked (magic, result count, payload length, CRC). A block that fails, or
//! bytes that are not a block at all, cost only themselves: the reader looks for the next
//! `RBLK` whose header is consistent and whose CRC checks out and goes on from there. What it
//! skipped is counted in [`Damage`]: damaged blocks, the results they held (from their header
//! when it survived, otherwise from their size), a last block cut short, and results of a kind
//! this build does not know. Memory is one block (at most [`MAX_BLOCK_RESULTS`] ×
//! [`MAX_RESULT_LEN`] bytes) plus a read chunk, whatever the damage.

use crate::file::{
    block_crc, decode_result, ResultsError, BLOCK_HEADER_LEN, BLOCK_MAGIC, FILE_HEADER_LEN,
    FLAG_ANSWER, MAGIC, MAX_BLOCK_ANSWER_BYTES, MAX_BLOCK_RESULTS, MAX_RESULT_LEN, MIN_RESULT_LEN,
    VERSION, VERSION_WITHOUT_ANSWERS,
};
use crate::result::QueryResult;
use crate::run_info::RunInfo;
use serde::Serialize;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Bytes asked of the input per read.
const READ_CHUNK: usize = 256 * 1024;

/// A result with the response that answered it, when the file keeps it.
pub type Answered<'a> = (QueryResult, Option<&'a [u8]>);

/// How the stream of blocks ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Not at the end yet.
    Reading,
    /// The file ended right after a complete, valid block (or its header). Damage before that
    /// block, if any, is in [`ResultsReader::damage`].
    Clean,
    /// The file ends in a block cut short (a writer that was killed or is still writing).
    Truncated,
    /// The file ends in bytes that failed the checks (a damaged block, garbage).
    Corrupt,
    /// Reading failed (an I/O error); the iterator yielded the error and ended.
    Error,
}

/// What a reader skipped: damaged blocks, a last block cut short, unknown results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Damage {
    /// Damaged blocks skipped: blocks that failed their checks (bad header or CRC) and
    /// stretches of unreadable bytes long enough to have held results.
    pub damaged_blocks: u64,
    /// Results lost in the damaged blocks and in a last block cut short: a block's own count
    /// when its header survived, otherwise as many as its bytes could hold.
    pub results_lost: u64,
    /// Results in valid blocks with a transport or outcome code this build does not know,
    /// skipped.
    pub unknown_results: u64,
    /// The file ends in a block cut short (a replay that was killed mid-write).
    pub cut_short: bool,
    /// Bytes not read as results: damaged blocks, unreadable bytes, a last block cut short,
    /// trailing garbage.
    pub skipped_bytes: u64,
    /// Bytes after the last block that are neither a block nor the remains of one (no block
    /// header, nothing shaped like results where a block's would be): something appended to the
    /// file, not results lost. Counted in `skipped_bytes` too.
    pub trailing_garbage: u64,
    /// Where that garbage starts in the file (bytes from its start); `None` without any.
    pub trailing_garbage_at: Option<u64>,
}

impl Damage {
    /// True when nothing was skipped.
    pub fn is_clean(&self) -> bool {
        *self == Damage::default()
    }

    fn add(&mut self, o: &Damage) {
        self.damaged_blocks += o.damaged_blocks;
        self.results_lost += o.results_lost;
        self.unknown_results += o.unknown_results;
        self.cut_short |= o.cut_short;
        self.skipped_bytes += o.skipped_bytes;
        self.trailing_garbage += o.trailing_garbage;
        self.trailing_garbage_at = self.trailing_garbage_at.or(o.trailing_garbage_at);
    }
}

impl fmt::Display for Damage {
    /// One line, e.g. "2 damaged blocks skipped, the last block cut short: 8196 results lost,
    /// 393,312 bytes not read".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_clean() {
            return f.write_str("no damage");
        }
        let garbage = match self.trailing_garbage_at {
            Some(at) if self.trailing_garbage > 0 => format!(
                "{} byte{} of trailing garbage at offset {at}, after the last block (not results)",
                self.trailing_garbage,
                plural(self.trailing_garbage)
            ),
            _ => String::new(),
        };
        let only_garbage = Damage {
            trailing_garbage: 0,
            trailing_garbage_at: None,
            skipped_bytes: self.skipped_bytes - self.trailing_garbage.min(self.skipped_bytes),
            ..*self
        }
        .is_clean();
        if only_garbage {
            return f.write_str(&garbage);
        }
        let mut parts = Vec::new();
        if self.damaged_blocks > 0 {
            parts.push(format!(
                "{} damaged block{} skipped",
                self.damaged_blocks,
                plural(self.damaged_blocks)
            ));
        }
        if self.cut_short {
            parts.push("the last block cut short".to_string());
        }
        let mut line = parts.join(", ");
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&format!(
            "{} result{} lost, {} byte{} not read",
            self.results_lost,
            plural(self.results_lost),
            self.skipped_bytes,
            plural(self.skipped_bytes)
        ));
        if !garbage.is_empty() {
            line.push_str(&format!(" (among them {garbage})"));
        }
        if self.unknown_results > 0 {
            line.push_str(&format!(
                "; {} result{} of a kind this build does not know skipped",
                self.unknown_results,
                plural(self.unknown_results)
            ));
        }
        f.write_str(&line)
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What the bytes at a position hold.
enum Found {
    /// A block whose header and CRC check out, `total` bytes long with its header.
    Block { total: usize },
    /// A consistent block header (magic, count, length) whose block fails its CRC.
    Damaged { count: usize, total: usize },
    /// A consistent block header whose block runs past the end of the input.
    CutShort { count: usize, total: usize },
    /// No consistent block header.
    Nothing,
}

/// The accounting of one damaged stretch, fed the consistent block headers found in it in
/// order. Positions count bytes from the start of the stretch.
struct Walk {
    result_len: u64,
    /// Start of the part not accounted yet.
    from: u64,
    /// A consistent header at `.0` claiming a block up to `.1` of `.2` results, not yet known
    /// to fit before the next valid block.
    claim: Option<(u64, u64, u64)>,
    /// The stretch's first bytes are not the remains of a block (no results where a block's
    /// would be, not the start of a block header): if nothing else is found up to the end of
    /// the input, the stretch is trailing garbage, not results lost.
    garbage_start: bool,
    damage: Damage,
}

impl Walk {
    fn new(result_len: usize, garbage_start: bool) -> Walk {
        Walk {
            result_len: result_len as u64,
            from: 0,
            claim: None,
            garbage_start,
            damage: Damage::default(),
        }
    }

    /// Every position before `at` has been looked at: a claimed block that ends there is a
    /// damaged block.
    fn advance(&mut self, at: u64) {
        if let Some((start, end, count)) = self.claim {
            if end <= at {
                self.unreadable(start);
                self.damage.damaged_blocks += 1;
                self.damage.results_lost += count;
                self.from = end;
                self.claim = None;
            }
        }
    }

    /// A consistent block header at `at` whose block is `total` bytes of `count` results.
    fn header(&mut self, at: u64, count: usize, total: usize) {
        self.advance(at);
        if self.claim.is_none() && at >= self.from {
            self.claim = Some((at, at + total as u64, count as u64));
        }
    }

    /// The bytes from `from` to `to` hold no consistent block header: a block whose header was
    /// destroyed (as many results as they could hold), or garbage too short to be one.
    fn unreadable(&mut self, to: u64) {
        let len = to.saturating_sub(self.from);
        let results = len.saturating_sub(BLOCK_HEADER_LEN as u64) / self.result_len;
        if results > 0 {
            self.damage.damaged_blocks += 1;
            self.damage.results_lost += results;
        }
        self.from = self.from.max(to);
    }

    /// The stretch ends at `end`: at a valid block, or (`at_eof`) at the end of the input.
    fn end(mut self, end: u64, at_eof: bool) -> Damage {
        self.advance(end);
        if let Some((start, _, count)) = self.claim.take() {
            // The claimed block runs past `end`. At the end of the input it was cut short;
            // before a valid block its header lied, and its bytes are unreadable.
            if at_eof {
                self.unreadable(start);
                self.damage.cut_short = true;
                self.damage.results_lost += count;
                self.from = end;
            }
        }
        if at_eof && self.from == 0 && self.garbage_start {
            // Nothing in it was ever part of a block: appended, not lost.
            self.damage.trailing_garbage = end;
            self.from = end;
        }
        self.unreadable(end);
        self.damage.skipped_bytes += end;
        self.damage
    }
}

/// Results looked at to tell the remains of a block from garbage.
const LOOK_AT_RESULTS: usize = 8;

/// Whether `bytes`, where no consistent block header is, could be the remains of a block: the
/// start of a header cut short (at the end of the input), or results at their places after a
/// header's room (any of the first few with known codes, flags and a zero reserved byte), or a
/// header whose magic lost one byte. Garbage appended to a file (text, random bytes) is none of
/// these.
fn block_remains(bytes: &[u8], result_len: usize) -> bool {
    if bytes.len() < BLOCK_HEADER_LEN {
        let n = bytes.len().min(BLOCK_MAGIC.len());
        return bytes[..n] == BLOCK_MAGIC[..n];
    }
    // A block header whose magic lost one byte (random bytes match three of four once in
    // millions).
    let magic_left = bytes[..BLOCK_MAGIC.len()]
        .iter()
        .zip(BLOCK_MAGIC)
        .filter(|(a, b)| a == b)
        .count();
    magic_left >= BLOCK_MAGIC.len() - 1
        || bytes[BLOCK_HEADER_LEN..]
            .chunks_exact(result_len)
            .take(LOOK_AT_RESULTS)
            .any(|r| r[45] & !(3 | FLAG_ANSWER) == 0 && r[47] == 0 && decode_result(r).is_ok())
}

/// Reads a results file, as an iterator of results, skipping (and counting) what is damaged.
///
/// The iterator ends at the end of the input; [`damage`](Self::damage) then says what was
/// skipped and [`tail`](Self::tail) how the file ended. It yields an error (and then ends) only
/// when reading fails.
pub struct ResultsReader<R: Read> {
    input: R,
    result_len: usize,
    /// The file is of version 2: blocks carry answers after their results.
    answers: bool,
    /// Where the next answer of the current block starts in `buf`.
    answer_pos: usize,
    /// Bytes read and not consumed are `buf[start..]`.
    buf: Vec<u8>,
    /// Where `buf[0]` lies in the input (bytes from its start).
    base: u64,
    start: usize,
    eof: bool,
    /// The current block's results not yet returned: `buf[pos..end]`.
    pos: usize,
    end: usize,
    tail: Tail,
    damage: Damage,
    read_results: u64,
    blocks: u64,
    answer_bytes: u64,
    run_info: Option<RunInfo>,
}

impl ResultsReader<File> {
    /// Opens the results file at `path` and checks its header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ResultsError> {
        ldplayer_output::protect_input(path.as_ref());
        ResultsReader::new(File::open(path.as_ref())?)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// Length of the answer that follows a version-2 block's results for result `raw` (0 when its
/// flag says none does).
fn answer_len(raw: &[u8]) -> usize {
    if raw[45] & FLAG_ANSWER != 0 {
        usize::from(u16::from_le_bytes([raw[42], raw[43]]))
    } else {
        0
    }
}

impl<R: Read> ResultsReader<R> {
    /// Reads and checks the file header. Give it an unbuffered reader or a buffered one: it
    /// reads in large chunks of its own.
    pub fn new(mut input: R) -> Result<Self, ResultsError> {
        let mut head = [0u8; FILE_HEADER_LEN];
        let n = read_full(&mut input, &mut head)?;
        if !head[..n.min(8)].iter().eq(MAGIC[..n.min(8)].iter()) {
            return Err(ResultsError::NotResults("bad magic"));
        }
        if n < FILE_HEADER_LEN {
            return Err(ResultsError::NotResults("file shorter than its header"));
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != VERSION && version != VERSION_WITHOUT_ANSWERS {
            return Err(ResultsError::Version(version));
        }
        let header_len = u16::from_le_bytes([head[10], head[11]]) as usize;
        let result_len = u16::from_le_bytes([head[12], head[13]]) as usize;
        if header_len < FILE_HEADER_LEN {
            return Err(ResultsError::NotResults("header length too short"));
        }
        if result_len < MIN_RESULT_LEN {
            return Err(ResultsError::NotResults("result length too short"));
        }
        if result_len > MAX_RESULT_LEN {
            return Err(ResultsError::NotResults("result length too long"));
        }
        let mut extension = vec![0u8; header_len - FILE_HEADER_LEN];
        if read_full(&mut input, &mut extension)? < extension.len() {
            return Err(ResultsError::NotResults("file shorter than its header"));
        }
        let run_info = RunInfo::decode(&extension);
        Ok(ResultsReader {
            input,
            result_len,
            answers: version == VERSION,
            answer_pos: 0,
            buf: Vec::new(),
            base: header_len as u64,
            start: 0,
            eof: false,
            pos: 0,
            end: 0,
            tail: Tail::Reading,
            damage: Damage::default(),
            read_results: 0,
            blocks: 0,
            answer_bytes: 0,
            run_info,
        })
    }

    /// Whether the file keeps answers (version 2, `replay --keep-answers`): then
    /// [`next_with_answer`](Self::next_with_answer) gives each answered result's response.
    pub fn keeps_answers(&self) -> bool {
        self.answers
    }

    /// What the file's header says about its run (shard, start, clock), if it says anything.
    pub fn run_info(&self) -> Option<&RunInfo> {
        self.run_info.as_ref()
    }

    /// Whether the run that wrote the file finished, as far as the file tells: `Some(false)`
    /// when its header says the run never marked it complete (killed, its disk full, or still
    /// running: see [`crate::mark_complete`]) or when it ends in a block cut short;
    /// `Some(true)` when its header says the run finished; `None` when the file does not say
    /// (written without run info, by an older ldplayer or another program). Final once the
    /// iterator has ended.
    pub fn complete(&self) -> Option<bool> {
        let flag = self.run_info.as_ref().and_then(|r| r.complete);
        if self.damage.cut_short {
            return Some(false);
        }
        flag
    }

    /// The warning every reader gives, once the iterator has ended, when the run that wrote
    /// `file` did not finish ([`complete`](Self::complete) is `Some(false)`); `None` otherwise.
    pub fn incomplete_warning(&self, file: impl std::fmt::Display) -> Option<String> {
        (self.complete() == Some(false)).then(|| incomplete_warning(file, self.read_results))
    }

    /// How the file ended ([`Tail::Reading`] until the iterator has ended).
    pub fn tail(&self) -> Tail {
        self.tail
    }

    /// What was skipped so far.
    pub fn damage(&self) -> Damage {
        self.damage
    }

    /// Bytes not read as results so far: damaged blocks, unreadable bytes, a last block cut
    /// short ([`Damage::skipped_bytes`]).
    pub fn ignored_bytes(&self) -> u64 {
        self.damage.skipped_bytes
    }

    /// Results read so far.
    pub fn results_read(&self) -> u64 {
        self.read_results
    }

    /// Valid blocks read so far.
    pub fn blocks_read(&self) -> u64 {
        self.blocks
    }

    /// Reads until `need` unconsumed bytes are buffered or the input ends; returns how many are.
    fn fill(&mut self, need: usize) -> io::Result<usize> {
        while self.buf.len() - self.start < need && !self.eof {
            if self.start > 0 {
                // Only ever called once the current block's results are all returned.
                self.base += self.start as u64;
                self.buf.drain(..self.start);
                self.pos = self.pos.saturating_sub(self.start);
                self.end = self.end.saturating_sub(self.start);
                self.start = 0;
            }
            let old = self.buf.len();
            let want = (need - old).max(READ_CHUNK);
            self.buf.resize(old + want, 0);
            let got = loop {
                match self.input.read(&mut self.buf[old..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.buf.truncate(old);
                        return Err(e);
                    }
                }
            };
            self.buf.truncate(old + got);
            self.eof = got == 0;
        }
        Ok(self.buf.len() - self.start)
    }

    /// Looks at the unconsumed bytes from offset `at`.
    fn probe(&mut self, at: usize) -> io::Result<Found> {
        if self.fill(at + BLOCK_HEADER_LEN)? < at + BLOCK_HEADER_LEN {
            return Ok(Found::Nothing);
        }
        let h = &self.buf[self.start + at..self.start + at + BLOCK_HEADER_LEN];
        let count = le32(&h[4..8]) as usize;
        let len = le32(&h[8..12]) as usize;
        let results_len = count * self.result_len;
        let consistent = if self.answers {
            len >= results_len
                && len - results_len <= MAX_BLOCK_ANSWER_BYTES.min(count * usize::from(u16::MAX))
        } else {
            len == results_len
        };
        if &h[0..4] != BLOCK_MAGIC || count == 0 || count > MAX_BLOCK_RESULTS || !consistent {
            return Ok(Found::Nothing);
        }
        let total = BLOCK_HEADER_LEN + len;
        if self.fill(at + total)? < at + total {
            return Ok(Found::CutShort { count, total });
        }
        let block = &self.buf[self.start + at..self.start + at + total];
        if block_crc(&block[..12], &block[BLOCK_HEADER_LEN..]) == le32(&block[12..16])
            && self.answers_add_up(block, count)
        {
            Ok(Found::Block { total })
        } else {
            Ok(Found::Damaged { count, total })
        }
    }

    /// Whether the answers of a version-2 block fill exactly what follows its `count` results
    /// (always true in version 1, where nothing does).
    fn answers_add_up(&self, block: &[u8], count: usize) -> bool {
        if !self.answers {
            return true;
        }
        let results = &block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + count * self.result_len];
        let kept: usize = results.chunks_exact(self.result_len).map(answer_len).sum();
        BLOCK_HEADER_LEN + results.len() + kept == block.len()
    }

    /// Skips the damaged bytes at the read position, up to the next valid block or the end of
    /// the input, and counts what they held. Keeps at most one block in memory.
    fn skip_damage(&mut self) -> io::Result<()> {
        let look = BLOCK_HEADER_LEN + LOOK_AT_RESULTS * self.result_len;
        let have = self.fill(look)?.min(look);
        let garbage_start =
            !block_remains(&self.buf[self.start..self.start + have], self.result_len);
        let stretch_at = self.base + self.start as u64;
        let mut walk = Walk::new(self.result_len, garbage_start);
        // Bytes of the stretch already dropped from the buffer.
        let mut dropped: u64 = 0;
        let mut at = 0usize;
        loop {
            let found = self.probe(at)?;
            let here = dropped + at as u64;
            match found {
                Found::Block { .. } if here > 0 => {
                    self.damage.add(&walk.end(here, false));
                    self.start += at;
                    return Ok(());
                }
                Found::Block { .. } | Found::Nothing => {}
                Found::Damaged { count, total } => walk.header(here, count, total),
                Found::CutShort { count, total } => walk.header(here, count, total),
            }
            // The next candidate: the next block magic after `at`.
            let mut from = at + 1;
            loop {
                let unread = &self.buf[self.start..];
                if let Some(k) = unread.get(from..).and_then(|rest| {
                    rest.windows(BLOCK_MAGIC.len())
                        .position(|w| w == BLOCK_MAGIC)
                }) {
                    at = from + k;
                    break;
                }
                if self.eof {
                    let len = unread.len();
                    let end = dropped + len as u64;
                    let mut damage = walk.end(end, true);
                    if damage.trailing_garbage > 0 {
                        damage.trailing_garbage_at = Some(stretch_at);
                    } else if end < BLOCK_HEADER_LEN as u64 {
                        // The start of a block header after the last block: cut short.
                        damage.cut_short = true;
                    }
                    self.tail = if damage.cut_short {
                        Tail::Truncated
                    } else {
                        Tail::Corrupt
                    };
                    self.damage.add(&damage);
                    self.start += len;
                    return Ok(());
                }
                // Nothing before the last three bytes starts a magic: drop it, read more.
                let len = unread.len();
                let keep = len.min(BLOCK_MAGIC.len() - 1);
                let drop = (len - keep).max(from.min(len));
                walk.advance(dropped + drop as u64);
                self.start += drop;
                dropped += drop as u64;
                from -= from.min(drop);
                self.fill(len - drop + 1)?;
            }
            walk.advance(dropped + at as u64);
        }
    }

    /// Loads the next valid block; false at the end of the input.
    fn next_block(&mut self) -> Result<bool, ResultsError> {
        loop {
            if self.fill(1)? == 0 {
                if self.tail == Tail::Reading {
                    self.tail = Tail::Clean;
                }
                return Ok(false);
            }
            match self.probe(0)? {
                Found::Block { total } => {
                    let count = le32(&self.buf[self.start + 4..self.start + 8]) as usize;
                    self.pos = self.start + BLOCK_HEADER_LEN;
                    self.end = self.pos + count * self.result_len;
                    self.answer_pos = self.end;
                    self.answer_bytes += (self.start + total - self.end) as u64;
                    self.start += total;
                    self.blocks += 1;
                    return Ok(true);
                }
                _ => {
                    self.skip_damage()?;
                    if self.tail != Tail::Reading {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// The next result, `Ok(None)` at the end of the input.
    pub fn next_result(&mut self) -> Result<Option<QueryResult>, ResultsError> {
        Ok(self.next_with_answer()?.map(|(r, _)| r))
    }

    /// The next result with the response that answered it when the file keeps it (version 2,
    /// [`keeps_answers`](Self::keeps_answers)), borrowed until the next call; `Ok(None)` at the
    /// end of the input.
    pub fn next_with_answer(&mut self) -> Result<Option<Answered<'_>>, ResultsError> {
        loop {
            if self.pos >= self.end && (self.tail != Tail::Reading || !self.next_block()?) {
                return Ok(None);
            }
            let at = self.pos;
            self.pos += self.result_len;
            let raw = &self.buf[at..at + self.result_len];
            let answer = if self.answers {
                let len = answer_len(raw);
                let from = self.answer_pos;
                self.answer_pos += len;
                (raw[45] & FLAG_ANSWER != 0).then_some(from..from + len)
            } else {
                None
            };
            match decode_result(raw) {
                Ok(r) => {
                    self.read_results += 1;
                    return Ok(Some((r, answer.map(|span| &self.buf[span]))));
                }
                Err(_) => self.damage.unknown_results += 1,
            }
        }
    }

    /// Answer bytes of the valid blocks read so far (version 2; 0 otherwise).
    pub fn answer_bytes_read(&self) -> u64 {
        self.answer_bytes
    }
}

impl<R: Read> Iterator for ResultsReader<R> {
    type Item = Result<QueryResult, ResultsError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.tail == Tail::Error {
            return None;
        }
        match self.next_result() {
            Ok(r) => r.map(Ok),
            Err(e) => {
                // End the stream after an error.
                self.tail = Tail::Error;
                self.pos = self.end;
                Some(Err(e))
            }
        }
    }
}

/// The warning for a results file, `file`, whose run did not finish, holding `results` results.
pub fn incomplete_warning(file: impl std::fmt::Display, results: u64) -> String {
    format!(
        "{file} is INCOMPLETE: the replay that wrote it did not finish (it was killed, ran out \
         of disk space, or is still running); it holds the {results} result{} written before \
         that, not the whole run",
        plural(results)
    )
}

/// Reads every result of a results file in memory (for tests and small files), skipping what
/// is damaged.
pub fn read_all(input: impl Read) -> Result<Vec<QueryResult>, ResultsError> {
    ResultsReader::new(input)?.collect()
}
