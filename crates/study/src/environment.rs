//! `environment.json`: what an experiment ran on, so that its figures can be read later and
//! compared with another machine's. The experiment gathers it from the machine
//! (`ldplayer_experiment::environment::gather`); this is its form on disk.

use serde::{Deserialize, Serialize};

/// The machine and software of an experiment (each run's `run.json` adds its server's
/// version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// ldplayer's version.
    pub ldplayer: String,
    /// `uname -r`.
    pub kernel: String,
    /// The CPU's model name.
    pub cpu: String,
    /// Cores this process may run on.
    pub cores: usize,
    /// Total memory in MiB.
    pub memory_mib: u64,
    /// The host's name.
    pub host: String,
    /// When the experiment started (RFC 3339, UTC).
    pub started: String,
}
