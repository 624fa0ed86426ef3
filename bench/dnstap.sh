#!/usr/bin/env bash
# Benchmark of dnstap reading (issue "dnstap"; figures go to docs/performance.md):
#  1. dnstap -> binary with `ldplayer convert` on one core, beside reading a pcap of the same
#     messages, and beside the dnstap tools reading the same file in the same run
#     (`dnstap-ldns -q`, the golang `dnstap` tool's quiet text output);
#  2. peak memory of dnstap -> binary on 1M and 4M messages (flat in the file's size).
# Usage: bench/dnstap.sh [OUTDIR]   (needs dnstap-ldns, golang dnstap, /usr/bin/time; ~1.5 GB)
# Everything is local: no network traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_pinned "${1:-bench/out}"
measure_width=40

rate() { echo "scale=2; $1 / $(cat "$out/last_wall.txt") / 1000000" | bc; }

echo "== inputs: 1M and 4M messages (root-like queries), as pcap and as dnstap"
[ -s "$out/dt-1m.pcap" ] || $bin synth --workload root --rate 100000 -n 1000000 --seed 7 -o "$out/dt-1m.pcap" -q
[ -s "$out/dt-4m.pcap" ] || $bin synth --workload root --rate 100000 -n 4000000 --seed 7 -o "$out/dt-4m.pcap" -q
[ -s "$out/dt-1m.dnstap" ] || $bin convert "$out/dt-1m.pcap" -o "$out/dt-1m.dnstap" -q
[ -s "$out/dt-4m.dnstap" ] || $bin convert "$out/dt-4m.pcap" -o "$out/dt-4m.dnstap" -q
ls -l "$out"/dt-1m.* "$out"/dt-4m.*
n=$($bin inspect "$out/dt-1m.dnstap" --json | sed 's/.*"messages":\([0-9]*\).*/\1/')
echo "messages in the 1M file: $n"

echo "== dnstap -> binary beside pcap -> binary, same messages, pinned to core $core"
for i in 1 2 3; do
  measure "ldplayer convert dnstap (run $i)" $pin $bin convert "$out/dt-1m.dnstap" --to binary -o "$out/dt-1m.bin" -q
  echo "  $(rate "$n") M messages/s"
done
measure "ldplayer convert pcap" $pin $bin convert "$out/dt-1m.pcap" --to binary -o "$out/dt-1m-pcap.bin" -q
echo "  $(rate "$n") M messages/s"

echo "== the dnstap tools reading the same file, pinned to core $core"
measure "dnstap-ldns -q" $pin dnstap-ldns -q -r "$out/dt-1m.dnstap"
echo "  $(rate "$n") M messages/s"
measure "dnstap (golang) -q" $pin dnstap -q -r "$out/dt-1m.dnstap"
echo "  $(rate "$n") M messages/s"

echo "== peak memory, dnstap -> binary, 1M and 4M messages"
measure "convert 1M dnstap -> binary" $bin convert "$out/dt-1m.dnstap" --to binary -o "$out/dt-1m.bin" -q
measure "convert 4M dnstap -> binary" $bin convert "$out/dt-4m.dnstap" --to binary -o "$out/dt-4m.bin" -q

echo "== the collector under unbound logging 50k queries/s (client queries and responses)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
udir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$udir"' EXIT
cat > "$udir/unbound.conf" <<CONF
server:
  interface: 127.0.0.1
  port: $port
  username: ""
  chroot: ""
  directory: "$udir"
  pidfile: ""
  use-syslog: no
  logfile: "$udir/unbound.log"
  num-threads: 1
  access-control: 127.0.0.0/8 allow
  local-zone: "example." redirect
  local-data: "example. 300 IN A 192.0.2.1"
remote-control:
  control-enable: no
dnstap:
  dnstap-enable: yes
  dnstap-socket-path: "$udir/dnstap.sock"
  dnstap-bidirectional: yes
  dnstap-log-client-query-messages: yes
  dnstap-log-client-response-messages: yes
CONF
$bin synth --workload fixed --interval 0.00002 -n 500000 --zone example. --rd -o "$udir/q.bin" -q
$bin dnstap listen --unix "$udir/dnstap.sock" -o "$udir/collected.bin" --json > "$out/collector.json" 2>"$out/collector.err" &
listener=$!
while [ ! -S "$udir/dnstap.sock" ]; do sleep 0.1; done
unbound -d -c "$udir/unbound.conf" & ub=$!
sleep 2
/usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" $bin replay "$udir/q.bin" --server 127.0.0.1:$port --rate 50000 --json -q > "$out/replay.json"
sleep 3; kill -TERM $ub; wait $ub || true
kill -INT $listener; wait $listener || true
sent=$(sed 's/.*"sent":\([0-9]*\).*/\1/' "$out/replay.json")
answered=$(sed 's/.*"answered":\([0-9]*\).*/\1/' "$out/replay.json")
frames=$(sed 's/.*"frames":\([0-9]*\).*/\1/' "$out/collector.json")
echo "replayed at 50k/s: sent $sent, answered $answered; collector frames $frames (a query and a response each)"
# What unbound itself handled (its log of its work at exit): every query it handled was
# logged twice, and the collector should hold exactly that.
grep "server stats for thread" "$udir/unbound.log" | head -1
cat "$out/collector.json"
