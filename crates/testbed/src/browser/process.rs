//! Running headless Chromium in a network namespace of its own, bounded in time, and the
//! arguments and error text of a run.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{io, BrowserError};
use crate::prerequisite;

/// How long one Chromium run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// What a Chromium run printed.
pub(super) struct Run {
    /// Its standard output.
    pub(super) stdout: String,
    /// Its standard error.
    pub(super) stderr: String,
}

/// Runs Chromium headless with `args` in a new network namespace, with a fresh profile in
/// `scratch`, for at most [`RUN_TIMEOUT`].
pub(super) fn run(
    chromium: &Path,
    what: &'static str,
    args: &[OsString],
    scratch: &Path,
) -> Result<Run, BrowserError> {
    let profile = tempfile::tempdir_in(scratch).map_err(|source| io(scratch, source))?;
    let mut command = Command::new("unshare");
    if !prerequisite::effective_uid_is_root() {
        // A user namespace of our own, in which we may make the network namespace.
        command.arg("--map-root-user");
    }
    command
        .args(["--net", "--"])
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--force-device-scale-factor=1",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--mute-audio",
        ])
        .arg(flag("--user-data-dir=", profile.path()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fail = |why: String, stderr: &str| BrowserError::Chromium {
        what,
        why,
        stderr: tail(stderr),
    };
    let mut child = command
        .spawn()
        .map_err(|e| fail(format!("could not start unshare: {e}"), ""))?;
    let stdout = child.stdout.take().map(drain);
    let stderr = child.stderr.take().map(drain);
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > RUN_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("still running after {RUN_TIMEOUT:?}, killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => break Err(format!("waiting for it: {e}")),
        }
    };
    let joined = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let (stdout, stderr) = (joined(stdout), joined(stderr));
    match status {
        Ok(status) if status.success() => Ok(Run { stdout, stderr }),
        Ok(status) => Err(fail(format!("exited with {status}"), &stderr)),
        Err(why) => Err(fail(why, &stderr)),
    }
}

/// Reads a pipe to its end on a thread of its own (so that neither pipe blocks the child).
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A `--flag=path` argument.
pub(super) fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path);
    flag
}

/// The `file://` URL of an absolute path, its bytes other than letters, digits, `/`, `-`,
/// `.`, `_` and `~` percent-encoded.
pub(super) fn file_url(path: &Path) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    let mut url = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url.into()
}

/// The last lines of a run's standard error, for an error message.
pub(super) fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_percent_encoded() {
        assert_eq!(
            file_url(Path::new("/tmp/a b#c.html")),
            "file:///tmp/a%20b%23c.html"
        );
    }
}
