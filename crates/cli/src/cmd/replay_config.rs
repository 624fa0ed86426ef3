//! From `ldplayer replay`'s flags to the engine's [`ReplayConfig`]: the servers and their ports
//! per transport, the timing, TLS and the clients' profiles; and the parsers of server names
//! and instants the other commands share.

use crate::args::{ReplayArgs, SendTimes};
use anyhow::{bail, Context, Result};
use ldplayer_replay::{ReplayConfig, Timing, TlsConfig};
use ldplayer_trace::Proto;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// The engine configuration the flags ask for, for the target `target` (one `--server`).
pub(crate) fn config(args: &ReplayArgs, target: &str) -> Result<ReplayConfig> {
    let proto_override = args.proto.forced();
    let default_port = match proto_override {
        Some(Proto::Tls) => 853,
        Some(Proto::Https) => 443,
        Some(Proto::Quic) => 853,
        _ => 53,
    };
    if args.server.len() > 1 {
        for (flag, given) in [
            ("--tls-server", &args.tls_server),
            ("--https-server", &args.https_server),
            ("--quic-server", &args.quic_server),
        ] {
            if given.is_some() {
                bail!(
                    "{flag} names one server, and this replay has {} (--server): give each \
                     --server without a port to send its encrypted transports to its host's \
                     own ports",
                    args.server.len()
                );
            }
        }
    }
    let server = parse_server(target, default_port)?;
    let timing = if args.fast {
        Timing::Fast {
            max_in_flight: args.max_in_flight,
        }
    } else if let (Some(to_qps), Some(ramp_s)) = (args.ramp_to, args.ramp_s) {
        Timing::Ramp { to_qps, ramp_s }
    } else if let Some(qps) = args.rate {
        Timing::Rate { qps }
    } else {
        Timing::Original {
            speed: args.speed.unwrap_or(1.0),
        }
    };
    let mut c = ReplayConfig::new(server.addr);
    c.proto_override = proto_override;
    c.keep_answers = args.keep_answers;
    // Where each encrypted transport goes when a replay mixes transports.
    let mixed = proto_override.is_none();
    c.tls_server = transport_server(
        args.tls_server.as_deref(),
        "--tls-server",
        853,
        mixed,
        target,
    )?;
    c.https_server = transport_server(
        args.https_server.as_deref(),
        "--https-server",
        443,
        mixed,
        target,
    )?;
    c.quic_server = transport_server(
        args.quic_server.as_deref(),
        "--quic-server",
        853,
        mixed,
        target,
    )?;
    c.doh = ldplayer_replay::DohConfig {
        method: args.doh_method,
        path: args.doh_path.clone(),
        http3: args.doh_http3,
    };
    c.timing = timing;
    if let Some(n) = args.queriers {
        c.queriers = n;
    }
    if !args.pin.is_empty() {
        c.pin_cores = Some(args.pin.clone());
    }
    c.realtime = args.realtime;
    c.queries_per_connection = args.queries_per_connection;
    c.timeout = seconds(args.timeout, "--timeout")?;
    c.udp_retries = args.udp_retries;
    c.tcp_idle_timeout = seconds(args.idle_timeout, "--idle-timeout")?;
    c.retry_truncated_over_tcp = !args.no_tc_retry;
    c.honor_keepalive = !args.no_keepalive;
    // Under --fast a UDP socket sends 32 datagrams a call, and stamping every one cost a
    // sixth of the generator's CPU; stamps every 8th kept each query within 10 µs of the wire
    // (latency_witness.rs).
    let send_times = args.send_times.unwrap_or(if args.fast {
        SendTimes::KernelSampled
    } else {
        SendTimes::Kernel
    });
    c.kernel_send_times = send_times != SendTimes::User;
    c.stamp_every_datagram = send_times == SendTimes::Kernel;
    c.stack = args.stack;
    c.quic_key_update_packets = args.quic_key_update_packets;
    c.original_sources = args.original_sources;
    if let Some(p) = &args.source_prefix {
        let (addr, len) = p
            .split_once('/')
            .with_context(|| format!("--source-prefix {p}: expected ADDRESS/LENGTH"))?;
        let addr: IpAddr = addr
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad address"))?;
        let len: u8 = len
            .parse()
            .with_context(|| format!("--source-prefix {p}: bad length"))?;
        c.source_prefix = Some((addr, len));
    }
    c.tls = TlsConfig {
        ca_file: args.tls_ca.clone(),
        insecure: args.tls_insecure,
        server_name: args.tls_name.clone().or(server.name),
        resume: !args.no_tls_resume,
        zero_rtt: !args.no_zero_rtt,
    };
    c.shard = match args.shard.as_deref() {
        None => None,
        Some("auto") => Some(
            ldplayer_replay::shard_from_env(|k| std::env::var(k).ok(), args.shards)
                .context("--shard")?,
        ),
        Some(s) => Some(ldplayer_replay::parse_shard(s).context("--shard")?),
    };
    if let Some(t) = &args.start_at {
        c.start_ns = Some(parse_instant_ns(t, "--start-at")?);
        c.late_start = seconds(args.late_start, "--late-start")?;
    }
    c.validate().context("replay options")?;
    Ok(c)
}

/// Reads a moment given as `flag`: RFC 3339 (with any offset) or Unix seconds; in ns.
pub(crate) fn parse_instant_ns(s: &str, flag: &str) -> Result<i64> {
    if let Ok(secs) = s.trim().parse::<f64>() {
        return ldplayer_trace::seconds_to_ns(secs)
            .with_context(|| format!("{flag} {s}: not a usable Unix time"));
    }
    let t: jiff::Timestamp = s.trim().parse().with_context(|| {
        format!("{flag} {s}: give RFC 3339 (2026-11-24T01:00:00Z) or Unix seconds")
    })?;
    i64::try_from(t.as_nanosecond()).with_context(|| format!("{flag} {s}: out of range"))
}

/// A duration given in seconds as `flag`, refused when negative or not a number.
fn seconds(v: f64, flag: &str) -> Result<Duration> {
    Duration::try_from_secs_f64(v)
        .map_err(|_| anyhow::anyhow!("{flag} must be a non-negative number of seconds"))
}

/// Where one encrypted transport goes: its own flag (`flag`, HOST:PORT, `port` when left out);
/// else, in a replay that mixes transports (`mixed`) whose `--server` (`target`) names no
/// port, the `--server` host on the transport's own `port`, beside UDP and TCP on 53; else
/// `--server`.
fn transport_server(
    given: Option<&str>,
    flag: &str,
    port: u16,
    mixed: bool,
    target: &str,
) -> Result<Option<SocketAddr>> {
    if let Some(t) = given {
        return Ok(Some(parse_server(t, port).context(flag.to_string())?.addr));
    }
    // The port is left out when parsing with either default gives that default.
    let own = parse_server(target, port)?.addr;
    let plain = parse_server(target, 53)?.addr;
    Ok(
        (mixed && own.port() == port && plain.port() == 53)
            .then(|| SocketAddr::new(own.ip(), port)),
    )
}

/// The server to query, from `--server`: an address and port, and the host name when one was
/// given (for TLS).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ServerArg {
    /// The address and port.
    pub addr: SocketAddr,
    /// The host name, when one was given.
    pub name: Option<String>,
}

/// Reads `--server`: `IPV4[:PORT]`, `[IPV6][:PORT]`, a bare `IPV6` or `NAME[:PORT]`, with
/// `default_port` when there is no port. Port 0 is refused, and so is an unbracketed IPv6
/// address whose last group could be a port (`::1:5531`: port 5531 of `::1`, or the address
/// `::1:5531`?), with both bracketed forms shown.
pub(crate) fn parse_server(s: &str, default_port: u16) -> Result<ServerArg> {
    let port_of = |p: &str| -> Result<u16> {
        match p.parse::<u16>() {
            Ok(0) => bail!("--server {s}: port 0 is not a server's port"),
            Ok(p) => Ok(p),
            Err(_) => bail!("--server {s}: `{p}` is not a port (1-65535)"),
        }
    };
    let plain = |addr: SocketAddr| ServerArg { addr, name: None };
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .with_context(|| format!("--server {s}: `[` without `]`"))?;
        let ip: std::net::Ipv6Addr = host
            .parse()
            .with_context(|| format!("--server {s}: `{host}` is not an IPv6 address"))?;
        let port = match after {
            "" => default_port,
            _ => match after.strip_prefix(':') {
                Some(p) => port_of(p)?,
                None => bail!("--server {s}: expected `:PORT` after `]`"),
            },
        };
        return Ok(plain(SocketAddr::new(IpAddr::V6(ip), port)));
    }
    if let Ok(ip) = s.parse::<std::net::Ipv6Addr>() {
        if let Some((head, tail)) = s.rsplit_once(':') {
            let could_be_port = !tail.is_empty()
                && tail.len() <= 5
                && tail.bytes().all(|b| b.is_ascii_digit())
                && tail.parse::<u16>().is_ok_and(|p| p > 0);
            if could_be_port && head.parse::<std::net::Ipv6Addr>().is_ok() {
                // `::1:5531` as an address is IPv4-compatible, which the engine refuses.
                let whole = SocketAddr::new(IpAddr::V6(ip), default_port);
                if ldplayer_replay::check_destination(whole).is_err() {
                    bail!("--server {s}: write [{head}]:{tail} for port {tail} of {head}");
                }
                bail!(
                    "--server {s} is ambiguous: write [{head}]:{tail} for port {tail} of {head}, \
                     or [{s}] for the address {s} (port {default_port})"
                );
            }
        }
        return Ok(plain(SocketAddr::new(IpAddr::V6(ip), default_port)));
    }
    if let Ok(ip) = s.parse::<std::net::Ipv4Addr>() {
        return Ok(plain(SocketAddr::new(IpAddr::V4(ip), default_port)));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, port_of(p)?),
        None => (s, default_port),
    };
    if host.is_empty() {
        bail!("--server {s}: no host");
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(plain(SocketAddr::new(IpAddr::V4(ip), port)));
    }
    if host.contains(':') {
        bail!("--server {s}: write an IPv6 address with a port as [ADDRESS]:PORT");
    }
    let addr = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("--server {s}: cannot resolve {host}"))?
        .next()
        .with_context(|| format!("--server {s}: {host} has no address"))?;
    Ok(ServerArg {
        addr,
        name: Some(host.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(s: &str) -> Result<SocketAddr> {
        parse_server(s, 53).map(|a| a.addr)
    }

    /// The configuration `ldplayer replay t.bin ARGS...` makes.
    fn config_of(args: &[&str]) -> ReplayConfig {
        use clap::Parser;
        let cli =
            crate::args::Cli::try_parse_from(["ldplayer", "replay", "t.bin"].iter().chain(args))
                .expect("valid arguments");
        let crate::args::Command::Replay(a) = cli.command else {
            panic!("not a replay");
        };
        config(&a, &a.server[0]).expect("a configuration")
    }

    /// A mixed replay to a server named without a port sends DoT, DoH and DoQ to their own
    /// ports of that host; a port, a forced transport or a flag of their own says otherwise.
    #[test]
    fn encrypted_transports_go_to_their_own_ports() {
        let at = |s: &str| Some(s.parse::<SocketAddr>().expect("address"));
        let c = config_of(&["--server", "127.0.0.9"]);
        assert_eq!(c.server, at("127.0.0.9:53").unwrap());
        assert_eq!(
            (c.tls_server, c.https_server, c.quic_server),
            (
                at("127.0.0.9:853"),
                at("127.0.0.9:443"),
                at("127.0.0.9:853")
            )
        );
        let c = config_of(&["--server", "127.0.0.9:5300"]);
        assert_eq!(
            (c.tls_server, c.https_server, c.quic_server),
            (None, None, None)
        );
        let c = config_of(&["--server", "127.0.0.9", "--proto", "doh"]);
        assert_eq!(c.server, at("127.0.0.9:443").unwrap());
        assert_eq!(c.https_server, None);
        let c = config_of(&["--server", "127.0.0.9", "--quic-server", "127.0.0.8:8853"]);
        assert_eq!(c.quic_server, at("127.0.0.8:8853"));
        assert_eq!(c.https_server, at("127.0.0.9:443"));
    }

    /// `--quic-key-update-packets` reaches the replay's configuration; without it, the
    /// replay's default.
    #[test]
    fn the_quic_key_update_count_is_passed_on() {
        let c = config_of(&["--server", "127.0.0.9"]);
        assert_eq!(
            c.quic_key_update_packets,
            ldplayer_replay::DEFAULT_QUIC_KEY_UPDATE_PACKETS
        );
        let c = config_of(&["--server", "127.0.0.9", "--quic-key-update-packets", "0"]);
        assert_eq!(c.quic_key_update_packets, 0);
        let c = config_of(&["--server", "127.0.0.9", "--quic-key-update-packets", "7"]);
        assert_eq!(c.quic_key_update_packets, 7);
    }

    #[test]
    fn server_addresses_with_and_without_ports() {
        let ok = |s: &str, want: &str| {
            assert_eq!(
                server(s).unwrap(),
                want.parse::<SocketAddr>().unwrap(),
                "{s}"
            )
        };
        ok("127.0.0.1", "127.0.0.1:53");
        ok("127.0.0.1:5300", "127.0.0.1:5300");
        ok("::1", "[::1]:53");
        ok("[::1]", "[::1]:53");
        ok("[::1]:5531", "[::1]:5531");
        ok("fe80::1", "[fe80::1]:53");
        ok("2001:db8:0:0:0:0:0:53", "[2001:db8::53]:53");
        assert_eq!(parse_server("::1", 853).unwrap().addr.port(), 853);
        let localhost = parse_server("localhost:5300", 53).unwrap();
        assert_eq!(localhost.name.as_deref(), Some("localhost"));
        assert_eq!(parse_server("[::1]", 53).unwrap().name, None);
    }
    #[test]
    fn bad_and_ambiguous_servers_are_refused() {
        let err = |s: &str| format!("{:#}", server(s).unwrap_err());
        assert!(err("127.0.0.1:0").contains("port 0"));
        assert!(err("[::1]:0").contains("port 0"));
        // As an address, ::1:5531 is IPv4-compatible (::0.1.85.49), which nobody means.
        let e = err("::1:5531");
        assert!(e.contains("[::1]:5531") && !e.contains("[::1:5531]"), "{e}");
        let e = err("2001:db8::1:53");
        assert!(
            e.contains("ambiguous")
                && e.contains("[2001:db8::1]:53")
                && e.contains("[2001:db8::1:53]"),
            "{e}"
        );
        assert!(err("[::1").contains("without"));
        assert!(err("[::1]x").contains(":PORT"));
        assert!(err("127.0.0.1:http").contains("not a port"));
        assert!(err("[127.0.0.1]:53").contains("not an IPv6"));
    }
}
