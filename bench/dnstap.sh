#!/usr/bin/env bash
# Benchmark of dnstap reading (issue "dnstap"; figures go to docs/performance.md):
#  1. dnstap -> binary with `ldplayer convert` on one core, beside reading a pcap of the same
#     messages, and beside the dnstap tools reading the same file in the same run
#     (`dnstap-ldns -q`, the golang `dnstap` tool's quiet text output);
#  2. peak memory of dnstap -> binary on 1M and 4M messages (flat in the file's size).
# Usage: bench/dnstap.sh [OUTDIR]   (needs dnstap-ldns, golang dnstap, /usr/bin/time; ~1.5 GB)
# Everything is local: no network traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}
mkdir -p "$out"
core=${BENCH_CORE:-1}
pin="taskset -c $core"

cargo build --release -q -p ldplayer
bin=target/release/ldplayer

measure() { # label, command...: prints wall, user+sys CPU and max RSS
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" "$@" >/dev/null 2>"$out/stderr.txt" || { cat "$out/stderr.txt"; exit 1; }
  read -r wall user sys rss < "$out/time.txt"
  printf '%-40s wall %7.2f s  cpu %7.2f s  maxrss %8d KiB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
  echo "$wall" > "$out/last_wall.txt"
}

rate() { echo "scale=2; $1 / $(cat "$out/last_wall.txt") / 1000000" | bc; }

echo "== inputs: 1M and 4M messages (queries and responses), as pcap and as dnstap"
[ -s "$out/dt-1m.pcap" ] || $bin synth --workload root --rate 100000 -n 500000 --responses --seed 7 -o "$out/dt-1m.pcap" -q
[ -s "$out/dt-4m.pcap" ] || $bin synth --workload root --rate 100000 -n 2000000 --responses --seed 7 -o "$out/dt-4m.pcap" -q
[ -s "$out/dt-1m.dnstap" ] || $bin convert "$out/dt-1m.pcap" -o "$out/dt-1m.dnstap" -q
[ -s "$out/dt-4m.dnstap" ] || $bin convert "$out/dt-4m.pcap" -o "$out/dt-4m.dnstap" -q
ls -l "$out"/dt-1m.* "$out"/dt-4m.*
n=$($bin inspect "$out/dt-1m.dnstap" --json | sed 's/.*"messages":\([0-9]*\).*/\1/')
echo "messages in the 1M file: $n"

echo "== dnstap -> binary beside pcap -> binary, same messages, pinned to core $core"
for i in 1 2 3; do
  measure "ldplayer convert dnstap (run $i)" $pin $bin convert "$out/dt-1m.dnstap" --to binary -o "$out/dt-1m.bin" -q
  echo "  $(rate "$n") M messages/s"
done
measure "ldplayer convert pcap" $pin $bin convert "$out/dt-1m.pcap" --to binary -o "$out/dt-1m-pcap.bin" -q
echo "  $(rate "$n") M messages/s"

echo "== the dnstap tools reading the same file, pinned to core $core"
measure "dnstap-ldns -q" $pin dnstap-ldns -q -r "$out/dt-1m.dnstap"
echo "  $(rate "$n") M messages/s"
measure "dnstap (golang) -q" $pin dnstap -q -r "$out/dt-1m.dnstap"
echo "  $(rate "$n") M messages/s"

echo "== peak memory, dnstap -> binary, 1M and 4M messages"
measure "convert 1M dnstap -> binary" $bin convert "$out/dt-1m.dnstap" --to binary -o "$out/dt-1m.bin" -q
measure "convert 4M dnstap -> binary" $bin convert "$out/dt-4m.dnstap" --to binary -o "$out/dt-4m.bin" -q
