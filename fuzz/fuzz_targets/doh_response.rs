//! The DoH client's HTTP/2 and HPACK parsing (`ldplayer-stacks`' `http2/` and
//! `hpack.rs`): arbitrary bytes as what a server sends, read in pieces whose size the
//! first byte picks, after requests the first byte shapes too; and the same bytes as one HPACK
//! header block. Checks (in the library's fuzzing entry points): no panic, each request ends
//! at most once, nothing in flight after a connection error, bounded buffers and dynamic table.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ldplayer_stacks::fuzzing::doh_server_bytes(data);
    ldplayer_stacks::fuzzing::hpack_block(data);
});
