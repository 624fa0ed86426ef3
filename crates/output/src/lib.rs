//! Every file ldplayer writes goes through this crate, so that no command can destroy its own
//! input.
//!
//! `report run.res -o run.res` used to replace a replay's results with HTML, and `serve
//! root.zone --stats root.zone` a zone with JSON, both exiting 0: each command compared its
//! outputs with its inputs on its own, and some forgot. Here one guard does it for every
//! writer of the process:
//!
//! - the files a command reads are registered as inputs ([`protect_input`]), by the command
//!   line and by the libraries that open further files (the zone files of a manifest, the trace
//!   of an experiment plan);
//! - the outputs the user named are claimed up front ([`claim`]): one that is an input, or that
//!   another option of the same command also names (`replay --results R --report R`), is refused
//!   before anything runs;
//! - every file is created through [`create`], [`write()`] or [`create_direct`], which refuse an
//!   input once more at the moment of writing (also through hard and symbolic links).
//!
//! The guard is on once the program turns it on ([`enable`]; the `ldplayer` command does); a
//! library used on its own writes what it is asked to.
//!
//! Files are compared by identity (device and inode, symbolic links followed) when they exist,
//! and by their absolute path with every link resolved when they do not yet. Standard input and
//! output (`-`) and anything that is not a regular file (a pipe, `/dev/null`) are exempt.
//!
//! [`create`] writes under a temporary name renamed into place when done ([`Destination`]): a
//! failed run leaves an existing file of that name as it was. [`create_direct`] is for outputs
//! that must be readable while they grow (a results file that a killed replay leaves
//! readable, a statistics log).

#![forbid(unsafe_code)]

mod atomic;
mod guard;

pub use atomic::{AtomicFile, Destination};
pub use guard::{check, claim, enable, protect_input, OutputError};

use std::fs::File;
use std::path::Path;

/// Prepares to write `path` through the guard: a temporary file beside it, renamed over it by
/// [`Destination::commit`] (or `path` itself when it is a device or a pipe).
pub fn create(path: &Path) -> Result<Destination, OutputError> {
    check(path)?;
    Destination::create(path)
}

/// Writes `bytes` to `path` through the guard, in place only when complete.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), OutputError> {
    use std::io::Write;
    let destination = create(path)?;
    destination
        .writer()?
        .write_all(bytes.as_ref())
        .map_err(|source| OutputError::io("cannot write", path, source))?;
    destination.commit()
}

/// Creates (or truncates) `path` through the guard and writes it in place: for outputs that
/// are read while they grow, or that a killed process should leave as far as it got.
pub fn create_direct(path: &Path) -> Result<File, OutputError> {
    check(path)?;
    File::create(path).map_err(|source| OutputError::io("cannot create", path, source))
}

/// Opens `path` through the guard for appending, creating it if missing: for logs that several
/// writers add to.
pub fn open_append(path: &Path) -> Result<File, OutputError> {
    check(path)?;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| OutputError::io("cannot open", path, source))
}
