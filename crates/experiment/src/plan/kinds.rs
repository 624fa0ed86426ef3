//! The named choices of a plan: server kinds, transports, client stacks, synthetic workloads.

use serde::{Deserialize, Serialize};

/// The DNS server a run replays against, by the names of `[server] kind`: the servers crate's
/// own kinds, so that a plan names exactly what can be started.
pub use ldplayer_servers::ServerKind;

/// The transport the replay uses (`proto`, a `[vary]` key): the trace's own, or every client
/// moved to one, as the CLI's `--proto` names it.
pub use ldplayer_trace::ProtoChoice;

/// The HTTP method of DoH queries (`[client] doh_method`, `"post"` or `"get"`), as the replay
/// and population files name it.
pub use ldplayer_trace::DohMethod;

/// The client stack of DoT, DoH and DoQ (`[client] stack`, a `[vary]` key, `"lean"` or
/// `"reference"`), as the replay and population files name it.
pub use ldplayer_trace::Stack;

/// How a synthetic trace's query times and clients are drawn (`[trace.synth] workload`,
/// `"root"`, `"poisson"` or `"fixed"`), as `ldplayer synth --workload` names it; a plan's
/// `fixed` sends one query every `1 / rate` seconds.
pub use ldplayer_synth::WorkloadKind;

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
