//! What the servers' tests share: finding the programs, running `kdig`, making a query.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use ldplayer_servers::ServerKind;
use ldplayer_testbed::prerequisite;

/// `kdig`, which the tests ask with; `None` only when skipping is allowed.
pub fn kdig() -> Option<PathBuf> {
    prerequisite::tool("kdig", "knot-dnsutils")
}

/// Whether `kind`'s program is installed (the embedded one always is); false only when
/// skipping is allowed.
pub fn server_installed(kind: ServerKind) -> bool {
    kind.is_embedded() || prerequisite::tool(kind.program(), kind.debian_package()).is_some()
}

/// Runs `program` with `args`; its standard output and error together.
pub fn run<'a>(program: &Path, args: impl IntoIterator<Item = &'a str>) -> String {
    let args: Vec<&str> = args.into_iter().collect();
    let out = Command::new(program)
        .args(args.iter().map(OsStr::new))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\n{text}",
        program.display(),
        out.status
    );
    text
}

/// A query for `name` (presentation form) of type `qtype`, without recursion.
pub fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    q.extend(ldplayer_dns::name_from_presentation(name).expect("a name"));
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    q
}
