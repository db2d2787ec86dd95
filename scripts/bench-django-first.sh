#!/usr/bin/env bash
# The first run of a real Django project, stock against pristine (issue 22,
# "first builds in RAM"): the project is Wagtail's own starter site
# (`wagtail start`; Wagtail, django-taggit and Django's contrib apps from
# PyPI: 23 apps, 300+ migrations), one test, `manage.py test --parallel 1
# --timing`, so the setup each side reports is create + migrate:
#   stock:    Django creates the test database and migrates it on a plain
#             mariadbd with its data on tmpfs (scripts/lib/plain.sh), the
#             fastest place a stock run can have it
#   pristine: the first run through pristine_client.django on a new root
#             (a btrfs scratch filesystem in /dev/shm): the template is
#             built (its server in RAM, then filed into the store), the
#             pool brought up, the run's database leased
# The two alternate, RUNS rounds; the medians and their ratio are printed,
# with the daemon's phases of each build ("template built ... phases=").
# The base data directory (once per server version and machine, as a
# stock server's own install) is made before the clock starts.
# Not part of CI (it downloads Wagtail into .venv-first, ~60 MB); numbers
# in docs/benchmarks.md. Needs root (the scratch filesystem's loop mount).
# Usage: sudo bash scripts/bench-django-first.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
REPO="$PWD"
[ "$(id -u)" -eq 0 ] || { echo "bench-django-first: run as root (the btrfs scratch filesystem is loop-mounted)" >&2; exit 1; }
VENV="$REPO/.venv-first"
if [ ! -x "$VENV/bin/wagtail" ]; then
  echo "bench-django-first: installing Wagtail and the Python client into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q wagtail pymysql -e clients/python
fi
bash scripts/build.sh
BIN="$REPO/bin/pristine"
W="$(mktemp -d /dev/shm/pristine-bench-first-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine) pass through it
MPID=""
SPID=""
R=""
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
cleanup() {
  [ -z "$R" ] || { stop_daemon "$BIN" "$R" "$SPID" 60; "$BIN" --root "$R" scratch down >/dev/null 2>&1 || true; }
  if [ -n "$MPID" ]; then kill "$MPID" 2>/dev/null || true; wait "$MPID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

# The project, as `wagtail start` makes it, with its database from the
# environment: pristine's backend when PRISTINE is set, else the plain server.
mkdir "$W/site"
"$VENV/bin/wagtail" start wsite "$W/site" >/dev/null
cat >>"$W/site/wsite/settings/dev.py" <<'PYEOF'

import os

import pymysql

pymysql.install_as_MySQLdb()
if os.environ.get("PRISTINE"):
    DATABASES = {"default": {"ENGINE": "pristine_client.django", "NAME": "wsite",
                             "TEST": {"PRISTINE": {"TEMPLATE": "wagtail-site"}}}}
    TEST_RUNNER = "pristine_client.django.runner.PristineRunner"
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.mysql", "NAME": "wsite",
                             "HOST": os.environ["MYSQL_UNIX_PORT"],
                             "USER": os.environ["MYSQL_USER"], "PASSWORD": os.environ["MYSQL_PWD"]}}
PYEOF
cat >"$W/site/home/tests.py" <<'PYEOF'
from django.test import TestCase
from wagtail.models import Page


class RootPageTest(TestCase):
    def test_the_migrations_made_the_root_page(self):
        self.assertTrue(Page.objects.filter(depth=1).exists())
PYEOF
read -r nmig napps < <(cd "$W/site" && DJANGO_SETTINGS_MODULE=wsite.settings.dev MYSQL_UNIX_PORT=x MYSQL_USER=x MYSQL_PWD=x \
  "$VENV/bin/python" -c 'import django, glob; django.setup(); from django.apps import apps; n = [len(glob.glob(a.path + "/migrations/0*.py")) for a in apps.get_app_configs()]; print(sum(n), len(n))')

# shellcheck source=lib/plain.sh
source scripts/lib/plain.sh
start_plain "$W" bench

# run: one test run; prints Django's "Total database setup" seconds.
run() {
  local out
  if ! out=$(cd "$W/site" && DJANGO_SETTINGS_MODULE=wsite.settings.dev "$VENV/bin/python" manage.py test --parallel 1 --timing --noinput 2>&1); then
    echo "$out" | tail -30 >&2
    echo "bench-django-first: the suite failed" >&2
    exit 1
  fi
  echo "$out" | grep -q '^OK' || { echo "$out" | tail -30 >&2; echo "bench-django-first: no OK from the suite" >&2; exit 1; }
  echo "$out" | sed -n 's/^Total database setup took \([0-9.]*\)s.*/\1/p'
}
load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "bench-django-first: Wagtail's starter site ($nmig migrations in $napps apps), manage.py test --parallel 1, $RUNS rounds"
st=() pr=()
for i in $(seq "$RUNS"); do
  s=$(MYSQL_UNIX_PORT="$W/plain.sock" MYSQL_USER=bench MYSQL_PWD=bench run)
  st+=("$s")
  # A new root each round: the run builds the template, as a first run does.
  R="$W/root$i"
  mkdir -p "$R"
  "$BIN" --root "$R" scratch up --size 4G --fs btrfs >/dev/null
  echo 'CREATE TABLE t (a INT);' >"$W/base.sql"
  "$BIN" --root "$R" template build base-warmup --from-sql "$W/base.sql" >/dev/null 2>&1 ||
    { echo "bench-django-first: the base data directory could not be made (pristine template build)" >&2; exit 1; }
  "$BIN" --root "$R" serve 2>"$W/serve$i.log" &
  SPID=$!
  for _ in $(seq 100); do [ -S "$R/pristine.sock" ] && break; sleep 0.1; done
  p=$(PRISTINE=1 PRISTINE_ROOT="$R" run)
  pr+=("$p")
  echo "  round $i: stock ${s}s, pristine first run ${p}s (load $(load))"
  sed -n 's/.*msg="template built".*seconds=\([0-9.]*\) phases=/    build \1s: /p' "$W/serve$i.log" | tr -d '"'
  stop_daemon "$BIN" "$R" "$SPID" 60
  SPID=""
  "$BIN" --root "$R" scratch down >/dev/null
  R=""
done
s=$(printf '%s\n' "${st[@]}" | median)
p=$(printf '%s\n' "${pr[@]}" | median)
echo "stock create + migrate, data on tmpfs (median): ${s}s"
echo "pristine first run: build in RAM, pool up, lease (median): ${p}s"
awk -v s="$s" -v p="$p" 'BEGIN { printf "ratio: %.2fx stock\n", p / s }'
