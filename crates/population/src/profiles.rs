//! A population as the replay engine's session profiles: each client follows its group's
//! idle timeout, answer timeout, retries, resumption, 0-RTT, DoH method and client stack.

use std::sync::Arc;
use std::time::Duration;

use crate::{ClientStack, Population};

impl Population {
    /// The session profiles of the groups, in order, and the rule that puts each client in its
    /// group ([`group_of`](Self::group_of)). Settings a group leaves out follow the replay's.
    pub fn profiles(&self) -> ldplayer_replay::Profiles {
        // `check` has refused negative, infinite and NaN seconds already.
        let secs = |s: Option<f64>| s.and_then(|s| Duration::try_from_secs_f64(s).ok());
        let profiles = self
            .groups
            .iter()
            .map(|g| ldplayer_replay::ClientProfile {
                idle_timeout: secs(g.idle_timeout),
                timeout: secs(g.timeout),
                udp_retries: g.retries,
                resume: g.resumption,
                zero_rtt: g.zero_rtt,
                doh_method: g.doh_method,
                stack: g.stack.map(|s| match s {
                    ClientStack::Lean => ldplayer_replay::Stack::Lean,
                    ClientStack::Reference => ldplayer_replay::Stack::Reference,
                }),
            })
            .collect();
        let population = self.clone();
        ldplayer_replay::Profiles {
            profiles,
            assign: Arc::new(move |addr| population.group_of(addr)),
        }
    }

    /// The transports the groups use, each once, in code order.
    pub fn transports(&self) -> Vec<ldplayer_trace::Proto> {
        ldplayer_trace::Proto::ALL
            .into_iter()
            .filter(|p| self.groups.iter().any(|g| g.proto == *p))
            .collect()
    }
}
