//! External server processes: started in the foreground in a process group of their own with
//! their output appended to the log, enough file descriptors for the connections asked for;
//! stopped with SIGTERM, then SIGKILL for the whole group (servers such as NSD fork workers).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{ServerError, ServerKind};

/// How long a server has to exit after SIGTERM before it is killed.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// The command line as one string, for messages.
pub(crate) fn command_line(program: &Path, args: &[OsString]) -> String {
    let mut line = program.display().to_string();
    for a in args {
        line.push(' ');
        line.push_str(&a.to_string_lossy());
    }
    line
}

/// Starts `program` with `args`, standard output and error appended to `log`, in a new
/// process group, with its file descriptor limit raised to `files` (see [`attainable_files`]).
pub(crate) fn spawn(
    program: &Path,
    args: &[OsString],
    log: &Path,
    files: u64,
) -> Result<Child, ServerError> {
    let out = ldplayer_output::open_append(log)
        .map_err(|e| ServerError::io("cannot open", log)(e.into()))?;
    let err = out
        .try_clone()
        .map_err(ServerError::io("cannot open", log))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only calls getrlimit and
    // setrlimit, which are async-signal-safe, on stack memory.
    unsafe {
        command.pre_exec(move || {
            raise_file_limit(files);
            Ok(())
        });
    }
    command.spawn().map_err(|source| ServerError::Spawn {
        command: command_line(program, args),
        source,
    })
}

/// The file descriptor limit a server started now can get, up to `wanted`: as much as the
/// kernel allows (`fs.nr_open`) when this process may raise hard limits (`CAP_SYS_RESOURCE`),
/// else no more than the present hard limit.
pub(crate) fn attainable_files(wanted: u64) -> u64 {
    let ceiling = if may_raise_hard_limits() {
        nr_open()
    } else {
        hard_file_limit()
    };
    wanted.min(ceiling)
}

/// The hard limit on open files of this process (and so of the servers it starts).
fn hard_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct given, nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_max
}

/// Whether this process has `CAP_SYS_RESOURCE` (bit 24 of `CapEff`), which lets it raise a
/// hard limit.
fn may_raise_hard_limits() -> bool {
    const CAP_SYS_RESOURCE: u32 = 24;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_RESOURCE) != 0)
}

/// The kernel's ceiling on a process's file descriptors (`fs.nr_open`).
fn nr_open() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// Raises the soft (and, when allowed, hard) limit on open files to at least `wanted`; never
/// lowers it. Failures leave the limit as it was: the server then reports what it cannot open.
fn raise_file_limit(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit write and read the struct given, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        let wanted = wanted as libc::rlim_t;
        if limit.rlim_cur >= wanted {
            return;
        }
        let raised = libc::rlimit {
            rlim_cur: wanted,
            rlim_max: limit.rlim_max.max(wanted),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
            let soft = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &soft);
        }
    }
}

/// Raises this process's own soft limit on open files towards `files` (never above its hard
/// limit, never lower), for the embedded server, which opens its connections here.
pub(crate) fn raise_own_file_limit(files: u64) {
    raise_file_limit(files.min(hard_file_limit()));
}

/// Whether the child has exited, without reaping it: while it stays a zombie its pid (and so
/// its process group's id) cannot be reused, and the group can still be killed safely.
pub(crate) fn has_exited(child: &Child) -> bool {
    // SAFETY: waitid fills the siginfo_t given; WNOWAIT leaves the child waitable.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            child.id() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        // With WNOHANG and no exited child, the pid field stays zero.
        r == 0 && info.si_pid() != 0
    }
}

/// Stops the server: SIGTERM to its main process, up to [`STOP_GRACE`] for it to exit, then
/// SIGKILL to its whole process group (what it forked included), and reaps it. A server that
/// had to be killed is stopped all the same (and said so on standard error); only a process
/// that cannot be reaped is an error.
pub(crate) fn stop(kind: ServerKind, child: &mut Child) -> Result<(), ServerError> {
    let pid = child.id();
    // SAFETY: kill sends a signal to a process (group) we started and have not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_GRACE;
    while !has_exited(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !has_exited(child) {
        eprintln!("{kind} (pid {pid}) still ran {STOP_GRACE:?} after SIGTERM: killed");
    }
    // SAFETY: as above; the group's leader is not reaped yet, so its id is still ours.
    unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
    child.wait().map_err(|e| ServerError::Stop {
        kind,
        pid,
        message: e.to_string(),
    })?;
    Ok(())
}

/// The last `lines` lines of a log file (empty if it cannot be read).
pub(crate) fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
