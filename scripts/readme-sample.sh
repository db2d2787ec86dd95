#!/usr/bin/env bash
# Makes the README's sample output from a real run, never by hand:
#   1. builds pristine (scripts/build.sh) and runs `pristine demo --json`,
#      the job of the README's first command (scripts/demo.sh), on a root
#      of its own (a fresh RAM-backed btrfs scratch filesystem, as on a
#      fresh machine), and removes that root and its scratch filesystem
#      afterwards (the demo stops its own servers; a root still mounted,
#      say after a crash, is left in place and named);
#   2. saves the run, with its machine (CPU, cores, memory, kernel), the
#      load average around every step, its date and the server's and
#      pristine's versions, as docs/runs/<date>-<cores>c-<memory>g.json;
#   3. rewrites the README's sample and the summary table at the top of
#      docs/benchmarks.md from it (`pristine-bench front-page`), between
#      their marker comments. docs/frontpage_test.go fails when either
#      differs from what the saved runs they name render to.
# Usage (as root): bash scripts/readme-sample.sh [pristine demo flags]
#        bash scripts/readme-sample.sh --from docs/runs/FILE.json
# --from renders from a saved run and measures nothing (no root needed).
# PRISTINE_README_ROOT: the parent of the demo's root (default /var/tmp).
set -euo pipefail

# cleanup removes the demo's root and its scratch filesystem, and the
# demo's output once saved.
cleanup() {
	bin/pristine --root "$root" scratch down >/dev/null 2>&1 || true
	if grep -q " $root[/ ]" /proc/self/mountinfo; then
		echo "readme-sample.sh: $root is still mounted; left it in place (pristine --root $root scratch down)" >&2
	else
		rm -rf --one-file-system "$root"
	fi
	rm -f "$out"
}

# main is the whole script, read by bash before it runs: the script may
# change on disk while a demo runs (a checkout) without breaking it.
main() {
	cd "$(dirname "$0")/.."

	if [ "${1:-}" = --from ]; then
		run="${2:?--from needs a saved run: docs/runs/FILE.json}"
		bash scripts/build.sh
		exec bin/pristine-bench front-page --run "$run"
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "readme-sample.sh: the demo makes a scratch filesystem, which needs root: run it with sudo" >&2
		exit 1
	fi
	bash scripts/build.sh
	root="$(mktemp -d "${PRISTINE_README_ROOT:-/var/tmp}/pristine-readme.XXXXXX")"
	chmod 0755 "$root" # the servers run as their own account and must reach the root
	out="$(mktemp)"
	trap cleanup EXIT
	echo "readme-sample.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) before the demo ($(nproc) cores)" >&2
	mem="$(awk '/^MemTotal:/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)"
	run="docs/runs/$(date -u +%Y-%m-%d-%H%M)-$(nproc)c-${mem}g.json" # named by its start
	bin/pristine --root "$root" --json demo "$@" >"$out"
	mkdir -p docs/runs
	cp "$out" "$run"
	echo "readme-sample.sh: saved $run" >&2
	bin/pristine-bench front-page --run "$run"
}

main "$@"
exit
