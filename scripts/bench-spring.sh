#!/usr/bin/env bash
# Measures the Spring Boot example (examples/spring: 4 test classes x 3 JPA
# repository tests, Flyway migrations: 3 files, 200 seeded rows), the same
# tests side by side in one run, alternating:
#   fresh:    Testcontainers' approach without Docker: each test class starts
#             a fresh mariadbd (mariadb-install-db + mariadbd on /dev/shm) and
#             Spring Boot's Flyway migrates it; classes run at once, a class's
#             tests one after another, rolled back
#   shared:   one mariadbd for the run, started by the first class and
#             migrated once (one Spring context for the four classes), every
#             test on that one database, rolled back, one test at a time
#   pristine: @AutoConfigurePristineDatabase: every test on a database of its
#             own leased from a pool (first run: the template is built and the
#             pool brought up; then warm runs, a CI machine's steady state),
#             classes and tests at once, committed
# For each run: time to first test and to the last test's end (ms since the
# test JVM started, from the tests themselves) and the wall time of `mvn
# test`. Prints the medians. Not a test: numbers, not assertions.
# Usage: bash scripts/bench-spring.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
REPO="$PWD"
MVN=(mvn -B -q --no-transfer-progress -Dstyle.color=never)
[ -x bin/pristine ] || bash scripts/build.sh
(cd clients/java && "${MVN[@]}" install -DskipTests)
(cd examples/spring && "${MVN[@]}" test-compile)
W="$(mktemp -d /dev/shm/pristine-bench-spring-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
SPID=""
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
cleanup() {
  stop_daemon bin/pristine "$W/root" "$SPID" 60
  rm -rf "$W"
}
trap cleanup EXIT
export PRISTINE_ROOT="$W/root"
bin/pristine serve --root "$PRISTINE_ROOT" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$PRISTINE_ROOT/pristine.sock" ] && break; sleep 0.1; done

# run LABEL TESTS: one `mvn test` of the example; appends "label first last wall" to $W/results.
run() {
  local label="$1" tests="$2" t0 t1
  rm -f "examples/spring/target/bench-$label.properties"
  t0=$(date +%s%N)
  if ! (cd examples/spring && "${MVN[@]}" -o surefire:test -Dshop.tests="$tests" -Dshop.bench="$label" -Dpristine.quiet=true >"$W/$label.log" 2>&1); then
    tail -40 "$W/$label.log" >&2
    echo "bench-spring: the $label run failed (above)" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  # shellcheck disable=SC1090
  . <(tr -d '\r' <"examples/spring/target/bench-$label.properties")
  echo "${label%%-*} $first_test_ms $last_test_end_ms $(((t1 - t0) / 1000000))" >>"$W/results"
  printf 'bench-spring: %-14s first test %6d ms, last test end %6d ms, mvn %6d ms\n' "$label" "$first_test_ms" "$last_test_end_ms" "$(((t1 - t0) / 1000000))"
}

run pristine-first 'PristineProducts*Test'
mv "$W/results" "$W/first"
for i in $(seq "$RUNS"); do
  run "fresh-$i" 'FreshServerProducts*Test'
  run "shared-$i" 'SharedServerProducts*Test'
  run "pristine-$i" 'PristineProducts*Test'
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }
echo
echo "examples/spring, $RUNS runs each, medians (ms since the test JVM started; mvn: wall time of mvn surefire:test)"
printf '%-40s %12s %12s %10s\n' "" "first test" "last test" "mvn"
for kind in fresh shared pristine; do
  f=$(awk -v k=$kind '$1==k {print $2}' "$W/results" | median)
  l=$(awk -v k=$kind '$1==k {print $3}' "$W/results" | median)
  m=$(awk -v k=$kind '$1==k {print $4}' "$W/results" | median)
  name="fresh mariadbd per class (Testcontainers)"
  [ "$kind" = shared ] && name="one shared server, rolled back"
  [ "$kind" = pristine ] && name="pristine, warm"
  printf '%-40s %12s %12s %10s\n' "$name" "$f" "$l" "$m"
  eval "${kind}_first=$f ${kind}_last=$l ${kind}_mvn=$m"
done
read -r _ f l m <"$W/first"
printf '%-40s %12s %12s %10s\n' "pristine, first run (build + pool up)" "$f" "$l" "$m"
awk -v ff="$fresh_first" -v pf="$pristine_first" -v fl="$fresh_last" -v pl="$pristine_last" -v fm="$fresh_mvn" -v pm="$pristine_mvn" \
  'BEGIN {printf "ratio fresh/pristine (warm): first test %.2fx, last test %.2fx, mvn %.2fx\n", ff/pf, fl/pl, fm/pm}'
awk -v sf="$shared_first" -v pf="$pristine_first" -v sl="$shared_last" -v pl="$pristine_last" -v sm="$shared_mvn" -v pm="$pristine_mvn" \
  'BEGIN {printf "ratio pristine/shared (warm): last test %.2fx, tests (first to last) %.2fx, mvn %.2fx\n", pl/sl, (pl-pf)/(sl-sf), pm/sm}'
