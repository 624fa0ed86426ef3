#!/usr/bin/env bash
# The fidelity study of the lean DoT, DoH and DoQ clients (issue 27): runs
# examples/experiments/stacks.toml (lean against reference stacks, the same trace and server,
# RTT 20 and 80 ms, loss 0, 2 and 10% each way, repeated) and prints, per cell, each stack's
# latency p50/p95/p99, handshake p50, connections, resumptions and retransmissions, with
# whether the lean stack is within 5% (or 1 ms) of the reference at p50 and within 10% (or
# 1 ms) at p95. Needs root (network namespaces, ldplayer's userspace link); all traffic stays
# in the namespaces the experiment makes; bounded by the plan's duration.
# Usage: bench/stacks.sh [OUTDIR] [ldplayer experiment --set ...]...
#   e.g. bench/stacks.sh bench/out/stacks --set run.repeat=3 --set 'vary.proto=["doq"]'
#   TABLE_ONLY=1 bench/stacks.sh OUTDIR   tabulates a finished (or partial) study again.
# Latencies are each run's percentiles (the whole run, warm-up included), averaged over the
# repeats; counts are per run, averaged. Retransmissions: the client namespace's TCP
# RetransSegs for DoT and DoH (the kernel's TCP under both stacks), the QUIC stack's own lost
# packets for DoQ. Timestamps: DoT and DoH are timed by the kernel's send and receive stamps on
# both stacks, DoQ by the clock read at the QUIC stack's events on both.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/stacks}; shift || true
if [[ -z "${TABLE_ONLY:-}" ]]; then
  cargo build --release -q -p ldplayer
  mkdir -p "$(dirname "$out")"
  target/release/ldplayer experiment examples/experiments/stacks.toml -o "$out" --resume --no-report -q "$@"
fi
python3 - "$out" <<'PY'
import json, os, sys
from collections import defaultdict

out = sys.argv[1]
proto_key = {"tls": "tls", "doh": "https", "doq": "quic"}
cells = defaultdict(lambda: defaultdict(list))
for run in sorted(os.listdir(os.path.join(out, "runs"))):
    path = os.path.join(out, "runs", run, "run.json")
    if not os.path.exists(path):
        continue
    rec = json.load(open(path))
    if rec.get("status") == "failed" or not rec.get("outputs"):
        continue
    v = dict(rec["varied"])
    replay = rec["outputs"]["replay"]
    s, e = replay["summary"], replay["engine"]
    k = proto_key[v["proto"]]
    lat = s.get("latency_ms", {}).get(k)
    if not lat:
        continue
    hs = s.get("handshake_ms", {}).get(k, {})
    if v["proto"] == "doq":
        retrans = e.get("quic_packets_lost", 0)
    else:
        retrans = replay.get("kernel_tcp", {}).get("RetransSegs", 0)
    cell = (v["proto"], float(v["rtt_ms"]), float(v["loss"]))
    cells[cell][v["stack"]].append({
        "p50": lat["p50"], "p95": lat["p95"], "p99": lat["p99"],
        "hs50": hs.get("p50", float("nan")),
        "conns": s["connections"]["opened"], "resumed": e.get("tls_resumed", 0),
        "retrans": retrans, "answered": s["answered"], "sent": s["sent"],
    })

def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")

def agg(runs, key):
    return mean([r[key] for r in runs])

def close(lean, ref, share):
    return abs(lean - ref) <= max(share * ref, 1.0)

print("| proto | RTT ms | loss | stack | runs | p50 ms | p95 ms | p99 ms | handshake p50 ms | connections | resumed | retransmissions | answered | p50 ok | p95 ok |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
misses = []
for cell in sorted(cells, key=lambda c: (["tls", "doh", "doq"].index(c[0]), c[1], c[2])):
    by = cells[cell]
    lean, ref = by.get("lean", []), by.get("reference", [])
    for stack, runs in (("lean", lean), ("reference", ref)):
        if not runs:
            continue
        row = {k: agg(runs, k) for k in runs[0]}
        ok50 = ok95 = ""
        if stack == "lean" and lean and ref:
            ok50 = "yes" if close(agg(lean, "p50"), agg(ref, "p50"), 0.05) else "NO"
            ok95 = "yes" if close(agg(lean, "p95"), agg(ref, "p95"), 0.10) else "NO"
            if "NO" in (ok50, ok95):
                misses.append(cell)
        print(f"| {cell[0]} | {cell[1]:g} | {cell[2]:g} | {stack} | {len(runs)} | {row['p50']:.1f} | {row['p95']:.1f} | {row['p99']:.1f} | {row['hs50']:.1f} | {row['conns']:.0f} | {row['resumed']:.0f} | {row['retrans']:.0f} | {row['answered']:.0f}/{row['sent']:.0f} | {ok50} | {ok95} |")
print()
print(f"cells: {len(cells)}; lean outside the bounds in {len(misses)}: " + ", ".join(f"{p} rtt {r:g} loss {l:g}" for p, r, l in misses))
PY
