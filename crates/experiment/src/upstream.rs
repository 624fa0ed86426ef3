//! A recursive server's upstream queries, as the emulated hierarchy behind it counted them: by
//! the level of the zone that answered (root, TLD, below) and response code. The server side
//! writes them when it stops; the run keeps them in `run.json` and the summary has a row each.

use ldplayer_server::LevelCounts;
use serde::{Deserialize, Serialize};

/// The file, in the server side's work directory, that carries the counts to the runner.
pub const FILE: &str = "upstream.json";

/// The answers of one level of the hierarchy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelUpstream {
    /// Every response from a zone of this level.
    pub queries: u64,
    /// Of those, NXDOMAIN.
    pub nxdomain: u64,
    /// Of those, neither NOERROR nor NXDOMAIN.
    pub other: u64,
}

/// The upstream queries of a run, by level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamCounts {
    /// Answered from the root zone.
    pub root: LevelUpstream,
    /// Answered from a TLD's zone.
    pub tld: LevelUpstream,
    /// Answered from a zone below a TLD.
    pub below: LevelUpstream,
}

impl UpstreamCounts {
    /// From the meta-server's counters.
    pub fn from_levels(levels: &LevelCounts) -> UpstreamCounts {
        let level = |l: usize| LevelUpstream {
            queries: levels.level_total(l),
            nxdomain: levels.counts[l][1],
            other: levels.counts[l][2],
        };
        UpstreamCounts {
            root: level(0),
            tld: level(1),
            below: level(2),
        }
    }

    /// The summary's rows: (metric, value).
    pub fn rows(&self) -> [(&'static str, u64); 6] {
        [
            ("upstream_root", self.root.queries),
            ("upstream_tld", self.tld.queries),
            ("upstream_below", self.below.queries),
            ("upstream_root_nxdomain", self.root.nxdomain),
            ("upstream_tld_nxdomain", self.tld.nxdomain),
            ("upstream_below_nxdomain", self.below.nxdomain),
        ]
    }
}
