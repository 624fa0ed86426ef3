//! The binary results file: a versioned stream of checksummed blocks of fixed-size results,
//! and (version 2) the response messages that answered them.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! file header, 16 bytes:
//!   0  [8] magic "LDPRSLTS"
//!   8  u16 version: 1, or 2 when the file keeps the answers (`replay --keep-answers`)
//!  10  u16 header length = 16, or more with the run-info extension that follows (readers
//!          skip what they do not know; see [`RunInfo`](crate::RunInfo))
//!  12  u16 result length = 64 (readers decode the fields they know, skip the rest; files
//!          written before handshake_ns have 48, before target 56)
//!  14  u16 reserved (0)
//! then blocks until the end of the file; block header, 16 bytes:
//!   0  [4] block magic "RBLK"
//!   4  u32 result count (1..=65536)
//!   8  u32 payload length in bytes: count × result length, plus (version 2) the answers
//!  12  u32 CRC-32 (IEEE, as zlib) of the block header's first 12 bytes followed by the payload
//! then the payload: `count` results, each:
//!   0  u64 index (position of the query's record in the trace)
//!   8  i64 trace_ns
//!  16  i64 intended_ns
//!  24  i64 sent_ns (0: never sent)
//!  32  i64 received_ns (0: no response)
//!  40  u16 rcode
//!  42  u16 response length
//!  44  u8  transport (0 udp, 1 tcp, 2 tls, 3 https, 4 quic)
//!  45  u8  flags: 1 = new connection, 2 = truncated (TC), 4 = its answer follows (version 2)
//!  46  u8  outcome: 0 answered, 1 timeout, 2 refused, 3 reset, 4 tls, 5 send, 6 bad-query,
//!          7 stopped, 8 http, 9 quic, 10 bad-response, 11 late-start
//!  47  u8  reserved (0)
//!  48  i64 handshake_ns: for the query that opened its connection, the connection's set-up
//!          time (TCP, and TLS, handshake); 0 otherwise
//!  56  u16 target: which server of a replay to several the query went to (from 0)
//!  58  [6] reserved (0)
//! then, in version 2, the answers: for each result whose flag 4 is set, in the order of the
//! results, its response message byte for byte, `response length` bytes long
//! ```
//!
//! Version 2 is the step that answers took: a reader of version 1 would take a block whose
//! payload is longer than its results for a damaged one, so a file that keeps answers says
//! version 2, and one that does not still says version 1 (every reader reads it). This crate
//! reads both, and files of 48- and 56-byte results.
//!
//! The writer emits a block every [`DEFAULT_BLOCK_RESULTS`] results, when the block's answers
//! reach [`DEFAULT_BLOCK_ANSWER_BYTES`], or when the oldest buffered result is
//! [`DEFAULT_BLOCK_AGE`] old (checked as results arrive), and flushes its output after each
//! block, so a writer that is killed leaves a file that reads back up to its last complete
//! block. A block that is cut short or fails its checks costs only itself: the
//! [`ResultsReader`] resynchronises on the next block whose header and CRC check out, and counts
//! what it skipped ([`Damage`]).

use crate::result::{ErrorKind, Outcome, QueryResult, ResultSink};
use crate::run_info::RunInfo;
use ldplayer_dns::Rcode;
use ldplayer_trace::Proto;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// The first eight bytes of every results file.
pub const MAGIC: &[u8; 8] = b"LDPRSLTS";
/// The latest format version: the one of files that keep answers. This crate reads it and
/// [`VERSION_WITHOUT_ANSWERS`].
pub const VERSION: u16 = 2;
/// The format version of files without answers (every reader of results files reads it).
pub const VERSION_WITHOUT_ANSWERS: u16 = 1;
/// Length of the file header this crate writes.
pub const FILE_HEADER_LEN: usize = 16;
/// The magic at the start of every block.
pub const BLOCK_MAGIC: &[u8; 4] = b"RBLK";
/// Length of a block header.
pub const BLOCK_HEADER_LEN: usize = 16;
/// Length of one encoded result as this crate writes it.
pub const RESULT_LEN: usize = 64;
/// Length of the shortest result readers take: the results of the first files, before
/// `handshake_ns` was added (it reads as 0).
pub const MIN_RESULT_LEN: usize = 48;
/// Length of the results of files written before `target` (it reads as 0).
pub const TARGET_RESULT_LEN: usize = 58;
/// The result flag saying that its answer follows the block's results (version 2).
pub const FLAG_ANSWER: u8 = 4;
/// Longest result a file header may announce (later versions append fields; readers skip them).
pub const MAX_RESULT_LEN: usize = 1024;
/// Most results in one block (writers and readers refuse more).
pub const MAX_BLOCK_RESULTS: usize = 65536;
/// Results per block the writer aims for.
pub const DEFAULT_BLOCK_RESULTS: usize = 4096;
/// Age of the oldest buffered result after which the writer emits a block.
pub const DEFAULT_BLOCK_AGE: Duration = Duration::from_secs(1);
/// Bytes of answers after which the writer emits a block: what a writer keeping answers holds
/// in memory is one block of at most this much plus one answer.
pub const DEFAULT_BLOCK_ANSWER_BYTES: usize = 1 << 20;
/// Most bytes of answers in one block (readers refuse more: a block is read whole into memory).
pub const MAX_BLOCK_ANSWER_BYTES: usize = 16 << 20;

/// What went wrong reading a results file.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// Reading failed.
    #[error("reading results: {0}")]
    Io(#[from] io::Error),
    /// The input does not start with a results file header.
    #[error("not an ldplayer results file ({0})")]
    NotResults(&'static str),
    /// A results file of a version this build does not read.
    #[error(
        "results file version {0} is not supported (this build reads versions \
         {VERSION_WITHOUT_ANSWERS} and {VERSION})"
    )]
    Version(u16),
    /// A result holds a value this build does not know (the reader skips and counts such
    /// results; [`decode_result`] returns this).
    #[error("bad result in results file: {0}")]
    Format(String),
}

pub use crate::reader::{incomplete_warning, read_all, Answered, Damage, ResultsReader, Tail};

pub(crate) fn file_header(info: &RunInfo) -> Vec<u8> {
    let extension = info.encode();
    let mut h = vec![0u8; FILE_HEADER_LEN];
    h[..8].copy_from_slice(MAGIC);
    let version = if info.keeps_answers() {
        VERSION
    } else {
        VERSION_WITHOUT_ANSWERS
    };
    h[8..10].copy_from_slice(&version.to_le_bytes());
    h[10..12].copy_from_slice(&((FILE_HEADER_LEN + extension.len()) as u16).to_le_bytes());
    h[12..14].copy_from_slice(&(RESULT_LEN as u16).to_le_bytes());
    h.extend_from_slice(&extension);
    h
}

/// True when `head` starts like a results file.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Answered => 0,
        Outcome::Timeout => 1,
        Outcome::Error(k) => match k {
            ErrorKind::Refused => 2,
            ErrorKind::Reset => 3,
            ErrorKind::Tls => 4,
            ErrorKind::Send => 5,
            ErrorKind::BadQuery => 6,
            ErrorKind::Stopped => 7,
            ErrorKind::Http => 8,
            ErrorKind::Quic => 9,
            ErrorKind::BadResponse => 10,
            ErrorKind::LateStart => 11,
        },
    }
}

fn outcome_from_code(c: u8) -> Option<Outcome> {
    Some(match c {
        0 => Outcome::Answered,
        1 => Outcome::Timeout,
        2 => Outcome::Error(ErrorKind::Refused),
        3 => Outcome::Error(ErrorKind::Reset),
        4 => Outcome::Error(ErrorKind::Tls),
        5 => Outcome::Error(ErrorKind::Send),
        6 => Outcome::Error(ErrorKind::BadQuery),
        7 => Outcome::Error(ErrorKind::Stopped),
        8 => Outcome::Error(ErrorKind::Http),
        9 => Outcome::Error(ErrorKind::Quic),
        10 => Outcome::Error(ErrorKind::BadResponse),
        11 => Outcome::Error(ErrorKind::LateStart),
        _ => return None,
    })
}

/// Encodes one result in [`RESULT_LEN`] bytes.
pub fn encode_result(r: &QueryResult) -> [u8; RESULT_LEN] {
    let mut b = [0u8; RESULT_LEN];
    b[0..8].copy_from_slice(&r.index.to_le_bytes());
    b[8..16].copy_from_slice(&r.trace_ns.to_le_bytes());
    b[16..24].copy_from_slice(&r.intended_ns.to_le_bytes());
    b[24..32].copy_from_slice(&r.sent_ns.to_le_bytes());
    b[32..40].copy_from_slice(&r.received_ns.to_le_bytes());
    b[40..42].copy_from_slice(&r.rcode.0.to_le_bytes());
    b[42..44].copy_from_slice(&r.response_len.to_le_bytes());
    b[44] = r.proto as u8;
    b[45] = r.new_connection as u8 | (r.truncated as u8) << 1;
    b[46] = outcome_code(r.outcome);
    b[48..56].copy_from_slice(&r.handshake_ns.to_le_bytes());
    b[56..58].copy_from_slice(&r.target.to_le_bytes());
    b
}

/// Decodes one result from `b`, a result as long as the file's header says: its first
/// [`RESULT_LEN`] bytes, [`TARGET_RESULT_LEN`] for files written before `target` (it reads as 0)
/// or [`MIN_RESULT_LEN`] for files written before `handshake_ns`.
pub fn decode_result(b: &[u8]) -> Result<QueryResult, ResultsError> {
    if b.len() < MIN_RESULT_LEN {
        return Err(ResultsError::Format(format!(
            "result of {} bytes, need {MIN_RESULT_LEN}",
            b.len()
        )));
    }
    let num = |at: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(x)
    };
    let proto = Proto::from_code(b[44])
        .ok_or_else(|| ResultsError::Format(format!("unknown transport code {}", b[44])))?;
    let outcome = outcome_from_code(b[46])
        .ok_or_else(|| ResultsError::Format(format!("unknown outcome code {}", b[46])))?;
    Ok(QueryResult {
        index: num(0),
        trace_ns: num(8) as i64,
        intended_ns: num(16) as i64,
        sent_ns: num(24) as i64,
        received_ns: num(32) as i64,
        rcode: Rcode(u16::from_le_bytes([b[40], b[41]])),
        response_len: u16::from_le_bytes([b[42], b[43]]),
        proto,
        new_connection: b[45] & 1 != 0,
        handshake_ns: if b.len() >= 56 { num(48) as i64 } else { 0 },
        truncated: b[45] & 2 != 0,
        outcome,
        target: if b.len() >= TARGET_RESULT_LEN {
            u16::from_le_bytes([b[56], b[57]])
        } else {
            0
        },
    })
}

/// The CRC of a block: over the block header's first 12 bytes, then the payload.
pub(crate) fn block_crc(header12: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header12);
    h.update(payload);
    h.finalize()
}

/// Writes results as a results file (see the [module docs](self) for the layout).
///
/// Results are buffered into blocks; call [`finish`](ResultSink::finish) (or
/// [`into_inner`](Self::into_inner)) at the end, or the last block is lost. A writer whose run
/// info says it keeps answers ([`RunInfo::answers`]) writes a version-2 file and keeps the
/// answer of every result given with one ([`write_with_answer`](Self::write_with_answer)).
pub struct ResultsWriter<W: Write> {
    out: W,
    block: Vec<u8>,
    /// The answers of the buffered results, in order (version 2).
    answers: Vec<u8>,
    keep_answers: bool,
    count: usize,
    oldest: Option<Instant>,
    max_results: usize,
    max_age: Duration,
    written: u64,
    blocks: u64,
}

impl ResultsWriter<BufWriter<File>> {
    /// Creates (or truncates) the file at `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::create_with_run_info(path, &RunInfo::default())
    }

    /// Like [`create`](Self::create), with what the file should say about its run in the header.
    pub fn create_with_run_info(path: impl AsRef<Path>, info: &RunInfo) -> io::Result<Self> {
        ResultsWriter::with_run_info(
            BufWriter::with_capacity(1 << 18, ldplayer_output::create_direct(path.as_ref())?),
            info,
        )
    }
}

impl<W: Write> ResultsWriter<W> {
    /// Starts a results file on `out`: writes and flushes the file header. Blocks of up to
    /// [`DEFAULT_BLOCK_RESULTS`] results or [`DEFAULT_BLOCK_AGE`] of age.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_run_info(out, &RunInfo::default())
    }

    /// Like [`new`](Self::new), with what the file should say about its run (its shard, start,
    /// clock, targets, whether it keeps answers) in the header, for `results merge` and `diff`
    /// to check.
    pub fn with_run_info(out: W, info: &RunInfo) -> io::Result<Self> {
        Self::with_run_info_and_limits(out, info, DEFAULT_BLOCK_RESULTS, DEFAULT_BLOCK_AGE)
    }

    /// Like [`new`](Self::new) with other block limits: a block is written when it holds
    /// `max_results` results (clamped to 1..=[`MAX_BLOCK_RESULTS`]) or, when a result arrives,
    /// if the block's first result arrived `max_age` ago or more.
    pub fn with_block_limits(out: W, max_results: usize, max_age: Duration) -> io::Result<Self> {
        Self::with_run_info_and_limits(out, &RunInfo::default(), max_results, max_age)
    }

    /// [`with_run_info`](Self::with_run_info) and [`with_block_limits`](Self::with_block_limits)
    /// together.
    pub fn with_run_info_and_limits(
        mut out: W,
        info: &RunInfo,
        max_results: usize,
        max_age: Duration,
    ) -> io::Result<Self> {
        out.write_all(&file_header(info))?;
        out.flush()?;
        let max_results = max_results.clamp(1, MAX_BLOCK_RESULTS);
        let mut block = Vec::with_capacity(BLOCK_HEADER_LEN + max_results * RESULT_LEN);
        block.resize(BLOCK_HEADER_LEN, 0);
        Ok(ResultsWriter {
            out,
            block,
            answers: Vec::new(),
            keep_answers: info.keeps_answers(),
            count: 0,
            oldest: None,
            max_results,
            max_age,
            written: 0,
            blocks: 0,
        })
    }

    /// Whether the file keeps answers (version 2).
    pub fn keeps_answers(&self) -> bool {
        self.keep_answers
    }

    /// Adds one result; writes the block when it is full or old enough.
    pub fn write(&mut self, r: &QueryResult) -> io::Result<()> {
        self.block.extend_from_slice(&encode_result(r));
        self.added()
    }

    /// Adds one result with the response message that answered it, kept byte for byte when the
    /// file keeps answers (an answer longer than a DNS message can be, 65,535 bytes, is not);
    /// the result alone otherwise.
    pub fn write_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        let mut b = encode_result(r);
        if self.keep_answers && answer.len() <= usize::from(u16::MAX) {
            b[42..44].copy_from_slice(&(answer.len() as u16).to_le_bytes());
            b[45] |= FLAG_ANSWER;
            self.answers.extend_from_slice(answer);
        }
        self.block.extend_from_slice(&b);
        self.added()
    }

    /// Counts the result just buffered; writes the block when it is full or old enough.
    fn added(&mut self) -> io::Result<()> {
        self.count += 1;
        self.written += 1;
        let now = Instant::now();
        let oldest = *self.oldest.get_or_insert(now);
        if self.count >= self.max_results
            || self.answers.len() >= DEFAULT_BLOCK_ANSWER_BYTES
            || now.duration_since(oldest) >= self.max_age
        {
            self.write_block()?;
        }
        Ok(())
    }

    /// Writes the buffered results as one block (if any) and flushes the output.
    pub fn write_block(&mut self) -> io::Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let payload_len = self.count * RESULT_LEN + self.answers.len();
        let (head, results) = self.block.split_at_mut(BLOCK_HEADER_LEN);
        head[0..4].copy_from_slice(BLOCK_MAGIC);
        head[4..8].copy_from_slice(&(self.count as u32).to_le_bytes());
        head[8..12].copy_from_slice(&(payload_len as u32).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head[..12]);
        crc.update(results);
        crc.update(&self.answers);
        head[12..16].copy_from_slice(&crc.finalize().to_le_bytes());
        let res = self
            .out
            .write_all(&self.block)
            .and_then(|()| self.out.write_all(&self.answers))
            .and_then(|()| self.out.flush());
        // The block is dropped even on error: retrying would duplicate a partial write.
        self.block.truncate(BLOCK_HEADER_LEN);
        self.answers.clear();
        if self.answers.capacity() > 2 * DEFAULT_BLOCK_ANSWER_BYTES {
            self.answers.shrink_to(DEFAULT_BLOCK_ANSWER_BYTES);
        }
        self.count = 0;
        self.oldest = None;
        self.blocks += 1;
        res
    }

    /// Results taken so far (written or buffered).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Blocks written so far.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Writes the last block, flushes, and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.write_block()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write + Send> ResultSink for ResultsWriter<W> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        self.write(r)
    }
    fn result_with_answer(&mut self, r: &QueryResult, answer: &[u8]) -> io::Result<()> {
        self.write_with_answer(r, answer)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.write_block()?;
        self.out.flush()
    }
}
