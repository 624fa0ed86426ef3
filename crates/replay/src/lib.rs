//! The query engine.
