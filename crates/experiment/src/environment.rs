//! `environment.json`: what an experiment ran on, gathered from this machine. Its form on disk
//! is `ldplayer-study`'s [`Environment`].

pub use ldplayer_study::Environment;

/// Reads the machine and software this process runs on.
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

    #[test]
    fn this_machine_has_a_kernel_and_cores() {
        let e = super::gather();
        assert!(!e.kernel.is_empty() && e.cores >= 1, "{e:?}");
        assert_eq!(e.ldplayer, env!("CARGO_PKG_VERSION"));
    }
}
