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

/// The version line out of what `kind`'s program printed for [`version_args`].
pub(crate) fn version_line(kind: ServerKind, printed: &str) -> String {
    let line = printed
        .lines()
        .map(str::trim)
        .find(|l| l.chars().any(|c| c.is_ascii_digit()))
        .unwrap_or("");
    match kind {
        // "Nov 23 17:18:23 PowerDNS Recursor 4.8.8 (C) 2001-2022 PowerDNS.COM BV"
        ServerKind::PdnsRecursor => {
            let from = line.find("PowerDNS").map_or(line, |i| &line[i..]);
            from.split(" (C)").next().unwrap_or(from).to_string()
        }
        // "Version 1.17.1"
        ServerKind::Unbound => format!("unbound {}", line.trim_start_matches("Version ")),
        _ => line.to_string(),
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

    #[test]
    fn version_lines_are_picked_out_of_what_programs_print() {
        assert_eq!(
            version_line(
                ServerKind::PdnsRecursor,
                "Nov 23 17:18:23 PowerDNS Recursor 4.8.8 (C) 2001-2022 PowerDNS.COM BV\n"
            ),
            "PowerDNS Recursor 4.8.8"
        );
        assert_eq!(
            version_line(ServerKind::Unbound, "Version 1.17.1\n\nConfigure line: x\n"),
            "unbound 1.17.1"
        );
        assert_eq!(
            version_line(
                ServerKind::Nsd,
                "NSD version 4.6.1\nWritten by NLnet Labs.\n"
            ),
            "NSD version 4.6.1"
        );
    }
}
