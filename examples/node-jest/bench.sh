#!/usr/bin/env bash
# Measures the Jest example's suite (7 database scopes in 5 files, N
# workers) side by side, wall time of the whole `jest` run:
#   fresh server per worker: what users run without pristine (a container
#             per worker, here without Docker): each worker starts its own
#             mariadbd on a fresh data directory, and each file or test
#             gets a fresh database made by knex's migrations and seeds
#             (bench/baseline.cjs, mapped over 'pristine-client/jest')
#   pristine: the first run on a fresh root (template built, pool brought
#             up), then warm runs (the steady state of a CI machine)
# Prints each run and the medians; fails when a suite fails.
# Usage: bash examples/node-jest/bench.sh [WORKERS] [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
N="${1:-3}"
RUNS="${2:-3}"
REPO="$(cd ../.. && pwd)"
BIN="${PRISTINE_BIN:-$REPO/bin/pristine}"
[ -x "$BIN" ] || bash "$REPO/scripts/build.sh"
npm ci --no-audit --no-fund --prefer-offline --loglevel=error
W="$(mktemp -d /dev/shm/pristine-bench-node-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
SPID=""
# shellcheck source=../../scripts/lib/daemon.sh
source "$REPO/scripts/lib/daemon.sh"
stop_baseline() {
  local f
  for f in "$W"/base*/w*/pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true; done
  for _ in $(seq 50); do pgrep -f -- "--datadir=$W/base" >/dev/null || break; sleep 0.1; done
}
cleanup() {
  stop_daemon "$BIN" "$W/root" "$SPID" 60
  stop_baseline
  rm -rf "$W"
}
trap cleanup EXIT

# run NAME ARGS...: one jest run; prints its wall seconds.
run() {
  local name="$1" t0 t1
  shift
  t0=$(date +%s.%N)
  if ! "$@" >"$W/$name.out" 2>&1; then
    tail -40 "$W/$name.out" >&2
    echo "bench: the $name suite failed" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  grep -q "^Tests: *11 passed, 11 total" "$W/$name.out" || { cat "$W/$name.out" >&2; echo "bench: $name did not pass 11 tests" >&2; exit 1; }
  echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
jest() { npx --no-install jest --maxWorkers="$N" --cacheDirectory "$W/cache-$RANDOM" "$@"; }

echo "bench: examples/node-jest, $N workers, $RUNS runs each (11 tests, 7 database scopes)"
base=()
for i in $(seq "$RUNS"); do
  mkdir -p "$W/base$i"
  s=$(BENCH_BASELINE_DIR="$W/base$i" run "base$i" jest --config bench/jest.baseline.config.cjs)
  stop_baseline
  base+=("$s")
  echo "  fresh server per worker  run $i: ${s}s"
done

"$BIN" serve --root "$W/root" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$W/root/pristine.sock" ] && break; sleep 0.1; done
export PRISTINE_ROOT="$W/root"
cold=$(run cold jest)
echo "  pristine, first run (template built, pool of $((2 * N)) brought up): ${cold}s"
warm=()
for i in $(seq "$RUNS"); do
  s=$(run "warm$i" jest)
  warm+=("$s")
  echo "  pristine, warm           run $i: ${s}s"
done
mb=$(printf '%s\n' "${base[@]}" | median)
mw=$(printf '%s\n' "${warm[@]}" | median)
echo "bench: median wall time: fresh server per worker ${mb}s, pristine warm ${mw}s ($(awk -v a="$mb" -v b="$mw" 'BEGIN {printf "%.1fx", a / b}')), pristine first run ${cold}s"
