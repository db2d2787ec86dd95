#!/usr/bin/env bash
# The main job on its defaults: install what is needed, build pristine, then
# build the demo template, bring up a 200-slot pool, lease a slot, query it,
# release it, and print the timings beside mariadb-dump | mariadb. Leaves
# pristine in /usr/local/bin (scripts/install-bin.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/install-bin.sh
exec bin/pristine demo "$@"
