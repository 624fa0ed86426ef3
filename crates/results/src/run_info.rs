//! What a results file says about the run that wrote it: which shard of a split replay it is,
//! when the schedule started, and how far its clock could be trusted.
//!
//! It rides in the file header's extension (readers skip header bytes they do not know, so files
//! that carry it stay readable by every reader of version 1):
//!
//! ```text
//! 16  [4] tag "RINF"
//! 20  u32 length of the JSON that follows
//! 24  the run info as one JSON object (keys below)
//! ```

use ldplayer_trace::stable_hash;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The tag of the run-info extension of the file header.
pub const RUN_INFO_TAG: &[u8; 4] = b"RINF";
/// The longest run info a header carries (the header length is a u16).
pub const MAX_RUN_INFO_LEN: usize = 16 * 1024;

/// What a results file records about its run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The shard of a split replay this run was (`None`: the whole trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardId>,
    /// The instant the trace's origin was mapped to (`CLOCK_REALTIME` ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<i64>,
    /// The state of this host's clock when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockState>,
    /// The host that ran it (its name): shards of one host share one clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Whether the run wrote its last result: written `false` when the file is created and
    /// turned `true` in place ([`mark_complete`]) once every result is in, so a file whose run
    /// was killed says so even when it ends on a whole block. `None`: not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// Whether the replay sent as fast as answers came (`replay --fast`): it had no schedule
    /// to keep, so its timing is not judged ([`crate::fidelity::Fidelity`]). `None`: not
    /// recorded (files written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<bool>,
    /// Whether the file keeps each answer byte for byte (`replay --keep-answers`; the file is
    /// then of version 2). `None`: it does not (files written before answers could be kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<bool>,
    /// The servers the replay queried, in the order of [`QueryResult::target`]: each as it
    /// was given (`--server`), for `diff` and `results summary` to name them. `None`: one
    /// server, not named (files written before replays to several).
    ///
    /// [`QueryResult::target`]: crate::QueryResult::target
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// The ramp of offered load the run followed (`replay --ramp-to`), with the bounds its
    /// capacity is judged by; its start is [`start_ns`](Self::start_ns). `None`: no ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::capacity::RampSpec>,
}

/// The bytes of an unfinished run's flag, and what [`mark_complete`] writes over them (the same
/// length: JSON allows the space).
const INCOMPLETE: &[u8] = b"\"complete\":false";
const COMPLETE: &[u8] = b"\"complete\":true ";

/// Marks the results file at `path` as complete: its run wrote every result. Returns false
/// when the file records no completion flag (nothing changed).
pub fn mark_complete(path: &std::path::Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut head = [0u8; crate::file::FILE_HEADER_LEN];
    f.read_exact(&mut head)?;
    let header_len = u16::from_le_bytes([head[10], head[11]]) as usize;
    let mut extension = vec![0u8; header_len.saturating_sub(head.len())];
    f.read_exact(&mut extension)?;
    let Some(at) = extension
        .windows(INCOMPLETE.len())
        .position(|w| w == INCOMPLETE)
    else {
        return Ok(false);
    };
    f.seek(SeekFrom::Start((head.len() + at) as u64))?;
    f.write_all(COMPLETE)?;
    f.sync_data()?;
    Ok(true)
}

/// Shard `index` of `count` (from 0): the clients whose stable hash falls in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShardId {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the replay was split into.
    pub count: u32,
}

impl ShardId {
    /// True when client `addr` is this shard's (see [`shard_of`]).
    pub fn holds(&self, addr: IpAddr) -> bool {
        shard_of(addr, self.count) == self.index
    }
}

/// The shard (of `count`, from 0) that replays client `addr`: every query of a client in one
/// shard, whatever the run, host or version.
///
/// Mixed again from [`stable_hash`], which also spreads a process's clients over its queriers:
/// with `stable_hash % n` for both, a shard of 2 would send all its clients to one querier of 2.
pub fn shard_of(addr: IpAddr, count: u32) -> u32 {
    let mut z = stable_hash(addr) ^ 0x5348_4152_445f_4944; // "SHARD_ID"
    z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    z ^= z >> 33;
    (z % u64::from(count.max(1))) as u32
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The kernel's view of its clock's synchronisation (`adjtimex`): what a shard's intended send
/// times are worth against another host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockState {
    /// The kernel believes the clock is synchronised (NTP/PTP discipline active, not
    /// `STA_UNSYNC`).
    pub synchronized: bool,
    /// The estimated error, µs, as the synchronisation daemon last told the kernel.
    pub est_error_us: u64,
    /// The maximum error, µs (grows while the clock runs undisciplined).
    pub max_error_us: u64,
}

impl RunInfo {
    /// True when there is nothing to record.
    pub fn is_empty(&self) -> bool {
        *self == RunInfo::default()
    }

    /// Whether the file keeps answers ([`answers`](Self::answers) is `Some(true)`).
    pub fn keeps_answers(&self) -> bool {
        self.answers == Some(true)
    }

    /// The name of target `target`: the server it was given as, or `#N` when the file does
    /// not name its targets.
    pub fn target_name(&self, target: u16) -> String {
        self.targets
            .as_ref()
            .and_then(|t| t.get(usize::from(target)))
            .cloned()
            .unwrap_or_else(|| format!("#{target}"))
    }

    /// The header extension that carries this run info (empty when there is nothing to say).
    pub(crate) fn encode(&self) -> Vec<u8> {
        if self.is_empty() {
            return Vec::new();
        }
        let json = serde_json::to_vec(self).unwrap_or_default();
        if json.is_empty() || json.len() > MAX_RUN_INFO_LEN {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(8 + json.len());
        out.extend_from_slice(RUN_INFO_TAG);
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out
    }

    /// The run info in a header extension, if it holds one this build can read.
    pub(crate) fn decode(extension: &[u8]) -> Option<RunInfo> {
        let rest = extension.strip_prefix(RUN_INFO_TAG)?;
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        serde_json::from_slice(rest.get(4..4 + len)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_ignores_what_it_cannot_read() {
        let info = RunInfo {
            shard: Some(ShardId { index: 2, count: 3 }),
            start_ns: Some(1_700_000_000_000_000_000),
            clock: Some(ClockState {
                synchronized: true,
                est_error_us: 120,
                max_error_us: 4_000,
            }),
            host: Some("node-7".into()),
            complete: Some(false),
            closed_loop: Some(false),
            answers: Some(true),
            targets: Some(vec!["127.0.0.1:53".into(), "[::1]:5300".into()]),
            ramp: Some(crate::capacity::RampSpec {
                max_latency_ms: Some(2.5),
                ..crate::capacity::RampSpec::new(20_000.0, 60.0)
            }),
        };
        let bytes = info.encode();
        assert_eq!(RunInfo::decode(&bytes), Some(info));
        assert!(RunInfo::default().encode().is_empty());
        assert_eq!(RunInfo::decode(b"RINF\xff\xff\xff\xff{}"), None);
        assert_eq!(RunInfo::decode(b"XXXX\x02\0\0\0{}"), None);
        assert_eq!(
            RunInfo::decode(b"RINF\x02\0\0\0{}"),
            Some(RunInfo::default())
        );
    }

    #[test]
    fn a_file_is_marked_complete_in_place() {
        let dir = std::env::temp_dir().join(format!("ldplayer-run-info-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.res");
        let info = RunInfo {
            host: Some("h".into()),
            complete: Some(false),
            ..RunInfo::default()
        };
        let w = crate::ResultsWriter::create_with_run_info(&path, &info).unwrap();
        w.into_inner().unwrap();
        let read = |p: &std::path::Path| {
            crate::ResultsReader::open(p)
                .unwrap()
                .run_info()
                .cloned()
                .unwrap()
        };
        assert_eq!(read(&path).complete, Some(false));
        assert!(mark_complete(&path).unwrap());
        let done = read(&path);
        assert_eq!(done.complete, Some(true));
        assert_eq!(done.host.as_deref(), Some("h"));
        // Again: nothing left to change. A file without the flag is left alone.
        assert!(!mark_complete(&path).unwrap());
        let plain = dir.join("p.res");
        crate::ResultsWriter::create(&plain)
            .unwrap()
            .into_inner()
            .unwrap();
        assert!(!mark_complete(&plain).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
