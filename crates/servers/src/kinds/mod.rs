//! One configuration writer per external server: each turns a [`Prepared`] setup into a
//! configuration file in the work directory and the command line that runs the server in the
//! foreground with it, plus the server's own checker when it has one.

mod bind;
mod bind_resolver;
mod knot;
mod kresd;
mod nsd;
mod pdns;
mod unbound;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::setup::Prepared;
use crate::{ServerError, ServerKind};

/// How to run a configured server.
#[derive(Debug)]
pub(crate) struct Launch {
    /// The configuration file written.
    pub config: PathBuf,
    /// The arguments of the server's program.
    pub args: Vec<OsString>,
    /// The checker to run on the configuration first, if the server has one.
    pub check: Option<Check>,
    /// Run the program under libfaketime from this moment (`faketime -f` form), for a
    /// resolver that validates at another time and has no option for it.
    pub faketime: Option<String>,
}

/// A configuration checker (`nsd-checkconf`, `named-checkconf`, ...).
#[derive(Debug)]
pub(crate) struct Check {
    /// Its program.
    pub program: &'static str,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// Writes the configuration of `p`'s kind and says how to run it.
pub(crate) fn launch(p: &Prepared) -> Result<Launch, ServerError> {
    match p.setup.kind {
        ServerKind::Nsd => nsd::launch(p),
        ServerKind::Knot => knot::launch(p),
        ServerKind::Bind => bind::launch(p),
        ServerKind::BindResolver => bind_resolver::launch(p),
        ServerKind::Unbound => unbound::launch(p),
        ServerKind::Kresd => kresd::launch(p),
        ServerKind::PdnsRecursor => pdns::launch(p),
        ServerKind::Ldplayer => Err(ServerError::Unsupported {
            kind: ServerKind::Ldplayer,
            what: "run as a separate program (it runs in process)".into(),
        }),
    }
}

/// The arguments that make `kind`'s program print its version.
pub(crate) fn version_args(kind: ServerKind) -> &'static [&'static str] {
    match kind {
        ServerKind::Nsd | ServerKind::Bind | ServerKind::BindResolver => &["-v"],
        ServerKind::Unbound => &["-V"],
        _ => &["--version"],
    }
}

/// The product and version out of what `kind`'s program printed for [`version_args`]
/// (`NSD 4.6.1`, `Knot DNS 3.2.6`, `BIND 9.18.49-1~deb12u3-Debian`, `Unbound 1.17.1`,
/// `Knot Resolver 5.6.0`, `PowerDNS Recursor 4.8.8`): the version only, without the words
/// around it (`version`, a build's edition, copyright, a log line's date). What does not read
/// as the expected line is returned as its first line with a digit, trimmed, rather than lost.
pub(crate) fn version_line(kind: ServerKind, printed: &str) -> String {
    let line = printed
        .lines()
        .map(str::trim)
        .find(|l| l.chars().any(|c| c.is_ascii_digit()))
        .unwrap_or("");
    let (product, marker) = match kind {
        // "NSD version 4.6.1"
        ServerKind::Nsd => ("NSD", "NSD version "),
        // "knotd (Knot DNS), version 3.2.6"
        ServerKind::Knot => ("Knot DNS", "version "),
        // "BIND 9.18.49-1~deb12u3-Debian (Extended Support Version) <id:>"
        ServerKind::Bind | ServerKind::BindResolver => ("BIND", "BIND "),
        // "Version 1.17.1"
        ServerKind::Unbound => ("Unbound", "Version "),
        // "Knot Resolver, version 5.6.0"
        ServerKind::Kresd => ("Knot Resolver", "version "),
        // "Nov 23 17:18:23 PowerDNS Recursor 4.8.8 (C) 2001-2022 PowerDNS.COM BV"
        ServerKind::PdnsRecursor => ("PowerDNS Recursor", "PowerDNS Recursor "),
        ServerKind::Ldplayer => return line.to_string(),
    };
    let version = line
        .find(marker)
        .map(|at| &line[at + marker.len()..])
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()));
    match version {
        Some(version) => format!("{product} {version}"),
        None => line.to_string(),
    }
}

/// Writes `text` to `name` in the work directory; returns the path.
fn write_config(p: &Prepared, name: &str, text: &str) -> Result<PathBuf, ServerError> {
    let path = p.dir().join(name);
    ldplayer_output::write(&path, text)
        .map_err(|e| ServerError::io("cannot write", &path)(e.into()))?;
    Ok(path)
}

/// A path as configuration text.
fn show(path: &Path) -> String {
    path.display().to_string()
}

/// Arguments from strings and paths.
fn args<const N: usize>(items: [&dyn AsRef<std::ffi::OsStr>; N]) -> Vec<OsString> {
    items.iter().map(|a| a.as_ref().to_os_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each program printed for its version option, as Debian 12's packages print it.
    const PRINTED: [(ServerKind, &str, &str); 6] = [
        (
            ServerKind::Nsd,
            "NSD version 4.6.1\nWritten by NLnet Labs.\n\nConfigure line: --build=x86_64-linux-gnu \
             --prefix=/usr\nEvent loop: libevent 2.1.12-stable (uses epoll)\nLinked with OpenSSL \
             3.0.19 27 Jan 2026\n\nCopyright (C) 2001-2020 NLnet Labs.\n",
            "NSD 4.6.1",
        ),
        (
            ServerKind::Knot,
            "knotd (Knot DNS), version 3.2.6\n",
            "Knot DNS 3.2.6",
        ),
        (
            ServerKind::Bind,
            "BIND 9.18.49-1~deb12u3-Debian (Extended Support Version) <id:>\n",
            "BIND 9.18.49-1~deb12u3-Debian",
        ),
        (
            ServerKind::Unbound,
            "Version 1.17.1\n\nConfigure line: --build=x86_64-linux-gnu --prefix=/usr\nLinked \
             libs: libevent 2.1.12-stable (it uses epoll), OpenSSL 3.0.19 27 Jan 2026\n",
            "Unbound 1.17.1",
        ),
        (
            ServerKind::Kresd,
            "Knot Resolver, version 5.6.0\n",
            "Knot Resolver 5.6.0",
        ),
        (
            ServerKind::PdnsRecursor,
            "Nov 27 09:19:04 PowerDNS Recursor 4.8.8 (C) 2001-2022 PowerDNS.COM BV\nNov 27 \
             09:19:04 Using 64-bits mode. Built using gcc 12.2.0.\n",
            "PowerDNS Recursor 4.8.8",
        ),
    ];

    #[test]
    fn the_version_alone_is_picked_out_of_what_programs_print() {
        for (kind, printed, version) in PRINTED {
            assert_eq!(version_line(kind, printed), version, "{kind:?}");
        }
    }

    #[test]
    fn an_unexpected_version_text_is_kept_rather_than_lost() {
        assert_eq!(
            version_line(ServerKind::Nsd, "nsd 5.0 (something new)\n"),
            "nsd 5.0 (something new)"
        );
        assert_eq!(version_line(ServerKind::Bind, "no digits here\n"), "");
    }
}
