//! The operating-system plumbing ldplayer's lab, experiments, servers and tests share, in one
//! place and on `rustix`: signals to a process or its whole group ([`process`]), a child in a
//! group of its own that dies with its parent, open-file limits ([`limits`]), commands such as
//! `ip` run to completion with their standard error kept ([`command`]), and the clock and units
//! `/proc` reports in ([`clock`]), the memory allocator the programs run on ([`allocator`]).
//!
//! Its `unsafe` blocks are the `pre_exec` closures of [`process::own_group_dying_with_parent`]
//! and [`limits::raise_file_limit_of`], the SIGPIPE disposition of
//! [`process::restore_default_sigpipe`] and the global allocator in
//! [`allocator`], which hands each block to glibc's or mimalloc's; everything else goes through rustix's safe calls.

#![deny(unsafe_code)]

pub mod allocator;
pub mod clock;
pub mod command;
pub mod limits;
pub mod process;

pub use command::{ip, run, CommandError};
pub use process::Signal;
