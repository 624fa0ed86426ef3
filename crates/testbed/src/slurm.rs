//! A real one-node Slurm cluster for the tests: munged, slurmctld and slurmd (Debian's `munge`
//! and `slurm-wlm`) started in a scratch directory with their own configuration, ports, state
//! and spool directories, munge key and munged socket, so that they never touch the system's
//! `/etc/slurm`, `/etc/munge` or a munged already running. Slurm needs root here (its daemons
//! run as `SlurmUser=root`, and slurmd starts the jobs as their user).
//!
//! Dropping the [`Cluster`] cancels every job it still holds, waits for them to end, and stops
//! the daemons, also when the test fails (the drop runs as the panic unwinds).

use crate::{free_port, prerequisite};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The node's name in the cluster's configuration (slurmd is started as it).
pub const NODE: &str = "ldtest";

/// A running one-node Slurm cluster; stopped on drop.
pub struct Cluster {
    /// Its scratch directory: configuration, key, sockets, state, spool and logs.
    pub dir: tempfile::TempDir,
    /// Its `slurm.conf`, which every Slurm command of the test is given through `SLURM_CONF`.
    pub conf: PathBuf,
    /// `slurmctld -V` and `slurmd -V` of the binaries started, and the running controller's
    /// version (`scontrol show config`), one per line.
    pub versions: String,
    daemons: Vec<(&'static str, Child)>,
}

/// Whether Slurm and munge are installed and this process is root; false only when a test may
/// skip (`LDPLAYER_ALLOW_SKIP=1`).
pub fn available() -> bool {
    let tools = [
        ("munged", "munge"),
        ("slurmctld", "slurmctld (slurm-wlm)"),
        ("slurmd", "slurmd (slurm-wlm)"),
        ("sbatch", "slurm-client (slurm-wlm)"),
    ];
    tools
        .iter()
        .all(|(tool, package)| prerequisite::tool(tool, package).is_some())
        && prerequisite::require(
            prerequisite::effective_uid_is_root(),
            "root (a Slurm node's slurmd starts jobs as their user)",
            "run the tests as root",
        )
}

/// This host's name as slurmctld finds it (the short name): the controller must be named so.
fn short_hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    name.split('.').next().unwrap_or(name).to_string()
}

fn binary(name: &str) -> PathBuf {
    prerequisite::installed(name).unwrap_or_else(|| PathBuf::from(name))
}

impl Cluster {
    /// Starts munged, slurmctld and slurmd on loopback with a node of `cpus` CPUs (declared:
    /// `SlurmdParameters=config_overrides` lets the node offer more CPUs than the machine has,
    /// so that tasks which only wait on the network fit together) and waits for the node to be
    /// idle. `None` only when Slurm is missing and skipping is allowed.
    pub fn start(cpus: u32) -> Option<Cluster> {
        if !available() {
            return None;
        }
        let dir = tempfile::tempdir().expect("scratch directory");
        let root = dir.path();
        // munged wants its socket's directory searchable by all, its key readable by it alone.
        set_mode(root, 0o755);
        for sub in ["state", "spool", "log", "jobs"] {
            std::fs::create_dir(root.join(sub)).expect("a folder of the cluster");
        }
        let key = root.join("munge.key");
        let mut bytes = [0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .expect("1024 random bytes for the munge key");
        std::fs::write(&key, bytes).expect("the munge key");
        set_mode(&key, 0o600);
        let socket = root.join("munge.socket");
        let mut cluster = Cluster {
            conf: root.join("slurm.conf"),
            versions: String::new(),
            daemons: Vec::new(),
            dir,
        };
        let root = cluster.dir.path().to_path_buf();
        cluster.spawn(
            "munged",
            Command::new(binary("munged"))
                .arg("--foreground")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!(
                    "--log-file={}",
                    root.join("log/munged.log").display()
                ))
                .arg(format!("--pid-file={}", root.join("munged.pid").display()))
                .arg(format!(
                    "--seed-file={}",
                    root.join("munged.seed").display()
                )),
        );
        wait_until(Duration::from_secs(10), "munged to make its socket", || {
            socket.exists()
        });
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        std::fs::write(
            &cluster.conf,
            config(&root, &socket, ctld_port, slurmd_port, cpus),
        )
        .expect("slurm.conf");
        cluster.versions = [binary("slurmctld"), binary("slurmd")]
            .iter()
            .map(|b| {
                let out = Command::new(b).arg("-V").output().expect("-V runs");
                format!(
                    "{}: {}",
                    b.display(),
                    String::from_utf8_lossy(&out.stdout).trim()
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let conf = cluster.conf.clone();
        cluster.spawn(
            "slurmctld",
            Command::new(binary("slurmctld"))
                .args(["-D", "-c", "-i", "-f"])
                .arg(&conf),
        );
        cluster.spawn(
            "slurmd",
            Command::new(binary("slurmd"))
                .args(["-D", "-N", NODE, "-f"])
                .arg(&conf),
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            cluster.check_daemons();
            let state = cluster.slurm("sinfo").args(["-h", "-o", "%T"]).output();
            if state.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the Slurm node did not come up idle in 60 s:\n{}",
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let running = cluster
            .slurm("scontrol")
            .args(["show", "config"])
            .output()
            .expect("scontrol runs");
        let version = String::from_utf8_lossy(&running.stdout)
            .lines()
            .find(|l| l.starts_with("SLURM_VERSION"))
            .map(|l| l.split('=').nth(1).unwrap_or("").trim().to_string())
            .unwrap_or_default();
        cluster
            .versions
            .push_str(&format!("\nrunning slurmctld (scontrol): {version}"));
        Some(cluster)
    }

    fn spawn(&mut self, name: &'static str, command: &mut Command) {
        let log = std::fs::File::create(self.dir.path().join(format!("log/{name}.out")))
            .expect("a daemon's log");
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{name} does not start: {e}"));
        self.daemons.push((name, child));
    }

    /// Fails the test, with the daemons' logs, if one of them has exited.
    pub fn check_daemons(&mut self) {
        let mut dead = Vec::new();
        for (name, child) in &mut self.daemons {
            if let Ok(Some(status)) = child.try_wait() {
                dead.push(format!("{name} exited: {status}"));
            }
        }
        assert!(dead.is_empty(), "{}\n{}", dead.join("; "), self.logs());
    }

    /// A Slurm client command (`sbatch`, `squeue`, `scontrol`...) of this cluster: its
    /// configuration in `SLURM_CONF`, run in the cluster's `jobs` folder (where jobs write
    /// their `slurm-*.out` unless told otherwise).
    pub fn slurm(&self, program: &str) -> Command {
        let mut c = Command::new(binary(program));
        c.env("SLURM_CONF", &self.conf)
            .current_dir(self.dir.path().join("jobs"));
        c
    }

    /// Runs `command` to its end, at most `limit`: killed and the test failed past it.
    pub fn run(&self, command: &mut Command, limit: Duration) -> Output {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("a Slurm command starts");
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(limit) {
            Ok(out) => out.expect("a Slurm command's output"),
            Err(_) => {
                // The process this call started and has not reaped.
                let _ =
                    ldplayer_system::process::signal(pid, ldplayer_system::process::Signal::KILL);
                panic!(
                    "{command:?} did not end within {limit:?}\n{}\n{}",
                    self.queue(),
                    self.logs()
                )
            }
        }
    }

    /// `squeue`'s view of the cluster, for failure messages.
    pub fn queue(&self) -> String {
        self.slurm("squeue")
            .args(["-o", "%.12i %.10T %.20r %.10M %S"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// The jobs' output files and the daemons' logs (their ends), for failure messages.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for folder in ["jobs", "log"] {
            let Ok(entries) = std::fs::read_dir(self.dir.path().join(folder)) else {
                continue;
            };
            let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
            files.sort();
            for f in files.iter().filter(|f| f.is_file()) {
                let body = std::fs::read_to_string(f).unwrap_or_default();
                let tail: Vec<&str> = body.lines().rev().take(30).collect();
                text.push_str(&format!("--- {}\n", f.display()));
                for l in tail.iter().rev() {
                    text.push_str(l);
                    text.push('\n');
                }
            }
        }
        text
    }

    /// Every job (array tasks apart) the controller still knows, one `scontrol show job -o`
    /// line each: `JobState=`, `ExitCode=`, `StartTime=`...
    pub fn jobs(&self, id: &str) -> Vec<String> {
        let out = self
            .slurm("scontrol")
            .args(["show", "job", "-o", id])
            .output()
            .expect("scontrol runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Cancels every job and waits (at most 30 s) for the queue to empty.
    fn cancel_all(&self) {
        let ids = self
            .slurm("squeue")
            .args(["-h", "-o", "%i"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let ids: Vec<&str> = ids.split_whitespace().collect();
        if ids.is_empty() {
            return;
        }
        let _ = self.slurm("scancel").args(&ids).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let left = self.slurm("squeue").args(["-h", "-o", "%i"]).output();
            if left.is_ok_and(|o| o.stdout.trim_ascii().is_empty()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.cancel_all();
        // Stop in reverse order of start: slurmd, slurmctld, then munged.
        while let Some((_, mut child)) = self.daemons.pop() {
            let _ = ldplayer_system::process::signal(
                child.id(),
                ldplayer_system::process::Signal::TERM,
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The cluster's `slurm.conf`: everything in `root`, its own ports, munge through its own
/// socket, no cgroups (proctrack/linuxproc), no accounting.
fn config(root: &Path, socket: &Path, ctld_port: u16, slurmd_port: u16, cpus: u32) -> String {
    let r = root.display();
    format!(
        "ClusterName=ldplayertest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} RealMemory=1024 State=UNKNOWN
PartitionName=test Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
",
        host = short_hostname(),
        socket = socket.display(),
    )
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

/// Polls `done` every 50 ms until it holds; fails the test after `limit`.
fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
