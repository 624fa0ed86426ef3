//! Text format.
