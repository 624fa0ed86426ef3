# What the bench scripts share; sourced (`. bench/lib.sh`) from the repository's root, never
# run. Functions only: sourcing it starts nothing and sets nothing.

# bench_pinned OUTDIR: makes OUTDIR, builds the release ldplayer, and sets `out` (OUTDIR),
# `core` (BENCH_CORE, default 1), `pin` (taskset on that core) and `bin` (the binary), for the
# scripts that time one tool after another on one core.
bench_pinned() {
  out=$1
  mkdir -p "$out"
  core=${BENCH_CORE:-1}
  pin="taskset -c $core"
  cargo build --release -q -p ldplayer
  bin=target/release/ldplayer
}

# measure LABEL COMMAND...: runs COMMAND (its output dropped; its standard error shown, and the
# script ended, if it fails) and prints its wall time, user+sys CPU and max RSS after LABEL,
# padded to `measure_width` characters (default 34); the wall time is kept in
# $out/last_wall.txt for the caller's rates.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$out/time.txt" "$@" >/dev/null 2>"$out/stderr.txt" || { cat "$out/stderr.txt"; exit 1; }
  read -r wall user sys rss < "$out/time.txt"
  printf "%-${measure_width:-34}s wall %7.2f s  cpu %7.2f s  maxrss %8d KiB\n" "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss"
  echo "$wall" > "$out/last_wall.txt"
}

# example_zone FILE: writes the zone example. that the knotd benches serve: SOA, NS, ns, www
# and a wildcard A (every other name is answered).
example_zone() {
  cat > "$1" <<'ZONE'
$ORIGIN example.
$TTL 3600
@ SOA ns.example. admin.example. 1 3600 600 86400 300
@ NS ns.example.
ns A 127.0.0.1
www A 192.0.2.1
* A 192.0.2.2
ZONE
}
