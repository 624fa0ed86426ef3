//! What the replay engine's tests feed it and collect from it: records built by hand, a source
//! over them, a result sink that keeps everything, ldplayer's own server and a rustls server as
//! targets. The real servers (knotd, nsd) and the queries come from ldplayer-testbed.
#![allow(dead_code)]

use ldplayer_replay::ReplayConfig;
use ldplayer_results::{QueryResult, ResultSink};
use ldplayer_trace::{Proto, RecordBuf, Sink, Source, TraceError};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ldplayer_testbed::{make_certs, query, ZONE};

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

/// `n` queries from `clients` clients, `gap_ms` apart, over `proto`, alternating a name the test
/// zone has (`www.example.`) and one it lacks (`nope.example.`); query `i` has ID `i`.
pub fn alternating_trace(n: usize, clients: u8, gap_ms: i64, proto: Proto) -> Vec<RecordBuf> {
    (0..n)
        .map(|i| {
            let name = if i % 2 == 0 {
                "www.example."
            } else {
                "nope.example."
            };
            record(
                i as i64 * gap_ms * 1_000_000,
                (i % clients as usize) as u8 + 1,
                proto,
                query(i as u16, name, ldplayer_dns::Rtype::A, Some((1232, false))),
            )
        })
        .collect()
}

/// Replays `recs` with `config` to the end: the engine's counters and every result.
pub fn replay_records(
    config: ldplayer_replay::ReplayConfig,
    recs: Vec<RecordBuf>,
) -> (ldplayer_replay::ReplayStats, Results) {
    let results = Results::default();
    let stats = ldplayer_replay::Replay::new(config)
        .expect("a valid configuration")
        .run(&mut VecSource(recs), results.clone())
        .expect("the replay runs")
        .stats;
    assert!(results.finished(), "the results were finished");
    (stats, results)
}

/// The failed queries of `kind` counted by cause key.
pub fn causes(
    stats: &ldplayer_replay::ReplayStats,
    kind: ldplayer_results::ErrorKind,
) -> Vec<(String, u64)> {
    stats
        .causes
        .iter()
        .filter(|c| c.kind == kind)
        .map(|c| (c.cause.to_string(), c.count))
        .collect()
}

/// ldplayer's own server, in this process, with [`ZONE`] over UDP and the encrypted fronts a
/// test adds, and the CA its certificate is signed by.
pub struct OwnServer {
    pub server: ldplayer_server::RunningServer,
    pub ca: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// Starts [`OwnServer`]; `enable` adds the fronts to the configuration with the server's
/// identity (a certificate for 127.0.0.1 from [`make_certs`]).
pub fn own_server(
    enable: impl FnOnce(&mut ldplayer_server::ServerConfig, ldplayer_server::TlsIdentity),
) -> OwnServer {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, key, cert) = make_certs(dir.path());
    let identity = ldplayer_server::TlsIdentity::from_pem(
        &std::fs::read(cert).expect("certificate"),
        &std::fs::read(key).expect("key"),
    )
    .expect("identity");
    let zone = ldplayer_zone::Zone::from_text(ZONE, "example.zone", None).expect("zone");
    let zones: Arc<ldplayer_zone::ZoneSet> = Arc::new(std::iter::once(zone).collect());
    let mut config =
        ldplayer_server::ServerConfig::new(vec!["127.0.0.1:0".parse().expect("address")]);
    enable(&mut config, identity);
    let server = ldplayer_server::Server::start(config, zones).expect("server starts");
    OwnServer {
        server,
        ca,
        _dir: dir,
    }
}

/// A rustls server configuration with a certificate for 127.0.0.1 from [`make_certs`] in `dir`
/// (TLS 1.3 only when `tls13_only`, as QUIC needs), offering `alpn`, and the CA to trust.
pub fn rustls_server(
    dir: &std::path::Path,
    alpn: &[u8],
    tls13_only: bool,
) -> (rustls::ServerConfig, std::path::PathBuf) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (ca, key, cert) = make_certs(dir);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .expect("certificate file")
        .map(|c| c.expect("certificate"))
        .collect();
    let key = PrivateKeyDer::from_pem_file(&key).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider);
    let builder = if tls13_only {
        builder.with_protocol_versions(&[&rustls::version::TLS13])
    } else {
        builder.with_safe_default_protocol_versions()
    };
    let mut config = builder
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("certificate and key");
    config.alpn_protocols = vec![alpn.to_vec()];
    (config, ca)
}

/// Nanoseconds in a millisecond, for schedules written in ms.
pub const MS: i64 = 1_000_000;

/// The replay's configuration for tests: two queriers and a 2 s timeout to `server`.
pub fn config(server: SocketAddr) -> ReplayConfig {
    ReplayConfig {
        queriers: 2,
        timeout: Duration::from_secs(2),
        ..ReplayConfig::new(server)
    }
}

/// `n` queries from `clients` clients, 1 ms apart, alternating existing and missing names.
pub fn trace(n: usize, clients: u8, proto: Proto) -> Vec<ldplayer_trace::RecordBuf> {
    alternating_trace(n, clients, 1, proto)
}

/// `CLOCK_REALTIME` now, in ns.
pub fn realtime_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
