//! The figures of one replay's results file, read in one pass in bounded memory.
