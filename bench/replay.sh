#!/usr/bin/env bash
# Benchmarks of the query engine (issue "query engine"; figures go to docs/performance.md).
# Everything runs on loopback against a knotd started here; every load is bounded in count and time.
#  1. --fast UDP: knotd pinned to core 0, the generator to core 1 (dnsperf's one thread with
#     taskset, ldplayer's querier thread with --pin, which keeps its other threads off core 1);
#     same run, same queries; qps and generator CPU per query, with one client (one socket,
#     1,000 in flight) and at matched concurrency (4 sockets, 500 in flight: dnsperf -c 4 -q 500);
#     beside them the kernel's floor, bench/udp-floor.c (the same queries and in-flight count).
#  2. Original timing: a synthetic 200k qps UDP trace of 30 s; ldplayer's own timing error and
#     per-second rate error, and a tcpdump witness; drool -t keep on the same pcap for comparison.
#  3. TCP: 10,000 clients at 100k qps with original timing; latency percentiles.
# Usage: [TIMING_QPS=N] [WITNESS=0] [TIMING_FLAGS=--realtime] [LDPLAYER=bin] [OLD_BIN=bin]
#        [FAST_SECONDS=20] [FAST_SEND_TIMES="default kernel user"] bench/replay.sh [OUTDIR] [fast|timing|tcp]...
#        (needs knot, dnsperf, drool, tcpdump, tshark, cc)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
out=${1:-bench/out}; shift || true
parts=${*:-fast timing tcp}
mkdir -p "$out"
# LDPLAYER=path: that build instead of this tree's (none is built then); OLD_BIN=path: another
# build beside it in the --fast rounds (before and after a change, same run, interleaved).
if [ -z "${LDPLAYER:-}" ]; then cargo build --release -q -p ldplayer; fi
bin=$(realpath "${LDPLAYER:-target/release/ldplayer}")
port=${BENCH_PORT:-5353}

knot_dir=$(mktemp -d)
cleanup() { [ -f "$knot_dir/pid" ] && kill "$(cat "$knot_dir/pid")" 2>/dev/null; rm -rf "$knot_dir"; }
trap cleanup EXIT
start_knot() { # udp workers
  example_zone "$knot_dir/example.zone"
  cat > "$knot_dir/knot.conf" <<CONF
server:
    rundir: "$knot_dir"
    listen: 127.0.0.1@$port
    udp-workers: $1
    tcp-workers: $1
    tcp-max-clients: 60000
    tcp-idle-timeout: 30s
    background-workers: 1
database:
    storage: "$knot_dir"
log:
  - target: stderr
    any: error
template:
  - id: default
    storage: "$knot_dir"
    file: "%s.zone"
zone:
  - domain: example.
CONF
  ulimit -n 200000 || true
  taskset -c 0 knotd -c "$knot_dir/knot.conf" > "$knot_dir/log" 2>&1 &
  echo $! > "$knot_dir/pid"
  for _ in $(seq 50); do kdig @127.0.0.1 -p "$port" www.example. A +short +timeout=1 >/dev/null 2>&1 && return; sleep 0.2; done
  echo "knotd did not start"; cat "$knot_dir/log"; exit 1
}
stop_knot() { kill "$(cat "$knot_dir/pid")"; wait "$(cat "$knot_dir/pid")" 2>/dev/null || true; rm -f "$knot_dir/pid"; }

cpu_of() { # time-file -> user+sys seconds (its last line: a command that was stopped has a note first)
  awk 'END { print $2 + $3 }' "$1"
}

# One --fast round: dnsperf, then each ldplayer build with each kind of send times, on the same
# queries; one line of figures. fast_round LABEL TRACE DNSPERF_FILE CLIENTS IN_FLIGHT
fast_round() {
  local label=$1 trace=$2 dfile=$3 clients=$4 inflight=$5 secs=${FAST_SECONDS:-20}
  /usr/bin/time -f "%e %U %S %M" -o "$out/t-dnsperf" taskset -c 1 dnsperf -s 127.0.0.1 -p "$port" -d "$dfile" \
    -l "$secs" -c "$clients" -T 1 -q "$inflight" > "$out/dnsperf.txt" 2>&1
  local dq dn dc line
  dq=$(awk '/Queries per second/ { print $4 }' "$out/dnsperf.txt"); dn=$(awk '/Queries completed/ { print $3 }' "$out/dnsperf.txt")
  dc=$(echo "$(cpu_of "$out/t-dnsperf") * 1000000 / $dn" | bc -l)
  line="$label: dnsperf $dq qps ($dn answered, $(printf %.2f "$dc") µs CPU/query)"
  local name b send_times lq ln lc
  for name_bin in "${gens[@]}"; do
    name=${name_bin%%|*}; b=${name_bin#*|}
    # The build's default send times under --fast (since 2026-11-28 kernel stamps of every 8th
    # datagram of a batch, `kernel-sampled`; before, of every datagram), every datagram's
    # kernel stamp, and clock reads.
    for send_times in ${FAST_SEND_TIMES:-default kernel user}; do
      local flag=(--send-times "$send_times")
      [ "$send_times" = default ] && flag=()
      # SIGINT after the run's seconds ends the replay as Ctrl-C would (its JSON is written).
      /usr/bin/time -f "%e %U %S %M" -o "$out/t-ldp" timeout -s INT -k 30 "$secs" "$b" replay "$trace" \
        --server 127.0.0.1:$port --fast --max-in-flight "$inflight" --queriers 1 --pin 1 --timeout 1 \
        "${flag[@]}" --json --dns-port 53 > "$out/ldp-fast.json" < /dev/null || true
      lq=$(python3 -c "import json;d=json.load(open('$out/ldp-fast.json'));print(round(d['qps']))")
      ln=$(python3 -c "import json;d=json.load(open('$out/ldp-fast.json'));print(d['answered'])")
      lc=$(echo "$(cpu_of "$out/t-ldp") * 1000000 / $ln" | bc -l)
      line="$line | $name ($send_times send times) $lq qps ($ln answered, $(printf %.2f "$lc") µs CPU/query, qps ratio $(printf %.2f "$(echo "$lq / $dq" | bc -l)"), CPU ratio $(printf %.2f "$(echo "$lc / $dc" | bc -l)"))"
    done
  done
  # The kernel's floor: bench/udp-floor.c does only the system calls of a batched closed loop
  # on one socket, nothing per query besides; below its CPU per answer no socket generator goes.
  # With -g it sends each run of equal-sized queries as one UDP GSO datagram (these queries
  # are nearly all of one size: the best case for segmentation offload).
  local floor gso
  for floor in udp-floor "udp-floor -g"; do
    gso=(); [ "$floor" != udp-floor ] && gso=(-g)
    taskset -c 1 "$out/udp-floor" -s 127.0.0.1 -p "$port" -d "$dfile" -l "$secs" -q "$inflight" "${gso[@]}" > "$out/floor.json"
    lq=$(python3 -c "import json;print(json.load(open('$out/floor.json'))['qps'])")
    lc=$(python3 -c "import json;print(json.load(open('$out/floor.json'))['cpu_us_per_answer'])")
    line="$line | kernel floor ($floor, 1 socket) $lq qps ($(printf %.2f "$lc") µs CPU/answer, qps ratio $(printf %.2f "$(echo "$lq / $dq" | bc -l)"), CPU ratio $(printf %.2f "$(echo "$lc / $dc" | bc -l)"))"
  done
  echo "$line"
}

if [[ " $parts " == *" fast "* ]]; then
  secs=${FAST_SECONDS:-20}
  echo "== --fast UDP: knotd on core 0 (1 UDP worker), generator on core 1, $secs s each"
  echo "   one client (1 socket, 1,000 in flight) and matched concurrency (4 sockets, 500 in flight)"
  cc -O2 -Wall -o "$out/udp-floor" bench/udp-floor.c
  gens=("ldplayer|$bin")
  [ -n "${OLD_BIN:-}" ] && gens+=("OLD_BIN|$(realpath "$OLD_BIN")")
  # Wildcard names: every query answered from the zone, unique so nothing is cached anywhere.
  for c in 1 4; do
    $bin synth --workload fixed --interval 0.00001 -n 5000000 --clients $c --zone w.example. -o "$out/fast$c.bin" -q
    $bin convert "$out/fast$c.bin" --to text -o - -q | awk -F'\t' 'NR > 2 { print $13, $15 }' > "$out/fast$c.dnsperf"
  done
  start_knot 1
  for round in 1 2; do
    fast_round "round $round, 1 client" "$out/fast1.bin" "$out/fast1.dnsperf" 1 1000
    fast_round "round $round, 4 clients" "$out/fast4.bin" "$out/fast4.dnsperf" 4 500
  done
  stop_knot
fi

if [[ " $parts " == *" timing "* ]]; then
  qps=${TIMING_QPS:-200000}
  # WITNESS=0: no tcpdump witness and no drool (the witness competes for the two cores, so
  # the sender's own figures are measured without it too). TIMING_FLAGS: more replay flags
  # (e.g. --realtime).
  witness=${WITNESS:-1}
  echo "== original timing: $qps qps UDP for 30 s ($((qps * 30)) queries, 1,000 clients), witness $witness, flags: ${TIMING_FLAGS:-none}"
  $bin synth --workload fixed --interval "$(echo "1 / $qps" | bc -l)" -n $((qps * 30)) --clients 1000 --zone w.example. -o "$out/t200k.bin" -q
  start_knot 1
  if [ "$witness" = 1 ]; then
    tcpdump -i lo -n -U --immediate-mode -s 96 -B 262144 -w "$out/t200k-wire.pcap" udp and dst port "$port" 2> "$out/tcpdump.err" &
    td=$!; sleep 1
  fi
  # shellcheck disable=SC2086 # TIMING_FLAGS is a list of flags
  $bin replay "$out/t200k.bin" --server 127.0.0.1:$port --queriers 1 --pin 1 ${TIMING_FLAGS:-} --json --results "$out/t200k.res" > "$out/t200k.json"
  if [ "$witness" = 1 ]; then
    sleep 1; kill -INT $td; wait $td || true; grep -E "captured|dropped" "$out/tcpdump.err" || true
  fi
  python3 - "$out/t200k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t, r = d["timing_error_us"], d["rate_error"]
print("ldplayer: sent", d["sent"], "answered", d["answered"], f"({100 * d['answered'] / max(1, d['sent']):.2f}%)", "timeouts", d["timeouts"])
print(f"timing error µs: p25 {t['p25']:.1f} p50 {t['p50']:.1f} p75 {t['p75']:.1f} p99 {t['p99']:.1f} max {t['max']:.0f}; "
      f"seconds within ±0.1%: {100 * r['within_0_1pct']:.1f}% of {r['seconds']}")
PY
  stop_knot
fi

if [[ " $parts " == *" timing "* ]] && [ "${WITNESS:-1}" = 1 ]; then
  echo "-- tcpdump witness (packet time - first packet) vs (trace time - first trace time), after removing the median offset"
  $bin convert "$out/t200k.bin" --to pcap -o "$out/t200k.pcap" -q
  tshark -r "$out/t200k-wire.pcap" -d udp.port==$port,dns -T fields -e frame.time_epoch -e dns.qry.name > "$out/wire.tsv"
  $bin convert "$out/t200k.bin" --to text -o - -q | awk -F'\t' 'NR > 2 { print $1 "\t" $13 }' > "$out/plan.tsv"
  python3 - "$out/wire.tsv" "$out/plan.tsv" <<'PY'
import sys, statistics
plan = {}
for l in open(sys.argv[2]):
    t, n = l.rstrip("\n").split("\t"); plan[n.rstrip(".")] = float(t)
wire = []
for l in open(sys.argv[1]):
    p = l.rstrip("\n").split("\t")
    if len(p) == 2 and p[1].rstrip(".") in plan: wire.append((float(p[0]), plan[p[1].rstrip(".")]))
wire.sort(key=lambda x: x[1])
w0, p0 = wire[0]
err = [((w - w0) - (p - p0)) * 1e6 for w, p in wire]
off = statistics.median(err); err = sorted(e - off for e in err)
q = lambda f: err[min(len(err) - 1, int(f * len(err)))]
print(f"witness: {len(wire)} of {len(plan)} queries on the wire; error µs p1 {q(0.01):.1f} p25 {q(0.25):.1f} p50 {q(0.5):.1f} p75 {q(0.75):.1f} p99 {q(0.99):.1f}")
secs = {}
for w, p in wire:
    secs.setdefault(int(w - w0), 0); secs[int(w - w0)] += 1
full = [c for s, c in secs.items() if 0 < s < max(secs)]
rate = len(plan) / (max(p for _, p in wire) - p0)
within = sum(1 for c in full if abs(c - rate) <= rate / 1000) / max(1, len(full))
print(f"witness: per-second rate within ±0.1% of {rate:.0f} for {within * 100:.1f}% of {len(full)} full seconds")
PY
  echo "-- drool -t keep on the same trace as pcap (drool reports no per-query timing; its wall time is shown)"
  start_knot 1
  # drool 2.0: replay the pcap with its own timing (-t keep), UDP only, without waiting for
  # answers; it prints its own statistics as JSON (no per-query timing). drool's timing filter
  # fails with "clock_nanosleep(...) 22" (EINVAL) on nanosecond pcaps, so it gets a
  # microsecond copy (editcap, from tshark's package).
  # On this machine drool does not finish the 30 s trace in 120 s (a whole core in system
  # time), so it also gets the trace's first second alone, whose wall time gives its rate.
  editcap -F pcap "$out/t200k.pcap" "$out/t200k-usec.pcap"
  editcap -F pcap -r "$out/t200k-usec.pcap" "$out/t1s-usec.pcap" 1-"$qps"
  /usr/bin/time -f "drool: %e s wall for the trace's first second ($qps queries), %U s user, %S s sys" \
    taskset -c 1 timeout 60 drool replay -t keep --no-tcp -n --json "$out/t1s-usec.pcap" 127.0.0.1 "$port" 2>&1 | tail -4 || true
  /usr/bin/time -f "drool: %e s wall for the 30 s trace (stopped at 120 s), %U s user, %S s sys" taskset -c 1 timeout 120 \
    drool replay -t keep --no-tcp -n --json "$out/t200k-usec.pcap" 127.0.0.1 "$port" 2>&1 | tail -5 || true
  stop_knot
fi

if [[ " $parts " == *" tcp "* ]]; then
  tcp_qps=${TCP_QPS:-100000}
  echo "== TCP: 10,000 clients at $tcp_qps qps, original timing, 20 s"
  $bin synth --workload poisson --rate "$tcp_qps" -n $((tcp_qps * 20)) --clients 10000 --tcp-share 1 --zone w.example. -o "$out/tcp100k.bin" -q
  start_knot 1
  ulimit -n 200000 || true
  $bin replay "$out/tcp100k.bin" --server 127.0.0.1:$port --queriers 1 --pin 1 --json > "$out/tcp100k.json"
  python3 - "$out/tcp100k.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("sent", d["sent"], "answered", d["answered"], "timeouts", d["timeouts"], "qps", round(d["qps"]), "sent_qps", round(d["sent_qps"]))
print("connections", d["connections"]); print("timing error (µs)", d["timing_error_us"]); print("rate error", d["rate_error"])
print("latency ms", d["latency_ms"])
PY
  stop_knot
fi
