#!/usr/bin/env bash
# The fidelity study of the lean DoT, DoH and DoQ clients (issue 27): runs
# examples/experiments/stacks.toml (lean against reference stacks, the same trace and server,
# RTT 20 and 80 ms, loss 0, 2 and 10% each way) ROUNDS times, each round every cell once with
# each stack, one after the other (so that the machine's load, which drifts, falls on both
# alike), and prints per cell each stack's latency p50/p95/p99 and handshake p50 over the
# answers of all rounds pooled, the spread of the rounds' p95, and per run the connections,
# resumptions and retransmissions; with whether the lean stack is within 5% (or 1 ms) of the
# reference at p50 and within 10% (or 1 ms) at p95: "yes", "NO" when the 95% bootstrap
# interval of the difference (each second of each run's trace resampled with its answers)
# lies wholly outside the bound, "n.s." when the difference is outside it but the interval
# reaches inside (this many answers cannot tell the stacks apart there). Needs root (network namespaces,
# ldplayer's userspace link); all traffic stays in the namespaces the experiment makes;
# bounded by the plan's duration (about 8 minutes a round on 2 cores).
# Usage: bench/stacks.sh [OUTDIR] [ldplayer experiment --set ...]...
#   e.g. ROUNDS=5 bench/stacks.sh bench/out/stacks --set 'vary.proto=["doq"]'
#   TABLE_ONLY=1 bench/stacks.sh OUTDIR   tabulates finished (or partial) rounds again.
# Retransmissions: the client namespace's TCP RetransSegs for DoT and DoH (the kernel's TCP
# under both stacks), the QUIC stack's own lost packets for DoQ. Timestamps: DoT and DoH are
# timed by the kernel's send and receive stamps on both stacks, DoQ by the clock read at the
# QUIC stack's events on both.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/stacks}; shift || true
rounds=${ROUNDS:-3}
bin=${LDPLAYER:-target/release/ldplayer}
if [[ -z "${TABLE_ONLY:-}" ]]; then
  [[ -n "${LDPLAYER:-}" ]] || cargo build --release -q -p ldplayer
  mkdir -p "$out"
  for r in $(seq 1 "$rounds"); do
    "$bin" experiment examples/experiments/stacks.toml -o "$out/round-$r" --resume --no-report -q \
      --set run.repeat=1 "$@"
  done
fi
python3 - "$out" "$bin" <<'PY'
import csv, io, json, os, random, subprocess, sys
from collections import defaultdict

out, binary = sys.argv[1], sys.argv[2]
proto_key = {"tls": "tls", "doh": "https", "doq": "quic"}
# (proto, rtt, loss) -> stack -> pooled values and per-run figures
lat = defaultdict(lambda: defaultdict(list))
hs = defaultdict(lambda: defaultdict(list))
runs = defaultdict(lambda: defaultdict(list))
# (proto, rtt, loss) -> stack -> the answers of each second of each run's trace
blocks = defaultdict(lambda: defaultdict(list))

def percentile(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]

rounds = sorted(d for d in os.listdir(out) if d.startswith("round-"))
for rnd in rounds:
    rdir = os.path.join(out, rnd, "runs")
    if not os.path.isdir(rdir):
        continue
    for run in sorted(os.listdir(rdir)):
        path = os.path.join(rdir, run, "run.json")
        if not os.path.exists(path):
            continue
        rec = json.load(open(path))
        if rec.get("status") == "failed" or not rec.get("outputs"):
            continue
        v = dict(rec["varied"])
        replay = rec["outputs"]["replay"]
        s, e = replay["summary"], replay["engine"]
        cell = (v["proto"], float(v["rtt_ms"]), float(v["loss"]))
        stack = v["stack"]
        text = subprocess.run([binary, "results", "export", "--csv",
                               os.path.join(rdir, run, "results.res")],
                              capture_output=True, text=True, check=True).stdout
        mine = []
        seconds = defaultdict(list)
        first = None
        for row in csv.DictReader(io.StringIO(text)):
            if row["outcome"] != "answered" or not row["latency_ns"]:
                continue
            mine.append(int(row["latency_ns"]) / 1e6)
            first = first if first is not None else int(row["trace_ns"])
            seconds[(int(row["trace_ns"]) - first) // 1_000_000_000].append(mine[-1])
            if row["new_connection"] == "1" and int(row["handshake_ns"] or 0) > 0:
                hs[cell][stack].append(int(row["handshake_ns"]) / 1e6)
        lat[cell][stack].extend(mine)
        blocks[cell][stack].extend(seconds.values())
        if v["proto"] == "doq":
            retrans = e.get("quic_packets_lost", 0)
        else:
            retrans = replay.get("kernel_tcp", {}).get("RetransSegs", 0)
        runs[cell][stack].append({
            "p95": percentile(mine, 95),
            "conns": s["connections"]["opened"], "resumed": e.get("tls_resumed", 0),
            "retrans": retrans, "answered": s["answered"], "sent": s["sent"],
        })

def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")

def close(lean, ref, share):
    return abs(lean - ref) <= max(share * ref, 1.0)

def resample(blocks, rng):
    return [x for b in rng.choices(blocks, k=len(blocks)) for x in b]

def diff_interval(lean, ref, p, rounds=1000):
    # The 95% bootstrap interval of lean's p-th percentile minus the reference's. What is
    # resampled (with replacement, seeded) is each second of each run's trace with all its
    # answers, not single answers: the answers of one second share the machine's stalls and a
    # client's lost first flight, and resampling them one by one would make the interval too
    # narrow.
    rng = random.Random(27)
    diffs = sorted(percentile(resample(lean, rng), p) - percentile(resample(ref, rng), p)
                   for _ in range(rounds))
    return diffs[int(0.025 * rounds)], diffs[int(0.975 * rounds) - 1]

def verdict(lean, ref, p, share, lean_blocks, ref_blocks):
    # "yes" within the bound; "NO" when the whole interval of the difference lies outside it;
    # "n.s." (not significant) when the difference is outside the bound but the interval
    # reaches inside it: this many answers cannot say the stacks differ.
    a, b = percentile(lean, p), percentile(ref, p)
    if close(a, b, share):
        return "yes", ""
    tol = max(share * b, 1.0)
    lo, hi = diff_interval(lean_blocks, ref_blocks, p)
    text = f"{lo:+.1f} to {hi:+.1f}"
    if lo > tol or hi < -tol:
        return "NO", text
    return "n.s.", text

print(f"rounds: {len(rounds)}; latency and handshake percentiles over the answers of every round")
print()
print("| proto | RTT ms | loss | stack | runs | answers | p50 ms | p95 ms | p99 ms | p95 of the rounds | handshake p50 ms | connections | resumed | retransmissions | p50 ok | p95 ok | p95 lean − reference, 95% interval ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
misses, unsettled = [], []
for cell in sorted(lat, key=lambda c: (["tls", "doh", "doq"].index(c[0]), c[1], c[2])):
    by = lat[cell]
    for stack in ("lean", "reference"):
        xs = by.get(stack, [])
        if not xs:
            continue
        rs = runs[cell][stack]
        ok50 = ok95 = interval = ""
        if stack == "lean" and by.get("reference"):
            ref = by["reference"]
            bl, br = blocks[cell]["lean"], blocks[cell]["reference"]
            ok50, _ = verdict(xs, ref, 50, 0.05, bl, br)
            ok95, interval = verdict(xs, ref, 95, 0.10, bl, br)
            if "NO" in (ok50, ok95):
                misses.append(cell)
            elif "n.s." in (ok50, ok95):
                unsettled.append(cell)
        spread = f"{min(r['p95'] for r in rs):.0f}–{max(r['p95'] for r in rs):.0f}"
        print(f"| {cell[0]} | {cell[1]:g} | {cell[2]:g} | {stack} | {len(rs)} | {len(xs)}/{sum(r['sent'] for r in rs)} "
              f"| {percentile(xs, 50):.1f} | {percentile(xs, 95):.1f} | {percentile(xs, 99):.1f} | {spread} "
              f"| {percentile(hs[cell][stack], 50):.1f} | {mean([r['conns'] for r in rs]):.0f} "
              f"| {mean([r['resumed'] for r in rs]):.0f} | {mean([r['retrans'] for r in rs]):.0f} | {ok50} | {ok95} | {interval} |")
print()
print(f"cells: {len(lat)}; lean outside the bounds in {len(misses)}: "
      + (", ".join(f"{p} rtt {r:g} loss {l:g}" for p, r, l in misses) or "none")
      + f"; outside them but not significantly (n.s.) in {len(unsettled)}: "
      + (", ".join(f"{p} rtt {r:g} loss {l:g}" for p, r, l in unsettled) or "none"))
PY
