//! A client population ([`ldplayer_population::Population`]) as the replay's session profiles:
//! each client follows its group's idle timeout, answer timeout, retries, resumption, 0-RTT,
//! DoH method and client stack.

use std::sync::Arc;
use std::time::Duration;

use ldplayer_population::Population;

use crate::config::{ClientProfile, Profiles};

impl Profiles {
    /// The session profiles of a population's groups, in order, and the rule that puts each
    /// client in its group ([`Population::group_of`]). Settings a group leaves out follow the
    /// replay's.
    pub fn of_population(population: &Population) -> Profiles {
        // The population's `check` has refused negative, infinite and NaN seconds already.
        let secs = |s: Option<f64>| s.and_then(|s| Duration::try_from_secs_f64(s).ok());
        let profiles = population
            .groups
            .iter()
            .map(|g| ClientProfile {
                idle_timeout: secs(g.idle_timeout),
                timeout: secs(g.timeout),
                udp_retries: g.retries,
                resume: g.resumption,
                zero_rtt: g.zero_rtt,
                doh_method: g.doh_method,
                stack: g.stack,
            })
            .collect();
        let population = population.clone();
        Profiles {
            profiles,
            assign: Arc::new(move |addr| population.group_of(addr)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DohMethod, Stack};
    use std::net::{IpAddr, Ipv4Addr};

    const TWO_GROUPS: &str = r#"
seed = 3

[[group]]
name = "plain"
share = 0.5
proto = "udp"

[[group]]
name = "doh"
share = 0.5
proto = "doh"
idle_timeout = 1.5
timeout = 0.25
retries = 2
resumption = false
zero_rtt = true
doh_method = "get"
stack = "reference"
"#;

    #[test]
    fn each_group_is_a_profile_and_each_client_follows_its_group() {
        let population = Population::from_toml(TWO_GROUPS).unwrap();
        let p = Profiles::of_population(&population);
        assert_eq!(p.profiles.len(), 2);
        assert_eq!(p.profiles[0], ClientProfile::default());
        let doh = &p.profiles[1];
        assert_eq!(doh.idle_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(doh.timeout, Some(Duration::from_millis(250)));
        assert_eq!(doh.udp_retries, Some(2));
        assert_eq!(doh.resume, Some(false));
        assert_eq!(doh.zero_rtt, Some(true));
        assert_eq!(doh.doh_method, Some(DohMethod::Get));
        assert_eq!(doh.stack, Some(Stack::Reference));
        let mut seen = [false; 2];
        for i in 0..64u32 {
            let addr = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i));
            let group = (p.assign)(addr);
            assert_eq!(group, population.group_of(addr));
            seen[group] = true;
        }
        assert_eq!(
            seen,
            [true, true],
            "64 clients fell in one group of two halves"
        );
    }
}
