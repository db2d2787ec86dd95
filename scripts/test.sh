#!/usr/bin/env bash
# Runs every test: Go packages against real mariadbd processes and real
# loop-mounted btrfs/XFS filesystems (skipped, with the reason, when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
"$GO" vet ./...
# Screenshots and other artifacts of the tests land here.
export PRISTINE_TEST_ARTIFACTS="$PWD/artifacts"
mkdir -p "$PRISTINE_TEST_ARTIFACTS"
"$GO" test -count=1 -timeout 25m ./... 2>&1 | tee /tmp/pristine-go-test.log
ls "$PRISTINE_TEST_ARTIFACTS" | sed 's|^|test artifact: artifacts/|'
# Nothing may outlive the tests.
left=$(pgrep -a mariadbd | grep -E 'pristine-[a-z-]*test' || true)
if [ -n "$left" ]; then echo "test.sh: servers left running:"; echo "$left"; exit 1; fi
mounts=$(grep -E 'pristine-[a-z-]*test' /proc/self/mountinfo || true)
if [ -n "$mounts" ]; then echo "test.sh: mounts left behind:"; echo "$mounts"; exit 1; fi
