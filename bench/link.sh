#!/usr/bin/env bash
# Link emulator bench (issue 12): packets per second through ldplayer's userspace link at 0 and
# 20 ms of delay with its CPU time per packet, and the round-trip time it adds at delay 0
# beside a plain veth pair. Needs root (TUN devices, network namespaces); all traffic stays in
# the namespaces it makes; bounded in packets and time.
# Usage: bench/link.sh [FLOOD_PACKETS] [PINGS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ldplayer-link --example link_bench
exec target/release/examples/link_bench "$@"
