//! Limits on open files: servers with tens of thousands of connections need more than the
//! usual 1,024.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The hard limit on open files of this process (and so of the processes it starts);
/// `u64::MAX` when unlimited.
pub fn hard_file_limit() -> u64 {
    getrlimit(Resource::Nofile).maximum.unwrap_or(u64::MAX)
}

/// The soft limit on open files of this process; `u64::MAX` when unlimited.
pub fn soft_file_limit() -> u64 {
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

/// Raises the soft (and, when allowed, hard) limit on open files to at least `wanted`; never
/// lowers it. When the hard limit cannot be raised, the soft limit goes up to the hard one.
/// Failures leave the limit as it was: what then cannot be opened is reported where it fails.
pub fn raise_file_limit(wanted: u64) {
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if current >= wanted {
        return;
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: Some(limit.maximum.unwrap_or(u64::MAX).max(wanted)),
    };
    if setrlimit(Resource::Nofile, raised).is_err() {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        );
    }
}

/// Has the child `command` starts raise its own limit on open files to at least `wanted` (as
/// [`raise_file_limit`] does) before it runs its program: a server started by root may get more
/// than this process's hard limit.
#[allow(unsafe_code)]
pub fn raise_file_limit_of(command: &mut Command, wanted: u64) -> &mut Command {
    // SAFETY: the closure runs in the child between fork and exec and makes only the
    // getrlimit and setrlimit system calls (async-signal-safe), allocating nothing.
    unsafe {
        command.pre_exec(move || {
            raise_file_limit(wanted);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_never_lowers_and_stays_within_the_hard_limit() {
        let before = soft_file_limit();
        raise_file_limit(1);
        assert_eq!(soft_file_limit(), before, "raising to 1 lowered the limit");
        let hard = hard_file_limit();
        raise_file_limit(before.saturating_add(1).min(hard));
        assert!(soft_file_limit() >= before.saturating_add(1).min(hard));
        assert!(soft_file_limit() <= hard_file_limit());
    }

    #[test]
    fn a_child_raises_its_own_limit_before_its_program_runs() {
        let hard = hard_file_limit();
        let wanted = soft_file_limit().saturating_add(10).min(hard);
        let mut command = Command::new("sh");
        command.args(["-c", "ulimit -n"]);
        raise_file_limit_of(&mut command, wanted);
        let out = command.output().expect("sh runs");
        let shown = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let got = if shown == "unlimited" {
            u64::MAX
        } else {
            shown.parse().expect("a number")
        };
        assert!(
            got >= wanted,
            "the child's limit is {got}, {wanted} was asked"
        );
    }
}
