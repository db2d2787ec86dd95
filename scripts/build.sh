#!/usr/bin/env bash
# Builds bin/pristine (the product) and bin/pristine-bench (its benchmarks,
# kept out of the product binary) with the Go that install-deps.sh found,
# stamped with the version and commit that `pristine --version` prints.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
version="$(git describe --tags --always --dirty 2>/dev/null || echo devel)"
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
pkg=github.com/pristinedb/pristine/internal/cli
flags="-X $pkg.Version=$version -X $pkg.Commit=$commit"
"$GO" build -ldflags "$flags" -o bin/pristine ./cmd/pristine
"$GO" build -ldflags "$flags" -o bin/pristine-bench ./cmd/pristine-bench
