//! The running link: one thread per direction reads packets from its input TUN device, asks
//! the direction's [`Impairment`] what becomes of each, holds the survivors in a
//! [`DelayLine`] and writes them to the output device when due. Each thread sleeps in `ppoll`
//! until its input is readable, its next departure is due or it is told to stop, with a
//! timer slack of 1 ns so that it wakes on time; it polls without sleeping only for the last
//! stretch before a departure, and only when [`Timing::spin`] asks for it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::client_delay::{AddressDelay, Endpoint, Side};
use crate::counters::{DirectionAtomics, LinkCounters};
use crate::delay_line::{DelayLine, DEFAULT_HELD_LIMIT_BYTES};
use crate::impair::{DropReason, Impairment, Verdict};
use crate::params::LinkParams;
use crate::tun::Tun;
use crate::LinkError;

/// A departure later than this after its time counts in
/// [`DirectionCounters::late_departures`](crate::DirectionCounters::late_departures).
pub const LATE_THRESHOLD: Duration = Duration::from_micros(250);
const LATE_NS: u64 = LATE_THRESHOLD.as_nanos() as u64;

/// Read buffer size: the largest IP packet (65535 bytes) fits.
const MAX_PACKET: usize = 65536;

/// The link emulator's entry point.
#[derive(Debug)]
pub struct Link;

impl Link {
    /// Joins `a` and `b`: `a_to_b` applies to packets read from `a` and written to `b`,
    /// `b_to_a` to the other way. Both directions draw from the ChaCha stream seeded with
    /// `seed` (different streams), so a run with the same traffic makes the same decisions.
    /// The devices are closed (and vanish) when the link stops.
    pub fn start(
        a: Tun,
        b: Tun,
        a_to_b: LinkParams,
        b_to_a: LinkParams,
        seed: u64,
    ) -> Result<RunningLink, LinkError> {
        Link::start_with(a, b, a_to_b, b_to_a, seed, Timing::default())
    }

    /// [`Link::start`] with the threads' waiting tuned by `timing`.
    pub fn start_with(
        a: Tun,
        b: Tun,
        a_to_b: LinkParams,
        b_to_a: LinkParams,
        seed: u64,
        timing: Timing,
    ) -> Result<RunningLink, LinkError> {
        let options = LinkOptions {
            timing,
            ..LinkOptions::default()
        };
        Link::start_with_options(a, b, a_to_b, b_to_a, seed, options)
    }

    /// [`Link::start`] with everything [`LinkOptions`] offers: the threads' timing and
    /// per-client extra delays.
    pub fn start_with_options(
        a: Tun,
        b: Tun,
        a_to_b: LinkParams,
        b_to_a: LinkParams,
        seed: u64,
        options: LinkOptions,
    ) -> Result<RunningLink, LinkError> {
        let LinkOptions {
            timing,
            client_delay,
            clients_on,
        } = options;
        a_to_b.validate()?;
        b_to_a.validate()?;
        // SAFETY: eventfd takes no pointers; the result is checked.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(LinkError::Os("eventfd", io::Error::last_os_error()));
        }
        // SAFETY: a descriptor just created and owned by nobody else.
        let stop = Arc::new(unsafe { OwnedFd::from_raw_fd(raw) });
        let counters: Arc<[DirectionAtomics; 2]> = Arc::default();
        let (a, b) = (Arc::new(a), Arc::new(b));
        let mut link = RunningLink {
            stop: Arc::clone(&stop),
            counters: Arc::clone(&counters),
            threads: Vec::new(),
        };
        let directions = [
            ("link a->b", &a, &b, &a_to_b, 0, Side::A),
            ("link b->a", &b, &a, &b_to_a, 1, Side::B),
        ];
        for (name, input, output, params, index, from) in directions {
            let mut impairment = Impairment::new(params, seed, index as u64);
            let mut client_end = None;
            if let Some(delay) = &client_delay {
                impairment = impairment.with_client_delay(delay.clone());
                client_end = Some(if from == clients_on {
                    Endpoint::Source
                } else {
                    Endpoint::Destination
                });
            }
            let direction = Direction {
                input: Arc::clone(input),
                output: Arc::clone(output),
                impairment,
                client_end,
                stop: Arc::clone(&stop),
                counters: Arc::clone(&counters),
                index,
                spin_ns: u64::try_from(timing.spin.as_nanos()).unwrap_or(u64::MAX),
            };
            // On failure `link` is dropped, which stops the thread already started.
            let thread = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || direction.run())
                .map_err(|e| LinkError::Os("spawning a link thread", e))?;
            link.threads.push(thread);
        }
        Ok(link)
    }
}

/// How the direction threads wait for a departure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timing {
    /// The last stretch before a departure spent polling the input without sleeping, instead
    /// of sleeping. A sleeping thread wakes tens of µs late on a virtual machine whose CPU
    /// went idle; a polling one is on time, but only while it keeps its CPU: on a busy
    /// machine the scheduler preempts a thread that polls and favours one that wakes, so
    /// spinning made departures later there (bench/link.sh measures both). Zero (the
    /// default) never spins; 50–100 µs suits a machine with an idle core for the emulator.
    pub spin: Duration,
}

/// How a link runs beyond its two directions' parameters.
#[derive(Debug, Clone, Default)]
pub struct LinkOptions {
    /// How the direction threads wait for a departure.
    pub timing: Timing,
    /// Each client's extra round-trip time, on top of the directions' delays; `None` (the
    /// default) treats every packet alike. See [`crate::client_delay`].
    pub client_delay: Option<AddressDelay>,
    /// The side the clients are on: a packet's client is its source address on the way from
    /// that side, its destination address on the way to it. Ignored without `client_delay`.
    pub clients_on: Side,
}

/// A link whose two direction threads are running. Dropping it stops it too.
#[derive(Debug)]
pub struct RunningLink {
    stop: Arc<OwnedFd>,
    counters: Arc<[DirectionAtomics; 2]>,
    threads: Vec<JoinHandle<Result<(), LinkError>>>,
}

impl RunningLink {
    /// The counters so far: a cheap snapshot of atomics (each value is exact, the set is not
    /// one instant's).
    pub fn counters(&self) -> LinkCounters {
        LinkCounters {
            a_to_b: self.counters[0].snapshot(),
            b_to_a: self.counters[1].snapshot(),
        }
    }

    /// CPU time (user and system) the two direction threads have used so far, the cost of the
    /// emulator; `None` if a thread has ended or the clock cannot be read.
    pub fn cpu_time(&self) -> Option<Duration> {
        let mut total = Duration::ZERO;
        for thread in &self.threads {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: the thread is not joined, so its pthread_t is valid; `clock` is written.
            if unsafe { libc::pthread_getcpuclockid(thread.as_pthread_t(), &mut clock) } != 0 {
                return None;
            }
            let mut t = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `t` is valid for writes.
            if unsafe { libc::clock_gettime(clock, &mut t) } != 0 {
                return None;
            }
            total += Duration::new(
                u64::try_from(t.tv_sec).ok()?,
                u32::try_from(t.tv_nsec).ok()?,
            );
        }
        Some(total)
    }

    /// Stops both threads, drops the packets still held, closes the TUN devices (they vanish)
    /// and returns the final counters.
    pub fn stop(self) -> LinkCounters {
        self.stop_checked().0
    }

    /// Like [`RunningLink::stop`], and also returns why a direction thread had ended early, if
    /// one did (a read or poll error on its input device, or a panic): its direction carried
    /// nothing from then on.
    pub fn stop_checked(mut self) -> (LinkCounters, Option<LinkError>) {
        let failure = self.shutdown();
        (self.counters(), failure)
    }

    /// Wakes the threads, waits for them to end and returns the first failure.
    fn shutdown(&mut self) -> Option<LinkError> {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to the eventfd. It cannot fail short of a
        // counter overflow, and then the threads are awake anyway.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        let mut failure = None;
        for thread in self.threads.drain(..) {
            let outcome = match thread.join() {
                Ok(result) => result.err(),
                Err(_) => Some(LinkError::ThreadPanicked),
            };
            failure = failure.or(outcome);
        }
        failure
    }
}

impl Drop for RunningLink {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.shutdown();
        }
    }
}

/// Everything one direction's thread owns.
struct Direction {
    input: Arc<Tun>,
    output: Arc<Tun>,
    impairment: Impairment,
    /// Where a packet names its client, with per-client delays.
    client_end: Option<Endpoint>,
    stop: Arc<OwnedFd>,
    counters: Arc<[DirectionAtomics; 2]>,
    index: usize,
    spin_ns: u64,
}

impl Direction {
    /// The thread's loop: deliver what is due, sleep until the next event, read what came.
    fn run(mut self) -> Result<(), LinkError> {
        set_timer_slack_ns(1);
        let mut buf = vec![0u8; MAX_PACKET];
        let mut line = DelayLine::new(
            self.impairment.may_depart_out_of_order(),
            DEFAULT_HELD_LIMIT_BYTES,
        );
        loop {
            self.deliver_due(&mut line);
            // Sleep until `spin` before the next departure, then poll without sleeping.
            let timeout = line
                .next_departure()
                .map(|at| at.saturating_sub(now_ns()).saturating_sub(self.spin_ns));
            let (readable, stopping) = self.wait(timeout)?;
            if stopping {
                return Ok(());
            }
            if readable {
                self.read_batch(&mut buf, &mut line)?;
            }
        }
    }

    /// Writes every held packet now due to the output device.
    fn deliver_due(&self, line: &mut DelayLine<Vec<u8>>) {
        loop {
            let now = now_ns();
            let Some(at) = line.next_departure() else {
                return;
            };
            let Some(packet) = line.pop_due(now) else {
                return;
            };
            self.send(&packet, now - at);
        }
    }

    /// Writes one packet `late_ns` after its departure time, counting it as out or as a write
    /// failure (the output device may be gone or down: not fatal, the link goes on).
    fn send(&self, packet: &[u8], late_ns: u64) {
        let counters = &self.counters[self.index];
        counters.lateness_ns.fetch_add(late_ns, Ordering::Relaxed);
        if late_ns > LATE_NS {
            counters.late_departures.fetch_add(1, Ordering::Relaxed);
        }
        match self.output.write(packet) {
            Ok(_) => {
                counters.packets_out.fetch_add(1, Ordering::Relaxed);
                counters
                    .bytes_out
                    .fetch_add(packet.len() as u64, Ordering::Relaxed);
            }
            Err(_) => {
                counters.dropped_write.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sleeps until the input is readable, `timeout_ns` has passed or the link stops; says
    /// which of the first and the last happened.
    fn wait(&self, timeout_ns: Option<u64>) -> Result<(bool, bool), LinkError> {
        let mut fds = [
            libc::pollfd {
                fd: self.input.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: two valid pollfds, a timespec living across the call (or null), no mask.
        let n = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok((false, false))
            } else {
                Err(LinkError::Os("ppoll", e))
            };
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            return Err(LinkError::Os(
                "the input TUN device",
                io::Error::other(format!("{} reported an error", self.input.name())),
            ));
        }
        Ok((fds[0].revents & libc::POLLIN != 0, fds[1].revents != 0))
    }

    /// Reads packets until none is left, deciding each one's fate and delivering on the way
    /// those held that fall due.
    fn read_batch(
        &mut self,
        buf: &mut [u8],
        line: &mut DelayLine<Vec<u8>>,
    ) -> Result<(), LinkError> {
        let counters = &self.counters[self.index];
        loop {
            let len = match self.input.read(buf) {
                Ok(0) => return Ok(()),
                Ok(len) => len,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(LinkError::Os("reading the input TUN device", e)),
            };
            let now = now_ns();
            counters.packets_in.fetch_add(1, Ordering::Relaxed);
            counters.bytes_in.fetch_add(len as u64, Ordering::Relaxed);
            let packet = &buf[..len];
            let client = self.client_end.and_then(|end| end.address(packet));
            match self.impairment.offer_from(now, len, client) {
                Verdict::Drop(DropReason::Loss) => {
                    counters.dropped_loss.fetch_add(1, Ordering::Relaxed);
                }
                Verdict::Drop(DropReason::Queue) => {
                    counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                }
                // Due already and nothing ahead of it: straight through, no copy.
                Verdict::Deliver { at_ns } if at_ns <= now && line.is_empty() => {
                    self.send(packet, now - at_ns);
                }
                Verdict::Deliver { at_ns } => {
                    if line.push(at_ns, len, packet.to_vec()).is_err() {
                        counters.dropped_queue.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            // A long batch must not hold back what falls due meanwhile.
            self.deliver_due(line);
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds, the clock of every arrival and departure.
pub fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is valid for writes; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

/// Sets the calling thread's timer slack: the kernel may otherwise wake a timed sleep up to
/// 50 µs late to batch wake-ups.
fn set_timer_slack_ns(ns: libc::c_ulong) {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument. On failure the thread keeps the
    // default slack, later but still correct.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
}
