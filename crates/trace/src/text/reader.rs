//! Reading a text trace line by line.

use super::{check_tag, Layout, LineError};
use crate::input::{cut_reason, Position};
use crate::sink::{drive, Sink, Source, TraceError};
use crate::skip::SkipReason;
use std::io::{self, BufRead};

/// How many line errors a reader keeps for the user to see (all are counted).
pub const KEPT_ERRORS: usize = 20;

/// The longest line read, newline included: a 65,535-byte message is 87,380 characters of
/// base64, and the other columns add a few hundred. A longer line (damage, or a file that is
/// no text trace past its header) is skipped without being held in memory.
pub const MAX_LINE: usize = 1 << 20;

/// Reads a text trace.
///
/// Each line that cannot be read (a bad column, fewer columns than the header names, bytes
/// that are not UTF-8, a line longer than [`MAX_LINE`]) is skipped and counted as
/// [`SkipReason::TextLine`]; the first [`KEPT_ERRORS`] are kept with their line numbers
/// ([`TextReader::errors`]).
pub struct TextReader<R: BufRead> {
    input: R,
    layout: Layout,
    line_no: u64,
    /// Bytes of the input read, header included.
    offset: u64,
    position: Position,
    errors: Vec<(u64, LineError)>,
    line: Vec<u8>,
}

/// One line read: how many bytes it took from the input (0 at the end), and whether it was
/// longer than the limit (then `buf` holds only its start).
struct LineRead {
    taken: usize,
    too_long: bool,
}

/// Reads the next line, newline included, into `buf`, keeping at most `max` bytes of it.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<LineRead> {
    buf.clear();
    let mut line = LineRead {
        taken: 0,
        too_long: false,
    };
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(line);
        }
        let (len, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + len <= max {
            buf.extend_from_slice(&available[..len]);
        } else {
            line.too_long = true;
        }
        input.consume(len);
        line.taken += len;
        if done {
            return Ok(line);
        }
    }
}

/// The text of a line read, without its line end, or why it is none.
fn line_text(bytes: &[u8], too_long: bool) -> Result<&str, LineError> {
    if too_long {
        return Err(LineError::line(format!("longer than {MAX_LINE} bytes")));
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.trim_end_matches(['\n', '\r'])),
        Err(e) => Err(LineError::line(format!(
            "not UTF-8 (byte {} of the line)",
            e.valid_up_to() + 1
        ))),
    }
}

impl<R: BufRead> TextReader<R> {
    /// Reads the header: the tag line and, unless the tag line names the columns itself (as in
    /// version 1), the column line, which is the next line that is neither empty nor a comment.
    pub fn new(mut input: R) -> Result<Self, TraceError> {
        let mut buf = Vec::new();
        let mut offset = 0u64;
        let mut line_no = 0u64;
        let mut next = |input: &mut R, buf: &mut Vec<u8>| -> Result<Option<String>, TraceError> {
            let read = read_line(input, buf, MAX_LINE)?;
            if read.taken == 0 {
                return Ok(None);
            }
            line_no += 1;
            offset += read.taken as u64;
            match line_text(buf, read.too_long) {
                Ok(text) => Ok(Some(text.to_string())),
                Err(e) => Err(TraceError::Format(format!(
                    "line {line_no} of the text trace's header is {}",
                    e.message
                ))),
            }
        };
        let first = next(&mut input, &mut buf)?.unwrap_or_default();
        let layout = match first.split_once('\t') {
            Some(_) => Layout::from_header(&first)?,
            None => {
                check_tag(&first)?;
                loop {
                    let Some(text) = next(&mut input, &mut buf)? else {
                        return Err(TraceError::Format(
                            "text trace has no column line after its first line".into(),
                        ));
                    };
                    if !text.is_empty() && !text.starts_with('#') {
                        break Layout::from_columns(&text)?;
                    }
                }
            }
        };
        let position = Position::default();
        position.set(offset);
        Ok(TextReader {
            input,
            layout,
            line_no,
            offset,
            position,
            errors: Vec::new(),
            line: buf,
        })
    }

    /// The first [`KEPT_ERRORS`] lines that could not be read, with their line numbers.
    pub fn errors(&self) -> &[(u64, LineError)] {
        &self.errors
    }

    /// Where the reader is: the end of the last line it took, as it reads.
    pub fn position(&self) -> Position {
        self.position.clone()
    }
}

impl<R: BufRead> Source for TextReader<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        drive(sink, |sink| loop {
            let read = match read_line(&mut self.input, &mut self.line, MAX_LINE) {
                Ok(read) => read,
                Err(e) => match cut_reason(&e) {
                    // A compressed stream cut short or corrupt: the partial line is dropped.
                    Some(reason) => {
                        sink.skipped(reason, self.line_no + 1);
                        return Ok(());
                    }
                    None => return Err(e.into()),
                },
            };
            if read.taken == 0 {
                return Ok(());
            }
            self.line_no += 1;
            self.offset += read.taken as u64;
            self.position.set(self.offset);
            let parsed = match line_text(&self.line, read.too_long) {
                Ok(text) if text.is_empty() || text.starts_with('#') => continue,
                Ok(text) => self.layout.parse_line(text),
                Err(e) => Err(e),
            };
            match parsed {
                Ok(r) => sink.record(&r.as_record())?,
                Err(e) => {
                    if self.errors.len() < KEPT_ERRORS {
                        self.errors.push((self.line_no, e));
                    }
                    sink.skipped(SkipReason::TextLine, self.line_no);
                }
            }
        })
    }
}
