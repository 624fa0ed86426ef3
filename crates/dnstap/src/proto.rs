//! The protobuf messages of `dnstap.proto` (in `proto/dnstap.proto` beside this file, from the
//! dnstap project, CC0), as prost-build 0.14 generates them with `bytes` fields
//! (`Config::bytes(["."])`: the fields of a decoded message share the frame's buffer, no copy).
//!
//! The generated code is checked in so that building needs no `protoc`. To regenerate it, run
//! prost-build on `proto/dnstap.proto` with that setting and replace `proto/dnstap.rs`.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!("proto/dnstap.rs");
