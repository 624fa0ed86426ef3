//! `samples.csv`: the server's and the link's state once a second during a run, written by the
//! runner's sampler and read back for the summary.

use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
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
    /// The sample as a CSV line (without its newline), fields in [`SAMPLE_COLUMNS`] order.
    pub fn to_line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.t_s,
            self.rss_kib,
            self.cpu_pct,
            self.tcp_established,
            self.tcp_time_wait,
            self.tcp_other,
            self.socket_mem_kib,
            self.c2s_packets,
            self.c2s_bytes,
            self.s2c_packets,
            self.s2c_bytes,
            self.s2c_dropped,
            self.c2s_dropped,
            self.processes
        )
    }

    /// Reads a line written by [`to_line`](Self::to_line); says which column is wrong.
    pub fn from_line(line: &str) -> Result<Sample, String> {
        let fields: Vec<&str> = line.trim_end_matches(['\r', '\n']).split(',').collect();
        if fields.len() != SAMPLE_COLUMNS.len() {
            return Err(format!(
                "{} fields, not {}",
                fields.len(),
                SAMPLE_COLUMNS.len()
            ));
        }
        fn get<T: std::str::FromStr>(fields: &[&str], i: usize) -> Result<T, String> {
            fields[i]
                .parse()
                .map_err(|_| format!("{}: `{}` is no number", SAMPLE_COLUMNS[i], fields[i]))
        }
        Ok(Sample {
            t_s: get(&fields, 0)?,
            rss_kib: get(&fields, 1)?,
            cpu_pct: get(&fields, 2)?,
            tcp_established: get(&fields, 3)?,
            tcp_time_wait: get(&fields, 4)?,
            tcp_other: get(&fields, 5)?,
            socket_mem_kib: get(&fields, 6)?,
            c2s_packets: get(&fields, 7)?,
            c2s_bytes: get(&fields, 8)?,
            s2c_packets: get(&fields, 9)?,
            s2c_bytes: get(&fields, 10)?,
            s2c_dropped: get(&fields, 11)?,
            c2s_dropped: get(&fields, 12)?,
            processes: get(&fields, 13)?,
        })
    }
}

/// Writes `samples.csv`: the header, then one line per sample, flushed each time so that a
/// run cut short keeps what it sampled.
pub struct SamplesWriter<W: Write> {
    out: W,
}

impl SamplesWriter<BufWriter<File>> {
    /// Creates (or truncates) the file at `path` and writes the header.
    pub fn create(path: &Path) -> io::Result<Self> {
        SamplesWriter::new(BufWriter::new(ldplayer_output::create_direct(path)?))
    }
}

impl<W: Write> SamplesWriter<W> {
    /// Starts `samples.csv` on `out` with the header.
    pub fn new(mut out: W) -> io::Result<Self> {
        writeln!(out, "{}", SAMPLE_COLUMNS.join(","))?;
        out.flush()?;
        Ok(SamplesWriter { out })
    }

    /// Writes one sample and flushes it.
    pub fn write(&mut self, sample: &Sample) -> io::Result<()> {
        writeln!(self.out, "{}", sample.to_line())?;
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
        line: usize,
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
    let lines: Vec<String> = BufReader::new(File::open(path).map_err(io_err)?)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(io_err)?;
    let bad = |line: usize, message: String| SampleError::Bad {
        path: path.to_path_buf(),
        line,
        message,
    };
    match lines.first() {
        Some(h) if h.trim_end() == SAMPLE_COLUMNS.join(",") => {}
        Some(h) => {
            return Err(bad(
                1,
                format!("the header is `{h}`, not `{}`", SAMPLE_COLUMNS.join(",")),
            ))
        }
        None => return Err(bad(1, "empty: no header".into())),
    }
    let mut samples = Vec::with_capacity(lines.len().saturating_sub(1));
    for (i, line) in lines.iter().enumerate().skip(1) {
        if line.is_empty() {
            continue;
        }
        match Sample::from_line(line) {
            Ok(s) => samples.push(s),
            Err(_) if i + 1 == lines.len() => {}
            Err(m) => return Err(bad(i + 1, m)),
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
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("3.0,1,2");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_samples(&path).unwrap(), vec![a, b]);
        std::fs::write(&path, text.replace(",1000,", ",x,")).unwrap();
        let e = read_samples(&path).unwrap_err().to_string();
        assert!(e.contains(":2: s2c_bytes"), "{e}");
    }
}
