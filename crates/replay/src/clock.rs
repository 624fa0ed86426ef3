//! Clocks and precise waiting.
//!
//! Everything is in `CLOCK_REALTIME` nanoseconds so that the reported times compare directly
//! with capture timestamps. Queriers wait in epoll on a `timerfd` armed (absolute, realtime) a
//! little before the next deadline, then spin for the rest: epoll's own timeout has millisecond
//! granularity, and with the thread's timer slack set to 1 ns the timerfd wakes within a few
//! microseconds.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// How long before a deadline the querier stops sleeping and spins.
pub const SPIN_NS: i64 = 80_000;

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    #[allow(clippy::unnecessary_cast)] // time_t and c_long are not i64 on every target
    let ns = ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64;
    ns
}

/// The kernel's view of the clock's synchronisation (`adjtimex` with no changes asked), for
/// shards on several hosts to say what their intended send times are worth against each
/// other's. `None` when the call fails.
pub fn clock_state() -> Option<ldplayer_results::ClockState> {
    // SAFETY: timex is plain data, valid when zeroed; modes 0 only reads the kernel's state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    Some(ldplayer_results::ClockState {
        synchronized: state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0,
        est_error_us: tx.esterror.max(0) as u64,
        max_error_us: tx.maxerror.max(0) as u64,
    })
}

/// Sets the calling thread's timer slack to 1 ns, so that its timers fire on time.
pub fn set_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Spins until `CLOCK_REALTIME` reaches `deadline_ns`.
pub fn spin_until(deadline_ns: i64) {
    while now_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

fn timespec(ns: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000) as libc::time_t,
        tv_nsec: ns.rem_euclid(1_000_000_000) as libc::c_long,
    }
}

/// A non-blocking `timerfd` on `CLOCK_REALTIME`, armed with absolute deadlines, for registering
/// in epoll.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
    armed_ns: i64,
}

impl TimerFd {
    /// Creates a disarmed timer.
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(libc::CLOCK_REALTIME, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd, armed_ns: 0 })
    }

    /// Arms the timer to fire at `deadline_ns` (realtime); does nothing if already armed for it.
    pub fn arm(&mut self, deadline_ns: i64) -> io::Result<()> {
        if deadline_ns == self.armed_ns {
            return Ok(());
        }
        let spec = libc::itimerspec {
            it_interval: timespec(0),
            it_value: timespec(deadline_ns.max(1)),
        };
        // SAFETY: valid descriptor and itimerspec; the old value is not requested.
        let r = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed_ns = deadline_ns;
        Ok(())
    }

    /// Consumes an expiry so that the descriptor stops being readable.
    pub fn drain(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a valid buffer; errors (EAGAIN) are ignored.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_ns = 0;
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
