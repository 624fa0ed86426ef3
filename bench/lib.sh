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

# test_certificate DIR: a CA (DIR/ca.pem, DIR/ca.key) and a server certificate for 127.0.0.1
# signed by it (DIR/server.pem, DIR/server.key; CA:FALSE, as rustls wants).
test_certificate() {
  local dir=$1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n' > "$dir/ext"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/ext" -out "$dir/server.pem" 2>/dev/null
}

# unbound_common DIR: the lines of unbound's `server:` clause every bench's unbound shares
# (TLS with DIR's test_certificate, one thread, run in the foreground from DIR without chroot,
# pid file or syslog, quiet, loopback clients only), printed for a configuration's heredoc.
unbound_common() {
  cat <<CONF
  tls-service-key: "$1/server.key"
  tls-service-pem: "$1/server.pem"
  num-threads: 1
  username: ""
  chroot: ""
  directory: "$1"
  pidfile: ""
  use-syslog: no
  do-daemonize: no
  verbosity: 0
  access-control: 127.0.0.0/8 allow
CONF
}

# start_unbound DIR PORT: starts unbound in the foreground with DIR/unbound.conf, pinned to core
# 0, its standard error in DIR/unbound.log; appends its pid to the caller's `pids` array (which
# the caller's EXIT trap kills) and waits up to 10 s for 127.0.0.1:PORT to accept TCP.
start_unbound() {
  taskset -c 0 unbound -d -c "$1/unbound.conf" 2> "$1/unbound.log" & pids+=($!)
  for _ in $(seq 50); do (exec 3<> "/dev/tcp/127.0.0.1/$2") 2> /dev/null && break; sleep 0.2; done
}

# cpu_quota PID PERCENT: holds process PID (and the threads it starts later) to PERCENT of one
# core, over 5 ms periods, with a CPU cgroup of its own (v2 `cpu.max`, else v1's CFS quota; as
# root). Used to put a server's capacity below what each load generator can offer on a small
# machine, so that a ramp finds the server's limit rather than the generator's. The group is
# left behind empty when the process ends; `cpu_quota_cleanup` removes the groups made here.
cpu_quota() {
  local pid=$1 pct=$2 group
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    group=/sys/fs/cgroup/ldplayer-bench-$pid
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
    mkdir "$group"
    echo "$((pct * 50)) 5000" > "$group/cpu.max"
    echo "$pid" > "$group/cgroup.procs"
  else
    group=/sys/fs/cgroup/cpu/ldplayer-bench-$pid
    mkdir "$group"
    echo 5000 > "$group/cpu.cfs_period_us"
    echo "$((pct * 50))" > "$group/cpu.cfs_quota_us"
    echo "$pid" > "$group/cgroup.procs"
  fi
  cpu_quota_groups+=("$group")
}
cpu_quota_groups=()
cpu_quota_cleanup() { for g in "${cpu_quota_groups[@]}"; do rmdir "$g" 2> /dev/null || true; done; }
