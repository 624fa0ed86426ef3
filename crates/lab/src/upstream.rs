//! The resolver's own account of its upstream traffic: its dnstap (`RESOLVER_QUERY` and
//! `RESOLVER_RESPONSE` messages), collected on a Unix socket in the work directory and
//! written as a binary trace, a second witness of the queries beside the capture and the
//! meta-server's counts.

use crate::LabError;
use ldplayer_trace::{Record, Sink, SinkError};
use std::path::{Path, PathBuf};

pub use ldplayer_trace::dnstap::collect::{UpstreamCollector, UpstreamLog};

/// The socket the resolver sends its dnstap to, in the work directory.
pub fn socket_path(work_dir: &Path) -> PathBuf {
    work_dir.join("dnstap.sock")
}

/// The responses of an upstream trace (`RESOLVER_RESPONSE` records, from a nameserver) by the
/// level of the zone that answered them, as the meta-server counts its own
/// ([`ldplayer_server::LevelCounts`]): for each response, the zone the manifest serves at the
/// responding address that holds its question (the deepest, as the meta-server picks it);
/// responses no zone there holds are not counted, as the meta-server does not count its
/// REFUSED ones.
pub fn levels(manifest: &Path, trace: &Path) -> Result<ldplayer_server::LevelCounts, LabError> {
    use ldplayer_dns::{Message, Rcode};
    use ldplayer_trace::Source;
    let views = ldplayer_zone::Manifest::from_file(manifest)
        .and_then(|m| m.load())
        .map_err(|e| LabError::Input(e.to_string()))?;
    let file = std::fs::File::open(trace).map_err(LabError::Io)?;
    let mut reader = ldplayer_trace::binary::BinaryReader::new(std::io::BufReader::new(file))
        .map_err(|e| LabError::Input(format!("{}: {e}", trace.display())))?;
    struct Levels<'a> {
        views: &'a ldplayer_zone::manifest::Views,
        counts: ldplayer_server::LevelCounts,
        name: Vec<u8>,
    }
    impl Sink for Levels<'_> {
        fn record(&mut self, r: &Record<'_>) -> Result<(), SinkError> {
            let Ok(m) = Message::parse(r.wire) else {
                return Ok(());
            };
            self.name.clear();
            if !m.header().qr() || !m.qname_wire(&mut self.name) {
                return Ok(());
            }
            self.name.make_ascii_lowercase();
            let (Some(set), Some(qtype)) =
                (self.views.for_destination(Some(r.src.ip())), m.qtype())
            else {
                return Ok(());
            };
            let Some(zone) = set.find(&self.name, qtype) else {
                return Ok(());
            };
            let level = ldplayer_zone::name::label_count(&zone.origin).min(2);
            let class = match m.rcode() {
                Rcode::NOERROR => 0,
                Rcode::NXDOMAIN => 1,
                _ => 2,
            };
            self.counts.counts[level][class] += 1;
            Ok(())
        }
    }
    let mut sink = Levels {
        views: &views,
        counts: ldplayer_server::LevelCounts::default(),
        name: Vec::new(),
    };
    reader
        .run(&mut sink)
        .map_err(|e| LabError::Input(format!("{}: {e}", trace.display())))?;
    Ok(sink.counts)
}
