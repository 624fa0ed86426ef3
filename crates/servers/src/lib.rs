//! Real DNS servers for experiments: configuration, certificates, start and stop.
