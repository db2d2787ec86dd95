#!/usr/bin/env bash
# Runs the Vitest example against the daemon of PRISTINE_ROOT (or
# PRISTINE_URL): the suite in 3 forks, checking that every worker had a
# database of its own and every file or test scope its own lease, then a
# failing test with PRISTINE_KEEP_FAILED=1, checking that its database was
# kept with what it wrote and can be released; and a run that builds the
# template against a run that reuses it, per-test outcomes compared (issue
# 22). Installs the packages first
# with npm ci (from package-lock.json).
set -euo pipefail
# Plain output to match on (CI=true makes Vitest colour it even into a file).
export NO_COLOR=1 FORCE_COLOR=0
cd "$(dirname "$0")"
PRISTINE="${PRISTINE_BIN:-$PWD/../../bin/pristine}"
# npm ci also copies clients/node in afresh (.npmrc: install-links).
npm ci --no-audit --no-fund --prefer-offline --loglevel=error
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT

PRISTINE_EXAMPLE_LOG="$T/scopes" npx --no-install vitest run
# Each line: worker, lease, scope. A worker-* scope shares its worker's
# lease; every other scope has one of its own; no two workers share one.
awk '
  $3 ~ /^worker-/ { if (($1 in wl) && wl[$1] != $2) { print "worker " $1 " changed lease"; bad = 1 } wl[$1] = $2; next }
  { own[$2]++; if (own[$2] > 1) { print "scope " $3 " shared lease " $2; bad = 1 } }
  END {
    for (w in wl) { n++; for (v in wl) if (v != w && wl[v] == wl[w]) { print "workers " w " and " v " shared a lease"; bad = 1 } }
    for (l in own) for (w in wl) if (wl[w] == l) { print "lease " l " of worker " w " also served a scope"; bad = 1 }
    printf "node-vitest: %d scopes proved isolation, %d workers with databases of their own\n", NR, n
    exit bad
  }' "$T/scopes"
[ "$(wc -l < "$T/scopes")" -eq 10 ] || { echo "node-vitest: expected 10 scopes" >&2; exit 1; }
[ "$(cut -d' ' -f1 "$T/scopes" | sort -u | wc -l)" -ge 2 ] || { echo "node-vitest: the suite ran in one worker" >&2; exit 1; }

# No daemon: the global setup stops the run and says how to start one.
if PRISTINE_URL= PRISTINE_ROOT="$T/none" npx --no-install vitest run >"$T/nodaemon.out" 2>&1; then
  echo "node-vitest: the suite passed without a daemon" >&2; exit 1
fi
grep -q "NoDaemonError: no pristine daemon is running on $T/none/pristine.sock: start one with \`pristine pool up\` or \`pristine serve\`" "$T/nodaemon.out" ||
  { cat "$T/nodaemon.out"; echo "node-vitest: no daemon, but not said so" >&2; exit 1; }
echo "node-vitest: no daemon stops the run with its cause"

if PRISTINE_KEEP_FAILED=1 npx --no-install vitest run --config vitest.keep.config.mjs >"$T/keep.out" 2>&1; then
  cat "$T/keep.out"; echo "node-vitest: the failing test passed" >&2; exit 1
fi
id="$(sed -n 's/^  release it with: pristine release \([0-9a-f]*\)$/\1/p' "$T/keep.out" | head -1)"
if [ -z "$id" ] || ! grep -q "^pristine: kept databases of failed tests:" "$T/keep.out"; then
  cat "$T/keep.out"; echo "node-vitest: no kept database reported" >&2; exit 1
fi
body="$("$PRISTINE" sql "$id" -- -N -e "SELECT body FROM notes WHERE author = 'failing'")"
[ "$body" = "left for debugging" ] || { echo "node-vitest: the kept database lacks the failed test's write: $body" >&2; exit 1; }
"$PRISTINE" release "$id" >/dev/null
echo "node-vitest: the failed test's database was kept with its write ($id), then released"

# Parity by construction (issue 22): a run that builds the template and a run
# that reuses it give every test the same outcome. A copy of the example with
# a key of its own (a comment in a migration), so that its first run builds.
mkdir "$T/parity"
cp -r migrations seeds test knexfile.cjs vitest.config.mjs pristine.setup.mjs package.json "$T/parity/"
ln -s "$PWD/node_modules" "$T/parity/node_modules"
echo "// parity $$ $RANDOM" >>"$T/parity/migrations/20240102000000_tags.cjs"
# The global setup's ready hook (every run) and setup module (every
# database, in the worker) run in both runs: each says so in PARITY_LOG.
cat >"$T/ready.js" <<'JS'
  ready: async ({ built }) => (await import('node:fs')).appendFileSync(process.env.PARITY_LOG, `ready ${built ? 'built' : 'reused'}\n`),
  setup: 'parity-setup.mjs',
JS
node -e 'const fs = require("fs"); const f = process.argv[1]; fs.writeFileSync(f, fs.readFileSync(f, "utf8").replace(/^(  template: .*)$/m, (l) => l + "\n" + fs.readFileSync(process.argv[2], "utf8").trimEnd()))' "$T/parity/pristine.setup.mjs" "$T/ready.js"
cat >"$T/parity/parity-setup.mjs" <<'JS'
import fs from 'node:fs';
export default async (lease) => fs.appendFileSync(process.env.PARITY_LOG, `setup ${lease.id}\n`);
JS
template="$(sed -n "s/^ *template: '\([^']*\)'.*/\1/p" pristine.setup.mjs | head -1)"
templates() { "$PRISTINE" template ls | grep -c "^$template " || true; }
outcomes() { node -e 'const r = require(process.argv[1]); for (const f of r.testResults) for (const t of f.assertionResults) console.log(require("path").basename(f.name) + " > " + t.fullName + " = " + t.status)' "$1" | sort; }
before="$(templates)"
(cd "$T/parity" && PARITY_LOG="$T/built.log" npx --no-install vitest run --reporter=json --outputFile="$T/built.json") >"$T/built.out" 2>&1 ||
  { cat "$T/built.out"; echo "node-vitest: the building run failed" >&2; exit 1; }
built_templates="$(templates)"
[ "$built_templates" -eq $((before + 1)) ] || { echo "node-vitest: the first parity run did not build a template" >&2; exit 1; }
(cd "$T/parity" && PARITY_LOG="$T/reused.log" npx --no-install vitest run --reporter=json --outputFile="$T/reused.json") >"$T/reused.out" 2>&1 ||
  { cat "$T/reused.out"; echo "node-vitest: the reusing run failed" >&2; exit 1; }
[ "$(templates)" -eq "$built_templates" ] || { echo "node-vitest: the reusing run built the template again" >&2; exit 1; }
for run in built reused; do
  [ "$(grep -c '^ready ' "$T/$run.log")" -eq 1 ] && grep -q "^ready $run$" "$T/$run.log" ||
    { cat "$T/$run.log"; echo "node-vitest: the ready hook did not run once, saying '$run', in the $run run" >&2; exit 1; }
  [ "$(grep -c '^setup ' "$T/$run.log")" -ge 3 ] || { cat "$T/$run.log"; echo "node-vitest: the setup module did not run on the databases of the $run run" >&2; exit 1; }
done
# Per-test and per-file databases are the same in both runs; per-worker ones
# depend on how Vitest spreads the files over its 3 forks (a fork that runs
# no file of that scope leases none), so the counts may differ by up to 3.
b="$(grep -c '^setup ' "$T/built.log")" r="$(grep -c '^setup ' "$T/reused.log")"
[ $((b > r ? b - r : r - b)) -le 3 ] ||
  { cat "$T/built.log" "$T/reused.log"; echo "node-vitest: the setup module ran on $b databases in the building run and $r in the reusing run" >&2; exit 1; }
outcomes "$T/built.json" >"$T/built.txt"
outcomes "$T/reused.json" >"$T/reused.txt"
[ "$(wc -l <"$T/built.txt")" -ge 10 ] || { cat "$T/built.txt"; echo "node-vitest: the parity runs ran too few tests" >&2; exit 1; }
diff -u "$T/built.txt" "$T/reused.txt" || { echo "node-vitest: per-test outcomes differ between the run that built the template and the run that reused it" >&2; exit 1; }
echo "node-vitest: the building and the reusing run gave the same outcome to each of $(wc -l <"$T/built.txt") tests"
