//! The servers an experiment can run, by the names plans use, with the program and the Debian
//! package behind each, so that a missing program is reported with the command that installs it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::ServerError;

/// A DNS server an experiment can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// NLnet Labs NSD, authoritative (`nsd`).
    Nsd,
    /// CZ.NIC Knot DNS, authoritative (`knotd`).
    Knot,
    /// ISC BIND 9, used here as an authoritative server (`named`).
    Bind,
    /// NLnet Labs Unbound, recursive (`unbound`).
    Unbound,
    /// CZ.NIC Knot Resolver, recursive (`kresd`).
    Kresd,
    /// PowerDNS Recursor (`pdns_recursor`).
    PdnsRecursor,
    /// ISC BIND 9 as a recursive resolver (`named`).
    BindResolver,
    /// ldplayer's own authoritative meta-server, run inside this process.
    Ldplayer,
}

impl ServerKind {
    /// Every kind, authoritative ones first.
    pub const ALL: [ServerKind; 8] = [
        ServerKind::Nsd,
        ServerKind::Knot,
        ServerKind::Bind,
        ServerKind::Ldplayer,
        ServerKind::Unbound,
        ServerKind::Kresd,
        ServerKind::PdnsRecursor,
        ServerKind::BindResolver,
    ];

    /// The name plans use (`kind = "pdns-recursor"`), as serde spells it.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Nsd => "nsd",
            ServerKind::Knot => "knot",
            ServerKind::Bind => "bind",
            ServerKind::Unbound => "unbound",
            ServerKind::Kresd => "kresd",
            ServerKind::PdnsRecursor => "pdns-recursor",
            ServerKind::BindResolver => "bind-resolver",
            ServerKind::Ldplayer => "ldplayer",
        }
    }

    /// The program that runs it; `ldplayer` for the embedded server, which needs none.
    pub fn program(self) -> &'static str {
        match self {
            ServerKind::Nsd => "nsd",
            ServerKind::Knot => "knotd",
            ServerKind::Bind => "named",
            ServerKind::Unbound => "unbound",
            ServerKind::Kresd => "kresd",
            ServerKind::PdnsRecursor => "pdns_recursor",
            ServerKind::BindResolver => "named",
            ServerKind::Ldplayer => "ldplayer",
        }
    }

    /// The Debian package that has [`program`](Self::program) (`ldplayer` itself for the
    /// embedded server).
    pub fn debian_package(self) -> &'static str {
        match self {
            ServerKind::Nsd => "nsd",
            ServerKind::Knot => "knot",
            ServerKind::Bind => "bind9",
            ServerKind::Unbound => "unbound",
            ServerKind::Kresd => "knot-resolver",
            ServerKind::PdnsRecursor => "pdns-recursor",
            ServerKind::BindResolver => "bind9",
            ServerKind::Ldplayer => "ldplayer",
        }
    }

    /// Whether it resolves recursively from root hints rather than serving zone files. BIND
    /// does both: `bind` serves zone files, `bind-resolver` resolves.
    pub fn is_recursive(self) -> bool {
        matches!(
            self,
            ServerKind::Unbound
                | ServerKind::Kresd
                | ServerKind::PdnsRecursor
                | ServerKind::BindResolver
        )
    }

    /// Whether a resolver of this kind answers from zone files of its own (`zones`), beside
    /// or instead of resolving: Unbound as `auth-zone`s, Knot Resolver through a policy rule
    /// per zone. A capacity study then measures the resolver's own answering, with no
    /// upstream behind it.
    pub fn answers_local_zones(self) -> bool {
        matches!(self, ServerKind::Unbound | ServerKind::Kresd)
    }

    /// Whether it serves DNS over TLS (RFC 7858): the versions in Debian 12 of NSD (4.6), BIND
    /// (9.18), Unbound (1.17) and Knot Resolver (5.6) do, and so does ldplayer's server; Knot
    /// DNS 3.2 and PowerDNS Recursor 4.8 do not.
    pub fn supports_tls(self) -> bool {
        matches!(
            self,
            ServerKind::Nsd
                | ServerKind::Bind
                | ServerKind::BindResolver
                | ServerKind::Unbound
                | ServerKind::Kresd
                | ServerKind::Ldplayer
        )
    }

    /// Whether it serves DNS over HTTPS (RFC 8484, HTTP/2): BIND 9.18, Unbound 1.17 (built
    /// with nghttp2), Knot Resolver 5.6 (`doh2`) and ldplayer's server do.
    pub fn supports_https(self) -> bool {
        matches!(
            self,
            ServerKind::Bind
                | ServerKind::BindResolver
                | ServerKind::Unbound
                | ServerKind::Kresd
                | ServerKind::Ldplayer
        )
    }

    /// Whether it serves DNS over QUIC (RFC 9250): only ldplayer's server here, since Debian
    /// 12's Knot DNS 3.2 is built without QUIC, and Unbound has it from 1.22 and BIND not yet.
    pub fn supports_quic(self) -> bool {
        self == ServerKind::Ldplayer
    }

    /// Whether it runs in this process rather than as a program.
    pub fn is_embedded(self) -> bool {
        self == ServerKind::Ldplayer
    }

    /// Where the program is: the first match on `PATH`, then in `/usr/sbin` and `/usr/bin`
    /// (daemons live in `sbin`, which a user's `PATH` may lack). For the embedded server, the
    /// running executable. A missing program is [`ServerError::Missing`], naming the package.
    pub fn find_program(self) -> Result<PathBuf, ServerError> {
        if self.is_embedded() {
            return std::env::current_exe().map_err(|source| ServerError::Io {
                what: "the running executable".into(),
                source,
            });
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let fallback = ["/usr/sbin", "/usr/bin"].map(PathBuf::from);
        self.find_program_in(std::env::split_paths(&path).chain(fallback))
    }

    /// The program in the first of `dirs` that has it, else [`ServerError::Missing`].
    pub fn find_program_in(
        self,
        dirs: impl IntoIterator<Item = PathBuf>,
    ) -> Result<PathBuf, ServerError> {
        dirs.into_iter()
            .map(|dir| dir.join(self.program()))
            .find(|candidate| is_executable(candidate))
            .ok_or(ServerError::Missing {
                program: self.program(),
                package: self.debian_package(),
            })
    }
}

/// The executable `name` in `PATH` (or /usr/sbin, /usr/bin), if any.
pub(crate) fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let fallback = ["/usr/sbin", "/usr/bin"].map(PathBuf::from);
    std::env::split_paths(&path)
        .chain(fallback)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A regular file with an execute bit.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no [`ServerKind`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown server kind {name:?} (one of {})", ServerKind::ALL.map(ServerKind::name).join(", "))]
pub struct UnknownKind {
    /// The name given.
    pub name: String,
}

impl FromStr for ServerKind {
    type Err = UnknownKind;

    /// Reads a plan name (`nsd`, `pdns-recursor`, ...).
    fn from_str(s: &str) -> Result<Self, UnknownKind> {
        ServerKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKind { name: s.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_match_serde() {
        for kind in ServerKind::ALL {
            assert_eq!(kind.name().parse::<ServerKind>(), Ok(kind));
            assert_eq!(kind.to_string(), kind.name());
            let json = serde_json::to_string(&kind).expect("serialize");
            assert_eq!(json, format!("\"{}\"", kind.name()));
        }
        let err = "powerdns".parse::<ServerKind>().expect_err("unknown");
        assert!(err.to_string().contains("pdns-recursor"), "{err}");
    }

    #[test]
    fn a_missing_program_names_the_debian_package() {
        let empty = tempfile::tempdir().expect("scratch directory");
        for kind in ServerKind::ALL.into_iter().filter(|k| !k.is_embedded()) {
            let err = kind
                .find_program_in([empty.path().to_path_buf()])
                .expect_err("nothing is installed in an empty directory");
            assert!(matches!(err, ServerError::Missing { .. }), "{err:?}");
            assert_eq!(
                err.to_string(),
                format!(
                    "{} is not installed: apt-get install {}",
                    kind.program(),
                    kind.debian_package()
                )
            );
        }
        let named = ServerKind::Bind.find_program_in([empty.path().to_path_buf()]);
        assert_eq!(
            named.expect_err("missing").to_string(),
            "named is not installed: apt-get install bind9"
        );
    }

    #[test]
    fn an_installed_program_is_found_in_sbin_without_path() {
        let Some(nsd) = ldplayer_testbed::prerequisite::tool("nsd", "nsd") else {
            return;
        };
        let found = ServerKind::Nsd
            .find_program_in(nsd.parent().map(std::path::Path::to_path_buf))
            .expect("nsd is installed");
        assert_eq!(found, nsd);
    }
}
