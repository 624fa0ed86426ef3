//! Why a server could not be configured, started or stopped. Every message names what a person
//! needs to act: the package to install, the configuration file and the checker's output, the
//! command line, the tail of the server's log.

use std::path::PathBuf;
use std::time::Duration;

use crate::ServerKind;

/// What went wrong with a server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The server's program is not installed.
    #[error("{program} is not installed: apt-get install {package}")]
    Missing {
        /// The program looked for (`named`).
        program: &'static str,
        /// The Debian package that has it (`bind9`).
        package: &'static str,
    },
    /// The setup asks for something this kind cannot do (TLS on Knot DNS 3.2, zone files for a
    /// resolver, ...).
    #[error("{kind} cannot {what}")]
    Unsupported {
        /// The server.
        kind: ServerKind,
        /// What it cannot do.
        what: String,
    },
    /// The setup is incomplete or inconsistent, or the server's checker refused the
    /// configuration written for it (its output is in the message).
    #[error("{kind}: {message}")]
    Config {
        /// The server.
        kind: ServerKind,
        /// What is wrong, with the configuration's path and the checker's output.
        message: String,
    },
    /// The program could not be started.
    #[error("cannot run {command}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server exited before it answered.
    #[error("{kind} exited ({status}) before answering; command: {command}\nlog {}:\n{log_tail}", log.display())]
    Exited {
        /// The server.
        kind: ServerKind,
        /// How it exited.
        status: String,
        /// The command line.
        command: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The server did not answer in time (UDP, TCP or TLS, as said in `what`).
    #[error("{kind} did not become ready within {waited:?}: {what}; command: {command}\nlog tail:\n{log_tail}")]
    NotReady {
        /// The server.
        kind: ServerKind,
        /// How long it was given.
        waited: Duration,
        /// What was still missing (e.g. "no UDP answer to . SOA from 10.53.0.1:53").
        what: String,
        /// The command line (or "in process" for the embedded server).
        command: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The embedded server could not load its zones or bind its sockets.
    #[error("ldplayer: {0}")]
    Embedded(String),
    /// A configuration file or the certificate could not be written or made (the shared
    /// writers of `ldplayer-serverconf`).
    #[error(transparent)]
    Conf(#[from] ldplayer_serverconf::ConfError),
    /// A file or directory could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// The file or directory, and what was done to it.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The server did not stop after SIGTERM and SIGKILL.
    #[error("{kind} (pid {pid}) did not stop: {message}")]
    Stop {
        /// The server.
        kind: ServerKind,
        /// Its process.
        pid: u32,
        /// What happened.
        message: String,
    },
}

impl ServerError {
    /// An [`Io`](ServerError::Io) error about `path`, doing `doing` ("cannot write").
    pub(crate) fn io(doing: &str, path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self {
        let what = format!("{doing} {}", path.display());
        move |source| ServerError::Io { what, source }
    }
}
