#!/usr/bin/env bash
# DNS over HTTPS benchmarks of the query engine (issue "encrypted transports"; figures go to
# docs/performance.md). Loopback only; every load is bounded in count and time.
#  1. fast: `replay --proto doh --fast` beside `dnsperf -m doh` against the same unbound (DoH,
#     one thread, pinned to core 0, answering from local data), the generator pinned to core 1,
#     the same queries, the same connections (CLIENTS) and queries in flight; qps and generator
#     CPU per query, two rounds each, POST.
#  2. idle: N DoH clients (default 20,000) each ask twice and then hold their connection idle,
#     from one ldplayer process against `ldplayer serve --https-listen`; generator memory per idle
#     session (RSS slope between N/4 and N clients), then each client asks again after the
#     server's idle timeout closed its connection: the share of reconnections that resumed TLS.
# Usage: bench/doh.sh [OUTDIR] [fast|idle]...   (env CLIENTS, SECONDS, IDLE_CLIENTS)
#        (needs unbound, dnsperf, openssl)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out}; shift || true
parts=${*:-fast idle}
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

# A CA and a server certificate for 127.0.0.1 (CA:FALSE, as rustls wants).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench-ca \
  -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n' > "$work/ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -days 2 \
  -extfile "$work/ext" -out "$work/server.pem" 2>/dev/null

if [[ " $parts " == *" fast "* ]]; then
  clients=${CLIENTS:-10}; seconds=${SECONDS_PER_RUN:-15}
  port=$(free_port)
  cat > "$work/unbound.conf" <<CONF
server:
  interface: 127.0.0.1@$port
  https-port: $port
  http-endpoint: "/dns-query"
  http-max-streams: 1000
  tls-service-key: "$work/server.key"
  tls-service-pem: "$work/server.pem"
  num-threads: 1
  incoming-num-tcp: 1000
  username: ""
  chroot: ""
  directory: "$work"
  pidfile: ""
  use-syslog: no
  do-daemonize: no
  verbosity: 0
  access-control: 127.0.0.0/8 allow
  local-zone: "example." static
  local-data: "example. 60 IN SOA ns.example. admin.example. 1 60 60 60 60"
remote-control:
  control-enable: no
CONF
  taskset -c 0 unbound -d -c "$work/unbound.conf" 2> "$work/unbound.log" & pids+=($!)
  for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.2; done
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
    /usr/bin/time -f "%e %U %S %M" -o "$work/t-ldp" timeout $((seconds + 30)) $bin replay "$work/fast.bin" \
      --server 127.0.0.1:$port --proto doh --tls-ca "$work/ca.pem" --fast --max-in-flight 1000 --queriers 1 --pin 1 \
      --timeout 2 --json > "$out/ldp-doh-fast.json" < /dev/null &
    # SIGINT to ldplayer itself (time does not pass it on): it stops, finishes and reports.
    ldp=$!; for _ in $(seq $((seconds * 5))); do kill -0 $ldp 2>/dev/null || break; sleep 0.2; done; pkill -INT -f "ldplayer replay $work/fast.bin" 2>/dev/null || true; wait $ldp || true
    read -r lq ln <<< "$(python3 -c "import json;d=json.load(open('$out/ldp-doh-fast.json'));print(round(d['qps']), d['answered'])")"
    line="$line | ldplayer --proto doh $lq qps ($ln answered, $(printf %.2f "$(echo "$(cpu_of "$work/t-ldp") * 1000000 / $ln" | bc -l)") µs CPU/query; qps ratio $(printf %.2f "$(echo "$lq / $dq" | bc -l)"))"
    echo "$line"
  done
  kill "${pids[-1]}" 2>/dev/null || true
fi

if [[ " $parts " == *" idle "* ]]; then
  n=${IDLE_CLIENTS:-20000}
  limit=$(ulimit -n)
  if [ $((n + 500)) -gt "$limit" ]; then
    echo "note: open-file limit $limit: capping clients at $((limit - 1000))"; n=$((limit - 1000))
  fi
  port=$(free_port); doh=$(free_port)
  printf '$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.2\n' > "$work/example.zone"
  # The server's idle timeout (25 s) closes every connection between each client's second and
  # third query; the replay's own (--idle-timeout 60) never does.
  $bin serve --listen 127.0.0.1:$port --https-listen 127.0.0.1:$doh --tls-cert "$work/server.pem" --tls-key "$work/server.key" \
    --idle-timeout 25 --max-encrypted-connections $((n + 1000)) "$work/example.zone" > "$work/serve.json" 2> "$work/serve.log" & pids+=($!)
  for _ in $(seq 50); do grep answering "$work/serve.log" >/dev/null && break; sleep 0.2; done
  for clients in $((n / 4)) "$n"; do
    # Each client asks twice within the first seconds, then again 40 s later.
    python3 - "$work/idle.txt" "$clients" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
rate = 2000.0
with open(path, "w") as f:
    f.write("#ldplayer-text/2\ntime\tsrc\tsport\tdst\tdport\tproto\tconn\tid\tqr\topcode\trcode\tflags\tqname\tqclass\tqtype\tedns\tbufsize\tdo\tednsopts\twire\n")
    t0 = 1_700_000_000.0
    for rnd, base in ((0, 0.0), (1, n / rate), (2, 2 * n / rate + 40.0)):
        for c in range(n):
            t = t0 + base + c / rate
            src = f"10.{(c >> 16) & 255}.{(c >> 8) & 255}.{c & 255}"
            f.write(f"{t:.9f}\t{src}\t40000\t192.0.2.53\t53\thttps\t{c + 1}\t{(rnd * 7919 + c) & 0xffff}\t0\tQUERY\tNOERROR\trd\tc{c}.r{rnd}.example.\tIN\tA\t-\t-\t-\t-\t-\n")
PY
    $bin replay "$work/idle.txt" --server 127.0.0.1:$doh --proto doh --tls-ca "$work/ca.pem" --source-prefix 127.0.0.0/8 \
      --idle-timeout 60 --timeout 5 --queriers 1 --json --results "$work/idle.res" > "$work/idle.json" &
    rp=$!; peak_conn=0; peak_rss=0; base_rss=0
    # Sample until the third round starts: connections idle, held by both sides.
    for _ in $(seq $((2 * clients / 2000 * 4 + 120))); do
      kill -0 $rp 2>/dev/null || break
      rss=$(awk '/VmRSS/ { print $2 }' /proc/$rp/status 2>/dev/null || echo 0)
      [ "$base_rss" = 0 ] && base_rss=$rss
      conn=$(ss -Htn state established "( dport = :$doh )" 2>/dev/null | wc -l)
      if [ "$conn" -ge "$peak_conn" ]; then peak_conn=$conn; peak_rss=$rss; fi
      sleep 0.25
    done
    wait $rp || true
    python3 - "$work/idle.json" "$clients" "$peak_conn" "$peak_rss" "$base_rss" "$work/idle-$clients.fig" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); clients, conn, rss, base = map(int, sys.argv[2:6])
r = d["replay"]
print(f"{clients} DoH clients: peak {conn} established; generator RSS {rss} KiB at the peak (first sample {base} KiB);"
      f" answered {d['answered']}/{d['sent']}, errors {sum(d['errors'].values())}; connections opened {r['connections_opened']},"
      f" TLS resumed {r['tls_resumed']} of {r['connections_opened'] - clients} reconnections")
open(sys.argv[6], "w").write(f"{conn} {rss}\n")
PY
  done
  read -r c1 r1 < "$work/idle-$((n / 4)).fig"; read -r c2 r2 < "$work/idle-$n.fig"
  echo "generator memory per idle DoH session (slope): $(python3 -c "print(round(($r2 - $r1) * 1024 / max($c2 - $c1, 1)))") bytes"
fi
