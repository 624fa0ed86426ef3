#!/usr/bin/env bash
# Build time of a fresh clone (docs/performance.md, "Build time"): `cargo build --release -p
# ldplayer` from an empty target folder, timed with /usr/bin/time -v (wall, user + system CPU,
# peak memory), ROUNDS times. The release profile can be changed for a before/after pair through
# Cargo's environment, e.g. the old profile:
#   CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_DEBUG=1 bench/build.sh
# Usage: bench/build.sh [OUTDIR]   (OUTDIR/target is removed before each round)
# Environment: ROUNDS (default 1), TIMINGS=1 (also cargo's --timings report, kept in OUTDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/build}
rounds=${ROUNDS:-1}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cargo fetch --locked -q
printf '%-6s %10s %10s %10s %12s\n' round wall_s user_s sys_s peak_MiB
for r in $(seq 1 "$rounds"); do
  rm -rf "$out/target"
  extra=()
  [ "${TIMINGS:-}" = 1 ] && extra+=(--timings)
  CARGO_TARGET_DIR="$out/target" /usr/bin/time -v -o "$out/time-$r.txt" \
    cargo build --release --locked -q -p ldplayer "${extra[@]}"
  awk -v r="$r" -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident/ { m = $2 / 1024 }
    END { printf "%-6s %10.1f %10.1f %10.1f %12.0f\n", r, w, u, s, m }' "$out/time-$r.txt"
  [ "${TIMINGS:-}" = 1 ] && cp "$out"/target/cargo-timings/cargo-timing.html "$out/timing-$r.html"
done
ls -l "$out/target/release/ldplayer" | awk '{printf "binary: %.1f MB\n", $5 / 1e6}'
