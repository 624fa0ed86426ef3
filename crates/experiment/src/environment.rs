//! `environment.json`: what an experiment ran on, so that its figures can be read later and
//! compared with another machine's.

use serde::{Deserialize, Serialize};

/// The machine and software of an experiment (each run's `run.json` adds its server's
/// version).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    /// ldplayer's version.
    pub ldplayer: String,
    /// `uname -r`.
    pub kernel: String,
    /// The CPU's model name.
    pub cpu: String,
    /// Cores this process may run on.
    pub cores: usize,
    /// Total memory in MiB.
    pub memory_mib: u64,
    /// The host's name.
    pub host: String,
    /// When the experiment started (RFC 3339, UTC).
    pub started: String,
}

impl Environment {
    /// Reads it from this machine.
    pub fn gather() -> Environment {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_default();
        let memory_mib = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        Environment {
            ldplayer: env!("CARGO_PKG_VERSION").to_string(),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_mib,
            host: read("/proc/sys/kernel/hostname").trim().to_string(),
            started: rfc3339_now(),
        }
    }
}

/// Now as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let c = ldplayer_trace::civil_time(secs);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_rfc3339() {
        let now = super::rfc3339_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20"), "{now}");
        assert!(now.ends_with('Z'));
    }
}
