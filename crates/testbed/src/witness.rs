//! Witnesses: the tools a test runs to check what ldplayer did (tcpdump capturing what was
//! sent, tshark counting it, a zone checker, kdig), each failing the test with its output when
//! it fails, so that a test can not pass on a witness that did not run.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `program` with `args`; its standard output and error together.
pub fn run<'a>(program: &Path, args: impl IntoIterator<Item = &'a str>) -> String {
    let args: Vec<&str> = args.into_iter().collect();
    let out = Command::new(program)
        .args(args.iter().map(OsStr::new))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\n{text}",
        program.display(),
        out.status
    );
    text
}

/// Runs the checker `cmd` (`named-checkzone`, `kzonecheck`, ...) in `dir`; fails the test with
/// its output when it rejects what it checks.
pub fn checker_accepts(cmd: &str, args: &[&str], dir: &std::path::Path) {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (scripts/test.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} rejects the output: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// tcpdump writing what passes on loopback with `filter` to `file`, from [`Tcpdump::start`]
/// (which returns once it listens) until [`Tcpdump::stop`].
pub struct Tcpdump {
    child: std::process::Child,
    file: std::path::PathBuf,
}

impl Tcpdump {
    /// Starts tcpdump on loopback (`lo`), writing what `filter` keeps to `file`.
    pub fn start(file: &std::path::Path, filter: &[&str]) -> Tcpdump {
        Self::start_with(Command::new("tcpdump"), "lo", file, filter)
    }

    /// Like [`start`](Self::start), on interface `iface` of network namespace `netns`.
    pub fn start_in_netns(
        netns: &str,
        iface: &str,
        file: &std::path::Path,
        filter: &[&str],
    ) -> Tcpdump {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, "tcpdump"]);
        Self::start_with(cmd, iface, file, filter)
    }

    fn start_with(
        mut cmd: Command,
        iface: &str,
        file: &std::path::Path,
        filter: &[&str],
    ) -> Tcpdump {
        use std::io::BufRead;
        let mut child = cmd
            // Immediate mode and a 32 MiB kernel buffer: see `tcpdump_args`.
            .args(ldplayer_system::command::tcpdump_args(iface))
            .arg(file)
            .args(filter)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump must be installed (scripts/test.sh installs it)");
        let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let _ = err.read_line(&mut line);
        assert!(line.contains("listening"), "tcpdump: {line}");
        // Handed back for `stop` to read the closing statistics from.
        child.stderr = Some(err.into_inner());
        Tcpdump {
            child,
            file: file.to_path_buf(),
        }
    }

    /// Stops it (SIGINT) once what was sent has been written: when the capture file has not
    /// grown for a second (on a busy machine tcpdump may lag behind the packets, and what it
    /// has not read when it stops is lost: a 300 ms pause once cut a capture to half), at most
    /// 10 s after the call; then waits for it and
    /// returns its closing statistics (packets captured, dropped by the kernel), for tests that
    /// must tell a witness that missed packets from a replay that lost them.
    pub fn stop(mut self) -> String {
        let size = || std::fs::metadata(&self.file).map_or(0, |m| m.len());
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut last = size();
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let now = size();
            if now == last || std::time::Instant::now() > give_up {
                break;
            }
            last = now;
        }
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let mut statistics = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut statistics);
        }
        statistics.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// Packets in `pcap` that tshark's display `filter` keeps. A capture cut short (a witness
/// stopped mid-write) counts what it holds; a filter tshark cannot read fails the test, so
/// that a count of 0 means no such packet.
pub fn packets_in(pcap: &std::path::Path, filter: &str) -> usize {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("tshark runs (scripts/test.sh installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("filter"),
        "tshark -r {} -Y {filter}: {stderr}",
        pcap.display()
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}
