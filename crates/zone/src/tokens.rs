//! The tokens of a zone file, split as `domain`'s parser splits them, with where each stands.
//!
//! `domain` reads the records but gives them no position, and its errors say only where its
//! scanner stopped (often past the token in error, on the next line). Walking the same text
//! with the same rules (blanks, parentheses, `;` comments, quoted strings, `\` escapes, a line
//! feed outside parentheses ending an entry) tells where each record starts and which token an
//! error is about. Offsets are bytes, so text that is not UTF-8 is counted like any other.

/// One token: a word or a quoted string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    /// Byte offset of its first byte (the opening quote of a quoted string).
    pub start: usize,
    /// Byte offset just past it (past the closing quote).
    pub end: usize,
    /// Line of its first byte, from 1.
    pub line: usize,
    /// Column of its first byte, from 1, in bytes.
    pub column: usize,
    /// It is the first token of an entry (a record or a directive).
    pub starts_entry: bool,
    /// Blanks stand before it since the line feed that ended the previous entry: as the first
    /// token of an entry, it begins a record that leaves its owner out.
    pub indented: bool,
}

impl Token {
    /// The first token of a directive (`$ORIGIN`, `$TTL`, `$INCLUDE`...) rather than a record.
    pub fn is_directive(&self, text: &[u8]) -> bool {
        self.starts_entry && !self.indented && text.get(self.start) == Some(&b'$')
    }
}

/// What the end of a zone file's text leaves open: the text ran out inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unclosed {
    /// A quoted string, at the offset of its opening quote.
    Quote(usize),
    /// A parenthesis (the outermost one left open), at its offset.
    Paren(usize),
}

/// The tokens of a zone file's text, in order.
pub(crate) struct Tokens<'a> {
    text: &'a [u8],
    pos: usize,
    line: usize,
    line_start: usize,
    parens: usize,
    /// Offset of the `(` that opened the current group, while one is open.
    open_paren: Option<usize>,
    /// Offset of the opening quote of a quoted string the text ended in.
    open_quote: Option<usize>,
    new_entry: bool,
    blank: bool,
}

impl<'a> Tokens<'a> {
    /// The tokens of `text`.
    pub fn new(text: &'a [u8]) -> Self {
        Tokens {
            text,
            pos: 0,
            line: 1,
            line_start: 0,
            parens: 0,
            open_paren: None,
            open_quote: None,
            new_entry: true,
            blank: false,
        }
    }

    /// What the text left open, once every token is read: a quoted string, else a
    /// parenthesis. `None` before the end.
    pub fn unclosed(&self) -> Option<Unclosed> {
        if self.pos < self.text.len() {
            return None;
        }
        match (self.open_quote, self.open_paren) {
            (Some(q), _) => Some(Unclosed::Quote(q)),
            (None, Some(p)) if self.parens > 0 => Some(Unclosed::Paren(p)),
            _ => None,
        }
    }

    fn line_feed(&mut self) {
        self.line += 1;
        self.line_start = self.pos;
    }
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let text = self.text;
        // Blanks, parentheses, comments and line feeds up to the next token.
        let first = loop {
            let b = *text.get(self.pos)?;
            match b {
                b' ' | b'\t' | b'\r' => {
                    self.blank = true;
                    self.pos += 1;
                }
                b'(' => {
                    if self.parens == 0 {
                        self.open_paren = Some(self.pos);
                    }
                    self.parens += 1;
                    self.pos += 1;
                }
                b')' => {
                    self.parens = self.parens.saturating_sub(1);
                    if self.parens == 0 {
                        self.open_paren = None;
                    }
                    self.pos += 1;
                }
                b';' => {
                    while text.get(self.pos).is_some_and(|&c| c != b'\n') {
                        self.pos += 1;
                    }
                }
                b'\n' => {
                    self.pos += 1;
                    self.line_feed();
                    if self.parens == 0 {
                        self.new_entry = true;
                        self.blank = false;
                    }
                }
                _ => break b,
            }
        };
        let token = Token {
            start: self.pos,
            end: self.pos,
            line: self.line,
            column: self.pos - self.line_start + 1,
            starts_entry: self.new_entry,
            indented: self.blank,
        };
        self.new_entry = false;
        self.blank = false;
        if first == b'"' {
            self.pos += 1;
            let mut closed = false;
            while let Some(&c) = text.get(self.pos) {
                self.pos += 1;
                match c {
                    b'"' => {
                        closed = true;
                        break;
                    }
                    b'\\' => self.pos += 1,
                    b'\n' => self.line_feed(),
                    _ => {}
                }
            }
            if !closed {
                self.open_quote = Some(token.start);
            }
        } else {
            while let Some(&c) = text.get(self.pos) {
                match c {
                    b' ' | b'\t' | b'\r' | b'\n' | b'(' | b')' | b';' | b'"' => break,
                    b'\\' => self.pos += 2,
                    _ => self.pos += 1,
                }
            }
        }
        self.pos = self.pos.min(text.len());
        Some(Token {
            end: self.pos,
            ..token
        })
    }
}

/// Line and column (from 1, in bytes) of byte offsets in a text.
pub(crate) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    /// The line starts of `text`.
    pub fn new(text: &[u8]) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines { starts }
    }

    /// The offset of a line's `column`, both from 1 (the end of the text past its last line).
    pub fn offset(&self, line: usize, column: usize, len: usize) -> usize {
        match self.starts.get(line.saturating_sub(1)) {
            Some(&start) => (start + column.saturating_sub(1)).min(len),
            None => len,
        }
    }

    /// The line and column of an offset.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        (line, offset - self.starts[line - 1] + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(String, usize, usize, bool, bool)> {
        Tokens::new(text.as_bytes())
            .map(|t| {
                (
                    text[t.start..t.end].to_string(),
                    t.line,
                    t.column,
                    t.starts_entry,
                    t.indented,
                )
            })
            .collect()
    }

    #[test]
    fn entries_blanks_comments_quotes_and_parentheses() {
        let text = "$TTL 60 ; one hour\n@ SOA ( ns h\n  1 2 ) ; serial\n\n  A \"a b\\\" ;\"x\nw\\ x TXT \"l1\nl2\"\n";
        assert_eq!(
            words(text),
            [
                ("$TTL".into(), 1, 1, true, false),
                ("60".into(), 1, 6, false, true),
                ("@".into(), 2, 1, true, false),
                ("SOA".into(), 2, 3, false, true),
                ("ns".into(), 2, 9, false, true),
                ("h".into(), 2, 12, false, true),
                ("1".into(), 3, 3, false, true),
                ("2".into(), 3, 5, false, true),
                ("A".into(), 5, 3, true, true),
                ("\"a b\\\" ;\"".into(), 5, 5, false, true),
                ("x".into(), 5, 14, false, false),
                ("w\\ x".into(), 6, 1, true, false),
                ("TXT".into(), 6, 6, false, true),
                ("\"l1\nl2\"".into(), 6, 10, false, true),
            ]
        );
        let t = Tokens::new(text.as_bytes()).next().unwrap();
        assert!(t.is_directive(text.as_bytes()));
    }

    #[test]
    fn crlf_and_bytes_that_are_not_utf8() {
        let text = b"a A 1\r\n\xe9b A 2\r\n";
        let t: Vec<Token> = Tokens::new(text).collect();
        assert_eq!(t.len(), 6);
        assert_eq!((t[2].end, t[3].line, t[3].column), (5, 2, 1));
        assert_eq!(&text[t[3].start..t[3].end], b"\xe9b");
        assert!(t[3].starts_entry && !t[3].indented);
    }

    #[test]
    fn positions_of_offsets() {
        let lines = Lines::new(b"ab\ncd\n");
        assert_eq!(lines.position(0), (1, 1));
        assert_eq!(lines.position(4), (2, 2));
        assert_eq!(lines.position(6), (3, 1));
        assert_eq!(lines.offset(2, 2, 6), 4);
        assert_eq!(lines.offset(9, 1, 6), 6);
    }
}
