#!/usr/bin/env bash
# The action's scratch step: a RAM-backed btrfs filesystem of
# PRISTINE_SCRATCH_SIZE for the root (`pristine scratch up`, as root), the
# root then handed to the runner's user; nothing when the size is empty.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
size="${PRISTINE_SCRATCH_SIZE:-}"
if [ -z "$size" ]; then
  echo "pristine: no scratch filesystem (scratch-size is empty): the root's own filesystem is used"
  exit 0
fi
p="$(command -v pristine)" || die "pristine is not on PATH: the install step runs first"
as_root "$p" --root "$PRISTINE_ROOT" scratch up --size "$size"
if [ "$(id -u)" -ne 0 ]; then sudo chown -R "$(id -u):$(id -g)" "$PRISTINE_ROOT"; fi
