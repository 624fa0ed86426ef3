//! The text trace format: one tab-separated line per DNS message.
//!
//! The first line names the format and its version; the second names the columns
//! (tab-separated; spaces here):
//!
//! ```text
//! #ldplayer-text/2
//! time src sport dst dport proto conn id qr opcode rcode flags qname qclass qtype edns bufsize do ednsopts wire
//! ```
//!
//! so that `pandas.read_csv(f, sep="\t", comment="#")` and `awk` read it as it is: no data field
//! ever holds a `#` (it is escaped as `\035` in names) and no value reads as "not available"
//! (the NULL type is written `TYPE10`). Files of version 1, whose first line holds the tag and
//! the column names together, still read. Every other line is one message; lines starting with
//! `#` and empty lines are ignored. `-` stands for "none". The `wire` column holds the whole DNS message as captured (base64), so
//! nothing is lost; the other columns are a readable view of it *and* a way to edit it: when a
//! line is read, every column whose value differs from what the `wire` message says is written
//! into the message (changing only those bytes), so `awk` can set `do` to 1 or `proto` to `tcp`
//! and the rebuilt message follows. A line whose `wire` is `-` is built from the columns alone,
//! so traces can also be written by hand. Columns may come in any order; unknown columns are
//! ignored; DNS columns missing from the header keep what `wire` says. A line with fewer
//! columns than the header names was cut short and is skipped ([`TextReader`]), as are lines
//! that are not UTF-8. A malformed message (one whose header
//! reads but whose body does not) shows its header columns and, when it reads, its question;
//! the other DNS columns are `-`, and only the header columns can be edited. See
//! docs/formats.md for every column.

mod reader;

pub use reader::{TextReader, KEPT_ERRORS, MAX_LINE};

use crate::record::{Proto, Record, RecordBuf};
use crate::sink::{Sink, SinkError, TraceError};
use crate::time::{format_time, parse_time};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ldplayer_dns::{
    apply_header, flag, name_from_presentation, name_to_presentation, opcode_from_str,
    opcode_to_string, parse_options, render_options, Class, EdnsFields, Fields, Message, Partial,
    Question, Rcode, Rtype,
};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

/// The first line of the text traces this version writes: format name and version.
///
/// Version 2 puts the column names on a line of their own (version 1 had them on the tag's
/// line), escapes `#` in names and writes the NULL type as `TYPE10`, so that tools that take
/// `#` as a comment and `NULL` as a missing value read every field.
pub const MAGIC: &str = "#ldplayer-text/2";

/// What every version's tag starts with.
const TAG_PREFIX: &str = "#ldplayer-text/";

/// The versions this build reads.
const READS: [&str; 2] = ["#ldplayer-text/1", "#ldplayer-text/2"];

/// The columns this version writes, in order.
pub const COLUMNS: [&str; 20] = [
    "time", "src", "sport", "dst", "dport", "proto", "conn", "id", "qr", "opcode", "rcode",
    "flags", "qname", "qclass", "qtype", "edns", "bufsize", "do", "ednsopts", "wire",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    Time,
    Src,
    Sport,
    Dst,
    Dport,
    Proto,
    Conn,
    Id,
    Qr,
    Opcode,
    Rcode,
    Flags,
    Qname,
    Qclass,
    Qtype,
    Edns,
    Bufsize,
    Do,
    Ednsopts,
    Wire,
}

/// True when `head` starts like a text trace (of any version, so that a version this build does
/// not read gets a clear error rather than "not a trace").
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(TAG_PREFIX.as_bytes())
}

/// The header [`TextWriter`] writes: the tag line, then the column line, newlines included.
pub fn header_line() -> String {
    let mut s = String::from(MAGIC);
    s.push('\n');
    s.push_str(&COLUMNS.join("\t"));
    s.push('\n');
    s
}

/// Appends the line for `r` (no newline) to `out`, columns in [`COLUMNS`] order.
pub fn render_line(r: &Record<'_>, out: &mut String) {
    format_time(r.time_ns, out);
    let _ = write!(
        out,
        "\t{}\t{}\t{}\t{}\t{}\t",
        r.src.ip(),
        r.src.port(),
        r.dst.ip(),
        r.dst.port(),
        r.proto
    );
    if r.conn == 0 {
        out.push('-');
    } else {
        let _ = write!(out, "{}", r.conn);
    }
    out.push('\t');
    render_dns(r.wire, out);
    out.push('\t');
    // An empty message is an empty column; `-` means "build the message from the columns".
    BASE64.encode_string(r.wire, out);
}

/// Appends the DNS columns (`id` to `ednsopts`) of a message.
fn render_dns(wire: &[u8], out: &mut String) {
    match Message::parse(wire) {
        Ok(msg) => render_fields(&Fields::of(&msg), out),
        Err(_) => match Partial::read(wire) {
            // Malformed: what reads (header, question); the wire column keeps the bytes.
            Some(p) => render_partial(&Fields::of_partial(&p), out),
            // Not even a header: every DNS column is "none".
            None => out.push_str("-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-"),
        },
    }
}

/// Appends the DNS columns of a malformed message: its header and question as read, `-` for
/// the EDNS columns, which are not read.
fn render_partial(f: &Fields, out: &mut String) {
    render_header_and_question(f, out);
    out.push_str("-\t-\t-\t-");
}

/// Appends the DNS columns (`id` to `ednsopts`) that show `f`.
fn render_fields(f: &Fields, out: &mut String) {
    render_header_and_question(f, out);
    match &f.edns {
        Some(e) => {
            let _ = write!(
                out,
                "{}\t{}\t{}\t",
                e.version, e.udp_size, e.dnssec_ok as u8
            );
            let start = out.len();
            render_options(&e.options, out);
            if out.len() == start {
                out.push('-');
            }
        }
        None => out.push_str("-\t-\t0\t-"),
    }
}

/// Appends the columns `id` to `qtype` of `f`, each followed by a tab.
fn render_header_and_question(f: &Fields, out: &mut String) {
    let _ = write!(
        out,
        "{}\t{}\t{}\t{}\t",
        f.id,
        f.qr as u8,
        opcode_to_string(f.opcode),
        f.rcode
    );
    let start = out.len();
    for (bit, name) in flag::NAMED {
        if f.flags & bit != 0 {
            if out.len() > start {
                out.push(',');
            }
            out.push_str(name);
        }
    }
    if out.len() == start {
        out.push('-');
    }
    out.push('\t');
    match &f.question {
        Some(q) => {
            push_name(&q.name, out);
            // `NULL` reads as a missing value in pandas and R; `TYPE10` is the same type.
            let _ = if q.qtype == Rtype::NULL {
                write!(out, "\t{}\tTYPE10\t", q.qclass)
            } else {
                write!(out, "\t{}\t{}\t", q.qclass, q.qtype)
            };
        }
        None => out.push_str("-\t-\t-\t"),
    }
}

/// Appends a name in presentation format with `#` escaped as `\035`, so that no field holds the
/// comment character of the tools that read the format.
fn push_name(name: &[u8], out: &mut String) {
    let start = out.len();
    name_to_presentation(name, out);
    if out[start..].contains('#') {
        let escaped = out[start..].replace('#', "\\035");
        out.truncate(start);
        out.push_str(&escaped);
    }
}

/// Writes records as a text trace.
pub struct TextWriter<W: Write> {
    out: W,
    line: String,
}

impl<W: Write> TextWriter<W> {
    /// Starts a trace on `out` (writes the header line). Give it a buffered writer.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(header_line().as_bytes())?;
        Ok(TextWriter {
            out,
            line: String::with_capacity(512),
        })
    }

    /// Writes one record.
    pub fn write(&mut self, r: &Record<'_>) -> io::Result<()> {
        self.line.clear();
        render_line(r, &mut self.line);
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Sink for TextWriter<W> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        Ok(self.write(record)?)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(self.out.flush()?)
    }
}

/// Why a text line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}{message}",
    .column.map(|c| format!("column `{c}`: ")).unwrap_or_default()
)]
pub struct LineError {
    /// The column at fault; `None` when the line as a whole is (too few columns, not UTF-8).
    pub column: Option<&'static str>,
    /// What is wrong with it.
    pub message: String,
}

impl LineError {
    /// An error of the line as a whole.
    pub fn line(message: impl Into<String>) -> Self {
        LineError {
            column: None,
            message: message.into(),
        }
    }
}

fn err(column: &'static str, message: impl Into<String>) -> LineError {
    LineError {
        column: Some(column),
        message: message.into(),
    }
}

/// Checks the tag that starts a text trace (`#ldplayer-text/1` or `#ldplayer-text/2`).
pub fn check_tag(tag: &str) -> Result<(), TraceError> {
    if READS.contains(&tag) {
        return Ok(());
    }
    let what = if tag.starts_with(TAG_PREFIX) {
        format!(
            "text trace version `{tag}` is not supported (this build reads {})",
            READS.join(" and ")
        )
    } else {
        format!("not an ldplayer text trace (the first line must be {MAGIC})")
    };
    Err(TraceError::Format(what))
}

/// Maps the columns of a header line to their positions.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Position of each known column in a line, by [`COLUMNS`] index.
    positions: [Option<usize>; 20],
    /// How many columns the header names (known or not): every line has at least as many.
    columns: usize,
}

impl Layout {
    /// Reads a one-line header: the tag followed by the column names, tab-separated (the layout
    /// of version 1; with or without its newline).
    pub fn from_header(line: &str) -> Result<Layout, TraceError> {
        let line = line.trim_end_matches(['\n', '\r']);
        let (tag, columns) = line.split_once('\t').unwrap_or((line, ""));
        check_tag(tag)?;
        Layout::from_columns(columns)
    }

    /// Reads a column line: the column names, tab-separated (with or without its newline).
    pub fn from_columns(line: &str) -> Result<Layout, TraceError> {
        let line = line.trim_end_matches(['\n', '\r']);
        let mut positions = [None; 20];
        let mut columns = 0;
        for (i, name) in line.split('\t').enumerate() {
            if let Some(c) = COLUMNS.iter().position(|c| *c == name) {
                positions[c] = Some(i);
            }
            columns = i + 1;
        }
        for required in [Col::Time, Col::Src, Col::Dst] {
            if positions[required as usize].is_none() {
                return Err(TraceError::Format(format!(
                    "text trace header lacks the `{}` column",
                    COLUMNS[required as usize]
                )));
            }
        }
        Ok(Layout { positions, columns })
    }

    /// The layout of lines written by [`TextWriter`].
    pub fn standard() -> Layout {
        let mut positions = [None; 20];
        for (i, p) in positions.iter_mut().enumerate() {
            *p = Some(i);
        }
        Layout {
            positions,
            columns: COLUMNS.len(),
        }
    }

    /// Parses one data line (without its newline) into a record. A line with fewer columns
    /// than the header names is an error: it was cut short (a file cut, an edit gone wrong),
    /// and the columns it lacks would read as "as the message says" or build a message from
    /// what is left, which nobody sent.
    pub fn parse_line(&self, line: &str) -> Result<RecordBuf, LineError> {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < self.columns {
            return Err(LineError::line(format!(
                "has {} columns, the header names {}",
                fields.len(),
                self.columns
            )));
        }
        let get = |c: Col| -> Option<&str> {
            self.positions[c as usize].and_then(|i| fields.get(i).copied())
        };
        let need = |c: Col| get(c).ok_or_else(|| err(COLUMNS[c as usize], "missing"));

        let time_ns = parse_time(need(Col::Time)?)
            .ok_or_else(|| err("time", "expected seconds with up to 9 decimals"))?;
        let ip = |c: Col| -> Result<IpAddr, LineError> {
            need(c)?
                .parse()
                .map_err(|_| err(COLUMNS[c as usize], "expected an IPv4 or IPv6 address"))
        };
        let port = |c: Col| -> Result<u16, LineError> {
            match get(c) {
                None | Some("-") => Ok(0),
                Some(s) => s
                    .parse()
                    .map_err(|_| err(COLUMNS[c as usize], "expected a port number")),
            }
        };
        let src = SocketAddr::new(ip(Col::Src)?, port(Col::Sport)?);
        let dst = SocketAddr::new(ip(Col::Dst)?, port(Col::Dport)?);
        let proto = match get(Col::Proto) {
            None | Some("-") => Proto::Udp,
            Some(s) => s.parse().map_err(|e: String| err("proto", e))?,
        };
        let conn = match get(Col::Conn) {
            None | Some("-") => 0,
            Some(s) => s
                .parse()
                .map_err(|_| err("conn", "expected a number or -"))?,
        };
        let mut wire = match get(Col::Wire) {
            None | Some("-") => None,
            Some(s) => Some(
                BASE64
                    .decode(s)
                    .map_err(|e| err("wire", format!("bad base64: {e}")))?,
            ),
        };
        let wire = match wire.as_mut() {
            Some(wire) => {
                self.edit_dns(&fields, wire, false)?;
                std::mem::take(wire)
            }
            None => {
                let mut wire = Vec::new();
                self.edit_dns(&fields, &mut wire, true)?;
                wire
            }
        };
        Ok(RecordBuf {
            time_ns,
            src,
            dst,
            proto,
            conn,
            wire,
        })
    }

    /// Writes into `wire` every DNS column of the line that differs from what `wire` says, or
    /// builds the message from the columns alone when `from_columns`.
    fn edit_dns(
        &self,
        fields: &[&str],
        wire: &mut Vec<u8>,
        from_columns: bool,
    ) -> Result<(), LineError> {
        let (baseline, malformed) = if from_columns {
            (empty_fields(), false)
        } else {
            match Message::parse(wire) {
                Ok(m) => (Fields::of(&m), false),
                Err(_) => match Partial::read(wire) {
                    Some(p) => (Fields::of_partial(&p), true),
                    // Not even a header: the bytes pass through untouched.
                    None => return Ok(()),
                },
            }
        };
        let mut rendered = String::new();
        if malformed {
            render_partial(&baseline, &mut rendered);
        } else {
            render_fields(&baseline, &mut rendered);
        }
        let base: Vec<&str> = rendered.split('\t').collect();
        // A column differs when it is there, says something else than the message, and is not
        // `-` where `-` cannot be a value (so `-` means "as the message says").
        let changed = |c: Col| -> Option<&str> {
            let v = self.positions[c as usize].and_then(|i| fields.get(i).copied())?;
            let b = base
                .get(c as usize - Col::Id as usize)
                .copied()
                .unwrap_or("-");
            let dash_is_value = matches!(c, Col::Flags | Col::Qname | Col::Edns | Col::Ednsopts);
            (v != b && (v != "-" || dash_is_value)).then_some(v)
        };
        let mut f = baseline.clone();
        if let Some(v) = changed(Col::Id) {
            f.id = v.parse().map_err(|_| err("id", "expected 0-65535"))?;
        }
        if let Some(v) = changed(Col::Qr) {
            f.qr = parse_bool(v).ok_or_else(|| err("qr", "expected 0 or 1"))?;
        }
        if let Some(v) = changed(Col::Opcode) {
            f.opcode = opcode_from_str(v)
                .or_else(|| v.parse().ok().filter(|n| *n < 16))
                .ok_or_else(|| err("opcode", "expected a mnemonic such as QUERY, or 0-15"))?;
        }
        if let Some(v) = changed(Col::Rcode) {
            f.rcode = v
                .parse::<Rcode>()
                .ok()
                .or_else(|| v.parse().ok().map(Rcode))
                .filter(|rc| *rc <= Rcode::MAX_IN_MESSAGE)
                .ok_or_else(|| err("rcode", "expected a mnemonic such as NXDOMAIN, or 0-4095"))?;
        }
        if let Some(v) = changed(Col::Flags) {
            f.flags = parse_flags(v)?;
        }
        if malformed {
            // Only the header of a malformed message can be rewritten; its other columns are a
            // view of what could be read.
            if f.rcode.needs_edns() {
                return Err(err(
                    "rcode",
                    "a malformed message has no readable OPT record for an extended RCODE",
                ));
            }
            if f != baseline {
                apply_header(wire, &f).map_err(|e| err("wire", e.to_string()))?;
            }
            return Ok(());
        }
        let qname = changed(Col::Qname);
        let qclass = changed(Col::Qclass);
        let qtype = changed(Col::Qtype);
        if qname.is_some() || qclass.is_some() || qtype.is_some() {
            if qname == Some("-") {
                f.question = None;
            } else {
                let mut q = f.question.clone().unwrap_or(Question {
                    name: vec![0],
                    qtype: Rtype::A,
                    qclass: Class::IN,
                });
                if let Some(v) = qname {
                    q.name = name_from_presentation(v).map_err(|e| err("qname", e.to_string()))?;
                }
                if let Some(v) = qclass {
                    q.qclass = v
                        .parse()
                        .map_err(|_| err("qclass", "expected a class such as IN or CLASSnnn"))?;
                }
                if let Some(v) = qtype {
                    q.qtype = v
                        .parse()
                        .map_err(|_| err("qtype", "expected a type such as AAAA or TYPEnnn"))?;
                }
                f.question = Some(q);
            }
        }
        let default_edns = || EdnsFields {
            version: 0,
            udp_size: 1232,
            dnssec_ok: false,
            options: Vec::new(),
        };
        match changed(Col::Edns) {
            Some("-") => f.edns = None,
            edns_col => {
                if let Some(v) = edns_col {
                    f.edns.get_or_insert_with(default_edns).version = v
                        .parse()
                        .map_err(|_| err("edns", "expected a version 0-255 or -"))?;
                }
                if let Some(v) = changed(Col::Bufsize).filter(|v| *v != "-") {
                    f.edns.get_or_insert_with(default_edns).udp_size = v
                        .parse()
                        .map_err(|_| err("bufsize", "expected 0-65535 or -"))?;
                }
                if let Some(v) = changed(Col::Do) {
                    let on = parse_bool(v).ok_or_else(|| err("do", "expected 0 or 1"))?;
                    if on {
                        f.edns.get_or_insert_with(default_edns).dnssec_ok = true;
                    } else if let Some(e) = f.edns.as_mut() {
                        e.dnssec_ok = false;
                    }
                }
                if let Some(v) = changed(Col::Ednsopts) {
                    let opts = if v == "-" {
                        Vec::new()
                    } else {
                        parse_options(v).map_err(|e| err("ednsopts", e.to_string()))?
                    };
                    if !opts.is_empty() {
                        f.edns.get_or_insert_with(default_edns).options = opts;
                    } else if let Some(e) = f.edns.as_mut() {
                        e.options.clear();
                    }
                }
            }
        }
        if f != baseline || from_columns {
            if from_columns {
                *wire = ldplayer_dns::build(&f).map_err(|e| err("wire", e.to_string()))?;
            } else {
                ldplayer_dns::apply(wire, &f).map_err(|e| err("wire", e.to_string()))?;
            }
        }
        Ok(())
    }
}

/// The fields of a line built from nothing: a query with ID 0 and no question.
fn empty_fields() -> Fields {
    Fields {
        id: 0,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: None,
        edns: None,
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

fn parse_flags(v: &str) -> Result<u16, LineError> {
    if v == "-" || v.is_empty() {
        return Ok(0);
    }
    let mut bits = 0;
    for name in v.split(',') {
        let (bit, _) = flag::NAMED
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                err(
                    "flags",
                    format!("unknown flag `{name}` (aa, tc, rd, ra, z, ad, cd)"),
                )
            })?;
        bits |= bit;
    }
    Ok(bits)
}
