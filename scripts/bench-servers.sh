#!/usr/bin/env bash
# The server matrix's benchmark (issue 21, "Numbers to reach"): runs
# `pristine demo` (or the slot start measurement) against MySQL 9.7 or
# MariaDB 11.8 in the Debian roots that scripts/servers.sh builds, or
# against the machine's own server, on a btrfs scratch filesystem made for
# the run. Not part of CI: it only reports (docs/benchmarks.md, "The
# server matrix").
#
# Usage (as root; build or refresh the roots first with
# `sudo bash scripts/servers.sh --build-only`):
#
#   sudo bash scripts/bench-servers.sh mysql-9.7                      # demo, 200 slots, 3 runs
#   sudo bash scripts/bench-servers.sh mariadb-11.8 -- --slots 100 --runs 3
#   sudo bash scripts/bench-servers.sh host -- --slots 200 --runs 3   # the machine's MariaDB
#   sudo bash scripts/bench-servers.sh mysql-9.7 --scratch disk --scratch-size 60G
#   PRISTINE_MEASURE_N=4 PRISTINE_MEASURE_THREADS=1 \
#     sudo -E bash scripts/bench-servers.sh mysql-9.7 --measure      # TestMeasureSlotStart
#   SCALE=9 RUNS=3 sudo -E bash scripts/bench-servers.sh mysql-9.7 --capture
#   sudo bash scripts/bench-servers.sh mysql-9.7 --vs host --soak 1500 -- --slots 200 --runs 2
#   sudo bash scripts/bench-servers.sh mysql-9.7 --dbs 8 --vs host -- --slots 200 --runs 2
#
# Arguments after -- go to `pristine demo` (default: --slots 200 --runs 3).
# --scratch ram (default) puts the btrfs image in /dev/shm, --scratch disk
# in /var/tmp (for pools whose clones do not fit in memory beside their
# servers); --scratch-size is the image's size (sparse, default 24G).
# --measure runs internal/pool's TestMeasureSlotStart on the copy backend
# instead, with PRISTINE_MEASURE_EXTRA, _N, _THREADS and _SMAPS passed on,
# and PRISTINE_MEASURE_ENV="K=V ..." added to the servers' environment
# (e.g. the allocator's settings).
# --soak CYCLES follows the demo with `pristine-bench soak --template demo
# --clients 8 --hold 0s --size 16 --cycles CYCLES` on the demo's template;
# --soak-unchanged releases the soak's leases as unchanged (the default of
# the Spring and Node clients), so each is checked, then reset.
# --vs OTHER runs the same (demo, and the soak with --soak) on OTHER next,
# each in a run of its own, then prints both sides' figures with their
# ratios and the MySQL parity bounds (`pristine-bench vs`): e.g. mysql-9.7
# --vs host is MySQL 9.7 against the machine's MariaDB in one command.
# --dbs K builds the first server's demo template with K databases per
# slot (`pristine demo --dbs-per-slot K`: --slots databases in slots/K
# servers); with --vs the other server keeps one per slot.
# --measure-reset runs internal/pool's TestMeasureResetPaths instead: the
# full and the in-place reset of one demo slot, 20 times each, with the
# CPU of each party and every in-place reset's phases (its debug log),
# and TestMeasureIdleAfterReset: the in-place reset of a table with an
# AUTO_INCREMENT counter, and the CPU of its slot left idle after it.
# --capture (MySQL only) runs scripts/lib/bench-capture-mysql.sh in the
# root: a 1 GB demo schema (SCALE, default 9) on a MySQL started by hand
# with the clone plugin, then pristine's physical capture through it beside
# mysqldump | mysql of the same schema, RUNS times (default 3).
#
# The root is never written: the run sees it through an overlay (its
# writes go to a directory of the run, thrown away at the end), chroots
# into that, and makes every mount (the overlay, /proc, a private
# /dev/shm, the scratch filesystem) in a mount namespace of its own, so
# they vanish with it and a concurrent scripts/servers.sh neither sees
# nor kills this run's servers. Everything is removed when the script
# exits, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

ROOTS="${PRISTINE_SERVER_ROOTS:-/var/cache/pristine-server-roots}"
declare -A SERVERD=([mariadb-11.8]=/usr/sbin/mariadbd [mysql-9.7]=/usr/sbin/mysqld)

die() { echo "bench-servers: FAILED: $*" >&2; exit 1; }
log() { echo "bench-servers: $*"; }

[ "$(id -u)" -eq 0 ] || die "run as root: chroot, loop devices and mounts need it (sudo bash $0)"
server="" scratch=ram size=24G measure=0 soak=0 unchanged=0 vs="" out="" dbs=1
demo=()
while [ $# -gt 0 ]; do
  case "$1" in
    mysql-9.7|mariadb-11.8|host) server="$1" ;;
    --scratch) shift; scratch="${1:-}" ;;
    --scratch-size) shift; size="${1:-}" ;;
    --measure) measure=1 ;;
    --capture) measure=2 ;;
    --measure-reset) measure=3 ;;
    --soak) shift; soak="${1:-}" ;;
    --soak-unchanged) unchanged=1 ;;
    --vs) shift; vs="${1:-}" ;;
    --dbs) shift; dbs="${1:-}" ;;
    --out) shift; out="${1:-}" ;; # where a side of --vs saves its JSON
    --) shift; demo=("$@"); break ;;
    *) die "unknown argument $1: want mysql-9.7, mariadb-11.8 or host, --scratch ram|disk, --scratch-size SIZE, --measure, --measure-reset, --capture, --soak CYCLES, --soak-unchanged, --vs OTHER, --dbs K, then -- and pristine demo's flags" ;;
  esac
  shift
done
[ -n "$server" ] || die "name a server: mysql-9.7, mariadb-11.8 or host"
[[ "$soak" =~ ^[0-9]+$ ]] || die "--soak $soak: want a number of cycles"
[[ "$dbs" =~ ^[1-9][0-9]*$ ]] || die "--dbs $dbs: want a number of databases per slot"
if [ -n "$vs" ]; then
  case "$vs" in mysql-9.7|mariadb-11.8|host) ;; *) die "--vs $vs: want mysql-9.7, mariadb-11.8 or host" ;; esac
  [ "$measure" -eq 0 ] || die "--vs compares demo runs: leave out --measure, --measure-reset and --capture"
  sides="$(mktemp -d /var/tmp/pristine-bench-vs-XXXXXX)"
  trap 'rm -rf "$sides"' EXIT
  GO="$(cat .go-path 2>/dev/null || command -v go)"
  CGO_ENABLED=0 "$GO" build -trimpath -o "$sides/pristine-bench" ./cmd/pristine-bench
  for s in "$server" "$vs"; do
    mkdir -p "$sides/$s"
    k=1
    [ "$s" != "$server" ] || k="$dbs"
    soakflags=(--soak "$soak")
    [ "$unchanged" -eq 0 ] || soakflags+=(--soak-unchanged)
    bash "$0" "$s" --out "$sides/$s" "${soakflags[@]}" --scratch "$scratch" --scratch-size "$size" --dbs "$k" -- "${demo[@]}"
  done
  "$sides/pristine-bench" vs "$sides/$server" "$sides/$vs"
  exit 0
fi
[ "$measure" -ne 2 ] || [ "$server" = mysql-9.7 ] || die "--capture measures MySQL's clone plugin: name mysql-9.7"
case "$scratch" in ram) imgdir=/dev/shm ;; disk) imgdir=/var/tmp ;; *) die "--scratch $scratch: want ram or disk" ;; esac
[ ${#demo[@]} -gt 0 ] || demo=(--slots 200 --runs 3)
[ "$dbs" -eq 1 ] || demo+=(--dbs-per-slot "$dbs")
r=""
if [ "$server" != host ]; then
  r="$ROOTS/$server"
  [ -f "$r/.pristine-versions" ] || die "no $server root at $r: build it with sudo bash scripts/servers.sh --build-only $server"
fi
for tool in unshare mkfs.btrfs; do command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install util-linux btrfs-progs)"; done

# --- built on the host: static binaries (no cgo) run on the roots' newer glibc ---
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
work="$(mktemp -d /var/tmp/pristine-bench-XXXXXX)"
chmod 0755 "$work"
img="$(mktemp "$imgdir/pristine-bench-XXXXXX.img")"
trap 'rm -rf --one-file-system "$work"; rm -f "$img"' EXIT
trap 'exit 130' INT TERM
log "building bin/pristine (and the pool test binary with --measure) into $work"
CGO_ENABLED=0 "$GO" build -trimpath -o "$work/pristine" ./cmd/pristine
[ "$soak" -eq 0 ] || CGO_ENABLED=0 "$GO" build -trimpath -o "$work/pristine-bench" ./cmd/pristine-bench
case "$measure" in 1|3) CGO_ENABLED=0 "$GO" test -c -o "$work/pool.test" ./internal/pool ;; esac
cp scripts/lib/bench-capture-mysql.sh "$work/"
truncate -s "$size" "$img"
# Made and mounted as `pristine scratch up` makes its btrfs (internal/scratch):
# one copy of data and metadata, no data checksums.
mkfs.btrfs -q -m single -d single "$img" >/dev/null

# --- the run, in a mount namespace of its own ---
export work img r server measure repo soak unchanged out
export SERVERD_PATH="${SERVERD[$server]:-}"
unshare --mount --propagation private bash -s -- "${demo[@]}" <<'INNER'
set -euo pipefail
sys=""            # what the run chroots into ("" on the host)
mounts=()
cleanup() {
  local rc=$? i p
  # The demo reaps its servers; whatever still runs in this run's tree
  # (a killed demo's) is stopped by pid, found by its root or its files.
  for p in /proc/[0-9]*; do
    local root
    root="$(readlink "$p/root" 2>/dev/null || true)"
    if { [ -n "$sys" ] && [ "$root" = "$sys" ]; } || grep -qs "$work" "$p/cmdline"; then
      [ "${p#/proc/}" = "$$" ] || kill -9 "${p#/proc/}" 2>/dev/null || true
    fi
  done
  sleep 0.5
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}" || true; done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
load() { cut -d' ' -f1-3 /proc/loadavg; }

if [ -n "$r" ]; then
  # The root through an overlay: the run's writes land in $work/upper.
  sys="$work/sys"
  mkdir -p "$work/upper" "$work/ovwork" "$sys"
  mount -t overlay overlay -o "lowerdir=$r,upperdir=$work/upper,workdir=$work/ovwork" "$sys"; mounts+=("$sys")
  mount -t proc proc "$sys/proc"; mounts+=("$sys/proc")
  if [ "$measure" -eq 3 ]; then
    # The reset measurement makes a btrfs scratch of its own: loop devices,
    # and /sys to find which image a loop device holds.
    mount -t devtmpfs devtmpfs "$sys/dev"; mounts+=("$sys/dev")
    mount -t sysfs sysfs "$sys/sys"; mounts+=("$sys/sys")
  fi
  mkdir -p "$sys/dev/shm"
  mount -t tmpfs -o size=8g,mode=1777 tmpfs "$sys/dev/shm"; mounts+=("$sys/dev/shm")
  mkdir -p "$sys/opt/bench"
  cp "$work/pristine" "$sys/usr/local/bin/pristine"
  [ ! -f "$work/pristine-bench" ] || cp "$work/pristine-bench" "$sys/usr/local/bin/pristine-bench"
  [ ! -f "$work/pool.test" ] || cp "$work/pool.test" "$sys/opt/bench/"
  cp "$work/bench-capture-mysql.sh" "$sys/opt/bench/"
  ver="$(chroot "$sys" "$SERVERD_PATH" --no-defaults --version)"
else
  mkdir -p "$work/host/opt/bench"
  ver="$(cd /tmp && "$work/pristine" --version 2>&1 | head -1) / $(mariadbd --no-defaults --version 2>/dev/null || mysqld --no-defaults --version)"
fi
echo "bench-servers: $server: $ver"
proot="/opt/bench/root"
mkdir -p "${sys:-$work/host}$proot"
mount -o loop,nodatasum "$img" "${sys:-$work/host}$proot"; mounts+=("${sys:-$work/host}$proot")
chmod 0755 "${sys:-$work/host}$proot"

run() { # run CMD...: in the root (chroot, a clean environment) or on the host
  if [ -n "$sys" ]; then
    chroot "$sys" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      HOME=/root TMPDIR=/tmp PRISTINE_MARIADBD="$SERVERD_PATH" PRISTINE_SERVER_MATRIX="$server" \
      PRISTINE_MEASURE_START="${PRISTINE_MEASURE_START:-}" PRISTINE_MEASURE_FS="${PRISTINE_MEASURE_FS:-}" \
      PRISTINE_MEASURE_EXTRA="${PRISTINE_MEASURE_EXTRA:-}" PRISTINE_MEASURE_N="${PRISTINE_MEASURE_N:-}" \
      PRISTINE_MEASURE_THREADS="${PRISTINE_MEASURE_THREADS:-}" PRISTINE_MEASURE_SMAPS="${PRISTINE_MEASURE_SMAPS:-}" \
      PRISTINE_MEASURE_RESET="${PRISTINE_MEASURE_RESET:-}" \
      SCALE="${SCALE:-}" RUNS="${RUNS:-}" ${PRISTINE_MEASURE_ENV:-} sh -c 'cd / && exec "$@"' sh "$@"
  else
    (cd / && "$@")
  fi
}
echo "bench-servers: load average before: $(load)"
if [ "$measure" -eq 2 ]; then
  run sh /opt/bench/bench-capture-mysql.sh
elif [ "$measure" -eq 1 ] || [ "$measure" -eq 3 ]; then
  if [ "$measure" -eq 1 ]; then
    export PRISTINE_MEASURE_START=1 PRISTINE_MEASURE_FS=copy
    test_name='TestMeasureSlotStart$'
  else
    export PRISTINE_MEASURE_RESET=1
    test_name='TestMeasure(ResetPaths|IdleAfterReset)$'
  fi
  if [ -n "$sys" ]; then
    run /opt/bench/pool.test -test.count=1 -test.v -test.timeout 30m -test.run "$test_name"
  else
    run "$work/pool.test" -test.count=1 -test.v -test.timeout 30m -test.run "$test_name"
  fi
else
  if [ -n "$sys" ]; then
    bin=/usr/local/bin proot_run="$proot"
  else
    bin="$work" proot_run="$work/host$proot"
  fi
  keep=() json=()
  [ "$soak" -eq 0 ] || keep=(--keep)
  [ -z "$out" ] || json=(--json)
  if [ -n "$out" ]; then
    run "$bin/pristine" --root "$proot_run" "${json[@]}" demo "${keep[@]}" "$@" >"$out/demo.json"
  else
    run "$bin/pristine" --root "$proot_run" demo "${keep[@]}" "$@"
  fi
  if [ "$soak" -gt 0 ]; then
    echo "bench-servers: soak, $soak cycles; load average before: $(load)"
    soak_cmd=("$bin/pristine-bench" --root "$proot_run" "${json[@]}" soak --template demo --clients 8 --hold 0s --size 16 --cycles "$soak")
    [ "$unchanged" -eq 0 ] || soak_cmd+=(--unchanged)
    if [ -n "$out" ]; then run "${soak_cmd[@]}" >"$out/soak.json"; else run "${soak_cmd[@]}"; fi
    # The soak brings its pool down itself; a pool left up (none, or a
    # failed soak's) goes here, and no daemon answering is fine.
    run "$bin/pristine" --root "$proot_run" pool down --all >/dev/null 2>&1 || true
  fi
fi
echo "bench-servers: load average after: $(load)"
INNER
