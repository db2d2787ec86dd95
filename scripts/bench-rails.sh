#!/usr/bin/env bash
# Rails' parallel testing with pristine vs Rails' own path, same run, same
# machine: examples/rails's transactional and committing tests
# (post_test.rb, worker_database_test.rb) with `bin/rails test` and
# parallelize(workers: N), R rounds each, alternating, both warm:
#   pristine: the template built and the pool up (a lease per worker);
#   stock:    PRISTINE_DISABLE=1: Rails creates blog_test-0..N-1 and runs
#             db:schema:load into each worker's database, on a real MariaDB
#             server (a pristine lease, whose account may create databases).
# Usage: bash scripts/bench-rails.sh [N=2] [R=3]. Needs bin/pristine.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
N="${1:-2}"
R="${2:-3}"
BIN="${PRISTINE_BIN:-$REPO/bin/pristine}"
W="$(mktemp -d /dev/shm/pristine-bench-rails-test-XXXXXX)"
chmod 711 "$W"
export PRISTINE_ROOT="$W/root"
"$BIN" serve --root "$PRISTINE_ROOT" 2>"$W/serve.log" &
SPID=$!
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
# Never waits forever: stop_daemon bounds every wait and kills what is left.
stop() {
  stop_daemon "$BIN" "$PRISTINE_ROOT" "$SPID" 60
  rm -rf "$W"
}
trap stop EXIT
for _ in $(seq 100); do [ -S "$PRISTINE_ROOT/pristine.sock" ] && break; sleep 0.1; done
export RUBYLIB="$REPO/clients/ruby/lib${RUBYLIB:+:$RUBYLIB}"
cd examples/rails
FILES=(test/models/post_test.rb test/models/worker_database_test.rb)
SETUP_LOG="$W/setup.log"
export SETUP_LOG
run() { # run MODE: prints wall seconds; fails when the suite does
  local t0 t1 out
  : >"$SETUP_LOG"
  t0=$(date +%s.%N)
  if [ "$1" = pristine ]; then
    out=$(WORKERS="$N" ruby bin/rails test "${FILES[@]}" 2>&1) || { echo "$out" >&2; return 1; }
  else
    out=$(env -u DATABASE_URL PRISTINE_DISABLE=1 MYSQL_HOST="$SH" MYSQL_PORT="$SP" MYSQL_USER="$SU" MYSQL_PWD="$SW" \
      WORKERS="$N" ruby bin/rails test "${FILES[@]}" 2>&1) || { echo "$out" >&2; return 1; }
  fi
  t1=$(date +%s.%N)
  echo "$out" | grep -q ' 0 failures, 0 errors' || { echo "$out" >&2; return 1; }
  # Wall seconds, the slowest worker's database setup in ms, and minitest's
  # "Finished in" (from the start of the run, workers' setup included, to its end).
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}') $(sort -k2 -n "$SETUP_LOG" | tail -1 | awk '{print $2}') $(echo "$out" | sed -n 's/^Finished in \([0-9.]*\)s.*/\1/p')"
}
# A pool of 2N + 1: N for a run, N resetting from the run before, and the stock path's server.
export POOL_SIZE=$((2 * N + 1))
echo "bench-rails: first pristine run (builds the template, brings a pool of $POOL_SIZE up): $(run pristine | awk "{print \$1}") s"
# The stock path's server: a database of the same daemon, held by this script.
read -r SH SP SU SW < <(eval "$("$BIN" lease --template blog --pid $$ --holder "bench-rails stock server" 2>/dev/null | grep '^export')"
  echo "$MYSQL_HOST $MYSQL_PORT $MYSQL_USER $MYSQL_PWD")
# What a Rails CI job runs before its tests: create and load blog_test.
env -u DATABASE_URL RAILS_ENV=test MYSQL_HOST="$SH" MYSQL_PORT="$SP" MYSQL_USER="$SU" MYSQL_PWD="$SW" \
  ruby bin/rails db:create db:schema:load >/dev/null
echo "bench-rails: first stock run (blog_test-0..$((N - 1)) created): $(run stock | awk "{print \$1}") s"
p=() s=() ps=() ss=() pf=() sf=()
for i in $(seq "$R"); do
  read -r a b c < <(run pristine)
  p+=("$a") ps+=("$b") pf+=("$c")
  read -r a b c < <(run stock)
  s+=("$a") ss+=("$b") sf+=("$c")
  echo "bench-rails: round $i: pristine ${p[-1]} s (tests ${pf[-1]} s, worker database ready in ${ps[-1]} ms), stock ${s[-1]} s (tests ${sf[-1]} s, ${ss[-1]} ms)"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mp=$(med "${p[@]}") ms=$(med "${s[@]}") mps=$(med "${ps[@]}") mss=$(med "${ss[@]}") mpf=$(med "${pf[@]}") msf=$(med "${sf[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print a / b}'; }
printf 'bench-rails: %d workers, %d rounds, medians (stock/pristine):\n' "$N" "$R"
printf '  bin/rails test wall time (boot included): pristine %.2f s, stock %.2f s (%.2fx)\n' "$mp" "$ms" "$(ratio "$ms" "$mp")"
printf '  minitest "Finished in" (workers forked, set up, tests run): pristine %.2f s, stock %.2f s (%.2fx)\n' "$mpf" "$msf" "$(ratio "$msf" "$mpf")"
printf '  slowest worker database setup: pristine %.1f ms, stock %.1f ms (%.1fx)\n' "$mps" "$mss" "$(ratio "$mss" "$mps")"
