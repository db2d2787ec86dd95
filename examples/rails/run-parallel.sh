#!/usr/bin/env bash
# Runs the example's suite with `bin/rails test` and N parallelize workers
# (default 3) against the daemon of PRISTINE_ROOT (or PRISTINE_URL), then
# checks what each test recorded: every worker ran on its own lease (its own
# server and database), and every ImportTest test on a lease of its own.
set -euo pipefail
cd "$(dirname "$0")"
N="${1:-3}"
LOG="$(mktemp /tmp/pristine-rails-example-XXXXXX)"
trap 'rm -f "$LOG"' EXIT
# The gem from this checkout, without Bundler (rubygems.org is not needed).
export RUBYLIB="$PWD/../../clients/ruby/lib${RUBYLIB:+:$RUBYLIB}"
WORKERS="$N" EXAMPLE_LOG="$LOG" ruby bin/rails test
# Each worker's setup row (its lease, server and database); which worker
# runs how many tests is Rails' scheduling, so a worker may run none.
workers=$(awk '$1 == "setup" {print $2}' "$LOG" | sort -u | wc -l)
leases=$(awk '$1 == "setup" {print $3}' "$LOG" | sort -u | wc -l)
dbs=$(awk '$1 == "setup" {print $4 "/" $5}' "$LOG" | sort -u | wc -l)
# Every worker test ran on its own worker's database.
stray=$(awk '$1 == "setup" {db[$2] = $3 " " $4 " " $5} $1 == "worker" && db[$2] != $3 " " $4 " " $5 {n++} END {print n + 0}' "$LOG")
per_test=$(awk '$1 == "test"' "$LOG" | wc -l)
per_test_leases=$(awk '$1 == "test" {print $3}' "$LOG" | sort -u | wc -l)
echo "examples/rails: $workers workers on $leases leases ($dbs server/database pairs); $per_test per-test tests on $per_test_leases leases"
if [ "$N" -gt 1 ] && [ "$workers" -ne "$N" ] || [ "$leases" -ne "$workers" ] || [ "$dbs" -ne "$workers" ] || [ "$stray" -ne 0 ] || [ "$per_test_leases" -ne "$per_test" ]; then
  echo "examples/rails: workers shared a database, or a per-test test did not get its own" >&2
  cat "$LOG" >&2
  exit 1
fi
