#!/usr/bin/env bash
# Builds bin/pristine with the Go that install-deps.sh found.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
"$GO" build -o bin/pristine ./cmd/pristine
