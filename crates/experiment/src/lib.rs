//! What-if studies: a plan of runs, each replaying a trace against a real server through an
//! emulated link while the server's resources are sampled, summarised in one tidy table.

pub mod model;
pub mod plan;
pub mod summary;
