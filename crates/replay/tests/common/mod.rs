//! Test helpers: real DNS servers (knotd, nsd) on loopback with free ports, hand-built traces and
//! a collecting result sink. The servers are started and stopped by the tests; a missing binary
//! fails the test with a clear message.
#![allow(dead_code)]

use ldplayer_results::{QueryResult, ResultSink};
use ldplayer_trace::{Proto, RecordBuf, Sink, Source, TraceError};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

pub use ldplayer_testbed::*;

/// A query message: ID, name (presentation, absolute), type; RD clear; optional EDNS bufsize.
pub fn query(id: u16, name: &str, qtype: ldplayer_dns::Rtype, edns: Option<u16>) -> Vec<u8> {
    let mut w = Vec::new();
    w.extend_from_slice(&id.to_be_bytes());
    w.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(edns.is_some())]);
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        w.push(label.len() as u8);
        w.extend_from_slice(label.as_bytes());
    }
    w.push(0);
    w.extend_from_slice(&qtype.0.to_be_bytes());
    w.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = edns {
        w.extend_from_slice(&[0, 0, 41]);
        w.extend_from_slice(&size.to_be_bytes());
        w.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    w
}

/// A record from client `client` (10.0.0.client) at `t_ns` over `proto`.
pub fn record(t_ns: i64, client: u8, proto: Proto, wire: Vec<u8>) -> RecordBuf {
    RecordBuf {
        time_ns: t_ns,
        src: SocketAddr::from(([10, 0, 0, client], 40000 + client as u16)),
        dst: SocketAddr::from(([192, 0, 2, 53], 53)),
        proto,
        conn: if proto == Proto::Udp {
            0
        } else {
            client as u64
        },
        wire,
    }
}

/// A source over records in memory.
pub struct VecSource(pub Vec<RecordBuf>);

impl Source for VecSource {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        ldplayer_trace::drive(sink, |sink| {
            for r in &self.0 {
                sink.record(&r.as_record())?;
            }
            Ok(())
        })
    }
}

/// A result sink that keeps everything for inspection.
#[derive(Clone, Default)]
pub struct Results(pub Arc<Mutex<Vec<QueryResult>>>, pub Arc<Mutex<bool>>);

impl Results {
    /// The results sorted by trace index.
    pub fn sorted(&self) -> Vec<QueryResult> {
        let mut v = self.0.lock().expect("lock").clone();
        v.sort_by_key(|r| r.index);
        v
    }
    pub fn finished(&self) -> bool {
        *self.1.lock().expect("lock")
    }
}

impl ResultSink for Results {
    fn result(&mut self, r: &QueryResult) -> std::io::Result<()> {
        self.0.lock().expect("lock").push(*r);
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        *self.1.lock().expect("lock") = true;
        Ok(())
    }
}

/// Asserts each index 0..n has exactly one result.
pub fn assert_one_each(results: &[QueryResult], n: usize) {
    assert_eq!(results.len(), n, "one result per query");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index, i as u64, "result indexes");
    }
}
