//! Commands run to completion, their standard error kept for the error: `ip`, `tc`, `sysctl`
//! and the like, whose failure is a sentence on standard error.

use std::process::{Command, Stdio};

/// A command that could not be started or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The program could not be started (not installed, not executable).
    #[error("cannot run {program}: {error}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// The command ran and failed.
    #[error("{command} failed: {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
}

impl CommandError {
    /// `program` could not be started; the name may carry a hint such as the package to install.
    pub fn spawn(program: impl Into<String>, error: std::io::Error) -> Self {
        CommandError::Spawn {
            program: program.into(),
            error,
        }
    }

    /// `command` (a command line, or a step named like one) failed, saying `stderr`.
    pub fn failed(command: impl Into<String>, stderr: impl Into<String>) -> Self {
        CommandError::Failed {
            command: command.into(),
            stderr: stderr.into(),
        }
    }
}

/// Runs `program args` to completion with nothing on its standard input, failing with its
/// standard error.
pub fn run(program: &str, args: &[&str]) -> Result<(), CommandError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| CommandError::Spawn {
            program: program.to_string(),
            error,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(CommandError::Failed {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs `ip args` in this process's network namespace.
pub fn ip(args: &[&str]) -> Result<(), CommandError> {
    run("ip", args)
}

/// Sets a kernel setting by writing `value` to its file under /proc/sys, failing as
/// `echo VALUE > PATH` would: the lab and the experiment set the same few, and `sysctl` is not
/// always installed.
pub fn sysctl(path: &str, value: &str) -> Result<(), CommandError> {
    std::fs::write(path, value)
        .map_err(|e| CommandError::failed(format!("echo {value} > {path}"), e.to_string()))
}

/// tcpdump's arguments to capture on `iface` into the file named next (they end with `-w`): no
/// name lookups, each packet written as it comes (`-U`, immediate mode: without it the last,
/// partly filled capture block is lost on SIGINT), and a 32 MiB kernel buffer (on a loaded
/// machine tcpdump is not scheduled for a while, and the default 2 MiB overflowed, packets
/// "dropped by kernel", in a CI run). The lab's capture and the tests' witness share them.
pub fn tcpdump_args(iface: &str) -> [&str; 8] {
    [
        "-i",
        iface,
        "-n",
        "-U",
        "--immediate-mode",
        "-B",
        "32768",
        "-w",
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_the_commands_own_words() {
        let e = run("sh", &["-c", "echo no such thing >&2; exit 3"]).unwrap_err();
        assert!(
            matches!(&e, CommandError::Failed { stderr, .. } if stderr == "no such thing"),
            "{e}"
        );
        assert!(e.to_string().starts_with("sh -c"), "{e}");
    }

    #[test]
    fn a_program_that_is_not_there_says_so() {
        let e = run("ldplayer-no-such-program", &[]).unwrap_err();
        assert!(matches!(e, CommandError::Spawn { .. }), "{e}");
        assert!(run("true", &[]).is_ok());
    }

    #[test]
    fn a_setting_that_cannot_be_written_fails_as_the_shell_would_say() {
        let path = "/proc/sys/net/ipv4/conf/ldplayer-no-such-device/rp_filter";
        let e = sysctl(path, "0").unwrap_err();
        assert!(
            matches!(&e, CommandError::Failed { command, .. } if *command == format!("echo 0 > {path}")),
            "{e}"
        );
    }
}
