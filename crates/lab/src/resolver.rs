//! Real recursive resolvers (Debian packages), configured to start from the emulated root: the
//! lab's root hints, DNSSEC validation only when asked for with a trust anchor of the emulated
//! root (the Internet's would not do) and optionally a moment to validate at, listening on
//! 127.0.0.1:53 of the resolver side, cold cache. Nameservers may
//! sit at loopback addresses other than 127.0.0.1 (recorded hierarchies use them; the lab
//! routes them to the server side, see [`crate::netns`]), so unbound may query them.

use std::fmt;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use ldplayer_dns::Rtype;
use ldplayer_system::CommandError;

use crate::{client, validation, LabError};

/// Which resolver runs in the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolverKind {
    /// NLnet Labs unbound (`unbound`).
    Unbound,
    /// CZ.NIC Knot Resolver (`kresd`).
    KnotResolver,
    /// ISC BIND 9 (`named`) as a resolver.
    Bind9,
    /// PowerDNS Recursor (`pdns_recursor`).
    PdnsRecursor,
}

impl ResolverKind {
    /// Every kind, by its command-line name.
    pub const ALL: [(&'static str, ResolverKind); 4] = [
        ("unbound", ResolverKind::Unbound),
        ("knot-resolver", ResolverKind::KnotResolver),
        ("bind9", ResolverKind::Bind9),
        ("pdns-recursor", ResolverKind::PdnsRecursor),
    ];

    /// The Debian package that has it.
    pub fn package(self) -> &'static str {
        match self {
            ResolverKind::Unbound => "unbound",
            ResolverKind::KnotResolver => "knot-resolver",
            ResolverKind::Bind9 => "bind9",
            ResolverKind::PdnsRecursor => "pdns-recursor",
        }
    }

    /// Why this kind cannot validate at a moment other than now, if it cannot: unbound takes
    /// the moment as an option and PowerDNS Recursor runs under libfaketime, but Debian's BIND
    /// and Knot Resolver link jemalloc, which libfaketime cannot wrap (it returns errors from
    /// `clock_gettime` during start-up and they never answer; libfaketime issue #130).
    pub fn cannot_validate_at_another_time(self) -> Option<String> {
        match self {
            ResolverKind::Unbound | ResolverKind::PdnsRecursor => None,
            ResolverKind::KnotResolver | ResolverKind::Bind9 => Some(format!(
                "{self} cannot validate at another time (--time): Debian's {} links jemalloc, \
                 which libfaketime cannot wrap; use unbound or pdns-recursor",
                self.program()
            )),
        }
    }

    fn program(self) -> &'static str {
        match self {
            ResolverKind::Unbound => "unbound",
            ResolverKind::KnotResolver => "kresd",
            ResolverKind::Bind9 => "named",
            ResolverKind::PdnsRecursor => "pdns_recursor",
        }
    }
}

impl FromStr for ResolverKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ResolverKind::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let names: Vec<&str> = ResolverKind::ALL.iter().map(|(n, _)| *n).collect();
                format!("unknown resolver {s:?} (one of {})", names.join(", "))
            })
    }
}

impl fmt::Display for ResolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ResolverKind::ALL
            .iter()
            .find(|(_, k)| k == self)
            .map(|(n, _)| *n)
            .unwrap_or("?");
        f.write_str(name)
    }
}

/// Where a resolver answers DNS over TLS and DNS over HTTPS, and what its clients trust.
#[derive(Debug, Clone)]
pub struct Encrypted {
    /// DNS over TLS.
    pub tls: SocketAddr,
    /// DNS over HTTPS (HTTP/2, `/dns-query`).
    pub https: SocketAddr,
    /// The CA certificate its certificate is signed by.
    pub ca: PathBuf,
}

/// The port of DNS over TLS.
const TLS_PORT: u16 = 853;
/// The port of DNS over HTTPS.
const HTTPS_PORT: u16 = 443;

/// A started resolver; stopped (and waited for) on drop.
#[derive(Debug)]
pub struct RunningResolver {
    child: Child,
    /// Where it answers.
    pub addr: SocketAddr,
    /// Its log file.
    pub log: PathBuf,
    /// Its DNS over TLS and HTTPS, when asked for.
    pub encrypted: Option<Encrypted>,
}

impl Drop for RunningResolver {
    fn drop(&mut self) {
        // The whole group: the resolver, and faketime's child when it runs under faketime.
        let group = self.child.id();
        let _ =
            ldplayer_system::process::signal_group(group, ldplayer_system::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut ended = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                ended = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Whatever of the group is left.
        let _ =
            ldplayer_system::process::signal_group(group, ldplayer_system::process::Signal::KILL);
        if !ended {
            let _ = self.child.wait();
        }
    }
}

/// How a started resolver validates: the anchor file (DS or DNSKEY records of `.`) and the
/// moment (Unix seconds) it validates at, when not now.
#[derive(Debug, Clone, Copy)]
pub struct Validating<'a> {
    /// DS or DNSKEY records of `.` in zone-file format.
    pub anchor: &'a Path,
    /// The resolver's clock (Unix seconds), when not now.
    pub time: Option<i64>,
    /// Domains not validated (negative trust anchors), with their final dots.
    pub insecure: &'a [String],
}

/// Unbound's `dnstap:` section: its upstream queries and responses, to the Unix socket
/// `socket` (bi-directional Frame Streams).
fn unbound_dnstap(socket: &Path) -> String {
    format!(
        "dnstap:\n  dnstap-enable: yes\n  dnstap-socket-path: \"{}\"\n  dnstap-bidirectional: yes\n  \
         dnstap-send-identity: yes\n  dnstap-send-version: yes\n  \
         dnstap-log-resolver-query-messages: yes\n  dnstap-log-resolver-response-messages: yes\n",
        socket.display()
    )
}

/// Writes `kind`'s configuration into `dir` (root hints from `hints`), starts it in the
/// foreground on 127.0.0.1:53 (and with `tls`, DNS over TLS on 853 and DNS over HTTPS on 443
/// with that certificate; with `validating`, validating DNSSEC; with `dnstap`, Unbound sending
/// its upstream queries and responses as dnstap to that Unix socket), and waits until it
/// answers (up to `wait`).
pub fn start(
    kind: ResolverKind,
    dir: &Path,
    hints: &Path,
    wait: Duration,
    tls: Option<&ldplayer_servers::TlsFiles>,
    validating: Option<Validating<'_>>,
    dnstap: Option<&Path>,
) -> Result<RunningResolver, LabError> {
    if tls.is_some() && kind == ResolverKind::PdnsRecursor {
        return Err(LabError::Input(
            "PowerDNS Recursor 4.8 serves neither DNS over TLS nor DNS over HTTPS".into(),
        ));
    }
    // What DNS over TLS and HTTPS add to the configuration: before its main section (BIND's
    // `tls` block), and inside it (the listeners; for Unbound also room for a trace's clients,
    // whose connections stay open: its default of 10 per thread queued the others' handshakes
    // for seconds).
    let encrypted_config = |t: &ldplayer_servers::TlsFiles| match kind {
        ResolverKind::Unbound => (
            String::new(),
            format!(
                "  interface: 127.0.0.1@{TLS_PORT}\n  interface: 127.0.0.1@{HTTPS_PORT}\n  \
             tls-port: {TLS_PORT}\n  https-port: {HTTPS_PORT}\n  http-endpoint: \"/dns-query\"\n  \
             http-notls-downstream: no\n  tls-service-key: \"{}\"\n  tls-service-pem: \"{}\"\n  \
             incoming-num-tcp: 1000\n",
                t.key.display(),
                t.cert.display()
            ),
        ),
        ResolverKind::KnotResolver => (
            String::new(),
            format!(
                "net.tls('{}', '{}')\nnet.listen('127.0.0.1', {TLS_PORT}, {{ kind = 'tls' }})\n\
             net.listen('127.0.0.1', {HTTPS_PORT}, {{ kind = 'doh2' }})\n",
                t.cert.display(),
                t.key.display()
            ),
        ),
        // BIND's built-in `default` HTTP endpoint serves `/dns-query`.
        ResolverKind::Bind9 => (
            format!(
                "tls lab-tls {{ key-file \"{}\"; cert-file \"{}\"; }};\n",
                t.key.display(),
                t.cert.display()
            ),
            format!(
                "  listen-on port {TLS_PORT} tls lab-tls {{ 127.0.0.1; }};\n  \
                 listen-on port {HTTPS_PORT} tls lab-tls http default {{ 127.0.0.1; }};\n"
            ),
        ),
        ResolverKind::PdnsRecursor => (String::new(), String::new()),
    };
    let (before, encrypted) = tls.map(encrypted_config).unwrap_or_default();
    let d = dir.display();
    let h = hints.display();
    let log = dir.join(format!("{kind}.log"));
    if let (Some(why), Some(_)) = (
        kind.cannot_validate_at_another_time(),
        validating.and_then(|v| v.time),
    ) {
        return Err(LabError::Input(why));
    }
    // Unbound takes the moment as an option; the others run under libfaketime.
    let faketime = match validating.and_then(|v| v.time) {
        Some(t) if kind != ResolverKind::Unbound => Some(validation::faketime_spec(t)?),
        _ => None,
    };
    let mut cmd = match &faketime {
        Some(spec) => {
            let mut c = Command::new("faketime");
            c.arg("-f").arg(spec).arg(kind.program());
            // Only the calendar clock moves: the event loops (libuv in kresd, BIND's timers)
            // keep a monotonic clock that runs as it does, or they stall.
            c.env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
            c
        }
        None => Command::new(kind.program()),
    };
    match kind {
        ResolverKind::Unbound => {
            let conf = dir.join("unbound.conf");
            let dnssec = match validating {
                None => "  module-config: \"iterator\"\n".to_string(),
                Some(v) => {
                    let mut c = format!(
                        "  module-config: \"validator iterator\"\n  trust-anchor-file: \"{}\"\n  \
                         val-log-level: 2\n",
                        v.anchor.display()
                    );
                    if let Some(t) = v.time {
                        c.push_str(&format!(
                            "  val-override-date: \"{}\"\n",
                            validation::unbound_date(t)?
                        ));
                    }
                    for d in v.insecure {
                        c.push_str(&format!("  domain-insecure: \"{d}\"\n"));
                    }
                    c
                }
            };
            write(
                &conf,
                &format!(
                    "server:\n  interface: 127.0.0.1\n  port: 53\n  do-ip6: yes\n  root-hints: \"{h}\"\n\
                     \x20 username: \"\"\n  chroot: \"\"\n  directory: \"{d}\"\n  pidfile: \"\"\n\
                     \x20 use-syslog: no\n  logfile: \"{}\"\n  verbosity: 1\n  num-threads: 1\n\
                     {dnssec}  access-control: 127.0.0.0/8 allow\n\
                     \x20 so-reuseport: no\n  harden-referral-path: no\n  prefetch: no\n\
                     \x20 do-not-query-localhost: no\n{encrypted}\
                     remote-control:\n  control-enable: no\n{}",
                    log.display(),
                    dnstap.map(unbound_dnstap).unwrap_or_default()
                ),
            )?;
            cmd.arg("-d").arg("-c").arg(conf);
        }
        ResolverKind::KnotResolver => {
            let conf = dir.join("kresd.conf");
            let hints_lua = hints_to_lua(hints)?;
            let anchors = match validating {
                None => "trust_anchors.remove('.')\n".to_string(),
                Some(v) => {
                    let mut c = format!(
                        "trust_anchors.remove('.')\ntrust_anchors.add_file('{}', true)\n",
                        v.anchor.display()
                    );
                    if !v.insecure.is_empty() {
                        let list: Vec<String> =
                            v.insecure.iter().map(|d| format!("'{d}'")).collect();
                        c.push_str(&format!(
                            "trust_anchors.set_insecure({{ {} }})\n",
                            list.join(", ")
                        ));
                    }
                    c
                }
            };
            write(
                &conf,
                &format!(
                    "net.listen('127.0.0.1', 53, {{ kind = 'dns' }})\n\
                     modules.unload('ta_signal_query')\nmodules.unload('priming')\n\
                     modules.unload('detect_time_skew')\n{anchors}\
                     modules.load('hints > iterate')\nhints.root({{ {hints_lua} }})\n\
                     cache.size = 10 * MB\n{encrypted}"
                ),
            )?;
            cmd.arg("-n").arg("-c").arg(conf).arg(dir);
        }
        ResolverKind::Bind9 => {
            let conf = dir.join("named.conf");
            let (dnssec, anchors, except) = match validating {
                None => ("no", String::new(), String::new()),
                Some(v) => {
                    let except = if v.insecure.is_empty() {
                        String::new()
                    } else {
                        let list: Vec<String> =
                            v.insecure.iter().map(|d| format!("\"{d}\"; ")).collect();
                        format!("  validate-except {{ {}}};\n", list.concat())
                    };
                    ("yes", validation::bind_trust_anchors(v.anchor)?, except)
                }
            };
            write(
                &conf,
                &format!(
                    "{before}{anchors}options {{\n  directory \"{d}\";\n  listen-on port 53 {{ 127.0.0.1; }};\n{encrypted}\
                     \x20 listen-on-v6 {{ none; }};\n  recursion yes;\n  allow-query {{ any; }};\n\
                     \x20 dnssec-validation {dnssec};\n{except}  pid-file none;\n  qname-minimization relaxed;\n}};\n\
                     zone \".\" {{ type hint; file \"{h}\"; }};\n"
                ),
            )?;
            cmd.args(["-g", "-n", "1", "-c"]).arg(conf);
        }
        ResolverKind::PdnsRecursor => {
            cmd.arg(format!("--config-dir={d}"))
                .arg(format!("--socket-dir={d}"))
                .arg(format!("--hint-file={h}"))
                .args([
                    "--local-address=127.0.0.1",
                    "--local-port=53",
                    "--daemon=no",
                    "--write-pid=no",
                    "--threads=1",
                    "--setuid=",
                    "--setgid=",
                    "--disable-syslog",
                    // Emulated nameservers may sit at private or documentation addresses.
                    "--dont-query=",
                    "--query-local-address=0.0.0.0, ::",
                ]);
            match validating {
                None => {
                    cmd.arg("--dnssec=off");
                }
                Some(v) => {
                    // Its trust anchors are DS records, set in its Lua configuration.
                    let lua = dir.join("recursor.lua");
                    let mut text = validation::pdns_trust_anchors(v.anchor)?;
                    for d in v.insecure {
                        text.push_str(&format!("addNTA('{d}')\n"));
                    }
                    write(&lua, &text)?;
                    cmd.arg("--dnssec=validate")
                        .arg(format!("--lua-config-file={}", lua.display()));
                }
            }
            write(&dir.join("recursor.conf"), "")?;
        }
    }
    let log_file = ldplayer_output::create_direct(&log).map_err(|e| LabError::Io(e.into()))?;
    let err_file = log_file.try_clone().map_err(LabError::Io)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(err_file)
        // A group of its own, stopped whole: `faketime` runs the resolver as its child, and
        // stopping faketime alone left the resolver running.
        .process_group(0)
        .spawn()
        .map_err(|e| {
            let program = if faketime.is_some() {
                format!(
                    "faketime {} (apt-get install faketime {})",
                    kind.program(),
                    kind.package()
                )
            } else {
                format!("{} (apt-get install {})", kind.program(), kind.package())
            };
            CommandError::spawn(program, e)
        })?;
    let mut r = RunningResolver {
        child,
        addr: ([127, 0, 0, 1], 53).into(),
        log,
        encrypted: tls.map(|t| Encrypted {
            tls: ([127, 0, 0, 1], TLS_PORT).into(),
            https: ([127, 0, 0, 1], HTTPS_PORT).into(),
            ca: t.ca.clone(),
        }),
    };
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = r.child.try_wait() {
            return Err(CommandError::failed(
                format!("{kind} ({status})"),
                std::fs::read_to_string(&r.log).unwrap_or_default(),
            )
            .into());
        }
        // Any answer (even SERVFAIL while the servers are still coming up) shows it listens;
        // its TLS and HTTPS ports accept connections.
        let encrypted_up = r.encrypted.as_ref().is_none_or(|e| {
            [e.tls, e.https].iter().all(|a| {
                std::net::TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok()
            })
        });
        if encrypted_up
            && client::resolve(
                r.addr,
                "localhost.",
                Rtype::A,
                false,
                Duration::from_millis(200),
            )
            .is_ok()
        {
            return Ok(r);
        }
        if start.elapsed() > wait {
            return Err(LabError::Timeout(format!("{kind} to answer on {}", r.addr)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn write(path: &Path, text: &str) -> Result<(), LabError> {
    ldplayer_output::write(path, text).map_err(|e| LabError::Io(e.into()))
}

/// Root hints (`named.root` format) as a Lua table for kresd: `['name.'] = { 'addr', ... }`.
fn hints_to_lua(hints: &Path) -> Result<String, LabError> {
    let text = std::fs::read_to_string(hints).map_err(LabError::Io)?;
    Ok(ldplayer_zone::hints::hints_as_lua(&text))
}
