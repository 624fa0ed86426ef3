#!/usr/bin/env bash
# Capacity of unbound (one thread) found by a ramp of offered load (issue 32): ldplayer's
# `replay --ramp-to` beside resperf (Debian's dnsperf package) over UDP, TCP and DoT, on
# loopback only, ROUNDS interleaved rounds (each round: for each transport resperf, then
# ldplayer, so that the machine's drifting load falls on both alike). Both ramp from 0 to the
# same top over the same seconds with the same loss bound (resperf's -L, 2 s timeout); unbound
# (1 thread, answering every name under example. from local data) is pinned to core 0, each
# generator to core 1 (the whole process: taskset).
#  1. capacity: a ramp to the transport's top (above unbound's capacity): each tool's capacity
#     and the loss there; ldplayer's also under a latency bound (p95 ≤ LATENCY_MS).
#  2. cpu: a ramp to CPU_TOP (below every knee, so that both tools send every query and get
#     every answer): the generator's CPU (user + system, /usr/bin/time) per query sent, at the
#     same offered rate; ldplayer writes its results file as a user keeps it.
# UDP: one client (resperf's default -C 1; the trace's queries from one address). TCP, DoT:
# CLIENTS clients (resperf -C), each with its own connection (the trace's clients).
# Bounded: every ramp lasts RAMP_S seconds and holds at most top × RAMP_S / 2 queries, each
# run is under `timeout`; about 12 × (RAMP_S + 10) s a round.
# Usage: bench/capacity.sh [OUTDIR]
#   env RAMP_S (20), CLIENTS (100), UDP_TOP (80000), TCP_TOP (50000), DOT_TOP (40000), CPU_TOP
#   (10000), MAX_LOSS (1, %), LATENCY_MS (100), ROUNDS (2), PHASES ("capacity cpu"), LDPLAYER
#   (a built binary), LDPLAYER_FLAGS (more replay flags), SERVER_CPU (percent of core 0 unbound
#   may use, as a cgroup CPU quota; 25; 100: no quota), PROTOS ("udp tcp tls"); TABLE_ONLY=1
#   tabulates OUTDIR again.
# resperf is run with -e (the trace's queries carry EDNS, 1,232 bytes, and so do resperf's then) and
# -i 1: it judges its loss bound over 1 s buckets (default 0.5 s), as ldplayer judges its seconds.
# SERVER_CPU: on a quiet 2-core machine unbound with a whole core kept up with both tools'
# ramps to 50,000 q/s, where each generator is near its own limit on the other core: then
# neither finds unbound's capacity, only its own. Holding unbound to a share of its core puts
# its capacity well below both, so that the two ramps measure the same server limit.
# Needs: unbound, dnsperf (resperf), openssl, python3, taskset, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
out=${1:-bench/out/capacity}
ramp_s=${RAMP_S:-20}
clients=${CLIENTS:-100}
max_loss=${MAX_LOSS:-1}
rounds=${ROUNDS:-2}
declare -A top=([udp]=${UDP_TOP:-80000} [tcp]=${TCP_TOP:-50000} [tls]=${DOT_TOP:-40000})
cpu_top=${CPU_TOP:-10000}
latency_ms=${LATENCY_MS:-100}
server_cpu=${SERVER_CPU:-25}
protos=${PROTOS:-udp tcp tls}
phases=${PHASES:-capacity cpu}
ldp_flags=${LDPLAYER_FLAGS:-}
declare -A resperf_mode=([udp]=udp [tcp]=tcp [tls]=dot)
for tool in unbound resperf openssl python3 taskset /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install unbound dnsperf openssl python3 util-linux time)" >&2; exit 1; }
done
if [[ -z "${LDPLAYER:-}" && -z "${TABLE_ONLY:-}" ]]; then cargo build --release -q -p ldplayer; fi
bin=$(realpath "${LDPLAYER:-target/release/ldplayer}")
mkdir -p "$out"
# The tables of every run in OUTDIR/runs.tsv.
table() {
python3 - "$out/runs.tsv" "$latency_ms" "$cpu_top" << 'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
def col(kind, tool, proto, key):
    return [float(r[key]) for r in rows if r["kind"] == kind and r["tool"] == tool and r["proto"] == proto]
def show(xs, fmt):
    return " / ".join(fmt.format(x) for x in xs)
def ratio(a, b):
    try:
        return statistics.mean(a) / statistics.mean(b)
    except (ZeroDivisionError, statistics.StatisticsError):
        return float("nan")
names = (("udp", "UDP"), ("tcp", "TCP"), ("tls", "DoT"))
print()
print(f"Capacity (ramp from 0 to the top; loss bound as resperf's -L; ldplayer also with p95 ≤ {sys.argv[2]} ms):")
print()
print(f"| transport | ramp top (q/s) | resperf (q/s) | ldplayer (q/s) | ldplayer / resperf | ldplayer, p95 ≤ {sys.argv[2]} ms (q/s) |")
print("|---|---|---|---|---|---|")
for proto, name in names:
    rc, lc = col("capacity", "resperf", proto, "capacity"), col("capacity", "ldplayer", proto, "capacity")
    behind = [r["note"] == "fell behind" for r in rows if r["kind"] == "capacity" and r["tool"] == "resperf" and r["proto"] == proto]
    if not rc and not lc:
        continue
    top = next(r["top"] for r in rows if r["kind"] == "capacity" and r["proto"] == proto)
    lb = col("capacity", "ldplayer", proto, "capacity_latency_bound")
    shown = " / ".join(f"{x:.0f}" + ("*" if b else "") for x, b in zip(rc, behind))
    print(f"| {name} | {top} | {shown} | {show(lc, '{:.0f}')} | {ratio(lc, rc):.2f} | {show(lb, '{:.0f}')} |")
print()
print(f"Generator CPU (user + system) per query sent, in a ramp from 0 to {sys.argv[3]} q/s (below every knee) and in the capacity ramps:")
print()
print("| transport | ramp | resperf µs/query | ldplayer µs/query | ldplayer / resperf (goal ≤ 0.5) |")
print("|---|---|---|---|---|")
for kind in ("cpu", "capacity"):
    for proto, name in names:
        ru, lu = col(kind, "resperf", proto, "us_per_query"), col(kind, "ldplayer", proto, "us_per_query")
        if not ru and not lu:
            continue
        label = f"to {sys.argv[3]}" if kind == "cpu" else "capacity"
        print(f"| {name} | {label} | {show(ru, '{:.2f}')} | {show(lu, '{:.2f}')} | {ratio(lu, ru):.2f} |")
print()
print("Each round's figure separated by /; the ratios compare the rounds' means. * resperf fell behind its")
print("own schedule (-F, 1000 queries) and ended its ramp there: its figure is the generator's limit, not the")
print("server's. Every run: runs.tsv.")
PY
}
if [[ -n "${TABLE_ONLY:-}" ]]; then table; exit 0; fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; sleep 0.2; cpu_quota_cleanup; rm -rf "$work"; }
trap cleanup EXIT
ulimit -n 65536 2> /dev/null || ulimit -n "$(ulimit -Hn)"
free_port() { python3 -c 'import socket; t = socket.socket(); t.bind(("127.0.0.1", 0)); print(t.getsockname()[1])'; }

test_certificate "$work"

port=$(free_port); tls_port=$(free_port)
cat > "$work/unbound.conf" << CONF
server:
  interface: 127.0.0.1@$port
  interface: 127.0.0.1@$tls_port
  tls-port: $tls_port
$(unbound_common "$work")
  incoming-num-tcp: $((clients + 100))
  outgoing-range: 64
  so-rcvbuf: 4m
  so-sndbuf: 4m
  tcp-idle-timeout: 120000
  # Every name under example. answered from local data (NOERROR, one A), nothing resolved.
  local-zone: "example." redirect
  local-data: "example. 60 IN A 192.0.2.1"
remote-control:
  control-enable: no
CONF
start_unbound "$work" "$tls_port"
quota=""
if (( server_cpu < 100 )); then cpu_quota "${pids[-1]}" "$server_cpu"; quota=" (at most $server_cpu% of it: a cgroup CPU quota)"; fi
version=$(unbound -V | awk 'NR == 1 {print $2}')
echo "== unbound $version, 1 thread on core 0$quota; generators on core 1; ramp 0 → top over $ramp_s s, loss bound $max_loss%; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# The queries: the ramp's count (top × ramp_s / 2) of unique names under example., from one
# client (UDP) or CLIENTS clients (TCP, DoT); resperf reads the same names and types.
make_trace() { # name proto count
  local c=$clients; [[ $2 == udp ]] && c=1
  "$bin" synth --workload fixed --interval 0.00001 -n "$3" --clients "$c" --zone example. -o "$work/$1.bin" -q
  "$bin" convert "$work/$1.bin" --to text -o - -q | awk -F'\t' 'NR > 2 { print $13, $15 }' > "$work/$1.resperf"
}
for proto in $protos; do
  make_trace "$proto" "$proto" $(( ${top[$proto]} * ramp_s / 2 + 1000 ))
  make_trace "cpu-$proto" "$proto" $(( cpu_top * ramp_s / 2 + 1000 ))
done

# One ramp of each tool: kind (capacity or cpu), round, transport, top, loss bound.
ramp() {
  local kind=$1 round=$2 proto=$3 t=$4 loss=$5
  local p=$port; [[ $proto == tls ]] && p=$tls_port
  local c=$clients; [[ $proto == udp ]] && c=1
  local trace=$proto; [[ $kind == cpu ]] && trace=cpu-$proto
  local name=$kind-$proto-r$round
  # resperf: its maximum throughput and the loss there, the queries it sent.
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" timeout $((ramp_s + 60)) taskset -c 1 \
    resperf -e -i 1 -M "${resperf_mode[$proto]}" -s 127.0.0.1 -p "$p" -d "$work/$trace.resperf" -m "$t" \
    -r "$ramp_s" -L "$loss" -C "$c" -t 2 -b 4096 -P "$out/resperf-$name.gnuplot" \
    > "$out/resperf-$name.txt" 2>&1 || true
  python3 - "$out/resperf-$name.txt" "$work/time" "$kind" "$round" "$proto" "$t" >> "$out/runs.tsv" << 'PY'
import re, sys
text, (wall, user, sys_s, rss) = open(sys.argv[1]).read(), open(sys.argv[2]).read().split()[-4:]
def num(pattern):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else float("nan")
cap, loss = num(r"Maximum throughput:\s+([\d.]+)"), num(r"Lost at that point:\s+([\d.]+)")
sent, done = num(r"Queries sent:\s+(\d+)"), num(r"Queries completed:\s+(\d+)")
behind = "fell behind" if "Fell behind" in text else ""
cpu = float(user) + float(sys_s)
print(f"{sys.argv[3]}\t{sys.argv[4]}\tresperf\t{sys.argv[5]}\t{sys.argv[6]}\t{cap:.0f}\t{loss:.2f}\tnan\t{sent:.0f}\t{done:.0f}\t{cpu:.2f}\t{cpu * 1e6 / sent:.2f}\t{behind}")
PY
  tail -n 1 "$out/runs.tsv"
  # ldplayer: the same ramp, the trace's clients each with its own source address, results
  # written as a user keeps them.
  /usr/bin/time -f "%e %U %S %M" -o "$work/time" timeout $((ramp_s + 60)) taskset -c 1 \
    "$bin" replay "$work/$trace.bin" --server 127.0.0.1:"$p" --proto "$proto" --tls-ca "$work/ca.pem" \
    --ramp-to "$t" --ramp-s "$ramp_s" --max-loss "$loss" --queriers 1 --timeout 2 \
    --source-prefix 127.0.0.0/8 --idle-timeout 120 --results "$work/ldp.res" --json -q $ldp_flags \
    > "$out/ldplayer-$name.json" 2> "$out/ldplayer-$name.err" < /dev/null || true
  python3 - "$out/ldplayer-$name.json" "$work/time" "$kind" "$round" "$proto" "$t" "$latency_ms" >> "$out/runs.tsv" << 'PY'
import json, sys
(wall, user, sys_s, rss) = open(sys.argv[2]).read().split()[-4:]
bound = float(sys.argv[7])
try:
    d = json.load(open(sys.argv[1]))
    ramp = d["ramp"]
    cap, loss, sent, done = ramp["capacity_qps"], ramp["loss_pct"], d["sent"], d["answered"]
    # The capacity under the loss bound and a latency bound too (p95 ≤ bound), judged from
    # the same seconds as the replay judges --max-latency-ms.
    under = 0.0
    for s in ramp["seconds"]:
        if s["loss_pct"] > ramp["max_loss_pct"] or (s["latency_p95_ms"] or 0) > bound:
            break
        under = max(under, s["answered_qps"])
except (ValueError, KeyError, TypeError):
    cap = loss = sent = done = under = float("nan")
cpu = float(user) + float(sys_s)
print(f"{sys.argv[3]}\t{sys.argv[4]}\tldplayer\t{sys.argv[5]}\t{sys.argv[6]}\t{cap:.0f}\t{loss:.2f}\t{under:.0f}\t{sent:.0f}\t{done:.0f}\t{cpu:.2f}\t{cpu * 1e6 / sent:.2f}\t")
PY
  tail -n 1 "$out/runs.tsv"
  rm -f "$work/ldp.res"
}

printf 'kind\tround\ttool\tproto\ttop\tcapacity\tloss_pct\tcapacity_latency_bound\tsent\tanswered\tcpu_s\tus_per_query\tnote\n' > "$out/runs.tsv"
for round in $(seq 1 "$rounds"); do
  if [[ " $phases " == *" capacity "* ]]; then
    for proto in $protos; do
      ramp capacity "$round" "$proto" "${top[$proto]}" "$max_loss"
    done
  fi
  if [[ " $phases " == *" cpu "* ]]; then
    for proto in $protos; do
      ramp cpu "$round" "$proto" "$cpu_top" 100
    done
  fi
done

table
