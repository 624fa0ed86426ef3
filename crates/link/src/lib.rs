//! A userspace link emulator: packets read from one TUN device are delayed, jittered, lost
//! and rate-limited as configured, then written to the other, each direction on its own.
