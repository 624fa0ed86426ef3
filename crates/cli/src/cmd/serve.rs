//! `ldplayer serve --listen ADDR:PORT ZONEFILE...` (plain mode) and
//! `ldplayer serve --manifest FILE` (split horizon by destination address), with the counters
//! as JSON on exit and, with `--stats FILE`, every second; DNS over TLS too with
//! `--tls-listen ADDR:PORT` and a certificate (`--tls-cert`/`--tls-key`, or one made with
//! `--tls-self-signed DIR`), and DNS over HTTPS with `--https-listen ADDR:PORT` (the same
//! certificate, `--doh-path`).

use crate::args::ServeArgs;
use crate::progress::interrupted;
use anyhow::{Context, Result};
use ldplayer_server::{
    DohConfig, DoqConfig, Server, ServerConfig, ServerStats, TlsConfig, TlsIdentity,
};
use ldplayer_zone::{AnswerOptions, Manifest, Views, Zone, ZoneSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Loads zone files into one set, one file per zone; each argument is a file, or
/// `FILE@ORIGIN` for a file whose names are relative and that sets no `$ORIGIN`. Errors name
/// the file, line and column; warnings (a TTL taken as 0) go to standard error.
pub fn load_zones(files: &[impl AsRef<Path>]) -> Result<ZoneSet> {
    let mut set = ZoneSet::new();
    for f in files {
        let (file, origin) = ldplayer_zone::reader::file_and_origin(f.as_ref());
        let zone = Zone::from_file(&file, origin.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
        warn(&zone);
        set.insert_distinct(zone)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(set)
}

/// Shows a zone's load warnings on standard error.
fn warn(zone: &Zone) {
    for w in &zone.warnings {
        eprintln!("ldplayer: warning: {w}");
    }
}

pub fn run(args: ServeArgs) -> Result<()> {
    let started = Instant::now();
    let (views, listen) = match &args.manifest {
        Some(path) => {
            let manifest = Manifest::from_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
            let views = manifest.load().map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut zones = views.zones();
            zones.sort_by(|a, b| a.file.cmp(&b.file));
            zones.iter().for_each(|z| warn(z));
            let listen = if args.listen.is_empty() {
                vec![
                    SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), args.port),
                    SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), args.port),
                ]
            } else {
                args.listen.clone()
            };
            eprintln!(
                "ldplayer: {} zones for {} nameserver addresses loaded in {:.2} s",
                views.zones().len(),
                views.addresses().len(),
                started.elapsed().as_secs_f64(),
            );
            (views, listen)
        }
        None => {
            if args.listen.is_empty()
                && args.tls_listen.is_empty()
                && args.https_listen.is_empty()
                && args.quic_listen.is_empty()
            {
                anyhow::bail!("--listen ADDR:PORT is required without --manifest");
            }
            let zones = load_zones(&args.zones)?;
            let names: Vec<String> = zones.zones().iter().map(|z| z.origin_text()).collect();
            eprintln!(
                "ldplayer: {} zones loaded in {:.2} s: {}",
                names.len(),
                started.elapsed().as_secs_f64(),
                names.join(" ")
            );
            (Views::plain(Arc::new(zones)), args.listen.clone())
        }
    };
    let mut config = ServerConfig::new(listen);
    config.udp_workers = args.udp_workers;
    config.tcp = !args.no_tcp;
    config.tcp_idle_timeout =
        Duration::try_from_secs_f64(args.tcp_idle_timeout).context("--idle-timeout")?;
    config.answer = AnswerOptions {
        minimal: args.minimal_responses,
        ..AnswerOptions::default()
    };
    let identity = tls_identity(&args, &views)?;
    let tls_cert = identity.as_ref().map(|(_, cert)| cert.clone());
    if let Some((identity, _)) = &identity {
        if !args.tls_listen.is_empty() {
            config.tls = Some(TlsConfig {
                listen: args.tls_listen.clone(),
                identity: identity.clone(),
            });
        }
        if !args.https_listen.is_empty() {
            if !args.doh_path.starts_with('/') {
                anyhow::bail!("--doh-path must start with /: {}", args.doh_path);
            }
            let mut doh = DohConfig::new(args.https_listen.clone(), identity.clone());
            doh.path = args.doh_path.clone();
            doh.idle_timeout = config.tcp_idle_timeout;
            doh.max_connections = args.max_encrypted_connections.max(1);
            config.doh = Some(doh);
        }
        if !args.quic_listen.is_empty() {
            let mut doq = DoqConfig::new(args.quic_listen.clone(), identity.clone());
            doq.idle_timeout = config.tcp_idle_timeout;
            doq.max_connections = args.max_encrypted_connections.max(1);
            config.doq = Some(doq);
        }
    }
    let mut stats_file = match &args.stats {
        Some(p) => Some(StatsFile::create(p)?),
        None => None,
    };
    let server = Server::start(config, views).context("serve")?;
    let running = Instant::now();
    let addrs: Vec<String> = server.local_addrs().iter().map(|a| a.to_string()).collect();
    let tcp = if args.no_tcp {
        "no TCP".to_string()
    } else {
        format!("TCP idle timeout {} s", args.tcp_idle_timeout)
    };
    let tls_addrs: Vec<String> = server
        .tls_local_addrs()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let doh_addrs: Vec<String> = server
        .doh_local_addrs()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let doq_addrs: Vec<String> = server
        .doq_local_addrs()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let mut tls = String::new();
    if let Some(cert) = &tls_cert {
        if !doq_addrs.is_empty() {
            eprintln!(
                "ldplayer: DNS over QUIC on {} with {}",
                doq_addrs.join(" "),
                cert.display()
            );
            tls.push_str(&format!(" and over QUIC on {}", doq_addrs.join(" ")));
        }
        if !tls_addrs.is_empty() {
            eprintln!(
                "ldplayer: DNS over TLS on {} with {}",
                tls_addrs.join(" "),
                cert.display()
            );
            tls.push_str(&format!(" and over TLS on {}", tls_addrs.join(" ")));
        }
        if !doh_addrs.is_empty() {
            eprintln!(
                "ldplayer: DNS over HTTPS on https://{}{} with {}",
                doh_addrs.join(" "),
                args.doh_path,
                cert.display()
            );
            tls.push_str(&format!(" and over HTTPS on {}", doh_addrs.join(" ")));
        }
    }
    eprintln!(
        "ldplayer: answering on {}{tls} ({tcp}; Ctrl-C stops)",
        addrs.join(" ")
    );
    let ctrl_c = interrupted();
    let stop = server.stop_flag();
    while !ctrl_c.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
        let mut nap = Duration::from_millis(100);
        if let Some(f) = &mut stats_file {
            f.tick(|| stats_json(&server.stats(), running.elapsed()));
            nap = nap.min(f.until_next());
        }
        std::thread::sleep(nap);
    }
    let stats = server.stop();
    let json = stats_json(&stats, running.elapsed());
    if let Some(f) = &mut stats_file {
        f.write(&json);
    }
    eprintln!("ldplayer: {}", describe(&stats));
    println!("{json}");
    Ok(())
}

/// The certificate of DNS over TLS and HTTPS that `args` ask for, and its file (for people to
/// read); `None` without `--tls-listen` and `--https-listen`. With `--tls-self-signed DIR`, the
/// certificate is made for the TLS and HTTPS addresses (loopback for a wildcard one), the
/// manifest's nameserver addresses and localhost.
fn tls_identity(args: &ServeArgs, views: &Views) -> Result<Option<(TlsIdentity, PathBuf)>> {
    if args.tls_listen.is_empty() && args.https_listen.is_empty() && args.quic_listen.is_empty() {
        if args.tls_cert.is_some() || args.tls_self_signed.is_some() {
            anyhow::bail!(
                "--tls-cert and --tls-self-signed need --tls-listen, --https-listen or \
                 --quic-listen ADDR:PORT"
            );
        }
        return Ok(None);
    }
    let (cert, key) = match (&args.tls_cert, &args.tls_key, &args.tls_self_signed) {
        (Some(cert), Some(key), _) => (cert.clone(), key.clone()),
        (_, _, Some(dir)) => {
            let mut ips: Vec<IpAddr> = Vec::new();
            for addr in args
                .tls_listen
                .iter()
                .chain(&args.https_listen)
                .chain(&args.quic_listen)
            {
                let ip = addr.ip();
                let wanted: Vec<IpAddr> = if ip.is_unspecified() {
                    vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
                } else {
                    vec![ip]
                };
                ips.extend(wanted);
            }
            ips.extend(views.addresses().iter().copied());
            ips.sort();
            ips.dedup();
            let files = ldplayer_servers::make_certificate(dir, &ips, &["localhost".into()])
                .with_context(|| format!("--tls-self-signed {}", dir.display()))?;
            eprintln!(
                "ldplayer: made a CA and a server certificate for {} address(es) and localhost; \
                 clients trust {}",
                ips.len(),
                files.ca.display()
            );
            (files.cert, files.key)
        }
        _ => {
            let flag = if !args.tls_listen.is_empty() {
                "--tls-listen"
            } else if !args.https_listen.is_empty() {
                "--https-listen"
            } else {
                "--quic-listen"
            };
            anyhow::bail!(
                "{flag} needs a certificate: --tls-cert FILE --tls-key FILE, or \
                 --tls-self-signed DIR"
            )
        }
    };
    let identity = TlsIdentity::from_pem_files(&cert, &key).context("--tls-cert/--tls-key")?;
    Ok(Some((identity, cert)))
}

/// The server's counters as one JSON object: the report `serve` prints on exit and each line of
/// `--stats`. Counters are totals since the start; `time` is the Unix time in seconds.
pub fn stats_json(s: &ServerStats, uptime: Duration) -> serde_json::Value {
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64 / 1e3);
    stats_json_at(s, uptime, time)
}

/// [`stats_json`] at Unix time `time` (seconds): the counters as the server serializes them,
/// after `time` and `uptime_s`.
fn stats_json_at(s: &ServerStats, uptime: Duration, time: f64) -> serde_json::Value {
    let mut json = serde_json::json!({
        "time": time,
        "uptime_s": uptime.as_millis() as f64 / 1e3,
    });
    if let (Some(map), Ok(serde_json::Value::Object(counters))) =
        (json.as_object_mut(), serde_json::to_value(s))
    {
        map.extend(counters);
    }
    json
}

/// `serve --stats FILE`: one JSON line of the counters every second, flushed as written.
struct StatsFile {
    path: PathBuf,
    out: BufWriter<File>,
    next: Instant,
    failed: bool,
}

impl StatsFile {
    fn create(path: &Path) -> Result<StatsFile> {
        let file = ldplayer_output::create_direct(path)?;
        Ok(StatsFile {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
            next: Instant::now() + STATS_INTERVAL,
            failed: false,
        })
    }

    /// Time left until the next line is due.
    fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// Writes a line of `json()` when one is due.
    fn tick(&mut self, json: impl FnOnce() -> serde_json::Value) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.write(&json());
        self.next += STATS_INTERVAL;
        if self.next <= now {
            // Fell behind (a stopped process): one line now, none to catch up.
            self.next = now + STATS_INTERVAL;
        }
    }

    /// Writes one line; after a write error, says so once and writes no more.
    fn write(&mut self, json: &serde_json::Value) {
        if self.failed {
            return;
        }
        let written = serde_json::to_writer(&mut self.out, json)
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"))
            .and_then(|()| self.out.flush());
        if let Err(e) = written {
            eprintln!(
                "ldplayer: writing {}: {e}; no more statistics are written there",
                self.path.display()
            );
            self.failed = true;
        }
    }
}

/// How often `--stats` writes a line.
const STATS_INTERVAL: Duration = Duration::from_secs(1);

/// A one-line account of what a server did; what happened over TLS is added when anything did.
pub fn describe(s: &ServerStats) -> String {
    let k = &s.kinds;
    let mut line = format!(
        "{} UDP and {} TCP queries, {} responses ({} answers, {} referrals, {} NXDOMAIN, {} NODATA, {} REFUSED, {} FORMERR), {} truncated, {} dropped, {} to addresses of no nameserver",
        s.udp_queries, s.tcp_queries, s.responses, k.answer, k.referral, k.nxdomain, k.nodata, k.refused, k.formerr, s.truncated, s.dropped, s.no_view
    );
    let by_level = [0, 1, 2].map(|l| s.levels.level_total(l));
    if by_level.iter().any(|&n| n > 0) {
        line.push_str(&format!(
            "; by zone level: root {} ({} NXDOMAIN), TLD {} ({} NXDOMAIN), below {} ({} NXDOMAIN)",
            by_level[0],
            s.levels.counts[0][1],
            by_level[1],
            s.levels.counts[1][1],
            by_level[2],
            s.levels.counts[2][1]
        ));
    }
    if s.tls_accepted > 0 {
        line.push_str(&format!(
            "; over TLS {} queries, {} connections, {} handshakes ({} resumed), {} TLS errors",
            s.tls_queries, s.tls_accepted, s.tls_handshakes, s.tls_resumed, s.tls_errors
        ));
    }
    if s.doq_accepted > 0 {
        let e = &s.doq_errors;
        line.push_str(&format!(
            "; over QUIC {} queries, {} connections, {} handshakes ({} resumed, {} queries in \
             0-RTT), {} nonzero IDs, {} bad streams, {} incomplete streams, {} failed \
             handshakes, {} connections refused",
            s.doq_queries,
            s.doq_accepted,
            s.doq_handshakes,
            s.doq_resumed,
            s.doq_zero_rtt,
            e.nonzero_id,
            e.bad_stream,
            e.incomplete,
            e.handshake,
            e.refused_connections
        ));
    }
    if s.doh_accepted > 0 {
        let e = &s.doh_errors;
        line.push_str(&format!(
            "; over HTTPS {} queries, {} connections, {} handshakes ({} resumed), {} HTTP errors \
             ({} bad request, {} not found, {} method not allowed, {} too large, {} unsupported \
             media type), {} TLS errors, {} HTTP/2 errors, {} connections refused",
            s.doh_queries,
            s.doh_accepted,
            s.doh_handshakes,
            s.doh_resumed,
            e.requests(),
            e.bad_request,
            e.not_found,
            e.method_not_allowed,
            e.too_large,
            e.unsupported_media_type,
            e.tls,
            e.http,
            e.refused_connections
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_server::{
        DohErrors, DoqErrors, KindCounts, LevelCounts, RcodeCounts, RCODE_SLOTS,
    };

    /// Counters that all differ, every rcode slot of interest used (a main one, another named
    /// one, the last "other" slot; SERVFAIL left at zero).
    fn every_counter() -> ServerStats {
        let mut rcodes = RcodeCounts::default();
        rcodes.counts[0] = 101;
        rcodes.counts[3] = 102;
        rcodes.counts[5] = 103;
        rcodes.counts[9] = 104;
        rcodes.counts[RCODE_SLOTS - 1] = 105;
        let mut n = 0;
        let mut next = || {
            n += 1;
            n
        };
        ServerStats {
            udp_queries: next(),
            tcp_queries: next(),
            tls_queries: next(),
            responses: next(),
            udp_responses: next(),
            tcp_responses: next(),
            tls_responses: next(),
            truncated: next(),
            kinds: KindCounts {
                answer: next(),
                referral: next(),
                nxdomain: next(),
                nodata: next(),
                refused: next(),
                formerr: next(),
                notimp: next(),
                badvers: next(),
                yxdomain: next(),
            },
            dropped: next(),
            send_errors: next(),
            tcp_accepted: next(),
            tcp_idle_closed: next(),
            tcp_evicted: next(),
            tcp_malformed: next(),
            tls_accepted: next(),
            tls_handshakes: next(),
            tls_resumed: next(),
            tls_errors: next(),
            no_view: next(),
            rcodes,
            levels: LevelCounts {
                counts: [
                    [next(), next(), next()],
                    [next(), next(), next()],
                    [next(), next(), next()],
                ],
            },
            bytes_in: next(),
            bytes_out: next(),
            tcp_open: next(),
            tcp_peak_open: next(),
            doh_queries: next(),
            doh_responses: next(),
            doh_accepted: next(),
            doh_handshakes: next(),
            doh_resumed: next(),
            doh_idle_closed: next(),
            doh_open: next(),
            doh_peak_open: next(),
            doh_errors: DohErrors {
                bad_request: next(),
                not_found: next(),
                method_not_allowed: next(),
                too_large: next(),
                unsupported_media_type: next(),
                tls: next(),
                http: next(),
                refused_connections: next(),
            },
            doq_queries: next(),
            doq_responses: next(),
            doq_accepted: next(),
            doq_handshakes: next(),
            doq_resumed: next(),
            doq_zero_rtt: next(),
            doq_idle_closed: next(),
            doq_open: next(),
            doq_peak_open: next(),
            doq_errors: DoqErrors {
                nonzero_id: next(),
                bad_stream: next(),
                incomplete: next(),
                handshake: next(),
                refused_connections: next(),
            },
        }
    }

    /// What `serve` printed for [`every_counter`] when the JSON was built by hand in this file,
    /// before `ServerStats` serialized itself: the keys are an interface.
    const BEFORE: &str = r#"{"bytes_in":38,"bytes_out":39,"doh_accepted":44,"doh_errors":{"bad_request":50,"http":56,"method_not_allowed":52,"not_found":51,"refused_connections":57,"tls":55,"too_large":53,"unsupported_media_type":54},"doh_handshakes":45,"doh_idle_closed":47,"doh_open":48,"doh_peak_open":49,"doh_queries":42,"doh_responses":43,"doh_resumed":46,"doq_accepted":60,"doq_errors":{"bad_stream":68,"handshake":70,"incomplete":69,"nonzero_id":67,"refused_connections":71},"doq_handshakes":61,"doq_idle_closed":64,"doq_open":65,"doq_peak_open":66,"doq_queries":58,"doq_responses":59,"doq_resumed":62,"doq_zero_rtt":63,"dropped":18,"kinds":{"answer":9,"badvers":16,"formerr":14,"nodata":12,"notimp":15,"nxdomain":11,"referral":10,"refused":13,"yxdomain":17},"levels":{"below":{"NOERROR":35,"NXDOMAIN":36,"other":37,"responses":108},"root":{"NOERROR":29,"NXDOMAIN":30,"other":31,"responses":90},"tld":{"NOERROR":32,"NXDOMAIN":33,"other":34,"responses":99}},"queries":106,"rcodes":{"NOERROR":101,"NOTAUTH":104,"NXDOMAIN":102,"REFUSED":103,"SERVFAIL":0,"other":105},"refused_by_address":28,"responses":4,"send_errors":19,"tcp_accepted":20,"tcp_evicted":22,"tcp_idle_closed":21,"tcp_malformed":23,"tcp_open":40,"tcp_peak_open":41,"tcp_queries":2,"tcp_responses":6,"time":1700000000.25,"tls_accepted":24,"tls_errors":27,"tls_handshakes":25,"tls_queries":3,"tls_responses":7,"tls_resumed":26,"truncated":8,"udp_queries":1,"udp_responses":5,"uptime_s":1.5}"#;

    #[test]
    fn the_report_is_byte_for_byte_what_it_was() {
        let json = stats_json_at(
            &every_counter(),
            Duration::from_millis(1500),
            1_700_000_000.25,
        );
        assert_eq!(serde_json::to_string(&json).unwrap(), BEFORE);
    }
}
