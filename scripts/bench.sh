#!/usr/bin/env bash
# Regenerates the method comparison of docs/benchmarks.md from runs (as root;
# takes about an hour on 2 cores):
#   1. on a RAM-backed btrfs scratch filesystem: every method on every
#      workload (demo, demo10, tables30k) for 1, 10 and 200 copies, and the
#      service section (pool up, lease, memory, resets of a 100 MB and a
#      ~2 GB template);
#   2. on a RAM-backed XFS (reflink=1): pristine slots of the demo template;
#   3. dump|load and myloader of the demo template with and without
#      eatmydata, as a ceiling on what durability-off settings can buy;
# then rewrites the method comparison of docs/benchmarks.md (between its
# bench-runs markers; the rest of the page is kept) from the three runs'
# JSON (docs/bench/*/bench.json).
# Environment: PRISTINE_BENCH_ROOT (default /var/tmp/pristine-bench),
# MAX_TIME (budget per method and workload, default 45s), SCRATCH_SIZE
# (default 12G: a sparse image in SCRATCH_DIR, default /dev/shm, so at most
# that much RAM; methods stop when it is full), MANY_TABLES (tables of the
# many-table workload, default 30000), BENCH_ARGS (more flags for every run,
# e.g. "--scale 0.05 --many-tables 300 --copies 1,2" for a quick check),
# EATMYDATA=0 (skip step 3).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="${PRISTINE_BENCH_ROOT:-/var/tmp/pristine-bench}"
MAX_TIME="${MAX_TIME:-45s}"
SIZE="${SCRATCH_SIZE:-12G}"
SCRATCH_DIR="${SCRATCH_DIR:-/dev/shm}"
MANY_TABLES="${MANY_TABLES:-30000}"
if [ "$(id -u)" != 0 ]; then
	echo "bench.sh: needs root to mount the scratch filesystems; run it with sudo" >&2
	exit 1
fi
command -v mydumper >/dev/null || { echo "bench.sh: mydumper not found: apt-get install mydumper" >&2; exit 1; }
bash scripts/build.sh
P=(bin/pristine --root "$ROOT")
B=(bin/pristine-bench --root "$ROOT") # the benchmarks live in their own binary
trap '"${P[@]}" scratch down >/dev/null 2>&1 || true' EXIT
echo "bench.sh: load average $(cut -d' ' -f1-3 /proc/loadavg), $(awk '/MemAvailable/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo) available" >&2

run() { # run FS OUT ARGS...: one bench on a fresh scratch filesystem
	local fs="$1" out="$2"
	shift 2
	"${P[@]}" scratch down >/dev/null 2>&1 || true
	"${P[@]}" scratch up --size "$SIZE" --fs "$fs" --dir "$SCRATCH_DIR" >&2
	"${B[@]}" bench --verbose --max-time "$MAX_TIME" --out "docs/bench/$out" "$@" ${BENCH_ARGS:-} >/dev/null
	"${P[@]}" scratch down >&2
}

run btrfs btrfs --reset --many-tables "$MANY_TABLES"
run xfs xfs --workload demo --methods thin --dbs-per-slot 1
EAT=()
if [ "${EATMYDATA:-1}" = 1 ] && ls /usr/lib/*/libeatmydata.so* >/dev/null 2>&1; then
	run btrfs eatmydata --workload demo --methods dumpload,myloader --eatmydata
	EAT=(docs/bench/eatmydata/bench.json)
fi
list="docs/bench/btrfs/bench.json,docs/bench/xfs/bench.json"
for f in "${EAT[@]}"; do list="$list,$f"; done
"${B[@]}" front-page --bench-runs "$list"
