#!/bin/sh
# The container's entrypoint: `pristine serve` on $PRISTINE_ROOT, with its
# arguments. With PRISTINE_SCRATCH=SIZE (a privileged container) it first
# makes a RAM-backed btrfs scratch filesystem of that size
# (`pristine scratch up`) and takes it down after the daemon exits, so that
# no loop device outlives the container.
set -eu
root="${PRISTINE_ROOT:-/var/lib/pristine}"
mkdir -p "$root"
if [ -z "${PRISTINE_SCRATCH:-}" ]; then
	exec pristine serve --root "$root" "$@"
fi
pristine scratch up --size "$PRISTINE_SCRATCH"
pristine serve --root "$root" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM INT
rc=0
wait "$pid" || rc=$?
# A signal ends that wait at once: wait again, for the daemon to bring its
# pools down and for its own exit status.
if [ "$rc" -gt 128 ]; then
	rc=0
	wait "$pid" || rc=$?
fi
pristine scratch down || rc=1
exit "$rc"
