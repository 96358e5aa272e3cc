#!/usr/bin/env bash
# Lookout benchmark (not a test; `make bench`).
#
# Lookout vs direct-to-nginx vs tinyproxy vs Squid, all on 127.0.0.1, in one run:
# 1 KiB keep-alive (req/s, p50, p99), 1 MiB responses (MiB/s), new connection per
# request (req/s), CONNECT tunnel bulk HTTPS (MiB/s), RSS per idle keep-alive client
# connection -- Lookout with its JSON summary log on and off. Then the TLS rows
# (tls_bench.py): intercepted HTTPS keep-alive and bulk, a new TLS connection per request,
# and new upstream TLS handshakes, each against direct TLS to the same nginx. Then the cache
# rows (cache_bench.py): hits against nginx and a caching Squid, the cost of a miss, and the
# store at 100,000 objects (start-up time and index memory). Then the HTTP/2 rows
# (h2_bench.py): h2load at 1 and 100 streams and 1 MiB responses through interception toward
# an h2 nginx, against direct, the floor relay, mitmproxy and nghttpx (the reference h2 proxy).
#
# Environment:
#   LOOKOUT_BIN      use this binary instead of `swift build -c release --product lookout`
#   BENCH_DURATION   seconds per wrk run / CONNECT phase (default 10; 3 for a smoke run)
#   BENCH_IDLE_CONNS idle connections for the RSS test (default 1000)
#   BENCH_BIG_MIB    size of the CONNECT bulk file in MiB (default 256, sparse)
#   BENCH_RESULTS    where to write the Markdown report (default: a new /tmp dir, path printed)
#   BENCH_KEEP=1     keep the work directory (configs, logs, raw wrk output)
#   BENCH_WAIT_IDLE  seconds to wait for other CPU load to go away first (default 120)
#   BENCH_ROUNDS     measure each throughput row this many times with the targets interleaved and
#                    report each target's median run (default 1; 3 when comparing against the goals)
#   BENCH_TIMEOUT    bound on the measurement phase in seconds (default 900 per round)
#   BENCH_CACHE_OBJECTS objects in the store-at-scale row (default 100000)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DURATION="${BENCH_DURATION:-10}"

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- peers and tools -------------------------------------------------------------
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
command -v tinyproxy >/dev/null 2>&1 || [[ -x /usr/bin/tinyproxy ]] || missing+=(tinyproxy)
command -v squid >/dev/null 2>&1 || [[ -x /usr/sbin/squid ]] || missing+=(squid)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v cc >/dev/null 2>&1 || missing+=(gcc)          # the TLS rows' load client
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)   # the HTTP/2 rows' load client
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    say "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update >/dev/null && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
  else
    say "missing: ${missing[*]} -- install them (sudo apt-get install ${missing[*]}) or run as root"
    exit 1
  fi
fi
export PATH="$PATH:/usr/sbin:/sbin"
# mitmproxy (PyPI) is the HTTP/2 rows' peer; without it those rows say so and go on.
command -v mitmdump >/dev/null 2>&1 || python3 -m pip install -q mitmproxy >/dev/null 2>&1 \
  || say "mitmproxy not installed (pip install mitmproxy): the HTTP/2 rows go without it"
# nghttpx (Debian nghttp2-proxy) is the reference proxy of the TLS and HTTP/2 rows; without it they say so and go on.
[[ -x /usr/sbin/nghttpx ]] || command -v nghttpx >/dev/null 2>&1 \
  || { [[ $(id -u) -eq 0 ]] && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nghttp2-proxy >/dev/null 2>&1; } \
  || say "nghttpx not installed (apt-get install nghttp2-proxy): the keep-alive, TLS and HTTP/2 rows go without their reference column"
# The Debian packages start system daemons on install where an init system exists;
# we never use those: every server below is our own instance on a free port.

# --- file descriptors (1,000 idle connections + wrk) ---------------------------------
if [[ "$(ulimit -n)" != unlimited ]] && (( $(ulimit -n) < 8192 )); then
  ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fi
say "ulimit -n = $(ulimit -n)"

# --- work dir and teardown -----------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/lookout-bench.XXXXXX")"
chmod 755 "$WORK"   # squid/tinyproxy drop to nobody when started as root
if [[ -n "${BENCH_RESULTS:-}" ]]; then
  RESULTS="$BENCH_RESULTS"; RESULTS_TMPDIR=""
else
  RESULTS_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/lookout-bench-results.XXXXXX")"
  RESULTS="$RESULTS_TMPDIR/latest.md"
fi

BENCH_PID=""
cleanup() {
  local rc=$?
  if [[ -n "$BENCH_PID" ]] && kill -0 "$BENCH_PID" 2>/dev/null; then
    kill -TERM "$BENCH_PID" 2>/dev/null || true   # bench.py stops its servers on SIGTERM
    wait "$BENCH_PID" 2>/dev/null || true
  fi
  if [[ -f "$WORK/pids" ]]; then
    while read -r pid; do
      [[ -n "$pid" ]] || continue
      kill -TERM -- "-$pid" 2>/dev/null || true
    done <"$WORK/pids"
    sleep 0.5
    while read -r pid; do
      [[ -n "$pid" ]] || continue
      kill -KILL -- "-$pid" 2>/dev/null || true
    done <"$WORK/pids"
  fi
  [[ -z "$RESULTS_TMPDIR" ]] || rmdir "$RESULTS_TMPDIR" 2>/dev/null || true   # only if nothing was written
  if [[ "${BENCH_KEEP:-0}" == 1 ]]; then
    say "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Lookout ------------------------------------------------------------------------
LOOKOUT_MISSING=""
if [[ -n "${LOOKOUT_BIN:-}" ]]; then
  [[ -x "$LOOKOUT_BIN" ]] || { say "LOOKOUT_BIN=$LOOKOUT_BIN is not executable"; exit 1; }
  LOOKOUT="$LOOKOUT_BIN"
elif [[ -f "$ROOT/Package.swift" ]] && command -v swift >/dev/null 2>&1; then
  say "building Lookout: swift build -c release --product lookout (log: $WORK/build.log)"
  if (cd "$ROOT" && timeout "${BENCH_BUILD_TIMEOUT:-1800}" swift build -c release --product lookout) \
       >"$WORK/build.log" 2>&1; then
    LOOKOUT="$(cd "$ROOT" && swift build -c release --show-bin-path)/lookout"
  else
    tail -n 25 "$WORK/build.log" >&2 || true
    LOOKOUT=""
    LOOKOUT_MISSING="lookout binary not found (swift build -c release failed)"
  fi
else
  LOOKOUT=""
  LOOKOUT_MISSING="lookout binary not found (no Package.swift in $ROOT or no swift toolchain)"
fi
if [[ -n "$LOOKOUT" && ! -x "$LOOKOUT" ]]; then
  LOOKOUT_MISSING="lookout binary not found at $LOOKOUT"
  LOOKOUT=""
fi
if [[ -z "$LOOKOUT" ]]; then
  say "$LOOKOUT_MISSING -- measuring direct, tinyproxy and squid only"
else
  say "lookout: $LOOKOUT ($("$LOOKOUT" --version 2>&1 | head -n 1))"
fi

# --- measure ------------------------------------------------------------------------
say "running (BENCH_DURATION=${DURATION}s per phase); work dir $WORK"
# In the background + `wait`, so that INT/TERM reach the trap at once (bash defers traps
# while a foreground child runs); the trap then stops bench.py, which stops the servers.
timeout --foreground --signal=TERM --kill-after=30 "${BENCH_TIMEOUT:-$((900 * ${BENCH_ROUNDS:-1}))}" \
  python3 "$HERE/bench.py" --work "$WORK" --out "$RESULTS" --duration "$DURATION" \
    --lookout "$LOOKOUT" --lookout-missing "$LOOKOUT_MISSING" &
BENCH_PID=$!
wait "$BENCH_PID"
BENCH_PID=""
if [[ -n "$LOOKOUT" ]]; then
  for rows in "tls_bench.py:TLS rows (interception, new TLS connections, upstream handshakes)" \
              "cache_bench.py:cache rows (hits vs nginx and Squid, the cost of a miss, the store at 100,000 objects)" \
              "h2_bench.py:HTTP/2 rows (h2load through interception to an h2 nginx, vs direct, the floor, mitmproxy and nghttpx)"; do
    say "${rows#*:}"
    timeout --foreground --signal=TERM --kill-after=30 "${BENCH_TIMEOUT:-$((900 * ${BENCH_ROUNDS:-1}))}" \
      python3 "$HERE/${rows%%:*}" --work "$WORK" --out "$RESULTS" --duration "$DURATION" --lookout "$LOOKOUT" &
    BENCH_PID=$!
    wait "$BENCH_PID"
    BENCH_PID=""
  done
fi
say "report: $RESULTS"
