#!/usr/bin/env bash
# Tests the Debian package in a fresh Debian 12 root, as a new machine gets
# it:
#
#   bash scripts/test-deb.sh [PATH.deb]     (as root; default: build it)
#
# Builds dist/pristine_*_ARCH.deb for this machine's architecture
# (scripts/release.sh) unless given one, makes a Debian 12 root
# (debootstrap --variant=minbase from the machine's Debian mirror, cached
# as a tarball under $PRISTINE_DEB_TEST_CACHE, default
# /var/cache/pristine-deb-test, and unpacked afresh each run), and there:
#
#   1. systemd installed (as on a Debian machine, though it does not run
#      in the root), then `apt-get install ./pristine_*.deb` pulls MariaDB,
#      btrfs-progs and xfsprogs, creates the pristine account and enables
#      the service; the unit is checked with `systemd-analyze verify`;
#   2. the service is started the way systemd would start it: a chroot has
#      no systemd as PID 1, so the unit's Environment= and ExecStart= line
#      run in a cgroup of their own (Delegate=yes), with its LimitNOFILE and
#      NoNewPrivileges;
#   3. `pristine scratch up`, a template built, a pool up and a lease taken
#      through that daemon, queried and released;
#   4. `apt-get remove pristine` stops the daemon and its pools and keeps
#      /var/lib/pristine; `apt-get purge pristine` removes it, the scratch
#      filesystem and the account: nothing of pristine left running or
#      mounted.
#
# Skips, saying why, when not root or without debootstrap. Everything it
# mounts or starts is undone at exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
log() { echo "test-deb: $(date -u +%T) $*"; }
die() { echo "test-deb: FAILED: $*" >&2; exit 1; }
skip() { echo "test-deb: SKIP: $*"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mounts): sudo bash $0"
command -v debootstrap >/dev/null || skip "needs debootstrap (apt-get install debootstrap)"
command -v dpkg >/dev/null || skip "needs dpkg (a Debian machine)"
. scripts/lib/apt.sh
. scripts/lib/bookworm.sh

deb="$(package_deb test-deb "${1:-}")"

# --- the root, and everything to undo ---
cache="${PRISTINE_DEB_TEST_CACHE:-/var/cache/pristine-deb-test}"
r="$(mktemp -d /var/tmp/pristine-deb-test.XXXXXX)"
MOUNTS=()
SERVE=""
cgroup=""
cleanup() {
  local rc=$? i p m
  set +e
  for p in /proc/[0-9]*; do
    case "$(readlink "$p/root" 2>/dev/null)" in "$r" | "$r"/*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
  done
  sleep 0.5
  awk -v r="$r/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    case " ${MOUNTS[*]} " in *" $m "*) continue ;; esac
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"; done
  [ -z "$cgroup" ] || find "$cgroup" -depth -type d -exec rmdir {} + 2>/dev/null
  if grep -q " $r" /proc/mounts; then
    echo "test-deb: still mounted under $r, not removing it" >&2
  else
    rm -rf --one-file-system "$r"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tar -C "$r" -xf "$(bookworm_tar "$cache")"
chmod 0755 "$r" # a machine's / (mktemp made it 0700)
copy_apt_conf "$r"
cp /etc/resolv.conf "$r/etc/resolv.conf"
# No service starts by itself in the root (mariadb-server's postinst
# would start one): the test starts pristine's.
printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d" && chmod 755 "$r/usr/sbin/policy-rc.d"
mount --bind "$r" "$r"; mount --make-private "$r"; MOUNTS+=("$r")
mount -t proc proc "$r/proc"; MOUNTS+=("$r/proc")
mount -t sysfs sysfs "$r/sys"; MOUNTS+=("$r/sys")
# The host's cgroup tree, where the daemon makes its slots' groups.
mount --rbind /sys/fs/cgroup "$r/sys/fs/cgroup"; MOUNTS+=("$r/sys/fs/cgroup")
mount -t devtmpfs devtmpfs "$r/dev"; MOUNTS+=("$r/dev")
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"; MOUNTS+=("$r/dev/pts")
mount -t tmpfs -o size=4g,mode=1777 tmpfs "$r/dev/shm"; MOUNTS+=("$r/dev/shm")
# The host's record of server ids (internal/svcuser): the root's daemon
# runs its servers under ids of the host's, so it claims them in the same
# record as the host's pristine (tests running beside this one), never in
# one of its own.
mkdir -p -m 0700 /var/lib/pristine-ids "$r/var/lib/pristine-ids"
mount --bind /var/lib/pristine-ids "$r/var/lib/pristine-ids"; MOUNTS+=("$r/var/lib/pristine-ids")
in_root() { chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
# running_in_root: the processes whose root is the test's (none of the
# host's).
running_in_root() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
  done
  return 0
}

# --- 1. install ---
cp "$deb" "$r/tmp/"
log "apt-get install systemd (as on a Debian machine), then ./$(basename "$deb") (with MariaDB, btrfs-progs, xfsprogs)"
t0=$SECONDS
in_root sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd && apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb")" >"$r/tmp/install.log" 2>&1 ||
  { tail -30 "$r/tmp/install.log"; die "apt-get install of the package failed"; }
log "installed in $((SECONDS - t0)) s"
in_root getent passwd pristine | grep -q ':/usr/sbin/nologin$' || die "postinst made no pristine system account"
in_root sh -c 'dpkg -L pristine' | grep -qx /usr/share/man/man1/pristine-serve.1.gz || die "the package has no man page pristine-serve(1)"
# Printed through the shell's stderr: tee /dev/stderr would open the file
# stderr goes to anew and truncate a log the run writes to.
v="$(in_root pristine --version)" || die "pristine --version failed in the root"
echo "$v" >&2
grep -q 'server: /usr/sbin/mariadbd' <<<"$v" || die "pristine --version found no server in the root"
unit="$r/lib/systemd/system/pristine.service"
[ -f "$unit" ] || die "the package has no unit at /lib/systemd/system/pristine.service"
if command -v systemd-analyze >/dev/null; then
  out="$(systemd-analyze verify --man=no --root="$r" /lib/systemd/system/pristine.service 2>&1)" || die "systemd-analyze verify: $out"
  [ -z "$out" ] || die "systemd-analyze verify has complaints: $out"
  log "systemd-analyze verify: the unit is clean"
else
  log "no systemd-analyze here: the unit is not verified"
fi

# --- 2. the service, as systemd would start it ---
[ -L "$r/etc/systemd/system/multi-user.target.wants/pristine.service" ] || die "postinst did not enable pristine.service"
unit_value() { sed -n "s/^$1=//p" "$unit"; }
exec_start="$(unit_value ExecStart)"
nofile="$(unit_value LimitNOFILE)"
[ "$nofile" = 65536 ] || die "the unit's LimitNOFILE is $nofile, not 65536 (the API's full connection cap, 16384, is a quarter of it)"
if [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$nofile" ] && ! prlimit --pid $$ --nofile="$nofile:$nofile" 2>/dev/null; then
  log "this machine caps open files at $(ulimit -Hn) and may not raise it: the service runs with that limit, not LimitNOFILE=$nofile"
  nofile="$(ulimit -Hn)"
fi
[ "$(unit_value NoNewPrivileges)" = yes ] || die "the unit lacks NoNewPrivileges=yes"
envs=()
while read -r e; do [ -n "$e" ] && envs+=("$e"); done < <(unit_value Environment)
# The unified (v2) hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on
# a hybrid host.
v2="$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)"
[ -n "$v2" ] || skip "no cgroup v2 hierarchy to start the service in, as systemd would"
cgroup="$v2/pristine-deb-test-$$.service"
mkdir "$cgroup"
log "starting the unit's ExecStart= ($exec_start) in cgroup ${cgroup#/sys/fs/cgroup}, LimitNOFILE=$nofile, NoNewPrivileges"
(
  echo "$BASHPID" >"$cgroup/cgroup.procs"
  exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "${envs[@]}" \
    prlimit --nofile="$nofile:$nofile" -- setpriv --no-new-privs -- $exec_start
) >"$r/tmp/serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 100); do [ -S "$r/var/lib/pristine/pristine.sock" ] && break; sleep 0.1; done
[ -S "$r/var/lib/pristine/pristine.sock" ] || { cat "$r/tmp/serve.log"; die "the service made no socket at /var/lib/pristine/pristine.sock"; }

# --- 3. a template and a lease through it ---
log "scratch up, template build, pool up, lease"
cat >"$r/tmp/app.sql" <<'SQL'
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO t VALUES (1, 'one'), (2, 'two');
SQL
in_root sh -ec '
  pristine scratch up --size 2G
  pristine template build app --from-sql /tmp/app.sql
  pristine pool up --template app --size 2
  eval "$(pristine lease --template app)"
  [ "$(mariadb -N -e "SELECT COUNT(*) FROM t")" = 2 ] || { echo "the lease does not hold the template"; exit 1; }
  mariadb -e "INSERT INTO t VALUES (3, \"three\")"
  pristine release "$PRISTINE_LEASE"
  pristine pool status
' >"$r/tmp/use.log" 2>&1 || { cat "$r/tmp/use.log"; tail -20 "$r/tmp/serve.log"; die "template, pool or lease through the service failed"; }
serves="$(running_in_root | grep -c 'pristine serve' || true)"
[ "$serves" = 1 ] || { running_in_root; die "expected the service's daemon alone, found $serves pristine serve processes"; }
[ "$(grep -c ^ "$cgroup/cgroup.procs" 2>/dev/null)" -ge 1 ] || die "the daemon left its cgroup"
compgen -G "$cgroup/pristine/*/slot-*" >/dev/null ||
  die "the slots' servers are not in cgroups below the service's"
log "a lease was taken and released through the service; $(grep -c mariadbd <(running_in_root)) servers run; pool status:"
grep -E '^pool |backend|slot processes|memory' "$r/tmp/use.log" | sed 's/^/test-deb:   /' || true

# --- 4. remove, then purge ---
log "apt-get remove pristine"
in_root apt-get remove -y -qq pristine >"$r/tmp/remove.log" 2>&1 || { cat "$r/tmp/remove.log"; die "apt-get remove failed"; }
for _ in $(seq 100); do kill -0 "$SERVE" 2>/dev/null || break; sleep 0.2; done
! kill -0 "$SERVE" 2>/dev/null || die "the daemon still runs after apt-get remove"
left="$(running_in_root)"
[ -z "$left" ] || die "still running in the root after apt-get remove: $left"
[ -d "$r/var/lib/pristine/data/templates" ] || die "apt-get remove did not keep /var/lib/pristine"
log "removed: nothing runs, /var/lib/pristine kept"
log "apt-get purge pristine"
in_root apt-get purge -y -qq pristine >"$r/tmp/purge.log" 2>&1 || { cat "$r/tmp/purge.log"; die "apt-get purge failed"; }
[ ! -e "$r/var/lib/pristine" ] || die "apt-get purge left /var/lib/pristine"
! grep -qE " $r/var/lib/pristine(/| )" /proc/mounts || die "apt-get purge left a mount under /var/lib/pristine"
! ls "$r"/dev/shm/pristine-*.img >/dev/null 2>&1 || die "apt-get purge left the scratch image in /dev/shm"
! in_root getent passwd pristine >/dev/null || die "apt-get purge left the pristine account"
[ ! -e "$r/etc/systemd/system/multi-user.target.wants/pristine.service" ] || die "apt-get purge left pristine.service enabled"
left="$(running_in_root)"
[ -z "$left" ] || die "still running in the root after apt-get purge: $left"
log "PASS: installed, served, leased, removed and purged (nothing running or mounted) in $SECONDS s"
