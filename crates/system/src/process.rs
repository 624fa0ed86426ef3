//! Signals to processes and process groups, and children set apart in groups of their own.

use rustix::process::{Pid, WaitId, WaitIdOptions};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

pub use rustix::process::Signal;

/// Sends `signal` to process `pid`. A process that is already gone is not an error worth
/// reporting to the callers here (they stop what they started), so the result is only returned.
pub fn signal(pid: u32, signal: Signal) -> std::io::Result<()> {
    let pid = pid_of(pid)?;
    rustix::process::kill_process(pid, signal).map_err(std::io::Error::from)
}

/// Sends `signal` to every process in the group whose leader is `pid` (what a server forked
/// included).
pub fn signal_group(pid: u32, signal: Signal) -> std::io::Result<()> {
    let pid = pid_of(pid)?;
    rustix::process::kill_process_group(pid, signal).map_err(std::io::Error::from)
}

fn pid_of(pid: u32) -> std::io::Result<Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a process id"))
}

/// Whether the child has exited, without reaping it: while it stays a zombie its pid (and so
/// its process group's id) cannot be reused, and the group can still be signalled safely.
pub fn has_exited(child: &Child) -> bool {
    let Ok(pid) = pid_of(child.id()) else {
        return true;
    };
    matches!(
        rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ),
        Ok(Some(_))
    )
}

/// Whether this process runs as root (effective user id 0): network namespaces, `ip` and the
/// servers' own users need it.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Makes the child `command` starts the leader of a process group of its own (Ctrl-C in the
/// terminal then reaches this process only, which stops its children in order) and has it
/// killed (SIGKILL) when the thread that started it ends.
#[allow(unsafe_code)]
pub fn own_group_dying_with_parent(command: &mut Command) -> &mut Command {
    // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
    // (setpgid, prctl), through rustix, allocating nothing.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setpgid(None, None)?;
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            Ok(())
        })
    }
}

/// Lets a closed pipe end the process quietly, as it does `cat` or `awk`: Rust programs ignore
/// SIGPIPE, so `ldplayer results export run.res --csv | head` would otherwise fail ("failed
/// printing to stdout: Broken pipe"). Sockets are unaffected: the standard library writes to
/// them with MSG_NOSIGNAL, and UDP never raises it. Call it first thing in `main`, before any
/// thread starts.
#[allow(unsafe_code)]
pub fn restore_default_sigpipe() {
    // SAFETY: SIG_DFL is a valid disposition; signal(2) is safe to call at any time, and the
    // callers do so before starting threads that might race on the disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn wait_exited(child: &Child) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if has_exited(child) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_signalled_child_has_exited_and_can_still_be_reaped() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        assert!(!has_exited(&child));
        signal(child.id(), Signal::TERM).expect("signal");
        assert!(wait_exited(&child), "sleep did not exit on SIGTERM");
        // Not reaped by has_exited: wait still gets its status.
        let status = child.wait().expect("reaped");
        assert!(!status.success());
    }

    #[test]
    fn a_group_signal_reaches_what_the_leader_forked() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & echo $!; wait"]);
        command.stdout(std::process::Stdio::piped());
        own_group_dying_with_parent(&mut command);
        let mut leader = command.spawn().expect("sh runs");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the forked sleep's pid");
        let forked: u32 = line.trim().parse().expect("a pid");
        signal_group(leader.id(), Signal::KILL).expect("signal the group");
        assert!(wait_exited(&leader));
        leader.wait().expect("reaped");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{forked}")).exists()
            && std::fs::read_to_string(format!("/proc/{forked}/stat"))
                .is_ok_and(|s| !s.contains(") Z "))
        {
            assert!(
                Instant::now() < deadline,
                "the forked sleep outlived its group's SIGKILL"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_pid_that_is_not_one_is_an_error() {
        assert!(signal(0, Signal::TERM).is_err());
        assert!(signal(u32::MAX, Signal::TERM).is_err());
    }
}
