//! What-if studies: a plan of runs, each replaying a trace against a real server through an
//! emulated link while the server's resources are sampled, summarised in one tidy table.
//!
//! The parts, in the order a run uses them:
//! * [`plan`]: the TOML plan, checked (unknown keys and bad values with their line) and
//!   expanded into runs ([`Plan::runs`]), every combination of the `[vary]` lists;
//! * [`prepare`]: each run's trace, synthesized or read, mutated, written once;
//! * [`topology`] and [`side`]: the client side and the server side, each in its own network
//!   and PID namespaces, joined by the userspace link emulator (`ldplayer-link`); the server
//!   side starts the server (`ldplayer-servers`), the client side replays the trace from each
//!   original client's own address ([`client`]);
//! * [`sampler`]: the server's memory, CPU, connections and the link's traffic each second;
//! * [`model`]: the connections a server would hold by the trace alone, beside the measured;
//! * [`summary`] and [`metrics`]: the tidy `summary.csv`;
//! * [`experiment`]: the whole plan, with `--resume`, and [`runner`]: one run;
//! * [`differences`]: with `[diff]`, every run's answers against its base run's.
//!
//! A program that runs experiments must call [`run_side_if_asked`] first thing in `main` (and
//! return when it ran): the sides are that program started again in the run's namespaces.

#![forbid(unsafe_code)]

pub mod client;
pub mod client_processes;
pub mod differences;
pub mod environment;
pub mod error;
pub mod experiment;
pub mod hierarchy;
pub mod metrics;
pub mod model;
pub mod overrides;
pub mod plan;
pub mod prepare;
pub mod runner;
pub mod sampler;
pub mod side;
pub mod summary;
pub mod topology;
pub mod upstream;

pub use error::ExperimentError;
pub use experiment::{run_plan, Observer, Options, PlanReport, RunRecord, Silent, Status};
pub use plan::{Plan, PlanError, RunSpec};
pub use side::{run_side_if_asked, SideConfig};
