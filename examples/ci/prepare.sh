#!/usr/bin/env bash
# The CI recipe of docs/ci.md, one step: the template from the CI cache, or
# built once and saved to it; then a pool up for the test job.
#   bash examples/ci/prepare.sh NAME CACHE_DIR [TEMPLATE BUILD FLAGS...]
#   e.g. bash examples/ci/prepare.sh app .pristine-cache --from-sql schema.sql --init-cmd './migrate up' --watch migrations/
# The cache holds one archive per template, NAME-KEY.prsa, where KEY is the
# template's content key (`pristine template key`): a changed schema or
# migration is a new key, so a stale archive is never imported. Environment:
# POOL_SIZE (default 4), PRISTINE_ROOT, PRISTINE (the pristine binary,
# default pristine on PATH). Prints key=KEY last (for $GITHUB_OUTPUT).
set -euo pipefail
name="$1" cache="$2"
shift 2
P="${PRISTINE:-pristine}"
key="$("$P" template key "$name" "$@")"
archive="$cache/$name-$key.prsa"
if [ -f "$archive" ]; then
  echo "prepare: template $name $key from the cache ($archive)" >&2
  "$P" template import "$archive" >&2
else
  echo "prepare: template $name $key not cached: building it" >&2
  "$P" template build "$name" "$@" >&2
  mkdir -p "$cache"
  rm -f "$cache/$name-"*.prsa # older keys of this template
  "$P" template export "$name" >"$archive.tmp"
  mv "$archive.tmp" "$archive"
fi
"$P" pool up --template "$name" --size "${POOL_SIZE:-4}" >&2
echo "key=$key"
