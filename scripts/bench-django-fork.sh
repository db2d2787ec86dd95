#!/usr/bin/env bash
# A suite with expensive class-level fixtures, with fork and without, in
# one run: testdata/django-fork-bench/test_reports.py in a copy of the
# example shop (examples/django), CLASSES classes whose setUpTestData loads
# ROWS customers, ROWS orders and 3 x ROWS order lines, 3 tests each, run
# with `manage.py test --parallel PARALLEL` through one pristine daemon:
#   testcase: the classes are django.test.TestCase (setUpTestData in every
#             class of every run; each test rolled back)
#   fork:     the classes are ForkTestCase (setUpTestData once per fork:
#             in the first run; each test on a fresh lease of the fork)
# Each is run twice (the template is built before either); prints every
# run's wall time and the load average. Fails unless every run passes.
# Usage: bash scripts/bench-django-fork.sh [PARALLEL] [CLASSES] [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
PARALLEL="${1:-2}"
export BENCH_CLASSES="${2:-4}" BENCH_ROWS="${3:-2000}"
REPO="$PWD"
[ -x .venv/bin/python ] || { python3 -m venv .venv && .venv/bin/pip install -q django pymysql -e clients/python; }
bash scripts/build.sh
W="$(mktemp -d /dev/shm/pristine-bench-django-fork-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
SPID=""
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
cleanup() {
  stop_daemon bin/pristine "$W/root" "$SPID" 60
  rm -rf "$W"
}
trap cleanup EXIT
cp -r examples/django "$W/shop"
cp testdata/django-fork-bench/test_reports.py "$W/shop/shop/tests/test_reports.py"
bin/pristine serve --root "$W/root" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$W/root/pristine.sock" ] && break; sleep 0.1; done

# run LABEL: one run of the reports suite; prints its wall time.
run() {
  local out t0 t1
  t0=$(date +%s.%N)
  if ! out=$(cd "$W/shop" && PRISTINE=1 PRISTINE_ROOT="$W/root" "$REPO/.venv/bin/python" manage.py test \
    shop.tests.test_reports --parallel "$PARALLEL" --noinput 2>&1); then
    echo "$out" | tail -30 >&2
    echo "bench-django-fork: the $1 run failed" >&2
    exit 1
  fi
  t1=$(date +%s.%N)
  echo "$out" | grep -q "^Ran $((BENCH_CLASSES * 3)) tests" || { echo "$out" | tail -5 >&2; exit 1; }
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

echo "bench-django-fork: $BENCH_CLASSES classes x 3 tests, setUpTestData of $BENCH_ROWS customers, orders and 3 x $BENCH_ROWS lines, --parallel $PARALLEL"
echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# The shop's template is built (and its pool brought up) before the
# measured runs, by a run of one of its own tests.
(cd "$W/shop" && PRISTINE=1 PRISTINE_ROOT="$W/root" "$REPO/.venv/bin/python" manage.py test \
  shop.tests.test_catalog --parallel "$PARALLEL" --noinput >/dev/null 2>&1) || { echo "bench-django-fork: the warm-up failed" >&2; exit 1; }
for mode in testcase fork; do
  fork=""
  [ "$mode" = fork ] && fork=1
  for i in 1 2; do
    s=$(BENCH_FORK="$fork" run "$mode")
    echo "  $mode run $i: ${s}s"
  done
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
