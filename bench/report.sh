#!/usr/bin/env bash
# Benchmark of replay reports (issue "reports"; figures go to docs/performance.md): a synthetic
# results file of N queries (crates/report/examples/fake_results.rs: 20k qps, UDP/TCP/TLS,
# long-tailed latencies, timeouts, new connections) is read by ReplayData::read and drawn by
# replay::section (examples/report_replay.rs), under /usr/bin/time -v for the peak RSS.
# With LDPLAYER=path/to/ldplayer, `ldplayer report FILE -o report.html` is timed too.
# The results files are made in a temporary directory (10M queries: 560 MB) and removed.
# Usage: bench/report.sh [N...]   (default: 1000000 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${*:-1000000 10000000}
cargo build --release -q -p ldplayer-report --examples
examples=$PWD/target/release/examples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a command under /usr/bin/time -v; prints "SECONDS PEAK_MIB".
measure() {
  /usr/bin/time -v -o "$work/time" "$@" > "$work/out"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  # m:ss.ss or h:mm:ss to seconds
  wall=$(awk -v t="$wall" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.2f", s }')
  printf '%s %.1f\n' "$wall" "$(echo "$rss / 1024" | bc -l)"
}

printf '%-10s %-14s %10s %10s\n' queries what seconds peak_MiB
for n in $sizes; do
  file=$work/$n.res
  "$examples/fake_results" "$n" "$file" > /dev/null
  read -r secs mib < <(measure "$examples/report_replay" "$file")
  grep -q "^$file: $n queries read" "$work/out" || { cat "$work/out"; echo "report_replay did not read $n queries" >&2; exit 1; }
  printf '%-10s %-14s %10s %10s\n' "$n" "read+section" "$secs" "$mib"
  if [ -n "${LDPLAYER:-}" ]; then
    read -r secs mib < <(measure "$LDPLAYER" report "$file" -o "$work/report.html")
    printf '%-10s %-14s %10s %10s   (report.html %s bytes)\n' "$n" "ldplayer report" "$secs" "$mib" \
      "$(stat -c %s "$work/report.html")"
  fi
  sed -n 's/^section: /  section: /p' "$work/out"
  rm -f "$file"
done
