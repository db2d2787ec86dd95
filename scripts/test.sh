#!/usr/bin/env bash
# Runs every test: Go packages against real mariadbd processes and real
# loop-mounted btrfs/XFS filesystems (skipped, with the reason, when not root).
#
#   bash scripts/test.sh           everything, as CI runs it (.ci/run)
#   bash scripts/test.sh --quick   the contributors' tier: go vet, then every
#                                  Go package once against the machine's own
#                                  MariaDB, with -short, without -race, with the
#                                  longest tests skipped (QUICK_SKIP below); no
#                                  server matrix, no clients, no overhead guard
#
# The full run overlaps what can overlap: the server matrix
# (scripts/servers.sh) runs in the background from the start, in its roots'
# own mounts and private /dev/shm, while the host's tests and then the
# clients' suites run here; its output is printed when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "test.sh: unknown argument $1: want nothing (every test) or --quick" >&2; exit 2 ;;
esac
# Whatever happens, what this run's tests left in /dev/shm goes (a failed
# run once left 113 MB there), and the server matrix, when it still runs,
# is stopped (it undoes its mounts itself).
# shellcheck source=lib/testclean.sh
source scripts/lib/testclean.sh
STAMP="$(mktemp /tmp/pristine-test-run-XXXXXX)"
# The mark of this run's test binaries (clean_test_leftovers tells them
# from another run's by it).
export PRISTINE_TEST_RUN="$STAMP"
MPID=""
MLOG=""
PPID_PACKAGES=""
stop_matrix() {
  if [ -n "$MPID" ]; then kill -TERM "$MPID" 2>/dev/null || true; wait "$MPID" 2>/dev/null || true; fi
  [ -z "$MLOG" ] || rm -f "$MLOG"
  if [ -n "$PPID_PACKAGES" ]; then kill -TERM "$PPID_PACKAGES" 2>/dev/null || true; wait "$PPID_PACKAGES" 2>/dev/null || true; fi
}
trap 'stop_matrix; clean_test_leftovers "$STAMP"; rm -f "$STAMP"' EXIT
trap 'exit 130' INT TERM
phase() { echo "test.sh: $(date -u +%T) $*"; }
# A failed step of the full run is named and the run goes on, so that one
# run shows every failure (the server matrix's too); it fails at the end.
FAILED=()
step() { local name="$1"; shift; "$@" || { echo "test.sh: FAILED: $name" >&2; FAILED+=("$name"); }; }
bash scripts/install-deps.sh
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
# Screenshots and other artifacts of the tests land here.
export PRISTINE_TEST_ARTIFACTS="$PWD/artifacts"
mkdir -p "$PRISTINE_TEST_ARTIFACTS"

if [ "$quick" = 1 ]; then
  # The tests that take half a minute or more each at load 1 on 2 cores;
  # the full run has them. internal/bench (the method comparison's own
  # tests) is left out whole.
  QUICK_SKIP='^(TestFidelityCorpus|TestRealStreamCutAtChunkBoundaries|TestDemoMainJob|TestDemoOnRootWithTemplates|TestNetworkNamespaces|TestTemplatePushPullCache|TestFirstLeaseBeforePoolUp|TestSlotDiskCap|TestSparesGrowForWaits|TestOverheadGuard)$'
  phase "go vet"
  "$GO" vet ./...
  phase "go test -short (no -race, no server matrix, no clients)"
  # internal/pool is the longest package (about 3 minutes alone), so it
  # starts first, in a go test of its own, beside the others; most of the
  # tests wait on servers starting, so 3 packages at once beside it use the
  # 2 cores better than go test's default of one a core.
  MLOG="$(mktemp /tmp/pristine-quick-pool-XXXXXX)"
  "$GO" test -short -count=1 -timeout 10m -skip "$QUICK_SKIP" ./internal/pool >"$MLOG" 2>&1 &
  MPID=$!
  qrc=0
  # shellcheck disable=SC2046 # one package a word
  "$GO" test -p 3 -short -count=1 -timeout 10m -skip "$QUICK_SKIP" \
    $("$GO" list ./... | grep -v -e '/internal/bench$' -e '/internal/pool$') || qrc=1
  wait "$MPID" || qrc=1
  MPID=""
  cat "$MLOG"
  [ "$qrc" = 0 ] || { echo "test.sh: FAILED: go test -short" >&2; exit 1; }
  phase "quick tier passed; CI runs bash scripts/test.sh (everything)"
  exit 0
fi

phase "go vet"
"$GO" vet ./...
# The overhead guard (docs/benchmarks.md, "pristine's own cost per slot"):
# 8 bare servers against 8 slots, and an in-place reset against its bare
# restore, in one run; fails when a ratio passes its bound (never on an
# absolute time). About 20 s; first, before this run's other phases load
# the machine.
phase "overhead guard"
OVH="$(mktemp -d /dev/shm/pristine-overhead-test-XXXXXX)"
chmod 755 "$OVH"
"$GO" build -o "$OVH/pristine-bench" ./cmd/pristine-bench
ovh_rc=0
"$OVH/pristine-bench" --root "$OVH/root" overhead --slots 8 --check || ovh_rc=$?
rm -rf "$OVH"
[ "$ovh_rc" = 0 ] || { echo "test.sh: pristine-bench overhead --check failed"; exit 1; }
# The server matrix (issue 21, docs/servers.md): the server-facing packages
# again, inside cached Debian roots of MariaDB 11.8 and MySQL 9.7, both
# roots at once. A root that cannot be built fails the run. In the
# background: its tests run in the roots' private /dev/shm and take ports
# from the kernel, as the host's do, so the two never meet.
MLOG="$(mktemp /tmp/pristine-test-servers-XXXXXX.log)"
phase "server matrix started in the background (scripts/servers.sh; its output follows when it ends)"
bash scripts/servers.sh >"$MLOG" 2>&1 &
MPID=$!
# The Debian package and the container image (docs/packaging.md), also in
# the background (they wait on apt and on their roots more than they
# compute): the package built, installed into a fresh Debian 12 root, its
# service started, a lease taken through it, removed and purged with
# nothing left; then the image built with podman from that package and run
# privileged, unprivileged on an XFS volume and unprivileged on overlay,
# each serving a lease that verifies clean. Each skips, saying why, when
# not root or without debootstrap or podman. A few minutes (the Debian
# root is cached after its first debootstrap).
PLOG="$(mktemp /tmp/pristine-test-packages-XXXXXX.log)"
phase "Debian package and container image started in the background (scripts/test-deb.sh, scripts/test-image.sh)"
bash -c 'rc=0; bash scripts/test-deb.sh || rc=1; bash scripts/test-image.sh || rc=$((rc + 2)); exit $rc' >"$PLOG" 2>&1 &
PPID_PACKAGES=$!
# With the race detector: the daemon, the pool and the archive readers are
# concurrent, and a data race there is a bug even when a run passes.
phase "go test -race ./..."
# TestOverheadGuard is the guard phase above run as a Go test: here, beside
# the server matrix, its ratios would measure the matrix's load.
step "go test -race" bash -c 'set -o pipefail; "$1" test -race -count=1 -timeout 25m -skip "^TestOverheadGuard$" ./... 2>&1 | tee /tmp/pristine-go-test.log' _ "$GO"
ls "$PRISTINE_TEST_ARTIFACTS" | sed 's|^|test artifact: artifacts/|'
phase "waiting for the Debian package and the container image"
prc=0
wait "$PPID_PACKAGES" || prc=$?
PPID_PACKAGES=""
cat "$PLOG"
rm -f "$PLOG"
[ $((prc & 1)) = 0 ] || step "Debian package (scripts/test-deb.sh, its output above)" false
[ $((prc & 2)) = 0 ] || step "container image (scripts/test-image.sh, its output above)" false
# Clients (issue 8): the Python and PHP packages' tests, the examples and the
# Django comparison, each against a daemon of the binary built here.
phase "clients"
bash scripts/build.sh
export PRISTINE_BIN="$PWD/bin/pristine"
[ -x .venv/bin/python ] || "$(command -v /usr/bin/python3 || command -v python3)" -m venv .venv
.venv/bin/pip install -q django pytest pytest-xdist pymysql -e clients/python
step examples bash examples/run-all.sh
step "Django comparison" bash scripts/bench-django.sh 4 2
# issue 22: a real Django suite (two aliases on one server, cross-database FK, ...) run --parallel 2
# stock, through pristine building the template and reusing it: per-test outcomes must agree.
step "Django parity" bash scripts/parity-django.sh 2
step "PHP client" phpunit -c clients/php/phpunit.xml
step "Python client" .venv/bin/pytest -p no:cacheprovider clients/python/tests
# clients/ruby (issue 24): the client and the Rails integration, against a daemon of their own.
step "Ruby client" bash -c 'cd clients/ruby && rake test'
# Node client (issue 24): node:test tests against a daemon of their own, and
# the .d.ts files type-checked; npm ci from the committed package-lock.json.
step "Node client" bash -c 'cd clients/node && npm ci --no-audit --no-fund --prefer-offline --loglevel=error && npm test && npm run typecheck'
# The client packages (docs/packaging.md): each built as the release command
# builds it, installed into a clean environment from its artifact alone, its
# example run against a daemon of bin/pristine. About a minute.
phase "client packages"
step "client packages" bash scripts/test-client-packages.sh
phase "clients done; waiting for the server matrix"
mrc=0
wait "$MPID" || mrc=$?
MPID=""
cat "$MLOG"
[ "$mrc" = 0 ] || step "server matrix (scripts/servers.sh, its output above)" false
phase "server matrix done"
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "test.sh: failed: $(printf '%s; ' "${FAILED[@]}")"
  exit 1
fi
# The empty data directory the Go tests share is a cache of this run only.
rm -rf /dev/shm/pristine-test-base-* 2>/dev/null || true
# Nothing may outlive the tests.
left=$(pgrep -a mariadbd | grep -E 'pristine-[a-z-]*test' || true)
if [ -n "$left" ]; then echo "test.sh: servers left running:"; echo "$left"; exit 1; fi
mounts=$(grep -E 'pristine-[a-z-]*test' /proc/self/mountinfo || true)
if [ -n "$mounts" ]; then echo "test.sh: mounts left behind:"; echo "$mounts"; exit 1; fi
