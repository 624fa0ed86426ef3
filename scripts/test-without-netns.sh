#!/usr/bin/env bash
# Shows that the tests needing network namespaces do not pass silently without them: they run
# in a user namespace whose own limit on network namespaces is 0 (user.max_net_namespaces of
# that user namespace only; the host's settings are not touched, other tests on the machine
# keep theirs). Without LDPLAYER_ALLOW_SKIP they must fail, naming what is missing; with
# LDPLAYER_ALLOW_SKIP=1 they must pass and list every skip. Exits non-zero if either is not so.
#
# Usage: bash scripts/test-without-netns.sh [cargo test arguments]
# (default: the lab, split-horizon, Deckard, SIGTERM, experiment and link fidelity tests of the
# ldplayer crate)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
  set -- -p ldplayer --test lab --test split_horizon --test deckard --test sigterm --test experiment --test link_fidelity --test report
fi

# Built outside, as usual, so that only the tests run without namespaces.
cargo test --locked --no-run "$@"

# Runs `cargo test ARGS` with network namespaces denied, in this directory.
without_netns() {
  unshare --user --map-root-user -- sh -c '
    echo 0 > /proc/sys/user/max_net_namespaces || exit 90
    if unshare -n true 2>/dev/null || unshare -rn true 2>/dev/null; then
      echo "network namespaces still work: cannot show anything" >&2
      exit 91
    fi
    exec cargo test --locked --no-fail-fast "$@"' sh "$@"
}

log=$(mktemp)
trap 'rm -f "$log" "$log.out"' EXIT

echo "== 1. network namespaces denied, LDPLAYER_ALLOW_SKIP unset: the tests must fail"
set +e
(unset LDPLAYER_ALLOW_SKIP && without_netns "$@") >"$log.out" 2>&1
status=$?
set -e
{ grep -E '^test .* (ok|FAILED|ignored)$|^test result:' "$log.out" || true; } | sed 's/^/   /'
failed=$(grep -c '^test .* FAILED$' "$log.out" || true)
missing=$(grep -c '^network namespaces is missing' "$log.out" || true)
echo "   the failures say:"
{ grep -E 'is missing' "$log.out" || true; } | sort -u | sed 's/^/   /'
if [ "$status" -eq 0 ] || [ "$failed" -eq 0 ] || [ "$failed" -ne "$missing" ]; then
  echo "FAIL: $failed tests failed, $missing of them for want of network namespaces" >&2
  tail -50 "$log.out" >&2
  rm -f "$log.out"
  exit 1
fi
echo "   -> $failed tests failed loudly for want of network namespaces, as they must"

echo "== 2. network namespaces denied, LDPLAYER_ALLOW_SKIP=1: the tests must pass, skips listed"
set +e
LDPLAYER_ALLOW_SKIP=1 LDPLAYER_SKIP_LOG="$log" without_netns "$@" >"$log.out" 2>&1
status=$?
set -e
{ grep -E '^test .* (ok|FAILED|ignored)$|^test result:' "$log.out" || true; } | sed 's/^/   /'
if [ "$status" -ne 0 ] || [ ! -s "$log" ]; then
  echo "FAIL: with LDPLAYER_ALLOW_SKIP=1 the tests failed, or nothing was listed as skipped" >&2
  tail -50 "$log.out" >&2
  rm -f "$log.out"
  exit 1
fi
rm -f "$log.out"
echo "   -> passed; skipped $(sort -u "$log" | wc -l) tests:"
sort -u "$log" | sed 's/^/   /'
