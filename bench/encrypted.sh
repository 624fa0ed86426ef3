#!/usr/bin/env bash
# Encrypted-transport benchmarks of the query engine (issue "encrypted transports and client
# populations"; figures go to docs/performance.md). Loopback only; every load is bounded in
# count and time.
#  1. fast: `replay --proto doh --fast` beside `dnsperf -m doh` against the same unbound (DoH,
#     one thread, pinned to core 0, answering from local data), the generator pinned to core 1,
#     the same queries, the same connections (CLIENTS) and queries in flight; qps and generator
#     CPU per query, two rounds each, POST; with OLD_BIN=path/to/ldplayer another build runs
#     beside them too (before/after a change).
#  2. idle: N DoH clients (default 20,000) each ask twice and then hold their connection idle,
#     from one ldplayer process against `ldplayer serve --https-listen`; generator memory per idle
#     session (RSS slope between N/4 and N clients), then each client asks again after the
#     server's idle timeout closed its connection: the share of reconnections that resumed TLS.
#  3. doq-idle: the same with DoQ clients against `ldplayer serve --quic-listen`: memory per
#     idle session (sessions counted by the replay's UDP sockets, one per client endpoint), and
#     the reconnections that went in 0-RTT (and were accepted).
#  4. doq-fast: `replay --proto doq --fast` against `ldplayer serve --quic-listen` (pinned to
#     core 0), the generator on core 1, CLIENTS connections, 1,000 queries in flight: qps and
#     generator CPU per query, two rounds. No packaged tool sends DoQ (dnsperf has no DoQ): the
#     peer is the same build with `--stack reference` (quinn) in the same rounds; with
#     OLD_BIN=path/to/ldplayer another build runs beside them too.
#  5. mixed: a population of MIXED_CLIENTS (default 25,000) clients shaped like DNS Shotgun's
#     "mixed" (examples/populations/mixed.toml: 60% UDP, 10% TCP, 15% DoT, 10% DoH, 5% DoQ)
#     replayed with the trace's timing against `ldplayer serve` on all five transports, in two
#     processes (--processes 2: each under its open-file limit); per-transport latency,
#     handshakes, resumptions and timing error.
# Usage: bench/encrypted.sh [OUTDIR] [fast|idle|doq-idle|doq-fast|mixed]...
#        (env CLIENTS, SECONDS_PER_RUN, IDLE_CLIENTS, IDLE_RATE (new sessions per second),
#        MIXED_CLIENTS, MIXED_QPS, OLD_BIN; needs unbound,
#        dnsperf, openssl)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
out=${1:-bench/out}; shift || true
parts=${*:-fast idle doq-idle doq-fast mixed}
mkdir -p "$out"
cargo build --release -q -p ldplayer
bin=$PWD/target/release/ldplayer
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
ulimit -n 400000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cpu_of() { tail -n 1 "$1" | awk '{print $2 + $3}'; } # time file -> user+sys seconds
free_port() { python3 -c 'import socket; t = socket.socket(); t.bind(("127.0.0.1", 0)); print(t.getsockname()[1])'; }

test_certificate "$work"

if [[ " $parts " == *" fast "* ]]; then
  clients=${CLIENTS:-10}; seconds=${SECONDS_PER_RUN:-15}
  port=$(free_port)
  cat > "$work/unbound.conf" <<CONF
server:
  interface: 127.0.0.1@$port
  https-port: $port
  http-endpoint: "/dns-query"
  http-max-streams: 1000
$(unbound_common "$work")
  incoming-num-tcp: 1000
  local-zone: "example." static
  local-data: "example. 60 IN SOA ns.example. admin.example. 1 60 60 60 60"
remote-control:
  control-enable: no
CONF
  start_unbound "$work" "$port"
  echo "== DoH --fast: unbound $(unbound -V | awk 'NR==1 {print $2}') (1 thread, core 0), generator on core 1, $clients connections, ${seconds} s per run"
  # Names under example. that do not exist: NXDOMAIN from unbound's local zone, nothing cached
  # by name (every name is new).
  # About as many queries as the run carries: queries read but never sent (a run stopped
  # early) would add their reading to the generator's CPU.
  $bin synth --workload fixed --interval 0.00001 -n $((45000 * seconds)) --clients "$clients" --zone example. -o "$work/fast.bin" -q
  $bin convert "$work/fast.bin" --to text -o - -q | awk -F'\t' 'NR > 2 { print $13, $15 }' > "$work/fast.dnsperf"
  for round in 1 2; do
    /usr/bin/time -f "%e %U %S %M" -o "$work/t-dnsperf" taskset -c 1 dnsperf -m doh -s 127.0.0.1 -p "$port" \
      -d "$work/fast.dnsperf" -l "$seconds" -c "$clients" -T 1 -q 1000 -O doh-method=POST \
      -O doh-uri=https://127.0.0.1:$port/dns-query > "$out/dnsperf-doh.txt" 2>&1 || true
    dq=$(awk '/Queries per second/ { print $4 }' "$out/dnsperf-doh.txt"); dn=$(awk '/Queries completed/ { print $3 }' "$out/dnsperf-doh.txt")
    line="round $round: dnsperf -m doh $dq qps ($dn answered, $(printf %.2f "$(echo "$(cpu_of "$work/t-dnsperf") * 1000000 / $dn" | bc -l)") µs CPU/query)"
    /usr/bin/time -f "%e %U %S %M" -o "$work/t-ldp" timeout -s INT -k 30 "$seconds" $bin replay "$work/fast.bin" \
      --server 127.0.0.1:$port --proto doh --tls-ca "$work/ca.pem" --fast --max-in-flight 1000 --queriers 1 --pin 1 \
      --timeout 2 --json > "$out/ldp-doh-fast.json" < /dev/null &
    # timeout sends SIGINT to ldplayer itself after the run's seconds: it stops, finishes and
    # reports (a pattern for pkill could match someone else's replay).
    ldp=$!; wait $ldp || true
    read -r lq ln <<< "$(python3 -c "import json;d=json.load(open('$out/ldp-doh-fast.json'));print(round(d['qps']), d['answered'])")"
    line="$line | ldplayer --proto doh $lq qps ($ln answered, $(printf %.2f "$(echo "$(cpu_of "$work/t-ldp") * 1000000 / $ln" | bc -l)") µs CPU/query; qps ratio $(printf %.2f "$(echo "$lq / $dq" | bc -l)"))"
    if [ -n "${OLD_BIN:-}" ]; then # another build beside this one (before/after a change)
      /usr/bin/time -f "%e %U %S %M" -o "$work/t-old" timeout -s INT -k 30 "$seconds" "$OLD_BIN" replay "$work/fast.bin" \
        --server 127.0.0.1:$port --proto doh --tls-ca "$work/ca.pem" --fast --max-in-flight 1000 --queriers 1 --pin 1 \
        --timeout 2 --json > "$out/old-doh-fast.json" < /dev/null &
      ldp=$!; wait $ldp || true
      read -r oq on <<< "$(python3 -c "import json;d=json.load(open('$out/old-doh-fast.json'));print(round(d['qps']), d['answered'])")"
      line="$line | OLD_BIN $oq qps ($on answered, $(printf %.2f "$(echo "$(cpu_of "$work/t-old") * 1000000 / $on" | bc -l)") µs CPU/query)"
    fi
    echo "$line"
  done
  kill "${pids[-1]}" 2>/dev/null || true
fi

# Idle sessions of one transport (doh or doq): each client asks twice, holds its connection
# idle, and asks again after the server's idle timeout closed it.
idle_sessions() { # proto label default-rate
  local proto=$1 label=$2 n=${IDLE_CLIENTS:-20000} rate=${IDLE_RATE:-$3}
  local limit; limit=$(ulimit -n)
  if [ $((n + 500)) -gt "$limit" ]; then
    echo "note: open-file limit $limit: capping clients at $((limit - 1000))"; n=$((limit - 1000))
  fi
  local port; port=$(free_port); local enc; enc=$(free_port)
  printf '$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.2\n' > "$work/example.zone"
  local listen=--https-listen trace_proto=https
  [ "$proto" = doq ] && { listen=--quic-listen; trace_proto=quic; }
  # The server's idle timeout (25 s, or longer than a round at this rate) keeps every
  # connection between each client's first and second query, and closes it between its second
  # and third; the replay's own (--idle-timeout 60) never does.
  local server_idle; server_idle=$(python3 -c "print(max(25, int($n / $rate) + 15))")
  $bin serve --listen 127.0.0.1:$port $listen 127.0.0.1:$enc --tls-cert "$work/server.pem" --tls-key "$work/server.key" \
    --idle-timeout "$server_idle" --max-encrypted-connections $((n + n / 4 + 1000)) "$work/example.zone" > "$work/serve.json" 2> "$work/serve.log" &
  local server=$!; pids+=($server)
  for _ in $(seq 50); do grep answering "$work/serve.log" >/dev/null && break; sleep 0.2; done
  for clients in $((n / 4)) "$n"; do
    python3 - "$work/idle.txt" "$clients" "$trace_proto" "$rate" "$server_idle" <<'PY'
import sys
path, n, proto, rate, idle = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
with open(path, "w") as f:
    f.write("#ldplayer-text/2\ntime\tsrc\tsport\tdst\tdport\tproto\tconn\tid\tqr\topcode\trcode\tflags\tqname\tqclass\tqtype\tedns\tbufsize\tdo\tednsopts\twire\n")
    t0 = 1_700_000_000.0
    for rnd, base in ((0, 0.0), (1, n / rate), (2, 2 * n / rate + idle + 15.0)):
        for c in range(n):
            t = t0 + base + c / rate
            src = f"10.{(c >> 16) & 255}.{(c >> 8) & 255}.{c & 255}"
            f.write(f"{t:.9f}\t{src}\t40000\t192.0.2.53\t53\t{proto}\t{c + 1}\t{(rnd * 7919 + c) & 0xffff}\t0\tQUERY\tNOERROR\trd\tc{c}.r{rnd}.example.\tIN\tA\t-\t-\t-\t-\t-\n")
PY
    $bin replay "$work/idle.txt" --server 127.0.0.1:$enc --proto "$proto" --tls-ca "$work/ca.pem" --source-prefix 127.0.0.0/8 \
      --idle-timeout 60 --timeout 5 --queriers 1 --json > "$work/idle.json" &
    local rp=$! peak_conn=0 peak_rss=0 base_rss=0 base_fds=0 rss conn started=$SECONDS
    # Every session is open and idle from the end of the second round (2n/rate s) until the
    # server's idle timeout closes it.
    local idle_until=$(( $(python3 -c "print(int(2 * $clients / $rate))") + server_idle - 5 ))
    for _ in $(seq $((clients * 12 / rate + 200))); do
      kill -0 $rp 2>/dev/null || break
      rss=$(awk '/VmRSS/ { print $2 }' /proc/$rp/status 2>/dev/null || echo 0)
      [ "$base_rss" = 0 ] && base_rss=$rss
      if [ "$proto" = doq ]; then
        # QUIC sessions leave no TCP state to count: each client's endpoint is one UDP socket
        # of the replay, so its open descriptors count them. Only until the third round: its
        # reconnections come on top of memory the allocator still holds.
        conn=$(ls /proc/$rp/fd 2>/dev/null | wc -l)
        [ "$base_fds" = 0 ] && base_fds=$conn
        conn=$((conn - base_fds))
        if [ $((SECONDS - started)) -le "$idle_until" ] && [ "$conn" -ge "$peak_conn" ]; then peak_conn=$conn; peak_rss=$rss; fi
      else
        conn=$(ss -Htn state established "( dport = :$enc )" 2>/dev/null | wc -l)
        if [ "$conn" -ge "$peak_conn" ]; then peak_conn=$conn; peak_rss=$rss; fi
      fi
      sleep 0.25
    done
    wait $rp || true
    python3 - "$work/idle.json" "$clients" "$peak_conn" "$peak_rss" "$base_rss" "$work/idle-$clients.fig" "$label" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); clients, conn, rss, base = map(int, sys.argv[2:6]); label = sys.argv[7]
r = d["replay"]
print(f"{clients} {label} clients: peak {conn} sessions; generator RSS {rss} KiB at the peak (first sample {base} KiB);"
      f" answered {d['answered']}/{d['sent']}, errors {sum(d['errors'].values())}; connections opened {r['connections_opened']},"
      f" TLS resumed {r['tls_resumed']}, 0-RTT {r['quic_zero_rtt']} (accepted {r['quic_zero_rtt_accepted']})"
      f" of {r['connections_opened'] - clients} reconnections"
      + "".join(f"; {c['count']} {c['kind']}/{c['cause']} ({c['first']})" for c in r["error_causes"]))
open(sys.argv[6], "w").write(f"{conn} {rss}\n")
PY
  done
  kill -INT $server; wait $server || true
  local c1 r1 c2 r2
  read -r c1 r1 < "$work/idle-$((n / 4)).fig"; read -r c2 r2 < "$work/idle-$n.fig"
  echo "generator memory per idle $label session (slope): $(python3 -c "print(round(($r2 - $r1) * 1024 / max($c2 - $c1, 1)))") bytes"
}

if [[ " $parts " == *" idle "* ]]; then
  echo "== idle DoH sessions"
  idle_sessions doh DoH 2000
fi

if [[ " $parts " == *" doq-idle "* ]]; then
  echo "== idle DoQ sessions"
  # 2,000 new QUIC sessions a second overloaded the DoQ threads of both sides at 19,000
  # clients (4,258 failed); 500 a second did not.
  idle_sessions doq DoQ 500
fi

if [[ " $parts " == *" doq-fast "* ]]; then
  clients=${CLIENTS:-10}; seconds=${SECONDS_PER_RUN:-15}
  port=$(free_port); quic=$(free_port)
  printf '$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.2\n' > "$work/example.zone"
  taskset -c 0 $bin serve --listen 127.0.0.1:$port --quic-listen 127.0.0.1:$quic --tls-cert "$work/server.pem" \
    --tls-key "$work/server.key" "$work/example.zone" > "$work/serve-doq.json" 2> "$work/serve-doq.log" &
  server=$!; pids+=($server)
  for _ in $(seq 50); do grep answering "$work/serve-doq.log" >/dev/null && break; sleep 0.2; done
  echo "== DoQ --fast: ldplayer serve (core 0), generator on core 1, $clients connections, ${seconds} s per run"
  $bin synth --workload fixed --interval 0.00001 -n $((30000 * seconds)) --clients "$clients" --zone example. -o "$work/doq-fast.bin" -q
  gens=("lean|$bin|--stack lean" "reference (quinn)|$bin|--stack reference")
  [ -n "${OLD_BIN:-}" ] && gens+=("OLD_BIN|$OLD_BIN|")
  for round in 1 2; do
    line="round $round:"
    for g in "${gens[@]}"; do
      IFS='|' read -r label gen extra <<< "$g"
      # shellcheck disable=SC2086 # $extra is a list of flags
      /usr/bin/time -f "%e %U %S %M" -o "$work/t-doq" timeout -s INT -k 30 "$seconds" $gen replay "$work/doq-fast.bin" \
        --server 127.0.0.1:$quic --proto doq --tls-ca "$work/ca.pem" --fast --max-in-flight 1000 --queriers 1 --pin 1 \
        --timeout 2 --json $extra > "$out/ldp-doq-fast.json" < /dev/null &
      ldp=$!; wait $ldp || true
      read -r q n e <<< "$(python3 -c "import json;d=json.load(open('$out/ldp-doq-fast.json'));print(round(d['qps']), d['answered'], sum(d['errors'].values()) + d['timeouts'])")"
      line="$line | $label $q qps ($n answered, $e failed, $(printf %.2f "$(echo "$(cpu_of "$work/t-doq") * 1000000 / $n" | bc -l)") µs CPU/query)"
    done
    echo "$line"
  done
  kill -INT $server; wait $server || true
fi

if [[ " $parts " == *" mixed "* ]]; then
  n=${MIXED_CLIENTS:-25000}; qps=${MIXED_QPS:-5000}; seconds=30
  echo "== mixed population: $n clients, $qps qps for $seconds s, original timing, 2 processes"
  port=$(free_port); tls=$(free_port); https=$(free_port); quic=$(free_port)
  printf '$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.2\n' > "$work/example.zone"
  $bin serve --listen 127.0.0.1:$port --tls-listen 127.0.0.1:$tls --https-listen 127.0.0.1:$https --quic-listen 127.0.0.1:$quic \
    --tls-cert "$work/server.pem" --tls-key "$work/server.key" --idle-timeout 30 --max-encrypted-connections 40000 \
    "$work/example.zone" > "$work/serve-mixed.json" 2> "$work/serve-mixed.log" &
  server=$!; pids+=($server)
  for _ in $(seq 50); do grep answering "$work/serve-mixed.log" >/dev/null && break; sleep 0.2; done
  $bin synth --workload poisson --rate "$qps" -n $((qps * seconds)) --clients "$n" --zone w.example. --seed 3 -o "$work/mixed.bin" -q
  /usr/bin/time -f "%e %U %S %M" -o "$work/t-mixed" $bin replay "$work/mixed.bin" --server 127.0.0.1:$port \
    --tls-server 127.0.0.1:$tls --https-server 127.0.0.1:$https --quic-server 127.0.0.1:$quic --tls-ca "$work/ca.pem" \
    --population examples/populations/mixed.toml --source-prefix 127.0.0.0/8 --processes 2 --results "$work/mixed.res" \
    --json > "$out/mixed.json"
  kill -INT $server; wait $server || true
  python3 - "$out/mixed.json" "$work/t-mixed" "$work/serve-mixed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read().split()[-4:]
# The engine's counters are per process.
r = {k: sum(p["replay"][k] for p in d["processes"])
     for k in ("connections_opened", "connections_reused", "tls_resumed", "quic_zero_rtt", "quic_zero_rtt_accepted")}
print(f"sent {d['sent']}, answered {d['answered']}, timeouts {d['timeouts']}, errors {sum(d['errors'].values())} {d['errors']}")
for proto, l in d["latency_ms"].items():
    h = d.get("handshake_ms", {}).get(proto, {})
    print(f"  {proto}: latency p50 {l['p50']:.2f} ms, p95 {l['p95']:.2f} ms, p99 {l['p99']:.2f} ms ({l['count']} answers);"
          f" handshakes {h.get('count', 0)}" + (f", p50 {h['p50']:.2f} ms" if h else ""))
print(f"  connections opened {r['connections_opened']}, reused {r['connections_reused']}, TLS resumed {r['tls_resumed']},"
      f" DoQ 0-RTT {r['quic_zero_rtt']} (accepted {r['quic_zero_rtt_accepted']})")
te = d["timing_error_us"]
print(f"  timing error: p50 {te['p50']:.0f} µs, p99 {te['p99']:.0f} µs, max {te['max']:.0f} µs;"
      f" rate error: {d['rate_error']['within_0_1pct']}% of {d['rate_error']['seconds']} s within ±0.1%")
print(f"  generator: {t[0]} s wall, {float(t[1]) + float(t[2]):.1f} s CPU, peak RSS {int(t[3]) // 1024} MiB (largest process)")
print(f"  errors by cause: {[c for p in d['processes'] for c in p['replay']['error_causes']]}")
PY
fi
