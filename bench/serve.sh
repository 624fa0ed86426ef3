#!/usr/bin/env bash
# Benchmark of the meta server (issue "meta server"; figures go to docs/performance.md):
# `ldplayer serve`, knotd and nsd serving the same zones (by default the signed root zone of
# 2017-08-21; ZONES adds more, such as shared/data's knot_example.com.zone), each with one UDP worker pinned to core 1,
# driven in turn by the same dnsperf pinned to core 0, with the same root-like query file, for
# the same time. Every round starts each server afresh, so it also measures the server's load
# time (from start until `. SOA` is answered with data, polled every 10 ms over UDP by a poller
# started beforehand) and its memory after load (/proc/PID/status and smaps_rollup, summed over
# the server's processes). Loopback only; every loop is bounded.
#  * Query mix (seeded, `name type` lines): 50% names below a TLD (A/AAAA/MX/TXT/NS: referrals),
#    15% TLD names (NS/DS/SOA/A: referrals and DS answers), 30% absent TLDs (home, local, corp,
#    Chrome-style random probes: NXDOMAIN), 5% apex (NS/SOA/DNSKEY).
#  * dnsperf: one socket (CLIENTS), 100 queries in flight (OUTSTANDING), 2 MiB socket buffers
#    (the default 208 KiB overflows with bursts of DO answers); both sides then run at ≈ 100%
#    CPU, so qps is bounded by the generator as much as by the server: the server's CPU time per
#    answered query (user + system, all its threads and processes) is printed beside it.
#  * Each server gets two passes per round: EDNS without DO (`dnsperf -e`) and with DO (`-D`);
#    the "mix" figure weighs them by DO_SHARE (default 0.7): 1 / (share/do + (1-share)/plain).
#  * Servers are interleaved round by round; the tables show medians over the rounds.
# Usage: bench/serve.sh [OUTDIR] [SECONDS] [ROUNDS]   (needs knotd, nsd, dnsperf, python3)
# Environment: SERVERS="ldplayer knot nsd", DO_SHARE=0.7, CLIENTS=1, OUTSTANDING=100,
#   BASE_PORT=53530 (ports +1..+3), ZONES="root.zone [more.zone...]", NO_BUILD=1 (use the
#   existing target/release/ldplayer), LDPLAYER=/path/to/ldplayer (another build, e.g. to compare
#   before and after a change; no build then)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/out/serve}; secs=${2:-10}; rounds=${3:-3}
servers=${SERVERS:-ldplayer knot nsd}
do_share=${DO_SHARE:-0.7}
clients=${CLIENTS:-1}; outstanding=${OUTSTANDING:-100}
base_port=${BASE_PORT:-53530}
zones=${ZONES:-$PWD/../shared/data/zones/root-signed-2017-08-21.zone}
read -r -a zone_files <<< "$zones"
root_zone=${zone_files[0]}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "${LDPLAYER:-}" ] && [ "${NO_BUILD:-}" != 1 ]; then cargo build --release -q -p ldplayer; fi
bin=${LDPLAYER:-$PWD/target/release/ldplayer}
echo "== $(date -u +%FT%TZ) on $(nproc) cores; load: $(uptime | sed 's/.*load average/load average/')"
echo "   knotd $(knotd --version | awk '{print $NF}'), nsd $(nsd -v 2>&1 | awk 'NR==1 {print $NF}'), $(dnsperf -h 2>&1 | awk '/^Version/ {print "dnsperf " $2}')"

work=$(mktemp -d)
srv_pid=""
poller=""
cleanup() {
  if [ -n "$poller" ]; then kill "$poller" 2>/dev/null || true; fi
  if [ -n "$srv_pid" ]; then stop_server; fi
  rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------
# The query file: the same for every server.
queries=$out/serve-queries.txt
python3 - "$root_zone" "$queries" <<'PY'
import random, sys
zone, out = sys.argv[1], sys.argv[2]
rng = random.Random(20261122)
tlds = set()
for line in open(zone):
    f = line.split()
    if len(f) >= 5 and f[2] == "IN" and f[3] == "NS" and f[0] != "." and f[0].count(".") == 1:
        tlds.add(f[0].lower())
tlds = sorted(tlds)
heavy = [("com.", 35), ("net.", 12), ("org.", 6), ("arpa.", 5), ("de.", 3), ("uk.", 2), ("jp.", 2), ("ru.", 2), ("br.", 2), ("cn.", 2)]
def tld():
    if rng.random() < 0.6:
        return rng.choices([t for t, _ in heavy], [w for _, w in heavy])[0]
    return rng.choice(tlds)
letters = "abcdefghijklmnopqrstuvwxyz"
def word(lo, hi):
    return "".join(rng.choice(letters) for _ in range(rng.randint(lo, hi)))
junk = ["local", "home", "lan", "corp", "localdomain", "internal", "belkin", "domain", "wpad",
        "dlink", "router", "workgroup", "gateway", "intranet", "localhost", "invalid", "test"]
hosts = ["www", "mail", "api", "cdn", "ns1", "smtp", "_dmarc", "m", "img", "static"]
lines = []
for _ in range(200000):
    r = rng.random()
    if r < 0.50:
        qt = rng.choices(["A", "AAAA", "MX", "TXT", "NS"], [50, 30, 8, 7, 5])[0]
        sld = word(3, 12)
        name = f"{rng.choice(hosts)}.{sld}.{tld()}" if rng.random() < 0.6 else f"{sld}.{tld()}"
    elif r < 0.65:
        qt = rng.choices(["NS", "DS", "SOA", "A"], [40, 35, 10, 15])[0]
        name = tld()
    elif r < 0.95:
        qt = rng.choices(["A", "AAAA", "SOA", "PTR", "SRV"], [60, 25, 5, 5, 5])[0]
        if rng.random() < 0.5:
            base = rng.choice(junk) + "."
            name = base if rng.random() < 0.5 else f"{rng.choice(['wpad', 'www', '_ldap._tcp', 'printer', word(4, 8)])}.{base}"
        else:
            name = word(7, 15) + "."
        if name.split(".")[-2] + "." in tlds:
            name = "x" + name
    else:
        qt = rng.choices(["NS", "SOA", "DNSKEY"], [40, 30, 30])[0]
        name = "."
    lines.append(f"{name} {qt}\n")
open(out, "w").writelines(lines)
print(f"   {len(lines)} queries over {len(tlds)} TLDs written to {out}")
PY

# ---------------------------------------------------------------------------------------------
# Servers. Each is started with `taskset -c 1` and its pid left in $srv_pid.
# A zone's origin: its $ORIGIN line, else the owner of its SOA.
origin_of() { awk '/^\$ORIGIN/ { print $2; exit } $4 == "SOA" || $3 == "SOA" { print $1; exit }' "$1"; }
port_of() { case $1 in ldplayer) echo $((base_port + 1));; knot) echo $((base_port + 2));; nsd) echo $((base_port + 3));; esac; }

start_server() { # name
  local name=$1 port; port=$(port_of "$1")
  local d=$work/$name
  rm -rf "$d"; mkdir -p "$d"
  case $name in
    ldplayer)
      taskset -c 1 "$bin" serve --listen 127.0.0.1:"$port" --udp-workers 1 "${zone_files[@]}" 2> "$d/log" &
      ;;
    knot)
      {
        cat <<CONF
server:
    rundir: "$d"
    listen: 127.0.0.1@$port
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "$d"
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: "$d"
    semantic-checks: off
    journal-content: none
    zonefile-sync: -1
zone:
CONF
        for z in "${zone_files[@]}"; do
          printf '  - domain: "%s"\n    file: "%s"\n' "$(origin_of "$z")" "$z"
        done
      } > "$d/knot.conf"
      taskset -c 1 knotd -c "$d/knot.conf" > "$d/log" 2>&1 &
      ;;
    nsd)
      {
        cat <<CONF
server:
    ip-address: 127.0.0.1@$port
    server-count: 1
    username: ""
    chroot: ""
    zonesdir: "$d"
    database: ""
    pidfile: "$d/nsd.pid"
    xfrdfile: "$d/xfrd.state"
    zonelistfile: "$d/zone.list"
    xfrdir: "$d"
    verbosity: 1
    # nsd limits responses per /24 by default (200 qps): all of loopback is one client here.
    rrl-ratelimit: 0
    rrl-whitelist-ratelimit: 0
remote-control:
    control-enable: no
CONF
        for z in "${zone_files[@]}"; do
          printf 'zone:\n    name: "%s"\n    zonefile: "%s"\n' "$(origin_of "$z")" "$z"
        done
      } > "$d/nsd.conf"
      taskset -c 1 nsd -d -c "$d/nsd.conf" > "$d/log" 2>&1 &
      ;;
  esac
  srv_pid=$!
}

stop_server() { # every process of the server's tree, then wait (at most 10 s) until all are gone
  local pids p
  pids=$(tree "$srv_pid")
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  wait "$srv_pid" 2>/dev/null || true
  local alive
  for _ in $(seq 100); do
    alive=0
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  srv_pid=""
}

# The server's process and its descendants, three generations deep (nsd's first process becomes
# xfrd, its child the main process, whose child serves).
tree() {
  local c g
  echo "$1"
  for c in $(pgrep -P "$1" 2>/dev/null || true); do
    echo "$c"
    for g in $(pgrep -P "$c" 2>/dev/null || true); do echo "$g"; pgrep -P "$g" 2>/dev/null || true; done
  done
}

# The load-time poller, started before the server so that its own start-up is not counted:
# once ready it creates $work/ready, waits for $work/t0 (the server's start time, written just
# before the server is started), then sends `. SOA` every 10 ms over one UDP socket until it is
# answered with data, and prints the seconds since t0. At most 5 s of waiting for t0 and 60 s of
# polling; kdig's shortest timeout, 1 s, would be the resolution otherwise.
start_poller() { # name
  local port; port=$(port_of "$1")
  rm -f "$work/ready" "$work/t0" "$work/load"
  python3 - "$port" "$work" > "$work/load" <<'PY' &
import os, socket, struct, sys, time
port, work = int(sys.argv[1]), sys.argv[2]
q = struct.pack(">HHHHHH", 0x4c44, 0, 1, 0, 0, 0) + b"\x00" + struct.pack(">HH", 6, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.01)
open(os.path.join(work, "ready"), "w").close()
for _ in range(5000):
    try:
        t0 = float(open(os.path.join(work, "t0")).read())
        break
    except (OSError, ValueError):
        time.sleep(0.001)
else:
    sys.exit(1)
for _ in range(6000):
    try:
        s.sendto(q, ("127.0.0.1", port))
        r = s.recv(4096)
        flags, an = struct.unpack(">H", r[2:4])[0], struct.unpack(">H", r[6:8])[0]
        if r[:2] == q[:2] and flags & 0xF == 0 and an > 0:
            print(f"{time.time() - t0:.3f}")
            sys.exit(0)
    except OSError:  # timeout, or ICMP port unreachable before the server binds
        pass
    time.sleep(0.01)
sys.exit(1)
PY
  poller=$!
  for _ in $(seq 500); do [ -e "$work/ready" ] && return 0; sleep 0.01; done
  echo "the load-time poller did not start" >&2; return 1
}

# Starts server `name` with the poller running; leaves the load time in $load.
start_timed() { # name
  start_poller "$1"
  date +%s.%N > "$work/t0.tmp" && mv "$work/t0.tmp" "$work/t0"
  start_server "$1"
  if ! wait "$poller"; then
    poller=""
    echo "$1 did not answer" >&2; cat "$work/$1/log" >&2; return 1
  fi
  poller=""
  load=$(cat "$work/load")
}

memory() { # pid -> "rss_kib hwm_kib pss_kib" summed over the process tree (hwm: the largest)
  local rss=0 hwm=0 pss=0 p r h s
  for p in $(tree "$1"); do
    r=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
    h=$(awk '/^VmHWM/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
    s=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
    rss=$((rss + ${r:-0})); pss=$((pss + ${s:-0})); [ "${h:-0}" -gt "$hwm" ] && hwm=$h
  done
  echo "$rss $hwm $pss"
}

cpu_ticks() { # pid -> user+system clock ticks over the process tree
  local t=0 p v
  for p in $(tree "$1"); do
    # Fields 14 and 15 (utime, stime), counted after the command name, which may hold spaces.
    v=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }' || echo 0)
    t=$((t + ${v:-0}))
  done
  echo "$t"
}

# ---------------------------------------------------------------------------------------------
results=$out/serve-results.tsv
loads=$out/serve-load.tsv
printf 'round\tserver\tpass\tqps\tcompleted\tlost\tserver_cpu_s\tresponse_bytes\tnoerror\tnxdomain\n' > "$results"
printf 'round\tserver\tload_s\trss_kib\thwm_kib\tpss_kib\n' > "$loads"
hz=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
  for name in $servers; do
    port=$(port_of "$name")
    start_timed "$name"
    # knotd pins each UDP worker to a core of its own choosing (worker 0 to core 0, the
    # generator's): put every thread back on core 1 like the other servers.
    if [ "$name" = knot ]; then taskset -a -p -c 1 "$srv_pid" > /dev/null; fi
    sleep 1
    read -r rss hwm pss <<< "$(memory "$srv_pid")"
    printf '%s\t%s\t%.3f\t%s\t%s\t%s\n' "$round" "$name" "$load" "$rss" "$hwm" "$pss" >> "$loads"
    for pass in plain do; do
      flag=-e; [ "$pass" = do ] && flag=-D
      raw=$out/serve-$name-$pass-$round.txt
      c0=$(cpu_ticks "$srv_pid")
      taskset -c 0 dnsperf -s 127.0.0.1 -p "$port" -d "$queries" -l "$secs" -c "$clients" -q "$outstanding" \
        -t 2 -b 2048 "$flag" > "$raw" 2>&1 || true
      c1=$(cpu_ticks "$srv_pid")
      awk -v r="$round" -v s="$name" -v p="$pass" -v cpu="$(echo "($c1 - $c0) / $hz" | bc -l)" '
        /Queries completed/ { done = $3 } /Queries lost/ { lost = $3 } /Queries per second/ { qps = $4 }
        /Average packet size/ { resp = $NF } /NOERROR/ { for (i = 1; i <= NF; i++) { if ($i == "NOERROR") ne = $(i + 1); if ($i == "NXDOMAIN") nx = $(i + 1) } }
        END { printf "%s\t%s\t%s\t%.0f\t%s\t%s\t%.2f\t%s\t%s\t%s\n", r, s, p, qps, done, lost, cpu, resp, ne, nx }' "$raw" >> "$results"
      tail -n 1 "$results" | awk -F'\t' '{ printf "round %s %-8s %-5s %8s qps  (%s answered, %s lost, server CPU %.1f s, response %s B)\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
    done
    stop_server
  done
done
echo "== load after: $(uptime | sed 's/.*load average/load average/')"

python3 - "$results" "$loads" "$do_share" "$secs" <<'PY'
import csv, statistics, sys
res = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
loads = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
share, secs = float(sys.argv[3]), float(sys.argv[4])
servers = list(dict.fromkeys(r["server"] for r in res))
med = statistics.median
def q(s, p):
    return [float(r["qps"]) for r in res if r["server"] == s and r["pass"] == p]
def cpu_per_q(s, p):
    return [float(r["server_cpu_s"]) * 1e6 / max(1, int(r["completed"])) for r in res if r["server"] == s and r["pass"] == p]
def mix(a, b):
    return 1 / (share / b + (1 - share) / a)
print()
print(f"| server | EDNS, no DO qps (median of {len(q(servers[0], 'plain'))}) | DO qps | mix ({share:.0%} DO) qps | server CPU µs/query (plain, DO) | server CPU busy |")
print("|---|---|---|---|---|---|")
fig = {}
for s in servers:
    a, b = med(q(s, "plain")), med(q(s, "do"))
    fig[s] = (a, b, mix(a, b))
    busy = med([float(r["server_cpu_s"]) / secs for r in res if r["server"] == s])
    print(f"| {s} | {a:,.0f} ({', '.join(f'{v:,.0f}' for v in q(s, 'plain'))}) | {b:,.0f} ({', '.join(f'{v:,.0f}' for v in q(s, 'do'))}) | {fig[s][2]:,.0f} | {med(cpu_per_q(s, 'plain')):.2f}, {med(cpu_per_q(s, 'do')):.2f} | {busy:.0%} |")
if "ldplayer" in fig:
    for peer in ("knot", "nsd"):
        if peer in fig:
            l, p = fig["ldplayer"], fig[peer]
            print(f"ldplayer / {peer}: plain {l[0] / p[0]:.2f}, DO {l[1] / p[1]:.2f}, mix {l[2] / p[2]:.2f}")
print()
print("| server | load time s (median) | VmRSS after load | VmHWM | PSS (all processes) |")
print("|---|---|---|---|---|")
for s in servers:
    rows = [r for r in loads if r["server"] == s]
    lt = [float(r["load_s"]) for r in rows]
    m = lambda k: med([int(r[k]) for r in rows]) / 1024
    print(f"| {s} | {med(lt):.2f} ({', '.join(f'{v:.2f}' for v in lt)}) | {m('rss_kib'):.1f} MiB | {m('hwm_kib'):.1f} MiB | {m('pss_kib'):.1f} MiB |")
PY
