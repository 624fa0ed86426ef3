#!/usr/bin/env bash
# Concurrency benchmark of the query engine (issue "query engine"): many simultaneous TCP
# connections (knotd) and TLS sessions (nsd) from one ldplayer process, each original client on
# its own loopback address (--source-prefix 127.0.0.0/8), with the generator's memory per idle
# connection. Loopback only; bounded in count and time.
# Usage: bench/connections.sh [OUTDIR] [TCP_CLIENTS] [TLS_CLIENTS]   (env TCP_RATE, TLS_RATE: qps;
#   LDPLAYER=/path/to/ldplayer: another build, e.g. before and after a change; no build then)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}; tcp_clients=${2:-50000}; tls_clients=${3:-20000}
mkdir -p "$out"
if [ -z "${LDPLAYER:-}" ]; then cargo build --release -q -p ldplayer; fi
bin=${LDPLAYER:-$PWD/target/release/ldplayer}
# Each connection is a file descriptor on both sides: raise the limit as far as allowed, and cap
# the client counts below it (without CAP_SYS_RESOURCE the hard limit cannot be raised).
ulimit -n 400000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
limit=$(ulimit -n)
if [ $((tcp_clients + 500)) -gt "$limit" ] || [ $((tls_clients + 500)) -gt "$limit" ]; then
  echo "note: open-file limit is $limit (hard limit; raising it needs CAP_SYS_RESOURCE): capping clients at $((limit - 1000))"
  tcp_clients=$(( tcp_clients < limit - 1000 ? tcp_clients : limit - 1000 ))
  tls_clients=$(( tls_clients < limit - 1000 ? tls_clients : limit - 1000 ))
fi
sysctl -qw net.ipv4.tcp_max_syn_backlog=65536 net.core.somaxconn=65535 2>/dev/null || true
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

zone='$ORIGIN example.
$TTL 3600
@ SOA ns.example. admin.example. 1 3600 600 86400 300
@ NS ns.example.
ns A 127.0.0.1
* A 192.0.2.2'

# Peak connections and generator memory while a replay runs: every client sends its queries in
# the first seconds, then its connection stays idle (idle timeout 60 s) until the run ends.
measure() { # label port proto clients rate extra-args...
  local label=$1 port=$2 proto=$3 clients=$4 rate=$5; shift 5
  # Round robin (the fixed workload): every client sends, twice, `clients` queries apart.
  $bin synth --workload fixed --interval "$(echo "1 / $rate" | bc -l)" -n $((clients * 2)) --clients "$clients" --tcp-share 1 \
    --zone w.example. --seed 11 -o "$work/c.bin" -q
  # The run ends when the last answer is in or timed out (--timeout 10): until then every
  # connection stays open (--idle-timeout 60), idle after its client's second query.
  $bin replay "$work/c.bin" --server 127.0.0.1:$port --proto "$proto" --source-prefix 127.0.0.0/8 --idle-timeout 60 \
    --timeout 10 --queriers 1 --json "$@" > "$work/r.json" &
  local pid=$! peak_conn=0 peak_rss=0 base_rss=0
  for _ in $(seq 400); do
    kill -0 $pid 2>/dev/null || break
    rss=$(awk '/VmRSS/ { print $2 }' /proc/$pid/status 2>/dev/null || echo 0)
    [ "$base_rss" = 0 ] && base_rss=$rss
    conn=$(ss -Htn state established "( dport = :$port )" 2>/dev/null | wc -l)
    if [ "$conn" -ge "$peak_conn" ]; then peak_conn=$conn; peak_rss=$rss; fi
    sleep 0.25
  done
  wait $pid || true
  python3 - "$work/r.json" "$label" "$peak_conn" "$peak_rss" "$base_rss" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); label, conn, rss, base = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"{label}: peak {conn} established connections; generator RSS {rss} KiB at the peak (first sample {base} KiB)"
      f" = {(rss - base) * 1024 / max(conn, 1):.0f} bytes per connection; sent {d['sent']} answered {d['answered']}"
      f" timeouts {d['timeouts']} errors {sum(d['errors'].values())}; connections {d['connections']}; tls resumed {d['replay']['tls_resumed']}")
PY
}

echo "== $tcp_clients TCP clients against knotd"
mkdir -p "$work/knot"; echo "$zone" > "$work/knot/example.zone"
cat > "$work/knot/knot.conf" <<CONF
server:
    rundir: "$work/knot"
    listen: 127.0.0.1@5354
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
    tcp-max-clients: 120000
    tcp-idle-timeout: 120s
    tcp-io-timeout: 10000
database:
    storage: "$work/knot"
log:
  - target: stderr
    any: error
template:
  - id: default
    storage: "$work/knot"
    file: "%s.zone"
zone:
  - domain: example.
CONF
knotd -c "$work/knot/knot.conf" 2> "$work/knot/log" & pids+=($!)
sleep 1
measure "TCP" 5354 tcp "$tcp_clients" "${TCP_RATE:-10000}"

echo "== $tls_clients TLS clients against nsd"
mkdir -p "$work/nsd"; echo "$zone" > "$work/nsd/example.zone"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost -keyout "$work/nsd/key.pem" -out "$work/nsd/cert.pem" 2>/dev/null
cat > "$work/nsd/nsd.conf" <<CONF
server:
    ip-address: 127.0.0.1@5355
    ip-address: 127.0.0.1@5356
    tls-port: 5356
    tls-service-key: "$work/nsd/key.pem"
    tls-service-pem: "$work/nsd/cert.pem"
    zonesdir: "$work/nsd"
    database: ""
    pidfile: "$work/nsd/nsd.pid"
    xfrdfile: "$work/nsd/xfrd.state"
    username: ""
    server-count: 1
    tcp-count: 60000
    tcp-timeout: 120
    verbosity: 0
zone:
    name: example.
    zonefile: example.zone
CONF
nsd -d -c "$work/nsd/nsd.conf" 2> "$work/nsd/log" & pids+=($!)
sleep 1
measure "TLS" 5356 tls "$tls_clients" "${TLS_RATE:-4000}" --tls-insecure
