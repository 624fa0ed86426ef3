//! A replay against a server in a few library calls: synthesize a root-like workload, serve a
//! root zone that delegates its TLDs with ldplayer's embedded authoritative server on loopback,
//! replay the workload at it with its own timing, and read the results' summary and the
//! engine's counters.
//!
//! `cargo run -p ldplayer-replay --example embedded_server [QUERIES]`

use ldplayer_replay::{Replay, ReplayConfig};
use ldplayer_results::{ResultsWriter, Summary, Tee};
use ldplayer_server::{Server, ServerConfig};
use ldplayer_synth::{Synth, SynthConfig};
use ldplayer_zone::{Zone, ZoneSet};
use std::error::Error;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn Error>> {
    let queries = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 2_000,
    };

    // A server: the root zone, on a free loopback port.
    let mut zones = ZoneSet::new();
    zones.insert(Zone::from_text(&root_zone(), "root.zone", None)?);
    let server = Server::start(
        ServerConfig::new(vec!["127.0.0.1:0".parse()?]),
        Arc::new(zones),
    )?;
    let addr = *server
        .local_addrs()
        .first()
        .ok_or("the server has no address")?;

    // A workload: root-like queries at 2 000 per second (any trace reader is a source too).
    let mut workload = Synth::new(SynthConfig {
        count: Some(queries),
        ..SynthConfig::root_like(2_000.0)
    })?;

    // The replay: every result to a summary and to a results file; both come back at the end.
    let results_file = std::env::temp_dir().join("ldplayer-example.res");
    let replay = Replay::new(ReplayConfig::new(addr))?;
    let writer = Some(ResultsWriter::create(&results_file)?);
    let done = replay.run(&mut workload, Tee::new(Summary::new(), writer))?;
    let served = server.stop();

    let (summary, _writer) = done.results.into_parts();
    print!("{}", summary.report());
    println!("engine: {}", serde_json::to_string(&done.stats)?);
    println!(
        "server: {} UDP and {} TCP queries; results in {}",
        served.udp_queries,
        served.tcp_queries,
        results_file.display()
    );
    Ok(())
}

/// A root zone delegating every TLD of the root-like workload, with glue.
fn root_zone() -> String {
    let mut z = String::from(
        "$ORIGIN .\n$TTL 86400\n\
         . IN SOA a.root-servers.net. nstld.verisign-grs.com. 2026112200 1800 900 604800 86400\n\
         . IN NS a.root-servers.net.\na.root-servers.net. IN A 127.0.0.1\n",
    );
    for (i, tld) in ldplayer_synth::root_like_tlds().enumerate() {
        z.push_str(&format!(
            "{tld}. 172800 IN NS ns1.nic.{tld}.\nns1.nic.{tld}. 172800 IN A 192.0.2.{}\n",
            i % 250 + 1
        ));
    }
    z
}
