//! The wall clock in nanoseconds, and the units `/proc/PID/stat` counts in.

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch: the clock the replay's schedule and
/// the samplers share.
pub fn realtime_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// Clock ticks per second: the unit of the CPU times in `/proc/PID/stat`.
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// The page size in bytes: the unit of the resident set in `/proc/PID/stat`.
pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_agrees_with_std_and_the_units_are_the_kernels() {
        let std_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as i64;
        assert!((realtime_ns() - std_ns).abs() < 1_000_000_000);
        assert!(clock_ticks_per_second() > 0);
        assert!(page_size().is_power_of_two() && page_size() >= 4096);
    }
}
