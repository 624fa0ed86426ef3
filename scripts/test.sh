#!/usr/bin/env bash
# The project's test command (README.md, .ci/run): installs what the tests need when it is
# missing, then checks formatting and lints, builds the fuzz targets and runs every test,
# including the docs' examples.
#
# A test whose prerequisite is missing (a tool, network namespaces, IPv6 on loopback, the shared
# test data) fails saying what is missing and how to get it. With LDPLAYER_ALLOW_SKIP=1 it is
# skipped instead, and the skipped tests are listed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

# The shared test data: real captures, zones and Deckard scenarios, kept beside the repository.
shared_data=../shared/data
if [ ! -d "$shared_data" ]; then
  echo "test.sh: the shared test data is missing: $(pwd)/$shared_data (real captures, zone files"
  echo "test.sh: and Deckard scenarios) must be checked out as ../shared/data beside the repository;"
  echo "test.sh: the tests that read it will fail unless LDPLAYER_ALLOW_SKIP=1 (then they are skipped)."
fi

# Skipped tests (LDPLAYER_ALLOW_SKIP=1) add a line each to this file; listed when the run ends.
export LDPLAYER_SKIP_LOG="${LDPLAYER_SKIP_LOG:-$(pwd)/target/skipped-tests.txt}"
mkdir -p "$(dirname "$LDPLAYER_SKIP_LOG")"
: >"$LDPLAYER_SKIP_LOG"
list_skips() {
  if [ "${LDPLAYER_ALLOW_SKIP:-}" = 1 ] || [ -s "$LDPLAYER_SKIP_LOG" ]; then
    echo "test.sh: skipped $(sort -u "$LDPLAYER_SKIP_LOG" | wc -l) tests:"
    sort -u "$LDPLAYER_SKIP_LOG" | sed 's/^/  /'
  fi
}
trap list_skips EXIT

# Real tools the tests use as independent witnesses.
packages=()
command -v tshark >/dev/null 2>&1 || packages+=(tshark)
command -v tcpdump >/dev/null 2>&1 || packages+=(tcpdump)
# editcap and mergecap cut captures into files and join them again (convert of many files).
command -v mergecap >/dev/null 2>&1 || packages+=(wireshark-common)
[ -x /usr/bin/time ] || packages+=(time)
command -v xz >/dev/null 2>&1 || packages+=(xz-utils)
command -v zstd >/dev/null 2>&1 || packages+=(zstd)
# Debian's Python modules the tests use: dnspython builds dynamic updates, pandas reads text traces.
/usr/bin/python3 -c 'import dns.update' >/dev/null 2>&1 || packages+=(python3-dnspython)
/usr/bin/python3 -c 'import pandas' >/dev/null 2>&1 || packages+=(python3-pandas)
# Real DNS servers the replay tests talk to, on loopback ports the tests choose.
command -v knotd >/dev/null 2>&1 || packages+=(knot)
command -v kdig >/dev/null 2>&1 || packages+=(knot-dnsutils)
command -v nsd >/dev/null 2>&1 || packages+=(nsd)
command -v unbound >/dev/null 2>&1 || packages+=(unbound)
# Zone checkers the zone constructor's output must satisfy, and BIND for its export.
command -v named-checkzone >/dev/null 2>&1 || packages+=(bind9-utils)
command -v kzonecheck >/dev/null 2>&1 || packages+=(knot-dnssecutils)
# The lab's round trip signs one ground-truth zone with ldns-signzone.
command -v ldns-signzone >/dev/null 2>&1 || packages+=(ldnsutils)
# The recursive resolvers the lab runs.
[ -x /usr/sbin/kresd ] || packages+=(knot-resolver)
[ -x /usr/sbin/named ] || packages+=(bind9)
[ -x /usr/sbin/pdns_recursor ] || packages+=(pdns-recursor)
# dnstap: fstrm_capture (a Frame Streams collector) takes unbound's dnstap to a file; the dnstap
# readers (dnstap-ldns, the golang dnstap tool, BIND's dnstap-read) read `convert --to dnstap`.
command -v fstrm_capture >/dev/null 2>&1 || packages+=(fstrm-bin)
command -v dnstap-ldns >/dev/null 2>&1 || packages+=(dnstap-ldns)
command -v dnstap >/dev/null 2>&1 || packages+=(golang-github-dnstap-golang-dnstap-cli)
command -v dnstap-read >/dev/null 2>&1 || packages+=(bind9-dnsutils)
# The clock of a validating resolver that has no date option of its own (lab --time).
command -v faketime >/dev/null 2>&1 || packages+=(faketime)
# Network namespaces for the split-horizon server and the lab (ip, unshare).
command -v ip >/dev/null 2>&1 || packages+=(iproute2)
command -v unshare >/dev/null 2>&1 || packages+=(util-linux)
# The Slurm recipes run under a real one-node Slurm (slurmctld, slurmd) with munge, which the
# test starts in a scratch directory of its own (deploy/slurm, crates/cli/tests/slurm.rs).
[ -x /usr/sbin/slurmctld ] || packages+=(slurm-wlm)
[ -x /usr/sbin/munged ] || packages+=(munge)
# Experiments with a recursive server keep the link for its answers (nft).
[ -x /usr/sbin/nft ] || packages+=(nftables)
# Reports are read in headless Chromium with the network off (the browser witness), and their
# PNG figures are drawn with DejaVu Sans.
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || packages+=(fonts-dejavu-core)
# The C++ compiler libfuzzer-sys builds libFuzzer with (the fuzz targets are compiled below).
command -v c++ >/dev/null 2>&1 || packages+=(g++)
# dnspython's DNS over QUIC client (with aioquic, from PyPI: Debian has no aioquic) and its
# DNS over HTTPS client (httpx with h2) are independent witnesses of `serve --quic-listen` and
# `--https-listen`; aioquic also serves DoQ to the replay's tests.
if ! python3 -c 'import dns.query, aioquic, httpx, h2; dns.query.quic' >/dev/null 2>&1; then
  echo "test.sh: installing dnspython, aioquic and httpx from PyPI"
  python3 -m pip install -q --disable-pip-version-check "dnspython==2.7.0" "aioquic==1.2.0" \
    "httpx==0.28.1" "h2==4.2.0"
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "test.sh: installing ${packages[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

# cargo-deny checks the dependencies' licenses, duplicate and wildcard versions and sources
# (deny.toml); its advisories check needs the RustSec database, which these machines cannot fetch.
if ! cargo deny --version 2>/dev/null | grep -q '^cargo-deny 0\.20\.2$'; then
  echo "test.sh: installing cargo-deny 0.20.2 from crates.io (a few minutes of building, once)"
  cargo install -q --locked cargo-deny --version 0.20.2
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The API documentation builds without a broken or private link (what docs.rs would show).
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q
cargo deny --log-level error check licenses bans sources
# The fuzz targets (fuzz/ is outside the workspace, with its own Cargo.lock) must keep compiling;
# running them takes cargo-fuzz and a nightly toolchain: cargo +nightly fuzz run TARGET.
cargo build --manifest-path fuzz/Cargo.toml --locked
cargo test --workspace --locked
