//! What an experiment asks of a server ([`ServerSetup`]), checked against what the kind can do,
//! and resolved into the facts every configuration writer needs ([`Prepared`]): zone origins,
//! certificate files, root hints, the address to probe.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ldplayer_dns::Rtype;
use ldplayer_zone::reader::read_zone_file;
use ldplayer_zone::{Manifest, Views};

use crate::validation::{self, TrustAnchor, Validation};
use crate::{make_certificate, ResolverOptions, ServerError, ServerKind, TlsFiles};

/// Everything needed to configure and start one server for one run (serializable, so that a
/// run can record what it asked for).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ServerSetup {
    /// Which server.
    pub kind: ServerKind,
    /// The addresses it listens on (e.g. 10.53.0.1 and fd53::1); the first is the one probed.
    /// For `ldplayer` with a manifest, empty means every address (`0.0.0.0` and `::`).
    pub listen: Vec<IpAddr>,
    /// The port of plain DNS over UDP and TCP (53).
    pub port: u16,
    /// The port of DNS over TLS (853), when TLS is wanted; an error for kinds that cannot.
    pub tls_port: Option<u16>,
    /// The port of DNS over HTTPS (443, HTTP/2 at `/dns-query`), when wanted; an error for
    /// kinds that cannot. It shares the certificate of [`tls`](Self::tls).
    #[serde(default)]
    pub https_port: Option<u16>,
    /// The UDP port of DNS over QUIC (853), when wanted; an error for kinds that cannot. It
    /// shares the certificate of [`tls`](Self::tls).
    #[serde(default)]
    pub quic_port: Option<u16>,
    /// The certificate for TLS, DoH and DoQ; when `None` and TLS is wanted, one is made in `work_dir/tls`
    /// for the listen addresses (see [`RunningServer::tls`](crate::RunningServer::tls)).
    pub tls: Option<TlsFiles>,
    /// Zone files an authoritative server serves, or a resolver answers from itself (kinds
    /// that [answer local zones](ServerKind::answers_local_zones)); each file's origin comes
    /// from its SOA or `$ORIGIN`.
    pub zones: Vec<PathBuf>,
    /// A `zones build` manifest: `ldplayer` serves it as the meta-server (split by destination
    /// address); a recursive kind without `root_hints` gets root hints made from it.
    pub manifest: Option<PathBuf>,
    /// Root hints (`named.root` format) of the emulated root, for recursive kinds.
    pub root_hints: Option<PathBuf>,
    /// Worker threads (or processes); `None` keeps the server's default (one for kresd).
    pub threads: Option<usize>,
    /// How long an idle TCP (or TLS) connection stays open before the server closes it, the
    /// paper's variable. Rounded up to what the server can express (whole seconds for nsd,
    /// Knot DNS and PowerDNS Recursor, 100 ms for BIND).
    pub tcp_idle_timeout: Duration,
    /// Most TCP connections at once (experiments hold tens of thousands); the file descriptor
    /// limit of the server is raised to fit, and where it cannot be (a container's hard limit
    /// without `CAP_SYS_RESOURCE`), the server is configured for as many as fit (see
    /// [`RunningServer::max_tcp_clients`](crate::RunningServer::max_tcp_clients)).
    pub max_tcp_clients: usize,
    /// Where the configuration, pid file, databases, control socket and `server.log` go; an
    /// absolute path, made if needed. Nothing is written anywhere else.
    pub work_dir: PathBuf,
    /// Raw configuration lines appended as-is at the end of the main options (nsd and Unbound
    /// `server:` clause, Knot DNS `server:` section, BIND `options { }` block, the Knot Resolver
    /// Lua file, `recursor.conf`); not supported by `ldplayer`.
    pub extra: Vec<String>,
    /// DNSSEC validation, for recursive kinds: `None` turns it off (the emulated root's keys
    /// are not the Internet's, so a resolver's built-in anchor would fail every answer).
    #[serde(default)]
    pub validation: Option<Validation>,
    /// Resolver behaviours to set (aggressive NSEC, QNAME minimisation), for recursive kinds.
    #[serde(default)]
    pub resolver: ResolverOptions,
}

impl ServerSetup {
    /// A setup with the usual values: port 53, no TLS, no zones, the server's thread default,
    /// a 20 s TCP idle timeout (the paper's) and 60,000 TCP clients.
    pub fn new(kind: ServerKind, listen: Vec<IpAddr>, work_dir: PathBuf) -> ServerSetup {
        ServerSetup {
            kind,
            listen,
            port: 53,
            tls_port: None,
            https_port: None,
            quic_port: None,
            tls: None,
            zones: Vec::new(),
            manifest: None,
            root_hints: None,
            threads: None,
            tcp_idle_timeout: Duration::from_secs(20),
            max_tcp_clients: 60_000,
            work_dir,
            extra: Vec::new(),
            validation: None,
            resolver: ResolverOptions::default(),
        }
    }
}

/// A zone to serve: its origin and its file.
#[derive(Debug, Clone)]
pub(crate) struct ZoneFile {
    /// The origin in presentation form, with the final dot (`.` for the root).
    pub origin: String,
    /// The absolute path of the file.
    pub path: PathBuf,
    /// The lines where SOA records after the first start (zone transfer dumps end with the
    /// SOA again).
    pub repeated_soa_lines: Vec<usize>,
}

/// The query that shows a server is up, and what counts as its answer.
#[derive(Debug, Clone)]
pub(crate) struct Probe {
    /// Where plain DNS is probed.
    pub addr: SocketAddr,
    /// Where TLS is probed, when asked.
    pub tls_addr: Option<SocketAddr>,
    /// Where DoH is probed (a TLS handshake that settles on HTTP/2), when asked.
    pub https_addr: Option<SocketAddr>,
    /// The name asked.
    pub qname: String,
    /// The type asked.
    pub qtype: Rtype,
    /// An authoritative answer with records is required (else any response will do: a resolver
    /// may answer SERVFAIL while the hierarchy behind it comes up, and a meta-server may refuse
    /// an address that is no nameserver's).
    pub authoritative: bool,
}

/// A setup checked and resolved.
#[derive(Debug)]
pub(crate) struct Prepared<'a> {
    /// The setup.
    pub setup: &'a ServerSetup,
    /// The zones to serve, in order.
    pub zones: Vec<ZoneFile>,
    /// The TLS port and certificate, when TLS is wanted.
    pub tls: Option<(u16, TlsFiles)>,
    /// The DoH port and certificate, when DoH is wanted.
    pub https: Option<(u16, TlsFiles)>,
    /// The DoQ (UDP) port and certificate, when DoQ is wanted.
    pub quic: Option<(u16, TlsFiles)>,
    /// Root hints for a resolver.
    pub root_hints: Option<PathBuf>,
    /// The root's trust anchor file (DS or DNSKEY records), when the resolver validates.
    pub trust_anchor: Option<PathBuf>,
    /// The server's log.
    pub log: PathBuf,
    /// How readiness is probed.
    pub probe: Probe,
    /// The TCP connections the server is configured for: `max_tcp_clients`, or fewer when the
    /// file descriptor limit it can get is lower.
    pub tcp_clients: usize,
    /// The file descriptor limit the server gets.
    pub files: u64,
}

impl Prepared<'_> {
    /// The work directory.
    pub fn dir(&self) -> &Path {
        &self.setup.work_dir
    }

    /// The work directory as configuration text.
    pub fn dir_text(&self) -> String {
        self.setup.work_dir.display().to_string()
    }

    /// The TCP idle timeout in whole seconds, rounded up, at least 1.
    pub fn idle_seconds(&self) -> u64 {
        let d = self.setup.tcp_idle_timeout;
        (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
    }

    /// The TCP idle timeout in milliseconds, rounded up, at least 1.
    pub fn idle_millis(&self) -> u128 {
        let d = self.setup.tcp_idle_timeout;
        (d.as_nanos().div_ceil(1_000_000)).max(1)
    }

    /// [`tcp_clients`](Self::tcp_clients) shared among `workers` that each have their own
    /// limit, rounded up.
    pub fn tcp_clients_per(&self, workers: usize) -> usize {
        self.tcp_clients.div_ceil(workers.max(1)).max(1)
    }

    /// The raw lines of [`ServerSetup::extra`], one per line.
    pub fn extra(&self) -> String {
        let mut text = String::new();
        for line in &self.setup.extra {
            let _ = writeln!(text, "{line}");
        }
        text
    }

    /// The root hints file a resolver starts from, or a configuration error when there is
    /// none (the kinds that cannot answer without one).
    pub fn required_root_hints(&self) -> Result<&Path, ServerError> {
        self.root_hints
            .as_deref()
            .ok_or_else(|| self.config_error("no root hints"))
    }

    /// A configuration error of this kind.
    pub fn config_error(&self, message: impl Into<String>) -> ServerError {
        ServerError::Config {
            kind: self.setup.kind,
            message: message.into(),
        }
    }
}

/// Checks `setup` against what its kind can do, makes the work directory, reads the zones'
/// origins, makes the certificate and root hints when needed.
pub(crate) fn prepare(setup: &ServerSetup) -> Result<Prepared<'_>, ServerError> {
    validate(setup)?;
    let kind = setup.kind;
    std::fs::create_dir_all(&setup.work_dir)
        .map_err(ServerError::io("cannot create", &setup.work_dir))?;

    // The embedded server loads its zones itself, once.
    let zones = if kind.is_embedded() {
        Vec::new()
    } else {
        setup
            .zones
            .iter()
            .map(|path| zone_file(kind, path))
            .collect::<Result<Vec<_>, _>>()?
    };
    let wants_certificate =
        setup.tls_port.is_some() || setup.https_port.is_some() || setup.quic_port.is_some();
    let certificate = match &setup.tls {
        _ if !wants_certificate => None,
        Some(files) => Some(files.clone()),
        None => {
            let names = vec!["localhost".to_string()];
            // A server on every address (none given, or a wildcard) is probed on loopback.
            let mut ips = setup.listen.clone();
            if ips.is_empty() || ips.iter().any(IpAddr::is_unspecified) {
                ips.extend([
                    IpAddr::from(Ipv4Addr::LOCALHOST),
                    Ipv6Addr::LOCALHOST.into(),
                ]);
            }
            Some(make_certificate(&setup.work_dir.join("tls"), &ips, &names)?)
        }
    };
    let with_certificate = |port: Option<u16>| Some((port?, certificate.clone()?));
    let tls = with_certificate(setup.tls_port);
    let https = with_certificate(setup.https_port);
    let quic = with_certificate(setup.quic_port);
    // A resolver's root hints, and with `auto` its trust anchor, come from the manifest's root.
    let needs_views = kind.is_recursive()
        && (setup.root_hints.is_none()
            || setup
                .validation
                .as_ref()
                .is_some_and(|v| v.anchor == TrustAnchor::Auto));
    let views = match &setup.manifest {
        Some(manifest) if needs_views => Some(
            Manifest::from_file(manifest)
                .and_then(|m| m.load())
                .map_err(|e| setup_error(kind, format!("manifest: {e}")))?,
        ),
        _ => None,
    };
    let root_hints = match (&setup.root_hints, &views) {
        _ if !kind.is_recursive() => None,
        (Some(hints), _) => Some(absolute(hints)?),
        (None, Some(views)) => Some(write_root_hints(kind, views, &setup.work_dir)?),
        (None, None) => None,
    };
    let trust_anchor = match &setup.validation {
        None => None,
        Some(v) => Some(match (&v.anchor, &views) {
            (TrustAnchor::File(f), _) => absolute(f)?,
            (TrustAnchor::Auto, Some(views)) => {
                validation::anchor_file(&v.anchor, views, &setup.work_dir)
                    .map_err(|e| setup_error(kind, e.to_string()))?
            }
            (TrustAnchor::Auto, None) => {
                return Err(setup_error(
                    kind,
                    "trust anchor auto needs the hierarchy's manifest".into(),
                ))
            }
        }),
    };
    let probe = probe(setup, &zones);
    let (tcp_clients, files) = connection_budget(setup);
    Ok(Prepared {
        setup,
        zones,
        tls,
        https,
        quic,
        root_hints,
        trust_anchor,
        log: setup.work_dir.join("server.log"),
        probe,
        tcp_clients,
        files,
    })
}

/// Whether `setup` asks what its kind can do, with what it needs; nothing is written yet.
fn validate(setup: &ServerSetup) -> Result<(), ServerError> {
    let kind = setup.kind;
    let unsupported = |what: &str| ServerError::Unsupported {
        kind,
        what: what.into(),
    };
    let config = |message: String| ServerError::Config { kind, message };
    if !setup.work_dir.is_absolute() {
        return Err(config(format!(
            "the work directory {} is not an absolute path",
            setup.work_dir.display()
        )));
    }
    if setup.tls_port.is_some() && !kind.supports_tls() {
        return Err(unsupported("serve DNS over TLS"));
    }
    if setup.https_port.is_some() && !kind.supports_https() {
        return Err(unsupported("serve DNS over HTTPS"));
    }
    if setup.quic_port.is_some() && !kind.supports_quic() {
        return Err(unsupported("serve DNS over QUIC"));
    }
    if setup.listen.is_empty() && !(kind.is_embedded() && setup.manifest.is_some()) {
        return Err(config("no listen address".into()));
    }
    if kind.is_recursive() {
        if !setup.zones.is_empty() && !kind.answers_local_zones() {
            return Err(unsupported(
                "serve zone files (a resolver resolves from root_hints or a manifest)",
            ));
        }
        if setup.root_hints.is_none() && setup.manifest.is_none() && setup.zones.is_empty() {
            return Err(config(
                "a resolver needs root_hints or a manifest (or zones to answer from)".into(),
            ));
        }
    } else {
        if setup.manifest.is_some() && !kind.is_embedded() {
            return Err(unsupported(
                "serve a manifest (give its zone files, or use kind ldplayer)",
            ));
        }
        if setup.zones.is_empty() && setup.manifest.is_none() {
            return Err(config("no zone file to serve".into()));
        }
    }
    if kind == ServerKind::Kresd && setup.threads.is_some_and(|t| t > 1) {
        return Err(unsupported(
            "run several threads (one kresd process is single-threaded; run one)",
        ));
    }
    if !kind.is_recursive() && (setup.validation.is_some() || setup.resolver.any()) {
        return Err(unsupported(
            "validate DNSSEC or take resolver options (it is not a resolver)",
        ));
    }
    if let Some(v) = &setup.validation {
        if v.time.is_some() && kind == ServerKind::Kresd {
            return Err(unsupported(
                "validate at another time: Debian's kresd links jemalloc, which libfaketime \
                 cannot wrap; use unbound or pdns-recursor",
            ));
        }
        if v.time.is_some() && kind == ServerKind::BindResolver {
            return Err(unsupported(
                "validate at another time: BIND has no option for it, and Debian's named does \
                 not start under libfaketime (recursive clock_gettime calls); use unbound or \
                 pdns-recursor",
            ));
        }
        for d in &v.insecure {
            validation::domain(d).map_err(|e| config(e.to_string()))?;
        }
    }
    if kind == ServerKind::Kresd && setup.resolver.aggressive_nsec == Some(false) {
        return Err(unsupported(
            "turn off aggressive use of NSEC (Knot Resolver 5 always answers from validated \
             NSEC and NSEC3 ranges)",
        ));
    }
    if kind.is_embedded() && !setup.extra.is_empty() {
        return Err(unsupported("take raw configuration lines"));
    }
    Ok(())
}

/// File descriptors a server needs besides its clients' TCP connections: zones, sockets, logs,
/// and for a resolver its own queries.
const SPARE_FILES: u64 = 4096;

/// What Unbound reserves per thread for its outgoing queries (`outgoing-range` 4096 ports,
/// `outgoing-num-tcp` 10, listening sockets); it refuses to start when the file descriptor
/// limit cannot hold these and `incoming-num-tcp` for every TCP listener of every thread.
const UNBOUND_FILES_PER_THREAD: u64 = 4096 + 10 + 32;

/// The TCP connections the server can hold and the file descriptor limit to give it:
/// `max_tcp_clients` and what it needs on top when that limit can be had, else as many
/// connections as fit under the limit there is (a container without `CAP_SYS_RESOURCE` cannot
/// go beyond its hard limit).
///
/// Unbound sets aside descriptors for `incoming-num-tcp` connections on each TCP listener
/// (each address, and each again for TLS and for DoH), all at start: there `max_tcp_clients` is what each
/// listener holds.
fn connection_budget(setup: &ServerSetup) -> (usize, u64) {
    let threads = setup.threads.unwrap_or(1).max(1) as u64;
    let (reserve, listeners) = match setup.kind {
        ServerKind::Unbound => {
            let ports =
                1 + u64::from(setup.tls_port.is_some()) + u64::from(setup.https_port.is_some());
            (
                SPARE_FILES + threads * UNBOUND_FILES_PER_THREAD,
                (setup.listen.len() as u64).max(1) * ports,
            )
        }
        _ => (SPARE_FILES, 1),
    };
    let asked = setup.max_tcp_clients.max(1) as u64;
    let wanted = asked.saturating_mul(listeners).saturating_add(reserve);
    let files = crate::process::attainable_files(wanted);
    let fit = (files.saturating_sub(reserve) / listeners).max(1);
    (asked.min(fit) as usize, files)
}

/// A zone file's origin (from its first SOA record, read with ldplayer's zone reader) and
/// absolute path, and where it repeats its SOA record (as zone transfers and dumps of them do).
fn zone_file(kind: ServerKind, path: &Path) -> Result<ZoneFile, ServerError> {
    let config = |message: String| ServerError::Config { kind, message };
    let records = read_zone_file(path, None).map_err(|e| config(format!("zone file: {e}")))?;
    let mut soas = records.iter().filter(|r| r.rtype == Rtype::SOA);
    let first = soas
        .next()
        .ok_or_else(|| config(format!("{}: no SOA record", path.display())))?;
    let main_file = first.file.clone();
    let repeated_soa_lines = soas
        .filter(|r| r.file == main_file)
        .map(|r| r.line)
        .collect();
    Ok(ZoneFile {
        origin: name_text(&first.owner),
        path: absolute(path)?,
        repeated_soa_lines,
    })
}

/// A wire-format name in presentation form, with the final dot.
fn name_text(wire: &[u8]) -> String {
    let mut text = String::new();
    ldplayer_dns::name_to_presentation(wire, &mut text);
    text
}

/// Copies the zone file `zone` to `dest` without its repeated SOA records (each from its first
/// line until its parentheses close), for servers that refuse a zone with two SOA records.
pub(crate) fn without_repeated_soa(zone: &ZoneFile, dest: &Path) -> Result<(), ServerError> {
    let text =
        std::fs::read_to_string(&zone.path).map_err(ServerError::io("cannot read", &zone.path))?;
    let mut out = String::with_capacity(text.len());
    let mut open = 0i32;
    for (i, line) in text.lines().enumerate() {
        let code = line.split(';').next().unwrap_or("");
        if open > 0 || zone.repeated_soa_lines.contains(&(i + 1)) {
            open += code.matches('(').count() as i32 - code.matches(')').count() as i32;
            open = open.max(0);
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    ldplayer_output::write(dest, out).map_err(|e| ServerError::io("cannot write", dest)(e.into()))
}

fn absolute(path: &Path) -> Result<PathBuf, ServerError> {
    std::fs::canonicalize(path).map_err(ServerError::io("cannot find", path))
}

/// What shows that the server is up: the SOA of its first zone (authoritative), `.` NS
/// (resolver, or the meta-server of a hierarchy), asked of the first listen address.
fn probe(setup: &ServerSetup, zones: &[ZoneFile]) -> Probe {
    let ip = match setup.listen.first() {
        Some(ip) if !ip.is_unspecified() => *ip,
        Some(IpAddr::V6(_)) => Ipv6Addr::LOCALHOST.into(),
        _ => Ipv4Addr::LOCALHOST.into(),
    };
    let local = setup.kind.is_recursive() && setup.manifest.is_none() && setup.root_hints.is_none();
    let (qname, authoritative) = if local {
        // A resolver answering from zones of its own, with nothing to resolve through.
        (
            zones.first().map_or(".".into(), |z| z.origin.clone()),
            false,
        )
    } else if setup.kind.is_recursive() || setup.manifest.is_some() {
        (".".to_string(), false)
    } else {
        // The embedded server puts its first zone's origin here once it has loaded it.
        (zones.first().map_or(".".into(), |z| z.origin.clone()), true)
    };
    Probe {
        addr: SocketAddr::new(ip, setup.port),
        tls_addr: setup.tls_port.map(|port| SocketAddr::new(ip, port)),
        https_addr: setup.https_port.map(|port| SocketAddr::new(ip, port)),
        qtype: if setup.kind.is_recursive() && !local {
            Rtype::NS
        } else {
            Rtype::SOA
        },
        qname,
        authoritative,
    }
}

/// Root hints made from the root zone of a manifest's hierarchy, written into `dir`.
fn write_root_hints(kind: ServerKind, views: &Views, dir: &Path) -> Result<PathBuf, ServerError> {
    let hints = crate::hints::root_hints(views).ok_or_else(|| {
        setup_error(
            kind,
            "the manifest has no root zone to make root hints from".into(),
        )
    })?;
    let path = dir.join("root.hints");
    ldplayer_output::write(&path, hints)
        .map_err(|e| ServerError::io("cannot write", &path)(e.into()))?;
    Ok(path)
}

/// A configuration error of `kind`.
fn setup_error(kind: ServerKind, message: String) -> ServerError {
    ServerError::Config { kind, message }
}

/// Loads a manifest's views for the embedded server.
pub(crate) fn load_manifest(path: &Path) -> Result<Views, ServerError> {
    Manifest::from_file(path)
        .and_then(|m| m.load())
        .map_err(|e| ServerError::Embedded(format!("manifest: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(kind: ServerKind) -> ServerSetup {
        let mut s = ServerSetup::new(
            kind,
            vec![Ipv4Addr::LOCALHOST.into()],
            "/nonexistent/work".into(),
        );
        if kind.is_recursive() {
            s.root_hints = Some("/nonexistent/hints".into());
        } else {
            s.zones = vec!["/nonexistent/zone".into()];
        }
        s
    }

    fn refusal(s: &ServerSetup) -> String {
        validate(s).expect_err("refused").to_string()
    }

    #[test]
    fn setups_a_kind_cannot_serve_are_refused_before_anything_is_written() {
        for kind in ServerKind::ALL {
            assert!(validate(&setup(kind)).is_ok(), "{kind}");
        }
        let mut s = setup(ServerKind::PdnsRecursor);
        s.zones = vec!["/nonexistent/zone".into()];
        assert!(refusal(&s).starts_with("pdns-recursor cannot serve zone files"));
        let mut s = setup(ServerKind::Kresd);
        s.root_hints = None;
        assert_eq!(
            refusal(&s),
            "kresd: a resolver needs root_hints or a manifest (or zones to answer from)"
        );
        // Unbound and kresd answer from zones of their own, with or without anything to
        // resolve through.
        for kind in [ServerKind::Unbound, ServerKind::Kresd] {
            let mut s = setup(kind);
            s.zones = vec!["/nonexistent/zone".into()];
            assert!(validate(&s).is_ok(), "{kind} with zones and hints");
            s.root_hints = None;
            assert!(validate(&s).is_ok(), "{kind} with zones alone");
        }
        let mut s = setup(ServerKind::Kresd);
        s.threads = Some(2);
        assert!(refusal(&s).starts_with("kresd cannot run several threads"));
        let mut s = setup(ServerKind::PdnsRecursor);
        s.tls_port = Some(853);
        assert_eq!(refusal(&s), "pdns-recursor cannot serve DNS over TLS");
        let mut s = setup(ServerKind::Nsd);
        s.https_port = Some(443);
        assert_eq!(refusal(&s), "nsd cannot serve DNS over HTTPS");
        let mut s = setup(ServerKind::Unbound);
        s.quic_port = Some(853);
        assert_eq!(refusal(&s), "unbound cannot serve DNS over QUIC");
        let mut s = setup(ServerKind::Nsd);
        s.zones.clear();
        assert_eq!(refusal(&s), "nsd: no zone file to serve");
        let mut s = setup(ServerKind::Bind);
        s.manifest = Some("/nonexistent/manifest".into());
        assert!(refusal(&s).starts_with("bind cannot serve a manifest"));
        let mut s = setup(ServerKind::Knot);
        s.work_dir = "relative".into();
        assert!(refusal(&s).contains("not an absolute path"));
        let mut s = setup(ServerKind::BindResolver);
        s.validation = Some(crate::validation::Validation {
            anchor: crate::validation::TrustAnchor::File("/nonexistent/anchor".into()),
            time: Some(1_579_046_400),
            insecure: Vec::new(),
        });
        assert!(
            refusal(&s).starts_with("bind-resolver cannot validate at another time"),
            "{}",
            refusal(&s)
        );
        let mut s = setup(ServerKind::Ldplayer);
        s.listen.clear();
        assert_eq!(refusal(&s), "ldplayer: no listen address");
        s.zones.clear();
        s.manifest = Some("/nonexistent/manifest".into());
        assert!(
            validate(&s).is_ok(),
            "a manifest is served on every address"
        );
    }
}
