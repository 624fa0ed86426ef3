#!/usr/bin/env bash
# Benchmark of the trace pipeline (issue "trace pipeline"; figures go to docs/performance.md):
#  1. pcap -> binary with `ldplayer convert` on one core, beside `tshark -T fields` on the same
#     1M-message pcap in the same run;
#  2. binary read speed (streaming and mmap);
#  3. peak memory of the conversion on 1M and 10M messages (/usr/bin/time -v).
# Usage: bench/trace-pipeline.sh [OUTDIR]   (needs tshark and /usr/bin/time; about 2 GB of disk)
# Everything is local: no network traffic.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_pinned "${1:-bench/out}"
cargo build --release -q -p ldplayer-trace --example read_speed
reader=target/release/examples/read_speed

echo "== inputs"
[ -s "$out/1m.pcap" ] || $bin synth --workload root --rate 100000 -n 1000000 --do-share 0.7 --seed 7 -o "$out/1m.pcap" -q
[ -s "$out/10m.pcap" ] || $bin synth --workload root --rate 100000 -n 10000000 --do-share 0.7 --seed 7 -o "$out/10m.pcap" -q
[ -s "$out/1m-tcp.pcap" ] || $bin synth --workload root --rate 100000 -n 1000000 --tcp-share 0.5 --seed 7 -o "$out/1m-tcp.pcap" -q
ls -l "$out/1m.pcap" "$out/10m.pcap" "$out/1m-tcp.pcap"

echo "== pcap -> binary, 1M messages, pinned to core $core"
best=""
for i in 1 2 3; do
  measure "ldplayer convert (run $i)" $pin $bin convert "$out/1m.pcap" --to binary -o "$out/1m.bin" -q
  w=$(cat "$out/last_wall.txt"); if [ -z "$best" ] || [ "$(echo "$w < $best" | bc)" = 1 ]; then best=$w; fi
done
measure "tshark -T fields" $pin tshark -r "$out/1m.pcap" -T fields -e frame.time_epoch -e ip.src -e ip.dst \
  -e udp.srcport -e udp.dstport -e dns.id -e dns.flags.response -e dns.qry.name -e dns.qry.type
tshark_wall=$(cat "$out/last_wall.txt")
echo "ldplayer best: $best s = $(echo "scale=2; 1000000 / $best / 1000000" | bc) M messages/s; tshark: $tshark_wall s; ratio: $(echo "scale=1; $tshark_wall / $best" | bc)x"

echo "== the same with half of the clients on TCP (stream reassembly), pinned to core $core"
measure "ldplayer convert, 50% TCP clients" $pin $bin convert "$out/1m-tcp.pcap" --to binary -o "$out/1m-tcp.bin" -q
measure "tshark -T fields, 50% TCP clients" $pin tshark -r "$out/1m-tcp.pcap" -T fields -e frame.time_epoch -e ip.src -e ip.dst \
  -e tcp.srcport -e tcp.dstport -e dns.id -e dns.flags.response -e dns.qry.name -e dns.qry.type

echo "== binary read, 1M records"
$pin $reader "$out/1m.bin"
$bin convert "$out/10m.pcap" --to binary -o "$out/10m.bin" -q
echo "== binary read, 10M records"
$pin $reader "$out/10m.bin"

echo "== peak memory, pcap -> binary and pcap -> text"
measure "convert 1M  -> binary" $bin convert "$out/1m.pcap" --to binary -o "$out/1m.bin" -q
measure "convert 10M -> binary" $bin convert "$out/10m.pcap" --to binary -o "$out/10m.bin" -q
measure "convert 1M  -> text" $bin convert "$out/1m.pcap" --to text -o "$out/1m.txt" -q
measure "convert 10M -> text" $bin convert "$out/10m.pcap" --to text -o "$out/10m.txt" -q
measure "inspect 1M" $bin inspect "$out/1m.bin"
measure "inspect 10M" $bin inspect "$out/10m.bin"
