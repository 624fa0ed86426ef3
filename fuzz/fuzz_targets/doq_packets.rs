//! The DoQ client's QUIC layer (`ldplayer-stacks`' `quic/`): arbitrary bytes as a datagram from
//! the server (headers, header protection, decryption) and, past the crypto, as decrypted
//! packets of each space (frames, acknowledgements, streams, flow control), then its timers and
//! what it sends. Checks: no panic, no unbounded buffering (out-of-order data is capped).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ldplayer_stacks::fuzzing::quic_client(data);
});
