//! The transports a population's groups use.

use crate::Population;

impl Population {
    /// The transports the groups use, each once, in code order.
    pub fn transports(&self) -> Vec<ldplayer_trace::Proto> {
        ldplayer_trace::Proto::ALL
            .into_iter()
            .filter(|p| self.groups.iter().any(|g| g.proto == *p))
            .collect()
    }
}
