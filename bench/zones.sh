#!/usr/bin/env bash
# Zone construction at scale (issue "zone construction at scale"; figures go to
# docs/performance.md): `zones build` from about a million captured upstream responses, timed
# with its peak memory. The input is made with the lab itself: `zones synth` writes a large
# synthetic hierarchy, a trace of unique stub names spread over its second-level zones is
# resolved by a real unbound in the lab (network namespaces with no route out), and the lab
# captures unbound's upstream traffic. Then `zones build` on that capture is timed ROUNDS times
# with /usr/bin/time -v (elapsed, user + system CPU, maximum RSS).
#  * Hierarchy: TLDS TLDs x SLDS second-level zones on PROVIDERS addresses (default 300 x 850
#    on 64): 255,301 zones.
#  * Stub names: pass 0 asks `n0.sldJ.TLD` for every SLD, TLDs interleaved, from 100 stub
#    clients; unbound (qname minimisation) then asks the TLD for `sldJ.TLD` (a referral), the
#    SLD's server for the name (its wildcard answers) and for its nameserver's A and AAAA: four
#    upstream responses per stub query, about a million for the default shape, every one a
#    distinct question. Passes 1..EXTRA (default 0) ask one more unique name under every SLD;
#    with unbound's default 4 MB caches the delegations are evicted by then, so they cost
#    about as much again, with repeated questions. Paced at RATE stub queries/s, so the run
#    lasts queries/RATE seconds.
#  * The capture is expensive (minutes): it is kept in CACHE (default bench/out/zones-cache),
#    one directory per shape and rate, so reruns only time `zones build`.
# Needs root (network namespaces), unbound, tcpdump. Traffic stays in the lab's namespaces.
# Usage: bench/zones.sh [OUTDIR]
# Environment: SIZE=full|small (small: 20 x 100, a few seconds), TLDS, SLDS, PROVIDERS, EXTRA
#   (default 0), RATE (stub queries/s, default 3000), ROUNDS (default 3; 0 only captures),
#   CACHE, BUILD_DIR (where zones build writes; default OUTDIR), LAYOUT (zones build --layout:
#   bundles, the default, root.zone and one file per level; files, one file per zone),
#   FIRST_PACKETS (build from the
#   capture's first N packets only; needs editcap, from tshark's wireshark-common),
#   LDPLAYER=/path/to/ldplayer (another build, e.g. before and after a change; no build then)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/zones}
if [ "${SIZE:-full}" = small ]; then
  tlds=${TLDS:-20}; slds=${SLDS:-100}; providers=${PROVIDERS:-8}
else
  tlds=${TLDS:-300}; slds=${SLDS:-850}; providers=${PROVIDERS:-64}
fi
extra=${EXTRA:-0}; rate=${RATE:-3000}; rounds=${ROUNDS:-3}; layout=${LAYOUT:-bundles}
cache=${CACHE:-bench/out/zones-cache}
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd); cache=$(cd "$cache" && pwd)
if [ -z "${LDPLAYER:-}" ]; then cargo build --release -q -p ldplayer; fi
bin=${LDPLAYER:-$PWD/target/release/ldplayer}
echo "== $(date -u +%FT%TZ) on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load: $(uptime | sed 's/.*load average/load average/')"
echo "   $(unbound -V 2>/dev/null | awk 'NR==1'), $(tcpdump --version 2>&1 | awk 'NR==1')"

run=$cache/t$tlds-s$slds-p$providers-x$extra-r$rate
if [ ! -s "$run/up.pcap" ] || [ ! -e "$run/done" ]; then
  rm -rf "$run"; mkdir -p "$run"
  echo "-- capture (kept in $run)"
  t0=$(date +%s.%N)
  "$bin" zones synth -o "$run/hier" --tlds "$tlds" --slds "$slds" --providers "$providers" \
    --layout bundles --json \
    > "$run/synth.json"
  t1=$(date +%s.%N)
  echo "   zones synth: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s: $(cat "$run/synth.json")"
  # The stub trace (text format, docs/formats.md): the message is built from the columns.
  awk -v tlds="$tlds" -v slds="$slds" -v extra="$extra" -v names="$run/hier/root.zone" '
    BEGIN {
      # The TLD names, in the order zones synth makes them: the root zone delegations.
      while ((getline line < names) > 0) {
        split(line, f, " ")
        if (f[4] == "NS" && f[1] != "." && split(f[1], l, ".") == 2) tld[n++] = f[1]
      }
      if (n != tlds) { print "expected " tlds " TLDs in the root zone, found " n > "/dev/stderr"; exit 1 }
      print "#ldplayer-text/2"
      print "time\tsrc\tsport\tdst\tdport\tqr\tflags\tqname\tqtype\twire"
      q = 0
      for (k = 0; k <= extra; k++)
        for (j = 0; j < slds; j++)
          for (i = 0; i < tlds; i++) {
            printf "%d.%09d\t192.168.0.%d\t%d\t127.0.0.1\t53\t0\trd\tn%d.sld%d.%s\tA\t-\n",
              1700000000 + int(q / 1000), (q % 1000) * 1000000, q % 100 + 1,
              40000 + q % 100, k, j, tld[i]
            q++
          }
    }' > "$run/trace.txt"
  "$bin" convert "$run/trace.txt" --to binary -o "$run/trace.bin" 2> "$run/convert.log"
  queries=$(( (extra + 1) * tlds * slds ))
  echo "   $queries stub queries at $rate/s: about $(( queries / rate )) s"
  "$bin" lab --manifest "$run/hier/manifest" --resolver unbound --trace "$run/trace.bin" \
    --rate "$rate" --capture "$run/up.pcap" --results "$run/stub.res" --json \
    > "$run/lab.json" 2> "$run/lab.log"
  t2=$(date +%s.%N)
  echo "   lab: $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", b - a }') s; $(grep 'meta-server' "$run/lab.log" | sed 's/^ldplayer lab: //')"
  "$bin" results summary "$run/stub.res" 2>&1 | sed -n 1,6p | sed 's/^/   stub: /'
  "$bin" inspect "$run/up.pcap" --json > "$run/inspect.json"
  touch "$run/done"
fi
responses=$(grep -o '"responses":[0-9]*' "$run/inspect.json" | head -1 | cut -d: -f2)
echo "-- capture: $(du -m "$run/up.pcap" | cut -f1) MiB, $responses responses (ldplayer inspect)"
input=$run/up.pcap
# FIRST_PACKETS=N: time zones build on the capture's first N packets only (queries and
# responses alternate: 2,000,000 packets hold about a million responses), e.g. to compare
# shapes at the same number of responses.
if [ -n "${FIRST_PACKETS:-}" ]; then
  input=$run/first-$FIRST_PACKETS.pcap
  [ -s "$input" ] || editcap -r "$run/up.pcap" "$input" "1-$FIRST_PACKETS"
  responses=$("$bin" inspect "$input" --json | grep -o '"responses":[0-9]*' | head -1 | cut -d: -f2)
  echo "   its first $FIRST_PACKETS packets: $responses responses"
fi

# ---------------------------------------------------------------------------------------------
# Each round writes into a directory of its own, removed only at the end: ext4 avoids reusing
# inodes freed in the last minutes, and creating 255,000 files just after deleting as many
# was seen to take ten times as long (BUILD_DIR=/dev/shm/... writes to tmpfs instead).
build_dir=${BUILD_DIR:-$out}
mkdir -p "$build_dir"
trap 'rm -rf "$build_dir"/rebuilt-*' EXIT
echo "-- zones build --layout $layout into $build_dir ($(df -T "$build_dir" | awk 'NR == 2 { print $2 }'))"
printf '%-6s %10s %8s %8s %12s %10s %8s %10s\n' round responses elapsed_s cpu_s responses/s peak_MiB zones records
rm -f "$out/zones-rounds.txt"
used=""
for r in $(seq "$rounds"); do
  rebuilt=$build_dir/rebuilt-$r-$$
  /usr/bin/time -v "$bin" zones build "$input" -o "$rebuilt" --layout "$layout" --json \
    > "$out/build.json" 2> "$out/time.txt"
  elapsed=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$out/time.txt")
  cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$out/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$out/time.txt")
  used=$(grep -o '"responses_used":[0-9]*' "$out/build.json" | cut -d: -f2)
  records=$(grep -o '"records":[0-9]*' "$out/build.json" | cut -d: -f2)
  # Zone files, and the zones of the bundles (each begins with a $ORIGIN line).
  zones=$(( $(find "$rebuilt" -name '*.zone' | wc -l) + $(find "$rebuilt" -name '*.zones' -exec cat {} + | grep -c '^\$ORIGIN ' || true) ))
  rps=$(awk -v n="$responses" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')
  printf '%-6s %10s %8s %8s %12s %10s %8s %10s\n' "$r" "$responses" "$elapsed" "$cpu" "$rps" "$rss" "$zones" "$records" \
    | tee -a "$out/zones-rounds.txt"
done
if [ "$rounds" -lt 1 ]; then exit 0; fi
echo "   (responses used by zones build: $used; report: $out/build.json)"
sort -k3 -n "$out/zones-rounds.txt" | awk -v n="$rounds" 'NR == int((n + 1) / 2) { print "median: " $3 " s, " $5 " responses/s, " $6 " MiB peak RSS, " $7 " zones, " $8 " records" }'
