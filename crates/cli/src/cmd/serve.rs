//! `ldplayer serve --listen ADDR:PORT ZONEFILE...` (plain mode) and
//! `ldplayer serve --manifest FILE` (split horizon by destination address).

use crate::args::ServeArgs;
use crate::progress::interrupted;
use anyhow::{Context, Result};
use ldplayer_server::{Server, ServerConfig, ServerStats};
use ldplayer_zone::{AnswerOptions, Manifest, Views, Zone, ZoneSet};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Loads zone files into one set, one file per zone; errors name the file, line and column.
pub fn load_zones(files: &[impl AsRef<Path>]) -> Result<ZoneSet> {
    let mut set = ZoneSet::new();
    for f in files {
        let zone = Zone::from_file(f.as_ref(), None).map_err(|e| anyhow::anyhow!("{e}"))?;
        set.insert_distinct(zone)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(set)
}

pub fn run(args: ServeArgs) -> Result<()> {
    let started = Instant::now();
    let (views, listen) = match &args.manifest {
        Some(path) => {
            let manifest = Manifest::from_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
            let views = manifest.load().map_err(|e| anyhow::anyhow!("{e}"))?;
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
            if args.listen.is_empty() {
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
        Duration::try_from_secs_f64(args.tcp_idle_timeout).context("--tcp-idle-timeout")?;
    config.answer = AnswerOptions {
        minimal: args.minimal_responses,
        ..AnswerOptions::default()
    };
    let server = Server::start(config, views).context("serve")?;
    let addrs: Vec<String> = server.local_addrs().iter().map(|a| a.to_string()).collect();
    eprintln!("ldplayer: answering on {} (Ctrl-C stops)", addrs.join(" "));
    let ctrl_c = interrupted();
    let stop = server.stop_flag();
    while !ctrl_c.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = server.stop();
    eprintln!("ldplayer: {}", describe(&stats));
    Ok(())
}

/// A one-line account of what a server did.
pub fn describe(s: &ServerStats) -> String {
    let k = &s.kinds;
    format!(
        "{} UDP and {} TCP queries, {} responses ({} answers, {} referrals, {} NXDOMAIN, {} NODATA, {} REFUSED, {} FORMERR), {} truncated, {} dropped, {} to addresses of no nameserver",
        s.udp_queries, s.tcp_queries, s.responses, k.answer, k.referral, k.nxdomain, k.nodata, k.refused, k.formerr, s.truncated, s.dropped, s.no_view
    )
}
