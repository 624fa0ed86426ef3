//! `samples.csv`: the server's and the link's state once a second during a run, written by the
//! runner's sampler and read back for the summary and the report's time series.

use crate::summary::read::csv_reader;
use crate::summary::write::{csv_writer, io_error};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The columns of `samples.csv`, in order: the names of [`Sample`]'s fields.
pub const SAMPLE_COLUMNS: [&str; 14] = [
    "t_s",
    "rss_kib",
    "cpu_pct",
    "tcp_established",
    "tcp_time_wait",
    "tcp_other",
    "socket_mem_kib",
    "c2s_packets",
    "c2s_bytes",
    "s2c_packets",
    "s2c_bytes",
    "s2c_dropped",
    "c2s_dropped",
    "processes",
];

/// One sample. Packet, byte and drop counts are those since the previous sample (over the
/// interval that ends at `t_s`); the rest is the state at `t_s`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the replay's start.
    pub t_s: f64,
    /// Resident memory of all the server's processes, KiB.
    pub rss_kib: u64,
    /// CPU time of all the server's processes over the interval, percent of one core.
    pub cpu_pct: f64,
    /// Established TCP connections in the server's namespace.
    pub tcp_established: u64,
    /// TCP connections in TIME_WAIT in the server's namespace.
    pub tcp_time_wait: u64,
    /// TCP connections in any other state (listening sockets left out).
    pub tcp_other: u64,
    /// Kernel memory of the server namespace's sockets, KiB.
    pub socket_mem_kib: u64,
    /// Packets from clients to server through the link.
    pub c2s_packets: u64,
    /// Bytes (IP packets) from clients to server.
    pub c2s_bytes: u64,
    /// Packets from server to clients.
    pub s2c_packets: u64,
    /// Bytes (IP packets) from server to clients: the response bandwidth.
    pub s2c_bytes: u64,
    /// Packets from server to clients the link dropped (loss and queue).
    pub s2c_dropped: u64,
    /// Packets from clients to server the link dropped.
    pub c2s_dropped: u64,
    /// Processes of the server.
    pub processes: u32,
}

impl Sample {
    /// The sample's fields in [`SAMPLE_COLUMNS`] order, numbers as the shortest text that
    /// reads back the same.
    fn fields(&self) -> [String; SAMPLE_COLUMNS.len()] {
        [
            self.t_s.to_string(),
            self.rss_kib.to_string(),
            self.cpu_pct.to_string(),
            self.tcp_established.to_string(),
            self.tcp_time_wait.to_string(),
            self.tcp_other.to_string(),
            self.socket_mem_kib.to_string(),
            self.c2s_packets.to_string(),
            self.c2s_bytes.to_string(),
            self.s2c_packets.to_string(),
            self.s2c_bytes.to_string(),
            self.s2c_dropped.to_string(),
            self.c2s_dropped.to_string(),
            self.processes.to_string(),
        ]
    }

    /// Reads a record written by [`SamplesWriter`]; says which column is wrong.
    fn from_record(fields: &csv::StringRecord) -> Result<Sample, String> {
        if fields.len() != SAMPLE_COLUMNS.len() {
            return Err(format!(
                "{} fields, not {}",
                fields.len(),
                SAMPLE_COLUMNS.len()
            ));
        }
        fn get<T: std::str::FromStr>(fields: &csv::StringRecord, i: usize) -> Result<T, String> {
            let cell = fields.get(i).unwrap_or_default();
            cell.parse()
                .map_err(|_| format!("{}: `{cell}` is no number", SAMPLE_COLUMNS[i]))
        }
        Ok(Sample {
            t_s: get(fields, 0)?,
            rss_kib: get(fields, 1)?,
            cpu_pct: get(fields, 2)?,
            tcp_established: get(fields, 3)?,
            tcp_time_wait: get(fields, 4)?,
            tcp_other: get(fields, 5)?,
            socket_mem_kib: get(fields, 6)?,
            c2s_packets: get(fields, 7)?,
            c2s_bytes: get(fields, 8)?,
            s2c_packets: get(fields, 9)?,
            s2c_bytes: get(fields, 10)?,
            s2c_dropped: get(fields, 11)?,
            c2s_dropped: get(fields, 12)?,
            processes: get(fields, 13)?,
        })
    }
}

/// Writes `samples.csv`: the header, then one line per sample, flushed each time so that a
/// run cut short keeps what it sampled.
pub struct SamplesWriter<W: Write> {
    out: csv::Writer<W>,
}

impl SamplesWriter<File> {
    /// Creates (or truncates) the file at `path` and writes the header.
    pub fn create(path: &Path) -> io::Result<Self> {
        SamplesWriter::new(ldplayer_output::create_direct(path)?)
    }
}

impl<W: Write> SamplesWriter<W> {
    /// Starts `samples.csv` on `out` with the header (the writer buffers: `out` need not).
    pub fn new(out: W) -> io::Result<Self> {
        let mut out = csv_writer(out);
        out.write_record(SAMPLE_COLUMNS).map_err(io_error)?;
        out.flush()?;
        Ok(SamplesWriter { out })
    }

    /// Writes one sample and flushes it.
    pub fn write(&mut self, sample: &Sample) -> io::Result<()> {
        self.out.write_record(sample.fields()).map_err(io_error)?;
        self.out.flush()
    }
}

/// Why `samples.csv` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// The file could not be read.
    #[error("cannot read {}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// A line is not a sample.
    #[error("{}:{line}: {message}", .path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
}

/// Every sample of the `samples.csv` at `path`. A last line cut short (the run was killed
/// while writing it) is left out; any other bad line is an error.
pub fn read_samples(path: &Path) -> Result<Vec<Sample>, SampleError> {
    let io_err = |source| SampleError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bad = |line: u64, message: String| SampleError::Bad {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut records = Vec::new();
    for record in csv_reader(file).into_records() {
        match record {
            Ok(record) => records.push(record),
            Err(e) => {
                let line = e.position().map_or(0, csv::Position::line);
                return Err(match e.into_kind() {
                    csv::ErrorKind::Io(source) => io_err(source),
                    other => bad(line, format!("{other:?}")),
                });
            }
        }
    }
    match records.first() {
        Some(h) if h.iter().eq(SAMPLE_COLUMNS) => {}
        Some(h) => {
            return Err(bad(
                1,
                format!(
                    "the header is `{}`, not `{}`",
                    h.iter().collect::<Vec<_>>().join(","),
                    SAMPLE_COLUMNS.join(",")
                ),
            ))
        }
        None => return Err(bad(1, "empty: no header".into())),
    }
    let last = records.len() - 1;
    let mut samples = Vec::with_capacity(last);
    for (i, record) in records.iter().enumerate().skip(1) {
        if record.len() == 1 && record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        match Sample::from_record(record) {
            Ok(s) => samples.push(s),
            Err(_) if i == last => {}
            Err(m) => {
                let line = record.position().map_or(0, csv::Position::line);
                return Err(bad(line, m));
            }
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_every_field_in_order() {
        let json = serde_json::to_value(Sample::default()).unwrap();
        let mut names: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        names.sort_unstable();
        let mut columns = SAMPLE_COLUMNS.to_vec();
        columns.sort_unstable();
        assert_eq!(names, columns);
        assert_eq!(SAMPLE_COLUMNS[0], "t_s");
    }

    #[test]
    fn samples_read_back_as_written_and_a_torn_last_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.csv");
        let a = Sample {
            t_s: 1.000_25,
            rss_kib: 10_240,
            cpu_pct: 12.5,
            tcp_established: 3,
            tcp_time_wait: 4,
            tcp_other: 5,
            socket_mem_kib: 6,
            c2s_packets: 7,
            c2s_bytes: 800,
            s2c_packets: 9,
            s2c_bytes: 1_000,
            s2c_dropped: 1,
            c2s_dropped: 2,
            processes: 2,
        };
        let b = Sample { t_s: 2.0, ..a };
        let mut w = SamplesWriter::create(&path).unwrap();
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        drop(w);
        assert_eq!(read_samples(&path).unwrap(), vec![a, b]);
        // What the hand-written writer this one replaced wrote, byte for byte.
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "t_s,rss_kib,cpu_pct,tcp_established,tcp_time_wait,tcp_other,socket_mem_kib,\
             c2s_packets,c2s_bytes,s2c_packets,s2c_bytes,s2c_dropped,c2s_dropped,processes\n\
             1.00025,10240,12.5,3,4,5,6,7,800,9,1000,1,2,2\n\
             2,10240,12.5,3,4,5,6,7,800,9,1000,1,2,2\n"
        );
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("3.0,1,2");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_samples(&path).unwrap(), vec![a, b]);
        std::fs::write(&path, text.replace(",1000,", ",x,")).unwrap();
        let e = read_samples(&path).unwrap_err().to_string();
        assert!(e.contains(":2: s2c_bytes"), "{e}");
    }
}
