//! Resolver behaviours that what-if studies compare, named once for every recursive kind and
//! written into each one's configuration in its own words.

use serde::{Deserialize, Serialize};

/// Resolver behaviours to set; `None` keeps the resolver's own default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolverOptions {
    /// Aggressive use of the DNSSEC-validated cache (RFC 8198): a validating resolver answers
    /// names that cached NSEC or NSEC3 records prove absent without asking upstream. Unbound's
    /// `aggressive-nsec`, PowerDNS Recursor's `aggressive-nsec-cache-size` (0 turns it off);
    /// Knot Resolver 5 always does it. It needs validation to have any effect.
    #[serde(default)]
    pub aggressive_nsec: Option<bool>,
    /// QNAME minimisation (RFC 9156): ask each level only for the next label. Unbound's
    /// `qname-minimisation`, Knot Resolver's `NO_MINIMIZE` flag, PowerDNS Recursor's
    /// `qname-minimization`.
    #[serde(default)]
    pub qname_minimisation: Option<bool>,
}

impl ResolverOptions {
    /// Whether any option is set.
    pub fn any(&self) -> bool {
        self.aggressive_nsec.is_some() || self.qname_minimisation.is_some()
    }
}

/// `yes` or `no`, as Unbound and PowerDNS Recursor write booleans.
pub(crate) fn yes_no(on: bool) -> &'static str {
    if on {
        "yes"
    } else {
        "no"
    }
}
