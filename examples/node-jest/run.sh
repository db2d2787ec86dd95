#!/usr/bin/env bash
# Runs the Jest example against the daemon of PRISTINE_ROOT (or
# PRISTINE_URL): the suite with N workers (default 3), checking that its
# scopes had databases of their own in several workers; the faults of
# docs/node.md (no daemon, a migration that fails) and their messages; then a
# failing test with PRISTINE_KEEP_FAILED=1, checking that its database was
# kept with what it wrote and can be released; and a run that builds the
# template against a run that reuses it, per-test outcomes compared (issue
# 22). Installs the packages first
# with npm ci (from package-lock.json).
set -euo pipefail
# Plain output to match on (CI=true makes Vitest colour it even into a file).
export NO_COLOR=1 FORCE_COLOR=0
cd "$(dirname "$0")"
N="${1:-3}"
PRISTINE="${PRISTINE_BIN:-$PWD/../../bin/pristine}"
# npm ci also copies clients/node in afresh (.npmrc: install-links).
npm ci --no-audit --no-fund --prefer-offline --loglevel=error
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

# A fresh cache directory: Jest runs a few fast files in band when it
# remembers them as fast, and this suite must run in several workers.
PRISTINE_EXAMPLE_LOG="$T/scopes" npx --no-install jest --maxWorkers="$N" --cacheDirectory "$T/cache"
scopes="$(wc -l < "$T/scopes")"
leases="$(cut -d' ' -f2 "$T/scopes" | sort -u | wc -l)"
workers="$(cut -d' ' -f1 "$T/scopes" | sort -u | wc -l)"
echo "node-jest: $scopes scopes proved a pristine start, on $leases leases, in $workers workers"
[ "$scopes" -eq 7 ] && [ "$leases" -eq "$scopes" ] || { echo "node-jest: expected 7 scopes on 7 different leases" >&2; exit 1; }
if [ "$N" -gt 1 ] && [ "$workers" -lt 2 ]; then echo "node-jest: the suite ran in one worker, not $N" >&2; exit 1; fi

# Faults name their cause and fix: no daemon, and migrations that fail
# (a copy of the example with a broken migration: the build is aborted with
# knex's error, and the pool of the good template stays up).
if PRISTINE_URL= PRISTINE_ROOT="$T/none" npx --no-install jest >"$T/nodaemon.out" 2>&1; then
  echo "node-jest: the suite passed without a daemon" >&2; exit 1
fi
grep -q "no pristine daemon is running on $T/none/pristine.sock: start one with \`pristine pool up\` or \`pristine serve\`" "$T/nodaemon.out" ||
  { cat "$T/nodaemon.out"; echo "node-jest: no daemon, but not said so" >&2; exit 1; }
mkdir "$T/broken"
cp -r migrations seeds test knexfile.cjs jest.config.cjs pristine.setup.cjs package.json "$T/broken/"
ln -s "$PWD/node_modules" "$T/broken/node_modules"
printf "exports.up = (knex) => knex.raw('CREATE TABLE broken (id INT PRIMARY KEY');\nexports.down = () => {};\n" >"$T/broken/migrations/20240103000000_broken.cjs"
if (cd "$T/broken" && npx --no-install jest) >"$T/broken.out" 2>&1; then
  echo "node-jest: the suite passed with a broken migration" >&2; exit 1
fi
grep -q "template node-jest-notes: build failed, so it was aborted: .*exited with status 1" "$T/broken.out" &&
  grep -q "You have an error in your SQL syntax" "$T/broken.out" ||
  { cat "$T/broken.out"; echo "node-jest: a failed migration, but not said so" >&2; exit 1; }
echo "node-jest: no daemon and a failed migration stop the run with their cause"

# A failing test's database is kept when asked for, with how to open and release it.
if PRISTINE_KEEP_FAILED=1 npx --no-install jest --testMatch '<rootDir>/keep/*.test.cjs' >"$T/keep.out" 2>&1; then
  cat "$T/keep.out"; echo "node-jest: the failing test passed" >&2; exit 1
fi
id="$(sed -n 's/^  release it with: pristine release \([0-9a-f]*\)$/\1/p' "$T/keep.out" | head -1)"
if [ -z "$id" ] || ! grep -q "^pristine: kept databases of failed tests:" "$T/keep.out"; then
  cat "$T/keep.out"; echo "node-jest: no kept database reported" >&2; exit 1
fi
body="$("$PRISTINE" sql "$id" -- -N -e "SELECT body FROM notes WHERE author = 'failing'")"
[ "$body" = "left for debugging" ] || { echo "node-jest: the kept database lacks the failed test's write: $body" >&2; exit 1; }
"$PRISTINE" release "$id" >/dev/null
echo "node-jest: the failed test's database was kept with its write ($id), then released"

# Parity by construction (issue 22): a run that builds the template and a run
# that reuses it give every test the same outcome. A copy of the example with
# a key of its own (a comment in a migration), so that its first run builds.
mkdir "$T/parity"
cp -r migrations seeds test knexfile.cjs jest.config.cjs pristine.setup.cjs package.json "$T/parity/"
ln -s "$PWD/node_modules" "$T/parity/node_modules"
echo "// parity $$ $RANDOM" >>"$T/parity/migrations/20240102000000_tags.cjs"
# The global setup's ready hook (every run) and setup module (every
# database, in the worker) run in both runs: each says so in PARITY_LOG.
cat >"$T/ready.js" <<'JS'
  ready: ({ built }) => require('node:fs').appendFileSync(process.env.PARITY_LOG, `ready ${built ? 'built' : 'reused'}\n`),
  setup: 'parity-setup.cjs',
JS
node -e 'const fs = require("fs"); const f = process.argv[1]; fs.writeFileSync(f, fs.readFileSync(f, "utf8").replace(/^(  template: .*)$/m, (l) => l + "\n" + fs.readFileSync(process.argv[2], "utf8").trimEnd()))' "$T/parity/pristine.setup.cjs" "$T/ready.js"
cat >"$T/parity/parity-setup.cjs" <<'JS'
module.exports = async (lease) => require('node:fs').appendFileSync(process.env.PARITY_LOG, `setup ${lease.id}\n`);
JS
outcomes() { node -e 'const r = require(process.argv[1]); for (const f of r.testResults) for (const t of f.assertionResults) console.log(require("path").basename(f.name) + " > " + t.fullName + " = " + t.status)' "$1" | sort; }
templates() { "$PRISTINE" template ls | grep -c '^node-jest-notes ' || true; }
before="$(templates)"
(cd "$T/parity" && PARITY_LOG="$T/built.log" npx --no-install jest --maxWorkers="$N" --cacheDirectory "$T/cache" --json --outputFile="$T/built.json") >"$T/built.out" 2>&1 ||
  { cat "$T/built.out"; echo "node-jest: the building run failed" >&2; exit 1; }
built_templates="$(templates)"
[ "$built_templates" -eq $((before + 1)) ] || { echo "node-jest: the first parity run did not build a template" >&2; exit 1; }
(cd "$T/parity" && PARITY_LOG="$T/reused.log" npx --no-install jest --maxWorkers="$N" --cacheDirectory "$T/cache" --json --outputFile="$T/reused.json") >"$T/reused.out" 2>&1 ||
  { cat "$T/reused.out"; echo "node-jest: the reusing run failed" >&2; exit 1; }
[ "$(templates)" -eq "$built_templates" ] || { echo "node-jest: the reusing run built the template again" >&2; exit 1; }
for run in built reused; do
  [ "$(grep -c '^ready ' "$T/$run.log")" -eq 1 ] && grep -q "^ready $run$" "$T/$run.log" ||
    { cat "$T/$run.log"; echo "node-jest: the ready hook did not run once, saying '$run', in the $run run" >&2; exit 1; }
  [ "$(grep -c '^setup ' "$T/$run.log")" -ge 3 ] || { cat "$T/$run.log"; echo "node-jest: the setup module did not run on the databases of the $run run" >&2; exit 1; }
done
[ "$(grep -c '^setup ' "$T/built.log")" -eq "$(grep -c '^setup ' "$T/reused.log")" ] ||
  { echo "node-jest: the setup module ran on a different number of databases in the two runs" >&2; exit 1; }
outcomes "$T/built.json" >"$T/built.txt"
outcomes "$T/reused.json" >"$T/reused.txt"
[ "$(wc -l <"$T/built.txt")" -ge 7 ] || { cat "$T/built.txt"; echo "node-jest: the parity runs ran too few tests" >&2; exit 1; }
diff -u "$T/built.txt" "$T/reused.txt" || { echo "node-jest: per-test outcomes differ between the run that built the template and the run that reused it" >&2; exit 1; }
echo "node-jest: the building and the reusing run gave the same outcome to each of $(wc -l <"$T/built.txt") tests"
