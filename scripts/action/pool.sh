#!/usr/bin/env bash
# The action's pool step: the template imported from PRISTINE_CACHE_DIR
# (what actions/cache restored) or built and exported there, then a pool
# of POOL_SIZE slots (examples/ci/prepare.sh, the recipe of docs/ci.md);
# the daemon's socket is the step's output socket, and PRISTINE_ROOT (in
# $GITHUB_ENV since the install step) is how tests find it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_flags
bash "$(dirname "$0")/../../examples/ci/prepare.sh" "$PRISTINE_TEMPLATE" "$PRISTINE_CACHE_DIR" "${flags[@]}" >/dev/null
socket="$PRISTINE_ROOT/pristine.sock"
[ -S "$socket" ] || die "the pool is up but no daemon socket is at $socket"
echo "socket=$socket" >>"$GITHUB_OUTPUT"
pristine pool status
