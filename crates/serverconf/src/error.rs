//! Why a configuration or a certificate could not be written.

use std::path::Path;

/// What went wrong writing a server's files.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    /// rcgen could not make the certificate.
    #[error("cannot make a TLS certificate: {0}")]
    Certificate(String),
    /// A file or directory could not be written or made.
    #[error("{what}: {source}")]
    Io {
        /// The file or directory, and what was done to it ("cannot write /tmp/x/knot.conf").
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

impl ConfError {
    /// An [`Io`](ConfError::Io) error: `doing` ("cannot write") to `path` failed with `source`.
    pub fn io(doing: &str, path: &Path, source: std::io::Error) -> ConfError {
        ConfError::Io {
            what: format!("{doing} {}", path.display()),
            source,
        }
    }
}
