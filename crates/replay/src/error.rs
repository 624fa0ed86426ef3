//! The engine's errors.

use thiserror::Error;

/// Why a replay could not run or finish.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// The configuration is unusable.
    #[error("bad replay configuration: {0}")]
    Config(String),
    /// Setting up the TLS client failed (unreadable CA file, no usable certificate).
    #[error("TLS setup: {0}")]
    TlsSetup(String),
    /// A system resource could not be set up (epoll, timerfd, thread).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// Reading the trace failed.
    #[error("reading the trace: {0}")]
    Trace(#[from] ldplayer_trace::TraceError),
    /// Writing the results failed.
    #[error("writing results: {0}")]
    Results(std::io::Error),
    /// A worker thread panicked (a bug).
    #[error("{0} thread panicked")]
    Panicked(&'static str),
}

impl ReplayError {
    pub(crate) fn io(context: &'static str, source: std::io::Error) -> ReplayError {
        ReplayError::Io { context, source }
    }
}
