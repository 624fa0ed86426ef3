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
    ldplayer_system::limits::raise_file_limit_of(&mut command, files);
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
    ldplayer_system::limits::hard_file_limit()
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

use ldplayer_system::limits::raise_file_limit;

/// Raises this process's own soft limit on open files towards `files` (never above its hard
/// limit, never lower), for the embedded server, which opens its connections here.
pub(crate) fn raise_own_file_limit(files: u64) {
    raise_file_limit(files.min(hard_file_limit()));
}

pub(crate) use ldplayer_system::process::has_exited;

/// Stops the server: SIGTERM to its main process, up to [`STOP_GRACE`] for it to exit, then
/// SIGKILL to its whole process group (what it forked included), and reaps it. A server that
/// had to be killed is stopped all the same (and said so on standard error); only a process
/// that cannot be reaped is an error.
pub(crate) fn stop(kind: ServerKind, child: &mut Child) -> Result<(), ServerError> {
    let pid = child.id();
    let _ = ldplayer_system::process::signal(pid, ldplayer_system::process::Signal::TERM);
    let deadline = Instant::now() + STOP_GRACE;
    while !has_exited(child) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !has_exited(child) {
        eprintln!("{kind} (pid {pid}) still ran {STOP_GRACE:?} after SIGTERM: killed");
    }
    // The group's leader is not reaped yet, so its id is still ours.
    let _ = ldplayer_system::process::signal_group(pid, ldplayer_system::process::Signal::KILL);
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
