#!/usr/bin/env bash
# Many files, many cores (issue 31; figures go to docs/performance.md): `ldplayer convert` of
# one capture cut into 20 files (1M messages in all, a fifth of the clients over TCP, whose
# streams cross the cuts), decoding 1 and 2 files at once (--jobs), beside the conversion of the
# same capture as one file, in the same run; the outputs must be byte-identical to the
# conversion of the concatenated capture (`mergecap -a`, Wireshark's own tool).
# Usage: bench/many-files.sh [OUTDIR] [ROUNDS]   (needs editcap, mergecap, capinfos from
# wireshark-common, /usr/bin/time and taskset; about 400 MB of disk). Local only: no network.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/many}; rounds=${2:-3}
mkdir -p "$out"
cargo build --release -q -p ldplayer
bin=$PWD/target/release/ldplayer

whole=$out/whole.pcap
[ -s "$whole" ] || $bin synth --workload root --rate 100000 -n 1000000 --tcp-share 0.2 \
  --do-share 0.7 --seed 7 -o "$whole" -q
packets=$(capinfos -c -M "$whole" | awk '/Number of packets/ { print $NF }')
rm -rf "$out/parts" && mkdir "$out/parts"
editcap -F nsecpcap -c $(( (packets + 19) / 20 )) "$whole" "$out/parts/part.pcap"
parts=("$out"/parts/part_*.pcap)
mergecap -a -F nsecpcap -w "$out/joined.pcap" "${parts[@]}"
echo "capture: $packets packets, cut into ${#parts[@]} files by editcap; rejoined by mergecap -a"

measure() { # label, cpus, command...: wall, CPU, max RSS; messages/s of wall and of CPU
  local label=$1 cpus=$2; shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" taskset -c "$cpus" "$@" >/dev/null 2>"$out/stderr.txt" \
    || { cat "$out/stderr.txt"; exit 1; }
  read -r wall user sys rss < "$out/time.txt"
  local cpu; cpu=$(echo "$user + $sys" | bc)
  printf '%-36s wall %6.2f s  cpu %6.2f s  %5.2f M msg/s  %5.2f M msg/s per CPU s  maxrss %7d KiB\n' \
    "$label" "$wall" "$cpu" "$(echo "1 / $wall" | bc -l)" "$(echo "1 / $cpu" | bc -l)" "$rss"
}

for round in $(seq "$rounds"); do
  echo "== round $round"
  measure "one file (the concatenated capture)" 0 $bin convert "$out/joined.pcap" -o "$out/one.bin" -q
  measure "20 files, --jobs 1, 1 core" 0 $bin convert "${parts[@]}" --jobs 1 -o "$out/jobs1.bin" -q
  measure "20 files, --jobs 2, 2 cores" 0,1 $bin convert "${parts[@]}" --jobs 2 -o "$out/jobs2.bin" -q
done
cmp "$out/one.bin" "$out/jobs1.bin" && cmp "$out/one.bin" "$out/jobs2.bin" \
  && echo "outputs: byte-identical ($(stat -c %s "$out/one.bin") bytes, $($bin inspect "$out/one.bin" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"])') messages)"

# Where the CPU goes with --jobs 2 (perf, if installed): the merge thread (`ldplayer`: the
# merge in time order, TCP reassembly of the whole capture, the output's encoding) is the one
# part that does not spread over cores; the readers (`ldplayer-read*`) and the writer
# (`ldplayer-write`) do.
if command -v perf >/dev/null 2>&1; then
  perf record -q -o "$out/perf.data" -- $bin convert "${parts[@]}" --jobs 2 -o "$out/jobs2.bin" -q 2>/dev/null
  perf report -i "$out/perf.data" --no-children --sort comm 2>/dev/null | grep '%' | grep -v '^#' |
    awk '{ share = $1; sub("%", "", share); if ($2 ~ /read/) r += share; else if ($2 ~ /write/) w += share; else m += share }
         END { printf "CPU shares, --jobs 2: merge thread %.0f%%, readers %.0f%%, writer %.0f%%\n", m, r, w }'
fi
