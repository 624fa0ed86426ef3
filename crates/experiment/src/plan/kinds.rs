//! The named choices of a plan: server kinds, transports, synthetic workloads.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The DNS server a run replays against, by the names of `[server] kind`.
///
/// The same names as `ldplayer_servers::ServerKind`; convert by [`ServerKind::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// NSD, authoritative.
    Nsd,
    /// Knot DNS, authoritative.
    Knot,
    /// BIND 9, authoritative here.
    Bind,
    /// Unbound, recursive.
    Unbound,
    /// Knot Resolver, recursive.
    Kresd,
    /// PowerDNS Recursor, recursive.
    PdnsRecursor,
    /// ldplayer's own server (`ldplayer serve`): nothing to install.
    Ldplayer,
}

impl ServerKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [ServerKind; 7] = [
        ServerKind::Nsd,
        ServerKind::Knot,
        ServerKind::Bind,
        ServerKind::Unbound,
        ServerKind::Kresd,
        ServerKind::PdnsRecursor,
        ServerKind::Ldplayer,
    ];

    /// The name in plans (`pdns-recursor`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Nsd => "nsd",
            ServerKind::Knot => "knot",
            ServerKind::Bind => "bind",
            ServerKind::Unbound => "unbound",
            ServerKind::Kresd => "kresd",
            ServerKind::PdnsRecursor => "pdns-recursor",
            ServerKind::Ldplayer => "ldplayer",
        }
    }

    /// Whether the kind resolves recursively, and so needs a hierarchy (a `manifest`) behind
    /// it rather than zones of its own.
    pub fn is_recursive(self) -> bool {
        matches!(
            self,
            ServerKind::Unbound | ServerKind::Kresd | ServerKind::PdnsRecursor
        )
    }

    /// Whether the kind answers DNS over TLS as installed here: Knot DNS before 3.4,
    /// PowerDNS Recursor (which leaves that to dnsdist) and ldplayer's server do not.
    pub fn serves_tls(self) -> bool {
        matches!(
            self,
            ServerKind::Nsd | ServerKind::Bind | ServerKind::Unbound | ServerKind::Kresd
        )
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The transport the replay uses: the trace's own, or every client moved to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtoChoice {
    /// Each query's transport as in the trace.
    Keep,
    /// UDP.
    Udp,
    /// TCP.
    Tcp,
    /// DNS over TLS.
    Tls,
}

impl ProtoChoice {
    /// The trace transport to move clients to, `None` for [`ProtoChoice::Keep`].
    pub fn forced(self) -> Option<ldplayer_trace::Proto> {
        match self {
            ProtoChoice::Keep => None,
            ProtoChoice::Udp => Some(ldplayer_trace::Proto::Udp),
            ProtoChoice::Tcp => Some(ldplayer_trace::Proto::Tcp),
            ProtoChoice::Tls => Some(ldplayer_trace::Proto::Tls),
        }
    }

    /// Whether the queries moved go over connections (TCP or TLS).
    pub fn is_connection(self) -> bool {
        matches!(self, ProtoChoice::Tcp | ProtoChoice::Tls)
    }

    /// The name in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtoChoice::Keep => "keep",
            ProtoChoice::Udp => "udp",
            ProtoChoice::Tcp => "tcp",
            ProtoChoice::Tls => "tls",
        }
    }
}

/// How a synthetic trace's query times and clients are drawn (`ldplayer synth --workload`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadChoice {
    /// Root-server-like: Poisson arrivals, heavy-tailed clients, a mix of real and junk names.
    Root,
    /// Poisson arrivals from uniformly drawn clients, unique names.
    Poisson,
    /// One query every `1 / rate` seconds exactly, clients in turn, unique names.
    Fixed,
}
