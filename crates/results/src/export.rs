//! Text exports of results: CSV and JSON lines, with the same stable columns.
//!
//! | column / key      | CSV                          | JSONL                |
//! |-------------------|------------------------------|----------------------|
//! | `index`           | integer                      | number               |
//! | `trace_ns`        | integer                      | number               |
//! | `intended_ns`     | integer                      | number               |
//! | `sent_ns`         | integer, 0 if never sent     | number               |
//! | `received_ns`     | integer, 0 if no response    | number               |
//! | `latency_ns`      | integer, empty if unanswered | number or `null`     |
//! | `timing_error_ns` | sent − intended, empty if never sent | number or `null` |
//! | `proto`           | `udp`, `tcp`, `tls`, `https`, `quic` | string       |
//! | `new_connection`  | `0` / `1`                    | `false` / `true`     |
//! | `rcode`           | number (extended), empty if unanswered | number or `null` |
//! | `rcode_name`      | mnemonic (`NOERROR`, `NXDOMAIN`, `RCODE4000`...), empty if unanswered | string or `null` |
//! | `response_len`    | integer, 0 if none           | number               |
//! | `truncated`       | `0` / `1`                    | `false` / `true`     |
//! | `outcome`         | `answered`, `timeout`, or the error kind (`refused`, `reset`, `tls`, `send`, `bad-query`, `stopped`) | string |
//! | `handshake_ns`    | the connection's set-up time for the query that opened it, empty otherwise | number or `null` |
//! | `target`          | which server of a replay to several the query went to, from 0 in `--server` order (0 with one) | number |
//!
//!
//! Joined with the replayed trace ([`join`](crate::join)), four columns follow:
//!
//! | column / key  | CSV                          | JSONL                |
//! |---------------|------------------------------|----------------------|
//! | `client`      | the query's source address in the trace | string    |
//! | `qname`       | first question's name, presentation format (as in the text format), empty without one | string or `null` |
//! | `qtype`       | mnemonic (`A`, `AAAA`, `TYPE65280`...), empty without a question | string or `null` |
//! | `trace_proto` | the query's transport in the trace (`proto` is the one replayed) | string |
//!
//! The CSV starts with a header line of the column names; it is written through the `csv`
//! crate. A field holding `,`, `"` or a line break is quoted (RFC 4180: in double quotes, with
//! `"` doubled): only a `qname` can; a CSV reader gives it back as it was. Lines end with `\n`.

use crate::file::ResultsError;
use crate::join::TraceFields;
use crate::result::{Outcome, QueryResult, ResultSink};
use serde::Serialize;
use std::io::{self, Write};

/// The column names, in order (the CSV header line and the JSONL keys).
pub const COLUMNS: [&str; 16] = [
    "index",
    "trace_ns",
    "intended_ns",
    "sent_ns",
    "received_ns",
    "latency_ns",
    "timing_error_ns",
    "proto",
    "new_connection",
    "rcode",
    "rcode_name",
    "response_len",
    "truncated",
    "outcome",
    "handshake_ns",
    "target",
];

/// The columns a join with the trace adds after [`COLUMNS`], in order.
pub const TRACE_COLUMNS: [&str; 4] = ["client", "qname", "qtype", "trace_proto"];

/// One exported row; field order is the column order. Its flags are `F`: `bool` for JSON
/// (`false`/`true`), `u8` for CSV (`0`/`1`, see [`CsvRow`]).
#[derive(Serialize)]
struct Row<F = bool> {
    index: u64,
    trace_ns: i64,
    intended_ns: i64,
    sent_ns: i64,
    received_ns: i64,
    latency_ns: Option<i64>,
    timing_error_ns: Option<i64>,
    proto: &'static str,
    new_connection: F,
    rcode: Option<u16>,
    rcode_name: Option<String>,
    response_len: u16,
    truncated: F,
    outcome: &'static str,
    handshake_ns: Option<i64>,
    target: u16,
}

impl<F: From<bool>> Row<F> {
    fn new(r: &QueryResult) -> Row<F> {
        let answered = r.outcome == Outcome::Answered;
        Row {
            index: r.index,
            trace_ns: r.trace_ns,
            intended_ns: r.intended_ns,
            sent_ns: r.sent_ns,
            received_ns: r.received_ns,
            latency_ns: r.latency_ns(),
            timing_error_ns: r.timing_error_ns(),
            proto: r.proto.as_str(),
            new_connection: r.new_connection.into(),
            rcode: answered.then_some(r.rcode.0),
            rcode_name: answered.then(|| r.rcode.to_string()),
            response_len: r.response_len,
            truncated: r.truncated.into(),
            outcome: r.outcome.name(),
            handshake_ns: (r.new_connection && r.handshake_ns > 0).then_some(r.handshake_ns),
            target: r.target,
        }
    }
}

/// The trace's columns of a joined row; field order is the column order.
#[derive(Serialize)]
struct TraceRow<'a> {
    client: String,
    qname: Option<&'a str>,
    qtype: Option<String>,
    trace_proto: &'static str,
}

impl TraceRow<'_> {
    fn new(t: &TraceFields) -> TraceRow<'_> {
        TraceRow {
            client: t.client.to_string(),
            qname: t.qname.as_deref(),
            qtype: t.qtype.map(|q| q.to_string()),
            trace_proto: t.proto.as_str(),
        }
    }
}

/// A row as CSV writes it: [`Row`] with `0`/`1` for its flags (JSON keeps `false`/`true`).
type CsvRow = Row<u8>;

/// A result's row followed by the trace's columns.
#[derive(Serialize)]
struct JoinedRow<'a> {
    #[serde(flatten)]
    row: Row,
    #[serde(flatten)]
    trace: TraceRow<'a>,
}

/// A [`ResultSink`] writing CSV: the header line first, then one line per result.
pub struct CsvWriter<W: Write> {
    out: csv::Writer<W>,
}

/// The `csv` crate's error as an I/O error.
fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

impl<W: Write> CsvWriter<W> {
    /// Writes the header line (the writer buffers: `out` need not).
    pub fn new(out: W) -> io::Result<Self> {
        CsvWriter::with_header(out, COLUMNS.iter())
    }

    /// Writes the header line with the [`TRACE_COLUMNS`] after the others, for
    /// [`write_with_trace`](Self::write_with_trace).
    pub fn with_trace_columns(out: W) -> io::Result<Self> {
        CsvWriter::with_header(out, COLUMNS.iter().chain(&TRACE_COLUMNS))
    }

    fn with_header<'a>(out: W, header: impl Iterator<Item = &'a &'static str>) -> io::Result<Self> {
        let mut out = csv::WriterBuilder::new()
            .has_headers(false)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(out);
        out.write_record(header).map_err(io_error)?;
        Ok(CsvWriter { out })
    }

    /// Writes one result as a line.
    pub fn write(&mut self, r: &QueryResult) -> io::Result<()> {
        self.out.serialize(CsvRow::new(r)).map_err(io_error)
    }

    /// Writes one result and its query's fields in the trace as a line.
    pub fn write_with_trace(&mut self, r: &QueryResult, t: &TraceFields) -> io::Result<()> {
        self.out
            .serialize((CsvRow::new(r), TraceRow::new(t)))
            .map_err(io_error)
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write + Send> ResultSink for CsvWriter<W> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        self.write(r)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A [`ResultSink`] writing JSON lines: one object per result, keys in column order.
pub struct JsonlWriter<W: Write> {
    out: W,
}

impl<W: Write> JsonlWriter<W> {
    /// Starts the export (writes nothing yet). Give it a buffered writer.
    pub fn new(out: W) -> Self {
        JsonlWriter { out }
    }

    /// Writes one result as a line.
    pub fn write(&mut self, r: &QueryResult) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, &Row::<bool>::new(r))?;
        self.out.write_all(b"\n")
    }

    /// Writes one result and its query's fields in the trace ([`TRACE_COLUMNS`], after the
    /// others) as a line.
    pub fn write_with_trace(&mut self, r: &QueryResult, t: &TraceFields) -> io::Result<()> {
        let row = JoinedRow {
            row: Row::new(r),
            trace: TraceRow::new(t),
        };
        serde_json::to_writer(&mut self.out, &row)?;
        self.out.write_all(b"\n")
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write + Send> ResultSink for JsonlWriter<W> {
    fn result(&mut self, r: &QueryResult) -> io::Result<()> {
        self.write(r)
    }
    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes `results` (a [`ResultsReader`](crate::ResultsReader), `&mut` one, or any iterator of
/// results) as CSV to `out`; returns the number of results written. Stops at the first error.
pub fn export_csv<I, W>(results: I, out: W) -> Result<u64, ResultsError>
where
    I: IntoIterator<Item = Result<QueryResult, ResultsError>>,
    W: Write,
{
    let mut w = CsvWriter::new(out)?;
    let n = write_each(results, |r| w.write(r))?;
    w.into_inner()?;
    Ok(n)
}

/// Writes `results` as JSON lines to `out`; returns the number of results written. Stops at
/// the first error.
pub fn export_jsonl<I, W>(results: I, out: W) -> Result<u64, ResultsError>
where
    I: IntoIterator<Item = Result<QueryResult, ResultsError>>,
    W: Write,
{
    let mut w = JsonlWriter::new(out);
    let n = write_each(results, |r| w.write(r))?;
    w.into_inner()?;
    Ok(n)
}

/// Hands every result of `results` to `write` in order, stopping at the first error of
/// either; returns how many were written. The loop of both exports.
fn write_each<I>(
    results: I,
    mut write: impl FnMut(&QueryResult) -> io::Result<()>,
) -> Result<u64, ResultsError>
where
    I: IntoIterator<Item = Result<QueryResult, ResultsError>>,
{
    let mut n = 0;
    for r in results {
        write(&r?)?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_trace::Proto;
    use proptest::prelude::*;

    fn answered() -> QueryResult {
        QueryResult {
            index: 7,
            trace_ns: 1,
            intended_ns: 2,
            sent_ns: 3,
            received_ns: 5,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: 60,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        }
    }

    proptest! {
        /// Whatever a query's name holds (commas, quotes, line breaks), a CSV reader reads the
        /// joined row back with the name as it was, in its column.
        #[test]
        fn any_qname_reads_back_from_its_column(qname in any::<String>()) {
            let trace = TraceFields {
                time_ns: 1,
                client: std::net::Ipv4Addr::new(192, 0, 2, 1).into(),
                qname: Some(qname.clone().into()),
                qtype: None,
                proto: Proto::Tcp,
            };
            let mut w = CsvWriter::with_trace_columns(Vec::new()).unwrap();
            w.write_with_trace(&answered(), &trace).unwrap();
            let bytes = w.into_inner().unwrap();
            let mut reader = csv::Reader::from_reader(&bytes[..]);
            let header = reader.headers().unwrap().clone();
            let records: Vec<csv::StringRecord> =
                reader.records().collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(records.len(), 1);
            let column = |name: &str| header.iter().position(|h| h == name).unwrap();
            prop_assert_eq!(&records[0][column("qname")], qname.as_str());
            prop_assert_eq!(&records[0][column("client")], "192.0.2.1");
            prop_assert_eq!(&records[0][column("trace_proto")], "tcp");
            prop_assert_eq!(&records[0][column("index")], "7");
        }
    }
}
