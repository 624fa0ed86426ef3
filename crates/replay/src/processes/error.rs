//! Why a replay split over processes could not run or merge.

use std::path::PathBuf;
use thiserror::Error;

/// Why the shard processes could not be started, or their results not merged.
#[derive(Debug, Error)]
pub enum ShardsError {
    /// A split needs at least one shard.
    #[error("a replay split over processes needs at least one process")]
    NoShards,
    /// A file or folder of the run could not be made, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The caller could not make the command of a shard (its side configuration, say).
    #[error("preparing shard {shard}: {source}")]
    Command {
        /// The shard, as `I/N`.
        shard: String,
        /// The caller's reason.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A shard's process could not be started.
    #[error("starting shard {shard}: {source}")]
    Spawn {
        /// The shard, as `I/N`.
        shard: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A results file could not be read, or the shards' results not merged.
    #[error("{}: {source}", path.display())]
    Results {
        /// The results file (the merged one when merging failed).
        path: PathBuf,
        /// The cause.
        source: ldplayer_results::ResultsError,
    },
}

impl ShardsError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ShardsError {
        ShardsError::Io {
            path: path.into(),
            source,
        }
    }
}
