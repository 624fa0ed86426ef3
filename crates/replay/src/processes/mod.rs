//! One replay split over processes on this host (`ldplayer replay --processes N`, an
//! experiment's `[client] processes = N`): each process replays one shard of the clients from
//! one shared start, with open files (and, if asked, a core) of its own, and their results are
//! merged into one run.
//!
//! [`ShardProcesses::run`] owns what every such split does the same way: the shared start
//! (chosen [`START_AHEAD`] of now when none is given), the folder of the shards' files
//! ([`Scratch`]: temporary, or kept beside the run), starting each shard, each one's standard
//! output and error in files, waiting while passing a stop on (SIGTERM, then a kill after
//! [`STOP_GRACE`]), and how each ended ([`ShardExit`]). [`ShardsDone::merge`] puts the shards'
//! results into one file in trace order, marked complete only when the whole replay finished,
//! with a warning for each shard that began late; [`summarize`] sums it up as one replay.
//! What a shard process is stays the caller's: a closure makes each shard's [`Command`]
//! (`replay --processes` runs the program again with its own command line and `--shard I/N`;
//! an experiment writes a side configuration and names it in the environment).
//!
//! It lives in the query engine's crate because both front ends build on this crate and it is
//! about one replay (with [`crate::shard_of`], which clients a shard replays): the results
//! crate holds the file format and its merge but starts no process, and `ldplayer-system`,
//! which it uses for signals, sits below the results and knows no replay.
//!
//! [`Command`]: std::process::Command

mod children;
mod error;
mod run;
mod summary;
#[cfg(test)]
mod tests;

pub use children::ShardExit;
pub use error::ShardsError;
pub use run::{Merged, Scratch, ShardContext, ShardProcesses, ShardsDone, START_AHEAD, STOP_GRACE};
pub use summary::summarize;
