#!/usr/bin/env bash
# Runs the example's test files in N phpunit processes at once (default 3)
# against one pristine pool; each test leases its own database. Needs a
# daemon: `pristine serve` (or PRISTINE_ROOT naming the root of one).
set -euo pipefail
cd "$(dirname "$0")"
N="${1:-3}"
# phpunit.xml registers the extension as PHPUnit 10 and later do
# (PristineExtension, <bootstrap>); phpunit9.xml as PHPUnit 9 does.
config=phpunit.xml
case "$(phpunit --version)" in *"PHPUnit 9."*) config=phpunit9.xml ;; esac
pids=()
i=0
for f in tests/*Test.php; do
  phpunit -c "$config" "$f" > "/tmp/pristine-php-example.$$.$i.log" 2>&1 &
  pids+=("$!")
  i=$((i + 1))
  if [ "${#pids[@]}" -ge "$N" ]; then wait "${pids[0]}" || fail=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
cat /tmp/pristine-php-example.$$.*.log
rm -f /tmp/pristine-php-example.$$.*.log
exit "${fail:-0}"
