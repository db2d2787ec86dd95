#!/usr/bin/env bash
# The action's key step: the template's content key (`pristine template
# key`), the actions/cache key of its archive, as the step's output key.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
build_flags
key="$(pristine template key "$PRISTINE_TEMPLATE" "${flags[@]}")" || die "pristine template key failed"
echo "key=$key" >>"$GITHUB_OUTPUT"
echo "pristine: template $PRISTINE_TEMPLATE has content key $key"
