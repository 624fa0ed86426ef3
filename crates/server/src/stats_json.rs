//! The JSON form of the server's counters ([`ServerStats`]), as `ldplayer serve` prints it on
//! exit and writes it each second with `--stats`: its keys are an interface (scripts and the
//! experiments read them), so they are spelled here, once, beside the counters.
//!
//! Response codes are keyed by name, the four [`MAIN_RCODES`] always present (zero or not),
//! others when they occurred and the codes above the last slot as `other`; levels are keyed
//! by [`LevelCounts::LEVELS`], each with its `responses` and its counts by
//! [`LevelCounts::CLASSES`].

use ldplayer_dns::{Rcode, MAIN_RCODES};
use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

use crate::stats::{LevelCounts, RcodeCounts, ServerStats, RCODE_SLOTS};

impl Serialize for RcodeCounts {
    /// A map from code name to responses: the [`MAIN_RCODES`] first, then the other codes
    /// that were sent, lowest first.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let count = |code: Rcode| self.counts[RcodeCounts::slot(code)];
        let others: Vec<(Rcode, u64)> = self
            .nonzero()
            .filter(|(code, _)| !MAIN_RCODES.contains(code))
            .collect();
        let mut map = serializer.serialize_map(Some(MAIN_RCODES.len() + others.len()))?;
        for code in MAIN_RCODES {
            map.serialize_entry(&code.to_string(), &count(code))?;
        }
        for (code, n) in others {
            if usize::from(code.0) == RCODE_SLOTS - 1 {
                map.serialize_entry("other", &n)?;
            } else {
                map.serialize_entry(&code.to_string(), &n)?;
            }
        }
        map.end()
    }
}

/// One level's responses: their total and their counts by class.
struct Level<'a> {
    responses: u64,
    counts: &'a [u64; 3],
}

impl Serialize for Level<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1 + LevelCounts::CLASSES.len()))?;
        map.serialize_entry("responses", &self.responses)?;
        for (class, n) in LevelCounts::CLASSES.iter().zip(self.counts) {
            map.serialize_entry(class, n)?;
        }
        map.end()
    }
}

impl Serialize for LevelCounts {
    /// A map from level name (`root`, `tld`, `below`) to that level's responses.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(LevelCounts::LEVELS.len()))?;
        for (l, (name, counts)) in LevelCounts::LEVELS.iter().zip(&self.counts).enumerate() {
            let level = Level {
                responses: self.level_total(l),
                counts,
            };
            map.serialize_entry(name, &level)?;
        }
        map.end()
    }
}

impl Serialize for ServerStats {
    /// Every counter by its name, plus `queries` (the sum over the transports); `no_view` is
    /// `refused_by_address`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let s = self;
        let queries = s.udp_queries + s.tcp_queries + s.tls_queries + s.doh_queries + s.doq_queries;
        let mut out = serializer.serialize_struct("ServerStats", 46)?;
        out.serialize_field("queries", &queries)?;
        out.serialize_field("udp_queries", &s.udp_queries)?;
        out.serialize_field("tcp_queries", &s.tcp_queries)?;
        out.serialize_field("responses", &s.responses)?;
        out.serialize_field("udp_responses", &s.udp_responses)?;
        out.serialize_field("tcp_responses", &s.tcp_responses)?;
        out.serialize_field("truncated", &s.truncated)?;
        out.serialize_field("rcodes", &s.rcodes)?;
        out.serialize_field("levels", &s.levels)?;
        out.serialize_field("kinds", &s.kinds)?;
        out.serialize_field("refused_by_address", &s.no_view)?;
        out.serialize_field("dropped", &s.dropped)?;
        out.serialize_field("tcp_malformed", &s.tcp_malformed)?;
        out.serialize_field("send_errors", &s.send_errors)?;
        out.serialize_field("bytes_in", &s.bytes_in)?;
        out.serialize_field("bytes_out", &s.bytes_out)?;
        out.serialize_field("tcp_open", &s.tcp_open)?;
        out.serialize_field("tcp_peak_open", &s.tcp_peak_open)?;
        out.serialize_field("tcp_accepted", &s.tcp_accepted)?;
        out.serialize_field("tcp_idle_closed", &s.tcp_idle_closed)?;
        out.serialize_field("tcp_evicted", &s.tcp_evicted)?;
        out.serialize_field("tls_queries", &s.tls_queries)?;
        out.serialize_field("tls_responses", &s.tls_responses)?;
        out.serialize_field("tls_accepted", &s.tls_accepted)?;
        out.serialize_field("tls_handshakes", &s.tls_handshakes)?;
        out.serialize_field("tls_resumed", &s.tls_resumed)?;
        out.serialize_field("tls_errors", &s.tls_errors)?;
        out.serialize_field("doh_queries", &s.doh_queries)?;
        out.serialize_field("doh_responses", &s.doh_responses)?;
        out.serialize_field("doh_accepted", &s.doh_accepted)?;
        out.serialize_field("doh_handshakes", &s.doh_handshakes)?;
        out.serialize_field("doh_resumed", &s.doh_resumed)?;
        out.serialize_field("doh_idle_closed", &s.doh_idle_closed)?;
        out.serialize_field("doh_open", &s.doh_open)?;
        out.serialize_field("doh_peak_open", &s.doh_peak_open)?;
        out.serialize_field("doh_errors", &s.doh_errors)?;
        out.serialize_field("doq_queries", &s.doq_queries)?;
        out.serialize_field("doq_responses", &s.doq_responses)?;
        out.serialize_field("doq_accepted", &s.doq_accepted)?;
        out.serialize_field("doq_handshakes", &s.doq_handshakes)?;
        out.serialize_field("doq_resumed", &s.doq_resumed)?;
        out.serialize_field("doq_zero_rtt", &s.doq_zero_rtt)?;
        out.serialize_field("doq_idle_closed", &s.doq_idle_closed)?;
        out.serialize_field("doq_open", &s.doq_open)?;
        out.serialize_field("doq_peak_open", &s.doq_peak_open)?;
        out.serialize_field("doq_errors", &s.doq_errors)?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn main_codes_are_always_there_and_the_last_slot_is_other() {
        let mut s = ServerStats::default();
        let zero = serde_json::to_value(s).unwrap();
        assert_eq!(
            zero["rcodes"],
            json!({"NOERROR": 0, "NXDOMAIN": 0, "SERVFAIL": 0, "REFUSED": 0})
        );
        assert_eq!(zero["queries"], 0);
        s.rcodes.counts[RcodeCounts::slot(Rcode::BADCOOKIE)] = 2;
        s.rcodes.counts[RCODE_SLOTS - 1] = 3;
        s.rcodes.counts[0] = 4;
        s.udp_queries = 5;
        s.doq_queries = 6;
        s.no_view = 7;
        s.levels.counts[1] = [1, 2, 3];
        let v = serde_json::to_value(s).unwrap();
        assert_eq!(
            v["rcodes"],
            json!({"NOERROR": 4, "NXDOMAIN": 0, "SERVFAIL": 0, "REFUSED": 0, "BADCOOKIE": 2,
                   "other": 3})
        );
        assert_eq!(v["queries"], 11);
        assert_eq!(v["refused_by_address"], 7);
        assert_eq!(
            v["levels"]["tld"],
            json!({"responses": 6, "NOERROR": 1, "NXDOMAIN": 2, "other": 3})
        );
        assert!(v.get("no_view").is_none());
    }
}
