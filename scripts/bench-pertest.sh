#!/bin/bash
# What a database of its own costs a test, per client (issue 35): N tests
# (default 200) each with a database of its own against the same N sharing
# one, in the same run. Go: pristine-bench pertest (which builds the
# template "pertest" and brings its pool up in a root of its own); then the
# Python, Node and Java clients' benches against the same daemon. Prints one
# table row per client, the load average and the machine.
# Usage: scripts/bench-pertest.sh [N [POOL [WORK]]]
# POOL (default 4) is the pool's size: a test of one query lasts about a
# millisecond, less than a slot's unchanged check after its release, so a
# small pool makes the lease taken ahead wait for a slot. WORK (default 0)
# is how many milliseconds each test works after its query (a sleep), on
# both sides: a test of a real suite does more than one query.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
POOL=${2:-4}
WORK=${3:-0}
case "$WORK" in *[!0-9]*) echo "bench-pertest: WORK is whole milliseconds, got $WORK" >&2; exit 2 ;; esac
bash scripts/build.sh >/dev/null
W=$(mktemp -d /tmp/pristine-bench-pertest-XXXXXX)
chmod 755 "$W" # the servers run as an account of their own
export PRISTINE_ROOT="$W/root" PRISTINE_BIN="$PWD/bin/pristine"
cleanup() { bin/pristine pool down --template pertest >/dev/null 2>&1 && rm -rf "$W"; }
trap cleanup EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pool of $POOL slots, $WORK ms of work per test"
bin/pristine-bench pertest --tests "$N" --size "$POOL" --work "${WORK}ms"
echo
echo "| client | tests | lease / connect / release p50 | overhead p50 | test p50 own / shared | ratio |"
echo "|---|---|---|---|---|---|"
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import pymysql' 2>/dev/null; then
  .venv/bin/python clients/python/bench/pertest.py "$N" --work-ms "$WORK"
else
  echo "| Python | skipped: no .venv with pymysql (scripts/test.sh makes it) | | | | |"
fi
if [ -d clients/node/node_modules/mysql2 ]; then
  node clients/node/bench/pertest.cjs "$N" --work-ms "$WORK"
else
  echo "| Node | skipped: no clients/node/node_modules (npm ci in clients/node) | | | | |"
fi
rm -f clients/java/target/pertest.md
(cd clients/java && mvn -B -q --no-transfer-progress -Dstyle.color=never test -Dtest=PertestBench \
  -Dpristine.bench="$N" -Dpristine.benchWork="$WORK" -Dsurefire.failIfNoSpecifiedTests=false >/dev/null 2>&1) || true
cat clients/java/target/pertest.md 2>/dev/null || echo "| Java | failed: run PertestBench with mvn to see why | | | | |"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
