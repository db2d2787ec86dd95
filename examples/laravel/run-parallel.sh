#!/usr/bin/env bash
# Runs the Laravel example the way `php artisan test --parallel
# --processes=N --without-databases` runs it with paratest: the runner's
# setUpProcess callbacks (parallel.php up), then N phpunit processes at
# once, each with its own TEST_TOKEN and LARAVEL_PARALLEL_TESTING=1, then
# the tearDownProcess callbacks. Checks that the N processes used N
# different databases (a pool smaller than N, say PRISTINE_POOL_SIZE=2 on a
# pool of 3, grows to N). Needs a pristine daemon (PRISTINE_ROOT naming the
# root of one, or `pristine serve`) and php-laravel-framework and phpunit
# (apt-get install php-laravel-framework phpunit).
set -euo pipefail
cd "$(dirname "$0")"
N="${1:-3}"
R="$(mktemp -d /tmp/pristine-laravel-XXXXXX)"
trap 'rm -rf "$R"' EXIT
export APP_ENV=testing LARAVEL_PARALLEL_TESTING=1 LARAVEL_PARALLEL_TESTING_WITHOUT_DATABASES=1
export PRISTINE_LARAVEL_RESULTS="$R" PRISTINE_LARAVEL_PROCESSES="$N" PRISTINE_POOL_SIZE="${PRISTINE_POOL_SIZE:-$N}"
php parallel.php up "$N"
pids=()
for i in $(seq "$N"); do
  TEST_TOKEN="$i" phpunit -c phpunit.xml >"$R/phpunit-$i.log" 2>&1 &
  pids+=("$!")
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
php parallel.php down "$N"
cat "$R"/phpunit-*.log
if [ "$fail" -ne 0 ]; then echo "laravel: a phpunit process failed" >&2; exit 1; fi
distinct="$(cat "$R"/db-* | sort -u | wc -l)"
if [ "$distinct" -ne "$N" ]; then
  echo "laravel: $N processes used $distinct databases:" >&2
  cat "$R"/db-* >&2
  exit 1
fi
echo "laravel: $N phpunit processes, $N databases of their own, each migrated once in the template: $(sort -u "$R"/db-* | tr '\n' ';')"
