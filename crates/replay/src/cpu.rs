//! Where the engine's threads run: a pinned querier gets its core to itself, and may ask for
//! real-time scheduling.
//!
//! With `--pin`, a querier sends on time only if nothing else of ours competes for its core:
//! the reader (the caller's thread), the result writer and any progress display are confined
//! to the other cores for the run ([`Confinement`]). Measured on the 2-core test machine at
//! 100k qps with the server on the other core: without confinement the reader and result
//! writer preempted the querier for milliseconds at a time (timing error p99 in the tens of
//! milliseconds, see docs/performance.md).

use std::io;

/// A set of CPU cores (`cpu_set_t`).
#[derive(Clone, Copy)]
pub struct CoreSet(libc::cpu_set_t);

impl std::fmt::Debug for CoreSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.cores()).finish()
    }
}

impl CoreSet {
    /// No core.
    pub fn empty() -> CoreSet {
        // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
        CoreSet(unsafe { std::mem::zeroed() })
    }

    /// The cores the calling thread may run on.
    pub fn of_current_thread() -> io::Result<CoreSet> {
        CoreSet::of_thread(0)
    }

    /// The cores thread `tid` may run on (0: the calling thread).
    pub fn of_thread(tid: libc::pid_t) -> io::Result<CoreSet> {
        let mut set = CoreSet::empty();
        // SAFETY: writes at most size_of::<cpu_set_t>() bytes into `set.0`.
        let r = unsafe {
            libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set.0)
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(set)
    }

    /// Adds `core` (ignored past `CPU_SETSIZE`).
    pub fn insert(&mut self, core: usize) {
        if core < libc::CPU_SETSIZE as usize {
            // SAFETY: bounds checked above.
            unsafe { libc::CPU_SET(core, &mut self.0) };
        }
    }

    /// Removes `core`.
    pub fn remove(&mut self, core: usize) {
        if core < libc::CPU_SETSIZE as usize {
            // SAFETY: bounds checked above.
            unsafe { libc::CPU_CLR(core, &mut self.0) };
        }
    }

    /// Whether `core` is in the set.
    pub fn contains(&self, core: usize) -> bool {
        // SAFETY: bounds checked first; CPU_ISSET only reads.
        core < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(core, &self.0) }
    }

    /// The cores in the set, in order.
    pub fn cores(&self) -> impl Iterator<Item = usize> + '_ {
        (0..libc::CPU_SETSIZE as usize).filter(|&c| self.contains(c))
    }

    /// Whether the set has no core.
    pub fn is_empty(&self) -> bool {
        self.cores().next().is_none()
    }

    /// Restricts the calling thread (and the threads it starts afterwards) to this set.
    pub fn apply_to_current_thread(&self) -> io::Result<()> {
        self.apply_to_thread(0)
    }

    /// Restricts thread `tid` of this process (0: the calling thread) to this set.
    pub fn apply_to_thread(&self, tid: libc::pid_t) -> io::Result<()> {
        // SAFETY: reads a valid cpu_set_t; affects only thread `tid`.
        let r = unsafe {
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &self.0)
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Pins the calling thread to `core`.
pub fn pin_current_thread(core: usize) -> io::Result<()> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("core {core} does not exist"),
        ));
    }
    let mut set = CoreSet::empty();
    set.insert(core);
    set.apply_to_current_thread()
}

/// Keeps every thread of the process, and the threads they start while this lives, off the
/// queriers' cores; gives each its former cores back when dropped.
///
/// Process-wide rather than the calling thread alone: threads started before the replay (a
/// signal handler's, a progress display's) would otherwise still run on a querier's core.
#[derive(Debug)]
pub struct Confinement {
    /// Each thread's id and the cores it had.
    before: Vec<(libc::pid_t, CoreSet)>,
}

impl Confinement {
    /// Confines every thread of the process to the cores it may use now minus `pinned`.
    /// `Ok(None)` when that would leave the calling thread no core (every allowed core has a
    /// querier): the threads then stay where they are, sharing the queriers' cores.
    pub fn away_from(pinned: &[usize]) -> io::Result<Option<Confinement>> {
        let mut rest = CoreSet::of_current_thread()?;
        for &core in pinned {
            rest.remove(core);
        }
        if rest.is_empty() {
            return Ok(None);
        }
        let mut before = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task")? {
            let Some(tid) = entry?.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            // A thread may end meanwhile: it then needs no confining.
            let Ok(had) = CoreSet::of_thread(tid) else {
                continue;
            };
            let mut now = had;
            for &core in pinned {
                now.remove(core);
            }
            if !now.is_empty() && now.apply_to_thread(tid).is_ok() {
                before.push((tid, had));
            }
        }
        Ok(Some(Confinement { before }))
    }
}

impl Drop for Confinement {
    fn drop(&mut self) {
        for (tid, had) in &self.before {
            let _ = had.apply_to_thread(*tid);
        }
    }
}

/// The `SCHED_FIFO` priority queriers ask for: above every normal thread, below the kernel's
/// own real-time threads (which use 50 and up for interrupts, 99 for watchdogs).
pub const REALTIME_PRIORITY: i32 = 10;

/// Asks for `SCHED_FIFO` at [`REALTIME_PRIORITY`] for the calling thread. Needs
/// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least that priority; in a container the runtime may
/// refuse it even to root.
pub fn realtime_current_thread() -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: REALTIME_PRIORITY,
    };
    // SAFETY: valid sched_param; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's limit on real-time threads (`kernel.sched_rt_runtime_us` of every
/// `sched_rt_period_us`), as a warning for a querier asking for real-time scheduling; `None`
/// when there is no limit (runtime -1) or it cannot be read.
///
/// A querier spins between sends less than [`crate::clock::SPIN_NS`] apart, so above ≈ 12k qps
/// it never sleeps; as a real-time thread it then exhausts the limit (950 ms of every second by
/// default) and the kernel stops it for the rest of the period: every query due then is 50 ms
/// late. Measured at 50k qps: timing error p99 ≈ 41 ms, from one such stop per second.
pub fn realtime_limit_warning() -> Option<String> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let runtime = read("sched_rt_runtime_us")?;
    let period = read("sched_rt_period_us")?;
    if runtime < 0 || runtime >= period {
        return None;
    }
    Some(format!(
        "the kernel stops real-time threads for {} ms of every {} ms once they have run {} ms \
         (kernel.sched_rt_runtime_us): a querier that sends faster than every {} µs spins between \
         sends and will be stopped that long; `sysctl kernel.sched_rt_runtime_us=-1` lifts the \
         limit (a spinning real-time thread can then starve its core's kernel threads)",
        (period - runtime) / 1000,
        period / 1000,
        runtime / 1000,
        crate::clock::SPIN_NS / 1000
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that change threads' cores: a confinement moves every thread of the
    /// process, the other tests' too (it once undid a pin the next test was checking).
    static AFFINITY: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn confined_threads_leave_the_pinned_core_and_get_it_back() {
        let _serial = AFFINITY.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::spawn(|| {
            let all = CoreSet::of_current_thread().unwrap();
            let cores: Vec<usize> = all.cores().collect();
            assert!(!cores.is_empty());
            let pinned = cores[0];
            // A thread started before the confinement, which reports its cores when asked.
            let (ask, asked) = std::sync::mpsc::channel::<()>();
            let (tell, told) = std::sync::mpsc::channel();
            let older = std::thread::spawn(move || {
                while asked.recv().is_ok() {
                    tell.send(CoreSet::of_current_thread().unwrap()).unwrap();
                }
            });
            {
                let guard = Confinement::away_from(&[pinned]).unwrap();
                ask.send(()).unwrap();
                let older_cores = told.recv().unwrap();
                let now = CoreSet::of_current_thread().unwrap();
                if cores.len() == 1 {
                    assert!(guard.is_none(), "one core: nowhere else to go");
                    assert!(now.contains(pinned));
                    assert!(older_cores.contains(pinned));
                } else {
                    assert!(guard.is_some());
                    assert!(!now.contains(pinned), "{now:?}");
                    assert!(!older_cores.contains(pinned), "{older_cores:?}");
                    assert_eq!(now.cores().count(), cores.len() - 1);
                    // Threads started now inherit the confinement.
                    let child = std::thread::spawn(|| CoreSet::of_current_thread().unwrap())
                        .join()
                        .unwrap();
                    assert!(!child.contains(pinned), "{child:?}");
                }
            }
            let after = CoreSet::of_current_thread().unwrap();
            assert_eq!(after.cores().collect::<Vec<_>>(), cores);
            ask.send(()).unwrap();
            assert_eq!(told.recv().unwrap().cores().collect::<Vec<_>>(), cores);
            drop(ask);
            older.join().unwrap();
        })
        .join()
        .unwrap();
    }

    #[test]
    fn pinning_to_a_missing_core_is_an_error() {
        let _serial = AFFINITY.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::spawn(|| {
            assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
            let first = CoreSet::of_current_thread()
                .unwrap()
                .cores()
                .next()
                .unwrap();
            pin_current_thread(first).unwrap();
            assert_eq!(
                CoreSet::of_current_thread()
                    .unwrap()
                    .cores()
                    .collect::<Vec<_>>(),
                vec![first]
            );
        })
        .join()
        .unwrap();
    }
}
