//! A recursive server's upstream queries, as the emulated hierarchy behind it counted them: by
//! the level of the zone that answered (root, TLD, below) and response code. The server side
//! writes them when it stops, with how they grew during the run; the run keeps them in
//! `run.json` and the summary has a row each, over the whole run (from a cold cache) and after
//! the warm-up (a cache the trace's first seconds warmed).

use ldplayer_server::LevelCounts;
use serde::{Deserialize, Serialize};

/// The file, in the server side's work directory, that carries the counts to the runner.
pub const FILE: &str = "upstream.json";

/// The trace, beside it, of the resolver's own log of its upstream queries and responses (its
/// dnstap; Unbound), a second witness of the counts.
pub const TRACE: &str = "upstream.bin";

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

    /// The counts from a sample of [`UpstreamRecord::timeline`].
    fn from_sample(s: &[i64; 7]) -> UpstreamCounts {
        let level = |q: i64, nx: i64| LevelUpstream {
            queries: q.max(0) as u64,
            nxdomain: nx.max(0) as u64,
            other: 0,
        };
        UpstreamCounts {
            root: level(s[1], s[4]),
            tld: level(s[2], s[5]),
            below: level(s[3], s[6]),
        }
    }

    /// A sample of [`UpstreamRecord::timeline`] at `t_ns`.
    pub fn sample(&self, t_ns: i64) -> [i64; 7] {
        let n = |v: u64| v as i64;
        [
            t_ns,
            n(self.root.queries),
            n(self.tld.queries),
            n(self.below.queries),
            n(self.root.nxdomain),
            n(self.tld.nxdomain),
            n(self.below.nxdomain),
        ]
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

/// A run's upstream counts, and how they grew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamRecord {
    /// Over the whole run.
    #[serde(flatten)]
    pub total: UpstreamCounts,
    /// The counts so far (queries and NXDOMAIN answers) as they grew, a sample at most every
    /// [`TIMELINE_STEP_MS`] when they changed: `[t_ns (CLOCK_REALTIME), root, tld, below,
    /// root_nxdomain, tld_nxdomain, below_nxdomain]`.
    #[serde(default)]
    pub timeline: Vec<[i64; 7]>,
}

/// How often the server side looks at the counts for [`UpstreamRecord::timeline`].
pub const TIMELINE_STEP_MS: u64 = 250;

impl UpstreamRecord {
    /// The queries answered after `t_ns`: the total less the last sample at or before it.
    pub fn after(&self, t_ns: i64) -> UpstreamCounts {
        let before = self
            .timeline
            .iter()
            .take_while(|s| s[0] <= t_ns)
            .last()
            .map(UpstreamCounts::from_sample)
            .unwrap_or_default();
        let less = |a: LevelUpstream, b: LevelUpstream| LevelUpstream {
            queries: a.queries.saturating_sub(b.queries),
            nxdomain: a.nxdomain.saturating_sub(b.nxdomain),
            other: a.other.saturating_sub(b.other),
        };
        UpstreamCounts {
            root: less(self.total.root, before.root),
            tld: less(self.total.tld, before.tld),
            below: less(self.total.below, before.below),
        }
    }

    /// The summary's rows after the warm-up, which ends at `t_ns`: the names of
    /// [`UpstreamCounts::rows`] with `_warm` added.
    pub fn warm_rows(&self, t_ns: i64) -> [(&'static str, u64); 6] {
        let names = [
            "upstream_root_warm",
            "upstream_tld_warm",
            "upstream_below_warm",
            "upstream_root_nxdomain_warm",
            "upstream_tld_nxdomain_warm",
            "upstream_below_nxdomain_warm",
        ];
        let values = self.after(t_ns).rows();
        std::array::from_fn(|i| (names[i], values[i].1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_after_the_warm_up_are_the_total_less_the_last_sample_before_it() {
        let mut total = UpstreamCounts::default();
        total.root.queries = 100;
        total.root.nxdomain = 60;
        total.tld.queries = 40;
        let record = UpstreamRecord {
            total,
            timeline: vec![
                [1_000, 10, 1, 0, 5, 0, 0],
                [2_000, 70, 20, 0, 50, 0, 0],
                [3_000, 100, 40, 0, 60, 0, 0],
            ],
        };
        assert_eq!(record.after(0), total);
        let warm = record.after(2_500);
        assert_eq!((warm.root.queries, warm.root.nxdomain), (30, 10));
        assert_eq!(warm.tld.queries, 20);
        assert_eq!(record.warm_rows(2_000)[0], ("upstream_root_warm", 30));
        assert_eq!(record.warm_rows(9_000)[1], ("upstream_tld_warm", 0));
        // run.json keeps the totals where they were, beside the timeline.
        let json = serde_json::to_value(&record).unwrap();
        assert_eq!(json["root"]["queries"], 100);
        assert_eq!(json["timeline"][1][1], 70);
        let back: UpstreamRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, record);
    }
}
