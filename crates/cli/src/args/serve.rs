//! `ldplayer serve`: the embedded authoritative server's flags.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to answer on, e.g. 127.0.0.1:5300 (repeat for several). Required in plain mode;
    /// with --manifest the default is 0.0.0.0:53 and [::]:53.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Vec<std::net::SocketAddr>,
    /// Zone files (plain mode: every zone on every listen address); each zone's origin comes
    /// from `$ORIGIN` or its SOA, or is given as `FILE@ORIGIN` (for a file whose names are
    /// relative, `@` among them, and that sets no `$ORIGIN`, as nsd's `zone: name:` gives it).
    #[arg(
        value_name = "ZONEFILE",
        required_unless_present = "manifest",
        conflicts_with = "manifest"
    )]
    pub zones: Vec<PathBuf>,
    /// Split mode: a manifest of nameserver addresses and the zone files each serves; every
    /// query is answered from the zones of the address it was sent to, other addresses are
    /// refused (see docs/formats.md).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// Port of the default listen addresses with --manifest.
    #[arg(long, default_value_t = 53, allow_negative_numbers = true, value_parser = crate::values::port_or_any)]
    pub port: u16,
    /// UDP worker threads per listen address.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub udp_workers: usize,
    /// Do not answer over TCP.
    #[arg(long)]
    pub no_tcp: bool,
    /// Minimal responses: no authority NS in positive answers, as knot does.
    #[arg(long)]
    pub minimal_responses: bool,
    /// Seconds an idle TCP connection is kept (the same name and default as replay's).
    #[arg(
        long = "idle-timeout",
        visible_alias = "tcp-idle-timeout",
        value_name = "SECONDS",
        default_value_t = ldplayer_server::DEFAULT_TCP_IDLE_TIMEOUT.as_secs_f64(),
        allow_negative_numbers = true,
        value_parser = crate::values::seconds
    )]
    pub tcp_idle_timeout: f64,
    /// Write the counters every second to this file, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Answer DNS over TLS (RFC 7858) on this address too, e.g. 127.0.0.1:853 (repeat for
    /// several); needs --tls-cert and --tls-key, or --tls-self-signed.
    #[arg(long, value_name = "ADDR:PORT")]
    pub tls_listen: Vec<std::net::SocketAddr>,
    /// Answer DNS over HTTPS (RFC 8484, HTTP/2: GET ?dns= and POST application/dns-message) on
    /// this address too, e.g. 127.0.0.1:443 (repeat for several); needs the same certificate
    /// options as --tls-listen.
    #[arg(long, value_name = "ADDR:PORT")]
    pub https_listen: Vec<std::net::SocketAddr>,
    /// Answer DNS over QUIC (RFC 9250, ALPN doq, 0-RTT on resumed sessions) on this UDP
    /// address too, e.g. 127.0.0.1:853 (repeat for several); needs the same certificate options
    /// as --tls-listen.
    #[arg(long, value_name = "ADDR:PORT")]
    pub quic_listen: Vec<std::net::SocketAddr>,
    /// The path DNS over HTTPS is served on; other paths are answered 404.
    #[arg(long, value_name = "PATH", default_value = ldplayer_server::DEFAULT_DOH_PATH)]
    pub doh_path: String,
    /// Most DNS-over-HTTPS connections, and most DNS-over-QUIC connections, open at once (each);
    /// more are closed as soon as accepted (DoH) or refused (DoQ).
    #[arg(long, value_name = "N", default_value_t = 1024, allow_negative_numbers = true, value_parser = crate::values::count)]
    pub max_encrypted_connections: usize,
    /// The TLS certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The TLS certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Make a throw-away CA and a server certificate it signs (for the TLS and HTTPS addresses, the
    /// manifest's nameserver addresses and localhost) in this directory: ca.pem (for clients
    /// to trust, e.g. kdig +tls-ca=DIR/ca.pem), server.pem and server.key.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: Option<PathBuf>,
}
