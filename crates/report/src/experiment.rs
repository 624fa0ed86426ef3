//! The figures of an experiment directory.
