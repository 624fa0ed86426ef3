//! The DoT record layer on traffic keys alone (`ldplayer-stacks`' `tls/keys.rs`, the lean TLS
//! session after rustls lets go): arbitrary bytes as what a server sends, and records sealed
//! with the peer's keys then flipped and cut where the first byte says. Checks: no panic, no
//! read past the buffer, never more bytes consumed than given.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ldplayer_stacks::fuzzing::tls_records(data);
});
