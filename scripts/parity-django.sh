#!/usr/bin/env bash
# Per-test outcome parity of a real Django suite (testdata/django-parity:
# two aliases on one server, a cross-database foreign key, serialized
# rollback, a post_migrate handler, a database cache, skips and expected
# failures from the backend's features, a direct create_test_db call,
# named time zones),
# run with `manage.py test --parallel N` three times:
#   stock:            Django creates, migrates and clones (mysqldump) on a
#                     standalone mariadbd this script starts (bench-django.sh's
#                     plain server, with pristine's character set options
#                     and time zone tables)
#   pristine (build): through pristine_client.django, building the template
#   pristine (reuse): the same, leasing the template the previous run built
# Each run writes {test id: outcome} (the suite's runner); the script fails
# unless the three agree test by test and exit alike.
# Usage: bash scripts/parity-django.sh [PARALLEL]
set -euo pipefail
cd "$(dirname "$0")/.."
PARALLEL="${1:-2}"
REPO="$PWD"
PY="${PARITY_PYTHON:-$REPO/.venv/bin/python}"
[ -x "$PY" ] || { python3 -m venv .venv && .venv/bin/pip install -q django pytest pytest-xdist pymysql -e clients/python; }
"$PY" -c 'import tblib' 2>/dev/null || "$PY" -m pip install -q tblib # tracebacks from --parallel workers
[ -n "${PRISTINE_BIN:-}" ] || bash scripts/build.sh
BIN="${PRISTINE_BIN:-$REPO/bin/pristine}"
W="$(mktemp -d /dev/shm/pristine-parity-django-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
MPID=""
SPID=""
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
cleanup() {
  [ -z "${PARITY_KEEP:-}" ] || cp -r "$W"/*.out "$W"/*.json "$PARITY_KEEP"/ 2>/dev/null || true
  stop_daemon "$BIN" "$W/root" "$SPID" 60
  if [ -n "$MPID" ]; then kill "$MPID" 2>/dev/null || true; wait "$MPID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

# shellcheck source=lib/plain.sh
source scripts/lib/plain.sh
start_plain "$W" parity

# run NAME: one run of the suite; its outcomes in $W/NAME.json, its output
# in $W/NAME.out, its exit status in $W/NAME.rc.
run() {
  local name="$1" rc=0
  shift
  (cd testdata/django-parity && env "$@" PARITY_OUTCOMES="$W/$name.json" \
    "$PY" manage.py test --parallel "$PARALLEL" --noinput -v 2 >"$W/$name.out" 2>&1) || rc=$?
  echo "$rc" >"$W/$name.rc"
  [ -s "$W/$name.json" ] || { tail -40 "$W/$name.out" >&2; echo "parity-django: the $name run wrote no outcomes (output above)" >&2; exit 1; }
  echo "  $name: exit $rc, $(grep -E '^(OK|FAILED)' "$W/$name.out" | tail -1 || echo '?')"
}

echo "parity-django: testdata/django-parity, manage.py test --parallel $PARALLEL"
run stock PARITY_MODE=stock MYSQL_UNIX_PORT="$W/plain.sock" MYSQL_USER=parity MYSQL_PWD=parity

"$BIN" serve --root "$W/root" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$W/root/pristine.sock" ] && break; sleep 0.1; done
run pristine-build PARITY_MODE=pristine PRISTINE_ROOT="$W/root"
run pristine-reuse PARITY_MODE=pristine PRISTINE_ROOT="$W/root"
grep -q "building template" "$W/pristine-build.out" || { echo "parity-django: the first pristine run did not build the template" >&2; exit 1; }
if grep -q "building template" "$W/pristine-reuse.out"; then echo "parity-django: the second pristine run built the template again" >&2; exit 1; fi

"$PY" - "$W" <<'PYEOF'
import json, sys
w = sys.argv[1]
runs = ["stock", "pristine-build", "pristine-reuse"]
out = {r: json.load(open(f"{w}/{r}.json")) for r in runs}
rc = {r: open(f"{w}/{r}.rc").read().strip() for r in runs}
ids = sorted(set().union(*out.values()))
bad = [(t, [out[r].get(t, "missing") for r in runs]) for t in ids if len({out[r].get(t, "missing") for r in runs}) > 1]
counts = {}
for o in out["stock"].values():
    k = o.split(":")[0]
    counts[k] = counts.get(k, 0) + 1
print(f"  {len(ids)} tests; stock outcomes: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
for t, o in bad:
    print(f"  DIFFERS {t}: " + ", ".join(f"{r}={x}" for r, x in zip(runs, o)))
if len(set(rc.values())) > 1:
    print("  exit statuses differ: " + ", ".join(f"{r}={rc[r]}" for r in runs))
if bad or len(set(rc.values())) > 1:
    print(f"parity-django: FAIL: {len(bad)} of {len(ids)} tests differ", file=sys.stderr)
    sys.exit(1)
print(f"parity-django: ok: the {len(ids)} tests have the same outcome in all three runs (exit {rc['stock']})")
PYEOF
