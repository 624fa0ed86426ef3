//! `ldplayer serve --listen ADDR:PORT ZONEFILE...` (plain mode) and
//! `ldplayer serve --manifest FILE` (split horizon by destination address), with the counters
//! as JSON on exit and, with `--stats FILE`, every second; DNS over TLS too with
//! `--tls-listen ADDR:PORT` and a certificate (`--tls-cert`/`--tls-key`, or one made with
//! `--tls-self-signed DIR`), and DNS over HTTPS with `--https-listen ADDR:PORT` (the same
//! certificate, `--doh-path`).

use crate::args::ServeArgs;
use crate::progress::interrupted;
use anyhow::{Context, Result};
use ldplayer_results::summary::MAIN_RCODES;
use ldplayer_server::{
    DohConfig, DoqConfig, Server, ServerConfig, ServerStats, TlsConfig, TlsIdentity, RCODE_SLOTS,
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
    let mut rcodes = serde_json::Map::new();
    for rc in MAIN_RCODES {
        rcodes.insert(rc.to_string(), 0.into());
    }
    for (code, n) in s.rcodes.nonzero() {
        let name = if code.0 as usize == RCODE_SLOTS - 1 {
            "other".to_string()
        } else {
            code.to_string()
        };
        rcodes.insert(name, n.into());
    }
    let mut levels = serde_json::Map::new();
    for (l, name) in ldplayer_server::LevelCounts::LEVELS.iter().enumerate() {
        let mut by_class = serde_json::Map::new();
        by_class.insert("responses".into(), s.levels.level_total(l).into());
        for (c, class) in ldplayer_server::LevelCounts::CLASSES.iter().enumerate() {
            by_class.insert((*class).into(), s.levels.counts[l][c].into());
        }
        levels.insert((*name).into(), by_class.into());
    }
    let k = &s.kinds;
    let mut json = serde_json::json!({
        "time": time,
        "uptime_s": uptime.as_millis() as f64 / 1e3,
        "queries": s.udp_queries + s.tcp_queries + s.tls_queries + s.doh_queries + s.doq_queries,
        "udp_queries": s.udp_queries,
        "tcp_queries": s.tcp_queries,
        "responses": s.responses,
        "udp_responses": s.udp_responses,
        "tcp_responses": s.tcp_responses,
        "truncated": s.truncated,
        "rcodes": rcodes,
        "levels": levels,
        "kinds": {
            "answer": k.answer,
            "referral": k.referral,
            "nxdomain": k.nxdomain,
            "nodata": k.nodata,
            "refused": k.refused,
            "formerr": k.formerr,
            "notimp": k.notimp,
            "badvers": k.badvers,
            "yxdomain": k.yxdomain,
        },
        "refused_by_address": s.no_view,
        "dropped": s.dropped,
        "tcp_malformed": s.tcp_malformed,
        "send_errors": s.send_errors,
        "bytes_in": s.bytes_in,
        "bytes_out": s.bytes_out,
        "tcp_open": s.tcp_open,
        "tcp_peak_open": s.tcp_peak_open,
        "tcp_accepted": s.tcp_accepted,
        "tcp_idle_closed": s.tcp_idle_closed,
        "tcp_evicted": s.tcp_evicted,
        "tls_queries": s.tls_queries,
        "tls_responses": s.tls_responses,
        "tls_accepted": s.tls_accepted,
        "tls_handshakes": s.tls_handshakes,
        "tls_resumed": s.tls_resumed,
        "tls_errors": s.tls_errors,
    });
    if let Some(map) = json.as_object_mut() {
        map.extend(doh_json(s));
        map.extend(doq_json(s));
    }
    json
}

/// The DNS over QUIC counters of [`stats_json`].
fn doq_json(s: &ServerStats) -> serde_json::Map<String, serde_json::Value> {
    let e = &s.doq_errors;
    let json = serde_json::json!({
        "doq_queries": s.doq_queries,
        "doq_responses": s.doq_responses,
        "doq_accepted": s.doq_accepted,
        "doq_handshakes": s.doq_handshakes,
        "doq_resumed": s.doq_resumed,
        "doq_zero_rtt": s.doq_zero_rtt,
        "doq_idle_closed": s.doq_idle_closed,
        "doq_open": s.doq_open,
        "doq_peak_open": s.doq_peak_open,
        "doq_errors": {
            "nonzero_id": e.nonzero_id,
            "bad_stream": e.bad_stream,
            "incomplete": e.incomplete,
            "handshake": e.handshake,
            "refused_connections": e.refused_connections,
        },
    });
    match json {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The DNS over HTTPS counters of [`stats_json`].
fn doh_json(s: &ServerStats) -> serde_json::Map<String, serde_json::Value> {
    let e = &s.doh_errors;
    let json = serde_json::json!({
        "doh_queries": s.doh_queries,
        "doh_responses": s.doh_responses,
        "doh_accepted": s.doh_accepted,
        "doh_handshakes": s.doh_handshakes,
        "doh_resumed": s.doh_resumed,
        "doh_idle_closed": s.doh_idle_closed,
        "doh_open": s.doh_open,
        "doh_peak_open": s.doh_peak_open,
        "doh_errors": {
            "bad_request": e.bad_request,
            "not_found": e.not_found,
            "method_not_allowed": e.method_not_allowed,
            "too_large": e.too_large,
            "unsupported_media_type": e.unsupported_media_type,
            "tls": e.tls,
            "http": e.http,
            "refused_connections": e.refused_connections,
        },
    });
    match json {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
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
