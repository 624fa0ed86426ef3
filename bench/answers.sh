#!/usr/bin/env bash
# Benchmarks of answer differences (issue 29; figures go to docs/performance.md).
# Everything runs on loopback against a knotd and an ldplayer serve started here; every load is
# bounded in count and time.
#  1. keep: what `replay --keep-answers` costs the generator. --fast UDP, knotd pinned to core 0,
#     the replay's querier to core 1 (--pin 1), N queries of wildcard names (all answered),
#     with --results and with --results --keep-answers, alternated, ROUNDS rounds each, the
#     same trace; generator CPU (user + sys, every thread: queriers and result writer) per
#     answered query, and the results files' sizes.
#  2. diff: `ldplayer diff` of DIFF_N answered query pairs (one replay, --fast, to knotd and to
#     ldplayer serve: every answer differs, knotd's minimal responses lacking the authority NS
#     set and its glue, so every query is tallied), on one core (taskset), with its wall time,
#     CPU time and peak RSS; the same for a quarter of the queries, for memory against length.
# Usage: [N=1000000] [DIFF_N=1000000] [ROUNDS=3] bench/answers.sh [OUTDIR] [keep|diff]...
#        (needs knot, taskset, /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
out=${1:-bench/out}; shift || true
parts=${*:-keep diff}
n=${N:-1000000}
diff_n=${DIFF_N:-1000000}
rounds=${ROUNDS:-3}
mkdir -p "$out"
cargo build --release -q -p ldplayer
bin=$PWD/target/release/ldplayer
port=${BENCH_PORT:-5354}
serve_port=${BENCH_SERVE_PORT:-5355}

work=$(mktemp -d)
cleanup() {
  for p in "$work"/*.pid; do [ -f "$p" ] && kill -INT "$(cat "$p")" 2>/dev/null; done
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
example_zone "$work/example.zone"
cat > "$work/knot.conf" <<CONF
server:
    rundir: "$work"
    listen: 127.0.0.1@$port
    udp-workers: 1
    background-workers: 1
database:
    storage: "$work"
log:
  - target: stderr
    any: error
template:
  - id: default
    storage: "$work"
    file: "%s.zone"
zone:
  - domain: example.
CONF
taskset -c 0 knotd -c "$work/knot.conf" > "$work/knot.log" 2>&1 &
echo $! > "$work/knot.pid"
for _ in $(seq 50); do kdig @127.0.0.1 -p "$port" www.example. A +short +timeout=1 >/dev/null 2>&1 && break; sleep 0.2; done

cpu_of() { awk '{print $2 + $3}' "$1"; } # time file -> user+sys seconds

if [[ " $parts " == *" keep "* ]]; then
  echo "== --keep-answers: --fast UDP, $n queries, knotd on core 0, generator on core 1, $rounds rounds"
  $bin synth --workload fixed --interval 0.00001 -n "$n" --clients 10 --zone w.example. -o "$work/keep.bin" -q
  for round in $(seq "$rounds"); do
    line="round $round:"
    for mode in plain keep; do
      flags=()
      [ "$mode" = keep ] && flags=(--keep-answers)
      /usr/bin/time -f "%e %U %S %M" -o "$work/t-$mode" timeout 300 "$bin" replay "$work/keep.bin" \
        --server 127.0.0.1:$port --fast --max-in-flight 1000 --queriers 1 --pin 1 --timeout 1 \
        --results "$work/$mode.res" "${flags[@]}" --json > "$work/$mode.json"
      a=$(python3 -c "import json;print(json.load(open('$work/$mode.json'))['answered'])")
      cpu=$(cpu_of "$work/t-$mode")
      us=$(echo "$cpu * 1000000 / $a" | bc -l)
      eval "us_$mode=$us"
      line="$line | $mode $(printf %.3f "$us") µs CPU/query ($a answered, $(du -m "$work/$mode.res" | cut -f1) MiB file, $(awk '{print int($4/1024)}' "$work/t-$mode") MiB peak RSS)"
    done
    # shellcheck disable=SC2154 # set by eval above
    line="$line | keep/plain $(printf %.3f "$(echo "$us_keep / $us_plain" | bc -l)")"
    echo "$line"
  done
fi

if [[ " $parts " == *" diff "* ]]; then
  "$bin" serve --listen 127.0.0.1:$serve_port "$work/example.zone" 2> "$work/serve.log" &
  echo $! > "$work/serve.pid"
  for _ in $(seq 50); do grep answering "$work/serve.log" >/dev/null && break; sleep 0.2; done
  for count in "$diff_n" $((diff_n / 4)); do
    echo "== diff of $count answered query pairs (knotd against ldplayer serve), one core"
    $bin synth --workload fixed --interval 0.00001 -n "$count" --clients 10 --zone w.example. -o "$work/d.bin" -q
    taskset -c 0 "$bin" replay "$work/d.bin" --server 127.0.0.1:$serve_port --server 127.0.0.1:$port --fast \
      --max-in-flight 1000 --queriers 1 --timeout 1 --results "$work/pairs.res" --keep-answers -q
    echo "results file: $(du -m "$work/pairs.res" | cut -f1) MiB"
    /usr/bin/time -f "%e %U %S %M" -o "$work/t-diff" taskset -c 1 "$bin" diff "$work/pairs.res" --json > "$work/diff.json"
    python3 - "$work/diff.json" "$work/t-diff" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall, user, sys_, rss = open(sys.argv[2]).read().split()
fields = {f["field"]: f["queries"] for f in d["fields"] if f["queries"]}
print(f"  compared {d['compared']} pairs, {d['different']} different {fields}, unstable {d['unstable']}, not compared {d['not_compared']}, at most {d['peak_waiting']} queries waiting")
print(f"  {float(wall):.2f} s wall, {float(user) + float(sys_):.2f} s CPU "
      f"({(float(user) + float(sys_)) * 1e6 / max(d['compared'], 1):.2f} µs per pair), peak RSS {int(rss) // 1024} MiB")
PY
  done
fi
