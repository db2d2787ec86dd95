#!/usr/bin/env bash
# Measures Django's test database setup for the example shop
# (examples/django) run with `manage.py test --parallel N`, side by side:
#   django:   Django's own CREATE DATABASE + migrate + N mysqldump | mysql clones
#             against a plain MariaDB server (on /dev/shm, same settings)
#   pristine: the pristine_client.django backend: leases from a pristine pool
#             (first run: the template is built and the pool brought up;
#             then warm runs, the steady state of a CI machine)
# Prints both setup times (Django's --timing "Total database setup") and the
# ratio, and fails unless both suites pass with the same number of tests.
# Usage: bash scripts/bench-django.sh [PARALLEL] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
PARALLEL="${1:-4}"
RUNS="${2:-3}"
REPO="$PWD"
[ -x .venv/bin/python ] || { python3 -m venv .venv && .venv/bin/pip install -q django pytest pytest-xdist pymysql -e clients/python; }
bash scripts/build.sh
W="$(mktemp -d /dev/shm/pristine-bench-django-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
MPID=""
SPID=""
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
# Never waits forever: stop_daemon bounds every wait and kills what is left.
cleanup() {
  stop_daemon bin/pristine "$W/root" "$SPID" 60
  if [ -n "$MPID" ]; then kill "$MPID" 2>/dev/null || true; wait "$MPID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

# Django's own cloning, against a plain server with pristine's profile.
# shellcheck source=lib/plain.sh
source scripts/lib/plain.sh
start_plain "$W" bench
mariadb --no-defaults -S "$W/plain.sock" -uroot -e "CREATE DATABASE shop"

# setup TIME of one run: the suite must pass; prints "seconds tests".
run() {
  local out
  if ! out=$(cd examples/django && "$REPO/.venv/bin/python" manage.py test --parallel "$PARALLEL" --timing --noinput 2>&1); then
    echo "$out" | tail -30 >&2
    echo "bench-django: the suite failed" >&2
    exit 1
  fi
  local secs tests
  secs=$(echo "$out" | sed -n 's/^Total database setup took \([0-9.]*\)s.*/\1/p')
  tests=$(echo "$out" | sed -n 's/^Ran \([0-9]*\) tests\{0,1\} .*/\1/p')
  echo "$secs $tests"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "bench-django: examples/django, manage.py test --parallel $PARALLEL, $RUNS runs each"
dj=()
for i in $(seq "$RUNS"); do
  r=$(MYSQL_UNIX_PORT="$W/plain.sock" MYSQL_USER=bench MYSQL_PWD=bench run)
  dj+=("${r% *}"); dj_tests="${r#* }"
  echo "  django   run $i: setup ${r% *}s ($dj_tests tests passed)"
done

bin/pristine serve --root "$W/root" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$W/root/pristine.sock" ] && break; sleep 0.1; done
pr=()
for i in $(seq $((RUNS + 1))); do
  r=$(PRISTINE=1 PRISTINE_ROOT="$W/root" run)
  pr_tests="${r#* }"
  if [ "$i" -eq 1 ]; then
    cold="${r% *}"
    echo "  pristine run $i: setup ${cold}s ($pr_tests tests passed; cold: template built once, pool brought up)"
  else
    pr+=("${r% *}")
    echo "  pristine run $i: setup ${r% *}s ($pr_tests tests passed)"
  fi
done
[ "$dj_tests" = "$pr_tests" ] || { echo "bench-django: the suites ran $dj_tests and $pr_tests tests" >&2; exit 1; }
d=$(printf '%s\n' "${dj[@]}" | median)
p=$(printf '%s\n' "${pr[@]}" | median)
backend=$(sed -n 's/.*backend=\([a-z]*\).*/\1/p' "$W/serve.log" | head -1)
echo "django setup (median): ${d}s"
echo "pristine setup (median, warm; backend $backend): ${p}s   (cold, first run: ${cold}s)"
awk -v d="$d" -v p="$p" 'BEGIN { printf "ratio: %.1fx lower with pristine\n", d / p }'
