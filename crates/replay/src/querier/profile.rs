//! Session profiles resolved for the querier: each client's idle timeout, answer timeout, UDP
//! retries, resumption, 0-RTT, DoH method and stack, from its group's profile over the replay's own
//! settings.

use crate::config::{DohConfig, ReplayConfig, Stack};
use std::net::IpAddr;
use std::sync::Arc;

/// A profile with every setting decided.
pub(super) struct Profile {
    pub idle_ns: i64,
    pub timeout_ns: i64,
    pub udp_retries: u32,
    pub resume: bool,
    pub zero_rtt: bool,
    pub idle_timeout: std::time::Duration,
    /// The DoH settings of the profile's clients (shared by their connections).
    pub doh: Arc<DohConfig>,
    /// The stack of the profile's DoT, DoH and DoQ connections.
    pub stack: Stack,
}

fn ns(d: std::time::Duration) -> i64 {
    d.as_nanos().min(i64::MAX as u128) as i64
}

/// The profiles of a replay: those of `config.profiles` in order, then the replay's own (for
/// every client when there are no profiles).
pub(super) fn resolve(config: &ReplayConfig) -> Vec<Profile> {
    let own = || Profile {
        idle_ns: ns(config.tcp_idle_timeout),
        timeout_ns: ns(config.timeout),
        udp_retries: config.udp_retries,
        resume: config.tls.resume,
        zero_rtt: config.tls.zero_rtt,
        idle_timeout: config.tcp_idle_timeout,
        doh: Arc::new(config.doh.clone()),
        stack: config.stack,
    };
    let mut out = Vec::new();
    if let Some(p) = &config.profiles {
        for c in &p.profiles {
            let idle = c.idle_timeout.unwrap_or(config.tcp_idle_timeout);
            out.push(Profile {
                idle_ns: ns(idle),
                timeout_ns: ns(c.timeout.unwrap_or(config.timeout)),
                udp_retries: c.udp_retries.unwrap_or(config.udp_retries),
                resume: c.resume.unwrap_or(config.tls.resume),
                zero_rtt: c.zero_rtt.unwrap_or(config.tls.zero_rtt),
                idle_timeout: idle,
                doh: Arc::new(DohConfig {
                    method: c.doh_method.unwrap_or(config.doh.method),
                    path: config.doh.path.clone(),
                    http3: config.doh.http3,
                }),
                stack: c.stack.unwrap_or(config.stack),
            });
        }
    }
    out.push(own());
    out
}

/// The profile index of the client with address `src`.
pub(super) fn assign(config: &ReplayConfig, profiles: usize, src: IpAddr) -> u32 {
    let own = profiles - 1;
    let i = config.profiles.as_ref().map_or(own, |p| (p.assign)(src));
    i.min(own) as u32
}
