#!/usr/bin/env bash
# Tests the container image (packaging/container, scripts/build-image.sh)
# the three ways docs/packaging.md runs it, each with podman, with no
# network (--network=none; nothing is added to the host's network), and
# each ending with a lease that `pristine verify` finds identical to its
# template after an earlier holder of the same slot changed it:
#
#   privileged    --privileged, PRISTINE_SCRATCH=2G: a RAM-backed btrfs
#                 scratch made in the container (snapshots), taken down
#                 when the container stops
#   xfs-volume    unprivileged, an XFS filesystem with reflink (made here
#                 on a loop device) mounted at the root as a volume
#   overlay       unprivileged, the root on the container's own storage
#                 (overlay): plain copies, in-place resets
#
#   bash scripts/test-image.sh [IMAGE]     (as root; default: the image
#                                          scripts/release.sh saves with
#                                          RELEASE_IMAGE=1, loaded from it)
#
# Every run shares the host's record of server ids (/var/lib/pristine-ids),
# as docs/packaging.md says to: a slot's server in a container runs under
# an id of the host's, which no other tree on the host may get.
#
# Skips, saying why, when not root or without podman. Every container,
# mount, loop device and directory it makes is removed at exit, whatever
# happens.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "test-image: $(date -u +%T) $*"; }
die() { echo "test-image: FAILED: $*" >&2; exit 1; }
skip() { echo "test-image: SKIP: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root (podman with root's storage, loop devices): sudo bash $0"
command -v podman >/dev/null || skip "needs podman (apt-get install podman)"
awk '$3 == "cgroup" || $3 == "cgroup2" { found = 1 } END { exit !found }' /proc/mounts ||
  skip "no cgroup hierarchy is mounted (a chroot without /sys/fs/cgroup?): podman runs no container without one"
. scripts/lib/container.sh

image="${1:-}"
if [ -z "$image" ]; then
  arch="$(dpkg --print-architecture)"
  log "building the image (scripts/release.sh with RELEASE_IMAGE=1, $arch only), then loading its archive"
  RELEASE_ARCHES="$arch" RELEASE_CLIENTS=0 RELEASE_IMAGE=1 bash scripts/release.sh >/tmp/pristine-test-image-release.log 2>&1 ||
    { tail -20 /tmp/pristine-test-image-release.log; die "scripts/release.sh failed"; }
  image="$(podman load -q -i "$(ls dist/pristine_*_"$arch".oci.tar)" | sed -n 's/^Loaded image[^:]*: *//p' | tail -1)"
  [ -n "$image" ] || die "podman load of the release's image archive named no image"
fi
mkdir -p -m 0700 /var/lib/pristine-ids # pristine makes it so; a volume's source must exist
name="pristine-image-test-$$"
tmp="$(mktemp -d /var/tmp/pristine-image-test.XXXXXX)"
cleanup() {
  local rc=$?
  set +e
  for c in $(pm ps -a --format '{{.Names}}' | grep "^$name-"); do pm rm -f -t 0 "$c" >/dev/null 2>&1; done
  if mountpoint -q "$tmp/xfs"; then umount "$tmp/xfs" || umount -l "$tmp/xfs"; fi
  rm -rf --one-file-system "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# use C: inside container C, a template, a pool of one slot, a lease that
# changes its database's rows, the slot reset in place, and the next lease
# of it verified against the template; prints the pool's status.
use() {
  # shellcheck disable=SC2016 # expanded in the container
  pm exec -i "$1" sh -ec '
    for i in $(seq 100); do [ -S "$PRISTINE_ROOT/pristine.sock" ] && break; sleep 0.2; done
    cat >/tmp/app.sql <<SQL
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO t VALUES (1, "one"), (2, "two");
SQL
    pristine template build app --from-sql /tmp/app.sql
    pristine pool up --template app --size 1
    eval "$(pristine lease --template app)"
    [ "$(mariadb -N -e "SELECT COUNT(*) FROM t")" = 2 ] || { echo "the first lease does not hold the template"; exit 1; }
    mariadb -e "INSERT INTO t VALUES (3, \"three\"); UPDATE t SET v = \"uno\" WHERE id = 1"
    pristine release "$PRISTINE_LEASE"
    for i in $(seq 300); do
      s="$(pristine pool status --template app --json)"
      case "$s" in *\"resetting\"*) sleep 0.2 ;; *) break ;; esac
    done
    case "$s" in *\"inplace\":\ 1*) echo "the slot was reset in place" ;; *) echo "the slot was not reset in place: $s"; exit 1 ;; esac
    eval "$(pristine lease --template app)"
    pristine verify app "$PRISTINE_LEASE"
    echo "the next lease of the slot verifies clean"
    pristine release "$PRISTINE_LEASE"
    pristine pool status --template app
  '
}

# run KIND PODMAN-RUN-ARGS...: starts the image as KIND, uses it, stops it
# (the daemon brings its pool down on SIGTERM) and checks it exited 0.
run() {
  local kind="$1" c="$name-$1" t0=$SECONDS out
  shift
  log "$kind: podman run $*"
  pm run -d --name "$c" --network=none -v /var/lib/pristine-ids:/var/lib/pristine-ids "${PODMAN_RUN_HOST[@]}" "$@" "$image" >/dev/null ||
    die "$kind: the container did not start"
  out="$(use "$c" 2>&1)" || { echo "$out"; pm logs "$c" 2>&1 | tail -30; die "$kind: template, pool, lease or verify failed"; }
  grep -q "the next lease of the slot verifies clean" <<<"$out" || die "$kind: no verified lease"
  grep -q "the slot was reset in place" <<<"$out" || die "$kind: no in-place reset"
  grep -E "backend|reset|memory|processes" <<<"$out" | sed "s/^/test-image:   $kind: /" || true
  # The scratch image a privileged run made in the container's /dev/shm:
  # no loop device may still hold it once the container stopped.
  local imgs img
  imgs="$(pm exec "$c" sh -c 'ls /dev/shm/pristine-*.img 2>/dev/null' || true)"
  pm stop -t 120 "$c" >/dev/null
  for img in $imgs; do
    ! losetup -a | grep -qF "($img)" || { losetup -a; die "$kind: a loop device of $img outlived the container"; }
  done
  local rc
  rc="$(pm inspect -f '{{.State.ExitCode}}' "$c")"
  [ "$rc" = 0 ] || { pm logs "$c" 2>&1 | tail -30; die "$kind: the daemon exited $rc on SIGTERM"; }
  LAST_OUT="$out"
  pm rm "$c" >/dev/null
  log "$kind: passed in $((SECONDS - t0)) s"
}

run privileged --privileged --shm-size=3g -e PRISTINE_SCRATCH=2G
grep -q 'btrfs' <<<"$LAST_OUT" || die "privileged: the pool is not on the btrfs scratch"

truncate -s 4G "$tmp/xfs.img"
mkfs.xfs -q -m reflink=1 "$tmp/xfs.img"
mkdir "$tmp/xfs"
mount -o loop "$tmp/xfs.img" "$tmp/xfs"
run xfs-volume -v "$tmp/xfs:/var/lib/pristine"
grep -q 'reflink' <<<"$LAST_OUT" || die "xfs-volume: the pool does not use reflinks"

run overlay
grep -q 'cop' <<<"$LAST_OUT" || die "overlay: the pool does not use plain copies"
log "PASS: privileged, xfs-volume and overlay each served a lease that verified clean ($SECONDS s)"
