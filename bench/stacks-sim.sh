#!/usr/bin/env bash
# The stacks study of bench/stacks.sh for DoQ, in simulated time: the lean QUIC client and
# quinn-proto's client (the QUIC of `replay --stack reference`) on the same simulated path
# (RTT 20 and 80 ms, loss 0, 2 and 10% each way, seeded) against the same quinn-proto
# server, each simulated client replaying a Poisson schedule (2 queries a second for 10 s, the
# server's 1 s idle timeout closing connections between queries, reconnections resumed in
# 0-RTT). No network, no root, no machine noise: the same figures every run, in seconds.
# Prints one table row per stack and cell: answers, latency p50/p95/p99, connections, packets
# declared lost, and the slow queries (over 3 RTT) among those that opened a connection and
# the others; and whether lean is within 5% (or 1 ms) of quinn at p50, 10% at p95 and p99
# ("n.s." where the 95% interval of the difference, clients resampled whole, reaches inside
# the bound). (crates/stacks/src/quic/tests/twin.rs; its module documentation lists the knobs
# for looking at one cell or one client closer.)
# Usage: bench/stacks-sim.sh [CLIENTS]   (clients a cell, default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
STACKS_SIM_CLIENTS=${1:-300} cargo test --release -q -p ldplayer-stacks --lib \
  quic::tests::twin::study -- --ignored --nocapture | grep '^|'
