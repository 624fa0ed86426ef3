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
    /// DNS over HTTPS (HTTP/2, the trace format's `https`).
    #[serde(alias = "https")]
    Doh,
    /// DNS over QUIC (the trace format's `quic`).
    #[serde(alias = "quic")]
    Doq,
}

impl ProtoChoice {
    /// The trace transport to move clients to, `None` for [`ProtoChoice::Keep`].
    pub fn forced(self) -> Option<ldplayer_trace::Proto> {
        match self {
            ProtoChoice::Keep => None,
            ProtoChoice::Udp => Some(ldplayer_trace::Proto::Udp),
            ProtoChoice::Tcp => Some(ldplayer_trace::Proto::Tcp),
            ProtoChoice::Tls => Some(ldplayer_trace::Proto::Tls),
            ProtoChoice::Doh => Some(ldplayer_trace::Proto::Https),
            ProtoChoice::Doq => Some(ldplayer_trace::Proto::Quic),
        }
    }

    /// Whether the queries moved go over connections (TCP, TLS, HTTPS or QUIC).
    pub fn is_connection(self) -> bool {
        !matches!(self, ProtoChoice::Keep | ProtoChoice::Udp)
    }

    /// The name in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtoChoice::Keep => "keep",
            ProtoChoice::Udp => "udp",
            ProtoChoice::Tcp => "tcp",
            ProtoChoice::Tls => "tls",
            ProtoChoice::Doh => "doh",
            ProtoChoice::Doq => "doq",
        }
    }
}

/// The HTTP method of DoH queries (`[client] doh_method`, `"post"` or `"get"`), as the replay
/// and population files name it.
pub use ldplayer_trace::DohMethod;

/// The client stack of DoT, DoH and DoQ (`[client] stack`, a `[vary]` key): ldplayer's lean
/// stacks or the reference ones (rustls' ClientConnection, h2, quinn, h3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StackChoice {
    /// ldplayer's own, the replay's default.
    #[default]
    Lean,
    /// The stacks other clients use.
    Reference,
}

impl StackChoice {
    /// The replay engine's stack.
    pub fn stack(self) -> ldplayer_replay::Stack {
        match self {
            StackChoice::Lean => ldplayer_replay::Stack::Lean,
            StackChoice::Reference => ldplayer_replay::Stack::Reference,
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

/// How the client side sends the run's queries (`[client] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientMode {
    /// At the trace's own times (`ldplayer replay`'s default).
    #[default]
    Trace,
    /// As fast as answers come, with a bounded number in flight (`replay --fast`).
    Fast,
    /// A linear ramp of offered load, resperf's method (`replay --ramp-to`): the run measures
    /// the server's capacity.
    Ramp,
}

impl ClientMode {
    /// The mode's name in plans.
    pub fn name(self) -> &'static str {
        match self {
            ClientMode::Trace => "trace",
            ClientMode::Fast => "fast",
            ClientMode::Ramp => "ramp",
        }
    }
}
