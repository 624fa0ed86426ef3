//! Why an experiment, or one of its runs, failed.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why an experiment or a run failed.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// A file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: std::io::Error,
    },
    /// A program could not be started, or a set-up command failed.
    #[error(transparent)]
    Command(#[from] ldplayer_system::CommandError),
    /// Something did not happen in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// A side of the run reported a failure or died.
    #[error("{side} side: {message}")]
    Side {
        /// `client` or `server`.
        side: &'static str,
        /// What it said.
        message: String,
    },
    /// The link emulator failed.
    #[error("link: {0}")]
    Link(#[from] ldplayer_link::LinkError),
    /// The server could not be configured or started.
    #[error("server: {0}")]
    Server(#[from] ldplayer_servers::ServerError),
    /// The trace could not be made or read.
    #[error("trace: {0}")]
    Trace(String),
    /// The replay failed.
    #[error("replay: {0}")]
    Replay(String),
    /// A client side split over processes could not start them or merge their results.
    #[error("client processes: {0}")]
    Shards(#[from] ldplayer_replay::processes::ShardsError),
    /// The plan was interrupted (Ctrl-C).
    #[error("interrupted")]
    Interrupted,
    /// Other bad input.
    #[error("{0}")]
    Input(String),
}

impl ExperimentError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, error: std::io::Error) -> ExperimentError {
        ExperimentError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}
