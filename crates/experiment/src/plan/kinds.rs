//! The named choices of a plan: server kinds, transports, synthetic workloads.

use serde::{Deserialize, Serialize};

/// The DNS server a run replays against, by the names of `[server] kind`: the servers crate's
/// own kinds, so that a plan names exactly what can be started.
pub use ldplayer_servers::ServerKind;

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
