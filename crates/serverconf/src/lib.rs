//! What a real DNS server is given to run: the configuration text of knotd and nsd, and a TLS
//! certificate made with rcgen (no openssl command).
//!
//! Two places start these servers: `ldplayer-servers`, for experiments, and `ldplayer-testbed`,
//! for tests. They share these writers so that a server's configuration is written once. The
//! crate is at the bottom of the graph on purpose: the testbed is a dev-dependency of
//! `ldplayer-zone`, `ldplayer-server` and `ldplayer-servers`, so what it builds on may depend on
//! none of them.

#![forbid(unsafe_code)]

mod certificate;
mod error;
mod knot;
mod nsd;

pub use certificate::{make_certificate, make_self_signed_ca, TlsFiles};
pub use error::ConfError;
pub use knot::KnotConfig;
pub use nsd::{NsdConfig, NsdTls};

use std::path::Path;

/// A zone a server serves: its origin and its zone file.
#[derive(Debug, Clone, Copy)]
pub struct ZoneFile<'a> {
    /// The origin, absolute (`example.`).
    pub origin: &'a str,
    /// The zone file.
    pub file: &'a Path,
}

/// Writes `text` to `path` (through `ldplayer-output`, which refuses to overwrite an input).
fn write(path: &Path, text: &str) -> Result<(), ConfError> {
    ldplayer_output::write(path, text).map_err(|e| ConfError::io("cannot write", path, e.into()))
}
