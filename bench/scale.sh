#!/usr/bin/env bash
# Scale-out benchmark (issue "scale-out"): more concurrent TCP connections and TLS sessions than
# one process may hold (its open-file limit), through `replay --processes N`, against nsd with
# enough server processes; the generator's memory per idle connection summed over its shard
# processes. Each client on its own loopback address (--source-prefix 127.0.0.0/8). Loopback
# only; bounded in count and time.
# Usage: bench/scale.sh [OUTDIR] [TCP_CLIENTS] [TLS_CLIENTS]   (env PROCESSES, default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}; tcp_clients=${2:-50000}; tls_clients=${3:-20000}; processes=${PROCESSES:-3}
mkdir -p "$out"
cargo build --release -q -p ldplayer
bin=$PWD/target/release/ldplayer
echo "open-file limit per process: $(ulimit -n) (hard $(ulimit -Hn)); $processes shard processes"
sysctl -qw net.ipv4.tcp_max_syn_backlog=65536 net.core.somaxconn=65535 2>/dev/null || true
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

cat > "$work/example.zone" <<'ZONE'
$ORIGIN example.
$TTL 3600
@ SOA ns.example. admin.example. 1 3600 600 86400 300
@ NS ns.example.
ns A 127.0.0.1
* A 192.0.2.2
ZONE
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
# nsd's tcp-count is per server process, and a process with more than half of its tcp-count in
# use cuts its idle timeout to 200 ms: 8 processes of 18,000 keep 50,000 connections (6,250
# each) open, each process within the per-process open-file limit.
cat > "$work/nsd.conf" <<CONF
server:
    ip-address: 127.0.0.1@5365
    ip-address: 127.0.0.1@5366
    tls-port: 5366
    tls-service-key: "$work/key.pem"
    tls-service-pem: "$work/cert.pem"
    zonesdir: "$work"
    database: ""
    pidfile: "$work/nsd.pid"
    xfrdfile: "$work/xfrd.state"
    username: ""
    server-count: 8
    tcp-count: 18000
    tcp-timeout: 120
    reuseport: yes
    verbosity: 0
zone:
    name: example.
    zonefile: example.zone
CONF
nsd -d -c "$work/nsd.conf" 2> "$work/nsd.log" & pids+=($!)
for _ in $(seq 50); do kdig @127.0.0.1 -p 5365 ns.example +short +timeout=1 >/dev/null 2>&1 && break; sleep 0.2; done

# Sum of VmRSS (KiB) over the shard processes (the children of the replay's parent process).
shards_rss() {
  local total=0 kb
  for c in $(pgrep -P "$1" 2>/dev/null); do
    kb=$(awk '/VmRSS/ { print $2 }' "/proc/$c/status" 2>/dev/null || echo 0)
    total=$((total + ${kb:-0}))
  done
  echo $total
}

# Every client sends two queries in the first seconds, then holds its connection idle (idle
# timeout 60 s) until the last answer is in; peak connections and shard memory are sampled.
measure() { # label port proto clients rate extra-args...
  local label=$1 port=$2 proto=$3 clients=$4 rate=$5; shift 5
  $bin synth --workload fixed --interval "$(echo "1 / $rate" | bc -l)" -n $((clients * 2)) --clients "$clients" --tcp-share 1 \
    --zone w.example. --seed 11 -o "$work/c.bin" -q
  $bin replay "$work/c.bin" --server 127.0.0.1:$port --proto "$proto" --source-prefix 127.0.0.0/8 --idle-timeout 60 \
    --timeout 10 --queriers 1 --processes "$processes" --json "$@" > "$work/r.json" &
  local pid=$! peak_conn=0 peak_rss=0 base_rss=0 rss conn
  for _ in $(seq 600); do
    kill -0 $pid 2>/dev/null || break
    rss=$(shards_rss $pid)
    [ "$base_rss" = 0 ] && [ "$rss" -gt 0 ] && [ "$(pgrep -c -P $pid)" -ge "$processes" ] && base_rss=$rss
    conn=$(ss -Htn state established "( dport = :$port )" 2>/dev/null | wc -l)
    if [ "$conn" -ge "$peak_conn" ]; then peak_conn=$conn; peak_rss=$rss; fi
    sleep 0.25
  done
  wait $pid || true
  echo "$label $peak_conn $peak_rss" >> "$work/points"
  python3 - "$work/r.json" "$label" "$peak_conn" "$peak_rss" "$base_rss" "$processes" <<'PY' | tee -a "$out/scale.txt"
import json, sys
d = json.load(open(sys.argv[1])); label, conn, rss, base, n = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
per = [p.get("connections", {}).get("opened") for p in d["processes"] if p]
print(f"{label}: {n} processes; peak {conn} established connections; shard processes' RSS {rss} KiB at the peak"
      f" (first sample {base} KiB) = {(rss - base) * 1024 / max(conn, 1):.0f} bytes per connection;"
      f" sent {d['sent']} answered {d['answered']} timeouts {d['timeouts']} errors {sum(d['errors'].values())};"
      f" connections opened per process {per}")
PY
}

# Memory per connection as the slope between half the clients and all of them: the processes'
# fixed costs (trace buffers, result channels, histograms) cancel out.
slope() { # label
  python3 - "$work/points" "$1" <<'PY' | tee -a "$out/scale.txt"
import sys
pts = [l.split() for l in open(sys.argv[1]) if l.split()[0].startswith(sys.argv[2])]
(_, c1, r1), (_, c2, r2) = pts[-2], pts[-1]
c1, r1, c2, r2 = int(c1), int(r1), int(c2), int(r2)
print(f"{sys.argv[2]}: {(r2 - r1) * 1024 / max(c2 - c1, 1):.0f} bytes per idle connection "
      f"(slope from {c1} to {c2} established: {r1} to {r2} KiB over the shard processes)")
PY
}
echo "== $((tcp_clients / 2)) and $tcp_clients TCP clients against nsd ($processes processes)"
measure "TCP-half" 5365 tcp "$((tcp_clients / 2))" "${TCP_RATE:-10000}"
measure "TCP" 5365 tcp "$tcp_clients" "${TCP_RATE:-10000}"
slope TCP
echo "== $((tls_clients / 2)) and $tls_clients TLS clients against nsd ($processes processes)"
measure "TLS-half" 5366 tls "$((tls_clients / 2))" "${TLS_RATE:-2000}" --tls-insecure
measure "TLS" 5366 tls "$tls_clients" "${TLS_RATE:-2000}" --tls-insecure
slope TLS
