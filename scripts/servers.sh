#!/usr/bin/env bash
# The server matrix (issue 21): runs pristine's server-facing Go tests and
# its core flow inside Debian roots that carry other servers than the
# machine's own MariaDB (internal/mariadb, internal/template, internal/pool,
# internal/capture, internal/verify (with MySQL's own fidelity corpus in
# MySQL's) and the whole of internal/e2e in both; in MySQL's also the Go
# client, pristinetest, and the Python (pytest, Django) and PHP (PHPUnit,
# Laravel) clients' tests):
#
#   mariadb-11.8  Debian 13 "trixie": mariadb-server, mariadb-client, mariadb-backup
#   mysql-9.7     Debian unstable "sid": mysql-server-core, mysql-client-core
#
# Usage (as root):
#   bash scripts/servers.sh                 every server, every package below
#   bash scripts/servers.sh mysql-9.7       one server
#   bash scripts/servers.sh --build-only    build or refresh the roots, run nothing
#   SERVERS_PACKAGES="./internal/mariadb" SERVERS_RUN='TestStart' bash scripts/servers.sh
#   SERVERS_PACKAGES=none SERVERS_CLIENTS=1 bash scripts/servers.sh mysql-9.7   the clients' tests only
#   SERVERS_COUNT=20 SERVERS_PACKAGES=./internal/mariadb SERVERS_RUN='^TestStartQueryStop$' bash scripts/servers.sh mysql-9.7
#                                           one test 20 times (a flaky one)
#
# A root is made once with debootstrap --variant=minbase and the machine's
# apt configuration (its proxy and validity settings; the Debian mirror of
# its sources), then cached under $PRISTINE_SERVER_ROOTS (default
# /var/cache/pristine-server-roots), outside the checkout. Each run refreshes
# the root's package lists and rebuilds it from scratch when a listed
# package has a newer version than the one installed. A root that cannot be
# built (no network, a package gone) fails the run: nothing is skipped.
#
# The tests are compiled on the host (go test -c, no cgo, so the binaries
# run on any newer glibc), copied with bin/pristine into the root, and run
# there by chroot in the root made a mount point of its own, with /proc,
# /sys, the host's /dev (loop devices for btrfs scratch filesystems), a
# devpts and a private tmpfs on /dev/shm (mount_in); the server is the only
# one installed in the root and is named by PRISTINE_MARIADBD. Every mount
# is undone and every server of the run is gone when the script exits,
# whatever happens. Each package's time is logged with its result.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

ROOTS="${PRISTINE_SERVER_ROOTS:-/var/cache/pristine-server-roots}"
# The server-facing packages: the server driver, template builds, the pool;
# and per server, those that test its own dialect (EXTRA below), unless
# SERVERS_PACKAGES names the packages for every server.
PACKAGES="${SERVERS_PACKAGES:-./internal/mariadb ./internal/template ./internal/pool}"
RUN="${SERVERS_RUN:-}"
# A package's bound: it shares the machine with the other root's packages
# and the other lane (SERVERS_JOBS).
TIMEOUT="${SERVERS_TIMEOUT:-40m}"
# How many of a root's packages and clients' suites run at once. The roots'
# tests mostly wait (server starts, fsync): 2 on 2 cores.
JOBS="${SERVERS_JOBS:-2}"

# server -> suite, packages, server binary.
declare -A SUITE=([mariadb-11.8]=trixie [mysql-9.7]=sid)
# MySQL's root also has what the clients' tests need against a MySQL
# lease: PyMySQL, and cryptography for caching_sha2_password over TCP
# without TLS (PyMySQL encrypts the password with the server's RSA key),
# pytest-xdist and Django (5.2 in sid) for the pytest plugin and the Django
# integration; PHP (8.4) with mysqlnd (pdo_mysql: it asks the server for
# its RSA key itself) and curl, PHPUnit (13) and Laravel (13, from
# php-laravel-framework; php-mockery for its testing layer).
#
# Both roots have what internal/e2e needs of the machine, as the host has
# it (scripts/install-deps.sh): btrfs-progs for `pristine scratch up` and
# the demo's scratch filesystem (with the loop devices of the host's /dev,
# mounted below), iproute2 for the network-namespace test, docker-registry
# for the template cache pushed and pulled through a registry.
E2E_PKGS="btrfs-progs iproute2 docker-registry"
declare -A PKGS=([mariadb-11.8]="mariadb-server mariadb-client mariadb-backup $E2E_PKGS" [mysql-9.7]="mysql-server-core mysql-client-core $E2E_PKGS python3-pytest python3-pytest-xdist python3-pymysql python3-cryptography python3-django php-cli php-mysql php-curl php-xml php-mbstring phpunit php-laravel-framework php-mockery")
declare -A SERVERD=([mariadb-11.8]=/usr/sbin/mariadbd [mysql-9.7]=/usr/sbin/mysqld)
# Packages each server runs beyond PACKAGES: capture (on MySQL logical and
# through the clone plugin) and verify with the fidelity corpus of the
# flavour (testdata/fidelity, testdata/fidelity-mysql); the whole of
# internal/e2e (the CLI end to end: restarts, scratch, the demo small, a
# pool node in network namespaces, the server's own clients; what cannot
# apply skips with its cause, docs/servers.md); on MySQL the Go client and
# pristinetest against MySQL leases. PACKAGE:REGEX runs only the tests
# REGEX matches. Like the other root packages, without -race: the race
# detector runs on the host, where the same code runs.
declare -A EXTRA=([mariadb-11.8]="./internal/capture ./internal/verify ./internal/e2e" [mysql-9.7]="./internal/capture ./internal/verify ./client ./pristinetest ./internal/e2e")
[ -z "${SERVERS_PACKAGES:-}" ] || EXTRA=([mariadb-11.8]="" [mysql-9.7]="")
[ "${SERVERS_PACKAGES:-}" != none ] || PACKAGES=""
# The clients' tests each server runs after its Go packages, unless
# SERVERS_PACKAGES focuses the run (SERVERS_CLIENTS=1 runs them anyway, =0
# never; SERVERS_PYTEST is its older name): on MySQL every test of the
# Python client (pytest; the plugin with xdist; Django's parallel runs) and
# of the PHP client (PHPUnit and its PHPUnit 10+ extension; the Laravel
# suite), leases over TCP and the socket with caching_sha2_password.
declare -A PYTEST=([mariadb-11.8]="" [mysql-9.7]="clients/python/tests")
declare -A PHPUNIT=([mariadb-11.8]="" [mysql-9.7]="clients/php/phpunit.xml")
clients="${SERVERS_CLIENTS:-${SERVERS_PYTEST:-}}"
run_clients=0
if [ "$clients" = 1 ] || [ -z "${SERVERS_PACKAGES:-}$clients" ]; then run_clients=1; fi
# What --version must say: the flavour and the major.minor the matrix is for.
declare -A WANT=([mariadb-11.8]="Ver 11\.8\..*MariaDB" [mysql-9.7]="Ver 9\.7\.")
ALL=(mariadb-11.8 mysql-9.7)

log() { echo "servers: $(date -u +%T) $*"; }
die() { echo "servers: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap and chroot need it (sudo bash $0)"

build_only=0
servers=()
for a in "$@"; do
  case "$a" in
    --build-only) build_only=1 ;;
    mariadb-11.8|mysql-9.7) servers+=("$a") ;;
    *) die "unknown argument $a: want --build-only and/or server names (${ALL[*]})" ;;
  esac
done
[ ${#servers[@]} -gt 0 ] || servers=("${ALL[@]}")

# shellcheck source=lib/apt.sh
source scripts/lib/apt.sh

# --- the run and its roots' jobs ---
# The run compiles the tests once, then runs each root in a job of its own
# (run_root, below), at the same time. It ends its jobs when it ends early
# (a failure, Ctrl-C, a TERM); each job then undoes what it did in its
# root (root_cleanup) before the run removes its scratch directory.
WORK=""
finish() {
  local rc=$? left
  trap '' INT TERM # a second Ctrl-C must not cut the cleanup short
  left="$(jobs -p)"
  if [ -n "$left" ]; then
    # shellcheck disable=SC2086 # one pid a word
    kill -TERM $left 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  [ -z "$WORK" ] || rm -rf "$WORK"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

# Locks: every run holds $ROOTS/.lock shared (what needs the whole cache to
# itself takes it exclusively), and a root's own lock ($ROOTS/SERVER.lock)
# exclusively while it builds, mounts or tests that root. So runs of
# different roots go side by side and two runs of one root queue. A wait
# runs in the background (`& wait`) so that Ctrl-C or a TERM ends it.
mkdir -p "$ROOTS"
exec 9>"$ROOTS/.lock"
if ! flock -n -s 9; then
  log "another scripts/servers.sh holds $ROOTS; waiting for it"
  flock -s 9 &
  wait $!
fi

# --- mounts: every one a root's job makes is listed, and undone when it ends ---
MOUNTS=()
ROOT_MOUNTED=""
# procs_in_root ROOT: the pids of the processes whose root is ROOT.
procs_in_root() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" != "$1" ] || echo "${p#/proc/}"
  done
}
# kill_in_root ROOT: kills what still runs in ROOT (the tests stop their
# servers; a killed test may not have), and says so.
kill_in_root() {
  local i left
  for i in 1 2 3 4 5; do
    left="$(procs_in_root "$1")"
    [ -n "$left" ] || return 0
    echo "servers: killing what still runs in $1: ${left//$'\n'/ }" >&2
    # shellcheck disable=SC2086 # one pid a word
    kill -KILL $left 2>/dev/null || true
    sleep 0.2
  done
}
# root_cleanup: the end of a root's job, whatever ended it: its lanes go,
# then every process still running in the root it mounted, then what the
# tests left mounted under the root, then the job's own mounts, deepest
# first.
root_cleanup() {
  local rc=$? i left
  trap '' INT TERM # the run's TERM after a Ctrl-C must not cut it short
  left="$(jobs -p)"
  # shellcheck disable=SC2086 # one pid a word
  [ -z "$left" ] || kill -KILL $left 2>/dev/null || true
  if [ -n "$ROOT_MOUNTED" ]; then
    kill_in_root "$ROOT_MOUNTED"
    unmount_left "$ROOT_MOUNTED"
  fi
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}" 2>/dev/null || echo "servers: could not unmount ${MOUNTS[$i]}" >&2
  done
  exit "$rc"
}

# mount_in ROOT: the root as a mount point of its own (ip netns and
# unshare make / a slave mount, which a plain directory cannot be), /proc,
# /sys, the host's /dev (a second mount of its devtmpfs: the loop devices
# that `pristine scratch up` attaches appear there), a devpts of its own on
# /dev/pts (script(1) gives pool up a terminal) and a private tmpfs on
# /dev/shm, where the tests' roots live (so two roots' jobs never see each
# other's, nor the host's).
mount_in() {
  local r="$1"
  ROOT_MOUNTED="$r"
  mountpoint -q "$r" || { mount --bind "$r" "$r"; mount --make-private "$r"; MOUNTS+=("$r"); }
  mountpoint -q "$r/proc" || { mount -t proc proc "$r/proc"; MOUNTS+=("$r/proc"); }
  mountpoint -q "$r/sys" || { mount -t sysfs sysfs "$r/sys"; MOUNTS+=("$r/sys"); }
  mountpoint -q "$r/dev" || { mount -t devtmpfs devtmpfs "$r/dev"; MOUNTS+=("$r/dev"); }
  mountpoint -q "$r/dev/pts" || { mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"; MOUNTS+=("$r/dev/pts"); }
  mountpoint -q "$r/dev/shm" || { mount -t tmpfs -o size=8g,mode=1777 tmpfs "$r/dev/shm"; MOUNTS+=("$r/dev/shm"); }
  # The host's record of which server id serves which tree (internal/svcuser:
  # machine-wide, so that no two trees share an id): the roots run beside
  # each other and beside the host's tests, whose servers all take ids from
  # the one range, and an id a foreign process runs as is skipped, so a
  # restarted daemon would not get its slots' ids back.
  [ -d /var/lib/pristine-ids ] || install -d -m 0700 /var/lib/pristine-ids
  mkdir -p "$r/var/lib/pristine-ids"
  mountpoint -q "$r/var/lib/pristine-ids" || { mount --bind /var/lib/pristine-ids "$r/var/lib/pristine-ids"; MOUNTS+=("$r/var/lib/pristine-ids"); }
}
# unmount_left ROOT: what the tests mounted under the root and left there
# (the bind mounts of `ip netns add` on /run/netns, a scratch filesystem of
# a killed test), deepest first, before the root's own mounts go.
unmount_left() {
  local r="$1" m
  awk -v r="$r/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
    case " ${MOUNTS[*]} " in *" $m "*) continue ;; esac
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "servers: could not unmount $m" >&2
  done
}
unmount_all() {
  local i
  if [ -n "$ROOT_MOUNTED" ]; then
    kill_in_root "$ROOT_MOUNTED"
    unmount_left "$ROOT_MOUNTED"
  fi
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"; done
  MOUNTS=()
  ROOT_MOUNTED=""
}

# --- roots ---
# The machine's apt settings (proxies, Check-Valid-Until and the like), not
# its Docker or desktop hooks.
copy_apt_conf() {
  local r="$1" f
  for f in /etc/apt/apt.conf.d/*; do
    case "$(basename "$f")" in docker-*|20packagekit|50appstream|01autoremove|02autoremove-*) ;; *) cp "$f" "$r/etc/apt/apt.conf.d/" ;; esac
  done
  [ -f /etc/apt/apt.conf ] && cp /etc/apt/apt.conf "$r/etc/apt/" || true
  cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

in_root() { local r="$1"; shift; chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }

installed_versions() { # ROOT PKGS...: "pkg=version" lines of what is installed
  local r="$1"; shift
  in_root "$r" dpkg-query -W -f='${Package}=${Version}\n' "$@" 2>/dev/null | sort
}
candidate_versions() { # ROOT PKGS...: "pkg=version" lines apt would install now
  local r="$1" p; shift
  for p in "$@"; do
    echo "$p=$(in_root "$r" apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')"
  done | sort
}

build_root() { # build_root SERVER: a fresh root at $ROOTS/SERVER
  local s="$1" suite="${SUITE[$1]}" r="$ROOTS/$1" new="$ROOTS/$1.new" mirror blog
  mirror="$(debian_uri /etc/apt)"; mirror="${mirror:-http://deb.debian.org/debian}"
  blog="$ROOTS/$s.build.log"
  command -v debootstrap >/dev/null || apt_step "apt-get install: debootstrap (for the server matrix)" apt-get install -y --no-install-recommends debootstrap
  log "$s: building a Debian $suite root at $r from $mirror (debootstrap, then ${PKGS[$s]}; a few minutes; log: $blog)"
  rm -rf --one-file-system "$new"
  mkdir -p "$ROOTS"
  chmod 0755 "$ROOTS"
  if ! debootstrap --variant=minbase "$suite" "$new" "$mirror" >"$blog" 2>&1; then
    tail -20 "$blog" >&2
    rm -rf --one-file-system "$new"
    die "$s: debootstrap $suite from $mirror failed (no network, or the mirror lacks $suite): see $blog"
  fi
  copy_apt_conf "$new"
  echo "deb $mirror $suite main" >"$new/etc/apt/sources.list"
  chmod 0755 "$new"
  # No package may start a service in the root (a system server would
  # only take memory and a port): pristine starts its own.
  printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
  chmod 0755 "$new/usr/sbin/policy-rc.d"
  mount -t proc proc "$new/proc"
  MOUNTS+=("$new/proc")
  local rc=0
  { in_root "$new" apt-get update -q && in_root "$new" apt-get install -y -q --no-install-recommends ${PKGS[$s]} ca-certificates; } >>"$blog" 2>&1 || rc=$?
  umount "$new/proc"
  unset 'MOUNTS[-1]'
  if [ "$rc" -ne 0 ]; then
    tail -20 "$blog" >&2
    rm -rf --one-file-system "$new"
    die "$s: apt-get install ${PKGS[$s]} in the $suite root failed: see $blog"
  fi
  # The servers' account, as install-deps makes it on the host.
  in_root "$new" sh -c 'id -u pristine >/dev/null 2>&1 || useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pristine'
  installed_versions "$new" ${PKGS[$s]} >"$new/.pristine-versions"
  unmount_left "$r" # what a killed run left mounted there
  rm -rf --one-file-system "$r"
  mv "$new" "$r"
  log "$s: root ready: $(tr '\n' ' ' <"$r/.pristine-versions")"
}

# ensure_root SERVER: the cached root, refreshed when Debian has newer
# packages; built when missing.
ensure_root() {
  local s="$1" r="$ROOTS/$1"
  if [ ! -f "$r/.pristine-versions" ]; then
    build_root "$s"
    return
  fi
  copy_apt_conf "$r"
  if ! in_root "$r" apt-get update -q >"$ROOTS/$s.update.log" 2>&1; then
    # The cached root still has a whole server: use it, and say so.
    echo "servers: WARNING: $s: apt-get update in the cached root failed (see $ROOTS/$s.update.log); testing the cached $(tr '\n' ' ' <"$r/.pristine-versions")" >&2
    return
  fi
  local want have
  want="$(candidate_versions "$r" ${PKGS[$s]})"
  have="$(cat "$r/.pristine-versions")"
  if [ "$want" != "$have" ]; then
    log "$s: Debian's packages changed ($(echo "$have" | tr '\n' ' ') -> $(echo "$want" | tr '\n' ' ')): rebuilding the root"
    build_root "$s"
    return
  fi
  log "$s: cached root $r is current ($(echo "$have" | tr '\n' ' '))"
}

# --- the test binaries, built once on the host ---
WORK="$(mktemp -d /tmp/pristine-servers-XXXXXX)"
tests=()
helpers=()
if [ "$build_only" -eq 0 ]; then
  GO="$(cat .go-path 2>/dev/null || command -v go)"
  export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
  all_pkgs="$PACKAGES"
  for s in "${servers[@]}"; do
    for p in ${EXTRA[$s]}; do
      p="${p%%:*}"
      case " $all_pkgs " in *" $p "*) ;; *) all_pkgs="$all_pkgs $p" ;; esac
    done
  done
  log "compiling the test binaries of $all_pkgs and bin/pristine on the host"
  CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/pristine" ./cmd/pristine
  for p in $all_pkgs; do
    name="$(echo "${p#./}" | tr '/' '-').test"
    CGO_ENABLED=0 "$GO" test -c -o "$WORK/$name" "$p"
    # A package may hold no tests: go test -c then writes nothing.
    [ -f "$WORK/$name" ] && tests+=("$p=$name")
  done
  # internal/e2e's network-namespace test runs two programs it builds with go
  # on the host (a remote lease holder, the Go example's tests); a root has
  # no Go: they are built here and named by PRISTINE_TEST_NETHOLDER and
  # PRISTINE_TEST_GO_EXAMPLE.
  case " $all_pkgs " in *" ./internal/e2e "*)
    CGO_ENABLED=0 "$GO" build -trimpath -o "$WORK/netholder" ./internal/e2e/testdata/netholder
    CGO_ENABLED=0 "$GO" test -c -o "$WORK/go-example.test" ./examples/go
    helpers=(PRISTINE_TEST_NETHOLDER=/opt/pristine-test/internal/e2e/netholder PRISTINE_TEST_GO_EXAMPLE=/opt/pristine-test/examples/go/go-example.test) ;;
  esac
fi

# --- in a root ---
# What runs in a root, by label: a package (its test binary, and the -run
# regex of PACKAGE:REGEX or SERVERS_RUN) or a client's suite
# (clients/python, clients/php). Set by run_root, read by run_item.
declare -A ITEM_BIN=() ITEM_RUN=()
# The longest first (from the script's logged times in the MySQL root), so
# that the lanes end together; the others follow in their listed order.
LONGEST_FIRST="./internal/pool ./internal/e2e ./internal/template ./internal/capture clients/python clients/php"

# item_cmd SERVER ROOT LABEL: runs one label in the root as a user would,
# with the root's server (PRISTINE_MARIADBD) and bin/pristine.
item_cmd() {
  local s="$1" r="$2" label="$3" args
  local renv=(/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
    HOME=/root TMPDIR=/tmp PRISTINE_MARIADBD="${SERVERD[$s]}" PRISTINE_BIN=/usr/local/bin/pristine
    PRISTINE_SERVER_MATRIX="$s")
  case "$label" in
    clients/python)
      # The client from the checkout (PYTHONPATH), its pytest plugin named
      # as its entry point would name it (pytester's runs inherit it).
      chroot "$r" "${renv[@]}" PYTHONPATH=/opt/pristine-test/clients/python/src PYTHONDONTWRITEBYTECODE=1 \
        PYTEST_PLUGINS=pristine_client.pytest_plugin \
        sh -c 'cd /opt/pristine-test && exec python3 -m pytest -p no:cacheprovider -q -rs $1' sh "${PYTEST[$s]}" ;;
    clients/php)
      chroot "$r" "${renv[@]}" sh -c 'cd /opt/pristine-test && exec phpunit --display-skipped -c "$1"' sh "${PHPUNIT[$s]}" ;;
    *)
      args=(-test.count="${SERVERS_COUNT:-1}" -test.timeout "$TIMEOUT")
      [ -z "${ITEM_RUN[$label]}" ] || args+=(-test.run "${ITEM_RUN[$label]}")
      [ -z "${SERVERS_VERBOSE:-}" ] || args+=(-test.v)
      chroot "$r" "${renv[@]}" "${helpers[@]}" \
        sh -c 'cd "$1" && shift && exec "$@"' sh "/opt/pristine-test/${label#./}" "./${ITEM_BIN[$label]}" "${args[@]}" ;;
  esac
}

# run_item SERVER LABEL: one label in the root, its output in the root's
# log directory and then printed, each line prefixed with the server and
# the label; a failure is listed in $WORK/SERVER.failed.
run_item() {
  local s="$1" label="$2" out st=ok t0=$SECONDS run="${ITEM_RUN[$2]}"
  out="$ROOTS/$s.logs/$(echo "${label#./}" | tr '/' '-').log"
  log "$s: start $label${run:+ -run \"$run\"}"
  # The locks' descriptors stay out of the tests (a server left running
  # would hold them).
  item_cmd "$s" "$ROOTS/$s" "$label" >"$out" 2>&1 8>&- 9>&- || { st=FAIL; echo "$label" >>"$WORK/$s.failed"; }
  sed "s|^|servers: $s ${label#./}: |" "$out"
  log "$s: $st $label ($((SECONDS - t0)) s)"
}

# run_lanes SERVER LABEL...: the labels, SERVERS_JOBS at a time, in order.
run_lanes() {
  local s="$1" label pid
  shift
  local -A running=()
  for label in "$@"; do
    while [ ${#running[@]} -ge "$JOBS" ]; do
      pid=""
      wait -n -p pid "${!running[@]}" || true
      [ -z "$pid" ] || unset "running[$pid]"
    done
    run_item "$s" "$label" &
    running[$!]=1
  done
  while [ ${#running[@]} -gt 0 ]; do
    pid=""
    wait -n -p pid "${!running[@]}" || true
    [ -z "$pid" ] || unset "running[$pid]"
  done
}

# run_root SERVER: a root's job, in the background: takes the root's lock,
# builds or refreshes the root and, unless --build-only, runs the server's
# packages and clients' suites in it, SERVERS_JOBS at a time.
run_root() {
  local s="$1" r="$ROOTS/$1" ver t p bin run labels=() ordered=() l
  trap root_cleanup EXIT
  trap 'exit 130' INT TERM
  # Should the run itself be killed outright (SIGKILL, or a signal that
  # found it where it could not run its trap), its jobs stop all the same.
  local job=$BASHPID
  (while kill -0 $$ 2>/dev/null; do sleep 2; done; kill -TERM "$job" 2>/dev/null) &
  exec 8>"$ROOTS/$s.lock"
  if ! flock -n 8; then
    log "$s: another scripts/servers.sh uses the $s root; waiting for it"
    flock 8 &
    wait $!
  fi
  ensure_root "$s"
  [ "$build_only" -eq 0 ] || return 0
  mount_in "$r"
  ver="$(in_root "$r" "${SERVERD[$s]}" --no-defaults --version 2>&1)" || die "$s: ${SERVERD[$s]} --version failed in $r: $ver"
  echo "$ver" | grep -Eq "${WANT[$s]}" || die "$s: the root's server is not the one this matrix tests: $ver"
  log "$s: $ver"
  rm -rf "$r/opt/pristine-test"
  mkdir -p "$r/opt/pristine-test" "$r/usr/local/bin"
  cp "$WORK/pristine" "$r/usr/local/bin/pristine"
  # The checkout's files (testdata, and the sources that tests which read
  # the module itself parse), each test binary in its package's directory.
  # Not Laravel's caches of the fixture either: a host run writes them for
  # Debian 12's Laravel 8, and sid's Laravel 13 would read them. Nor the
  # host venv's egg-info of the Python client (pytest would register its
  # plugin twice).
  tar -C "$repo" --exclude=./.git --exclude=./.venv --exclude=./artifacts --exclude=./bin --exclude=node_modules --exclude=vendor --exclude='*.egg-info' \
      --exclude='./clients/php/tests/fixture/laravel/bootstrap/cache/*.php' -cf - . |
    tar -C "$r/opt/pristine-test" -xf -
  for t in "${tests[@]}"; do
    p="${t%%=*}"; bin="${t#*=}"
    cp "$WORK/$bin" "$r/opt/pristine-test/${p#./}/"
  done
  [ ${#helpers[@]} -eq 0 ] || { cp "$WORK/netholder" "$r/opt/pristine-test/internal/e2e/"; cp "$WORK/go-example.test" "$r/opt/pristine-test/examples/go/"; }
  for t in "${tests[@]}"; do
    p="${t%%=*}"; bin="${t#*=}"
    run="$RUN"
    case " $PACKAGES ${EXTRA[$s]} " in
      *" $p "*) ;;
      *" $p:"*) run="$(for e in ${EXTRA[$s]}; do [ "${e%%:*}" != "$p" ] || echo "${e#*:}"; done)" ;;
      *) continue ;;
    esac
    ITEM_BIN[$p]="$bin"
    ITEM_RUN[$p]="$run"
    labels+=("$p")
  done
  # The clients' tests, as a user runs them, with the server of the root.
  if [ "$run_clients" = 1 ] && [ -n "${PYTEST[$s]}" ]; then labels+=(clients/python); ITEM_RUN[clients/python]=""; fi
  if [ "$run_clients" = 1 ] && [ -n "${PHPUNIT[$s]}" ]; then labels+=(clients/php); ITEM_RUN[clients/php]=""; fi
  for l in $LONGEST_FIRST; do
    case " ${labels[*]} " in *" $l "*) ordered+=("$l") ;; esac
  done
  for l in "${labels[@]}"; do
    case " $LONGEST_FIRST " in *" $l "*) ;; *) ordered+=("$l") ;; esac
  done
  rm -rf "$ROOTS/$s.logs"
  mkdir -p "$ROOTS/$s.logs"
  log "$s: ${#ordered[@]} suites, $JOBS at a time (outputs: $ROOTS/$s.logs)"
  [ ${#ordered[@]} -eq 0 ] || run_lanes "$s" "${ordered[@]}"
  rm -rf "$r/opt/pristine-test"
  unmount_all
}

t0=$SECONDS
declare -A JOB=()
for s in "${servers[@]}"; do
  run_root "$s" &
  JOB[$s]=$!
done
failed=()
for s in "${servers[@]}"; do
  rc=0
  wait "${JOB[$s]}" || rc=$?
  if [ -s "$WORK/$s.failed" ]; then
    while read -r l; do failed+=("$s $l"); done <"$WORK/$s.failed"
  elif [ "$rc" -ne 0 ]; then
    failed+=("$s (its job ended with status $rc: see its lines above)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'servers: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
[ "$build_only" -eq 1 ] || log "every package passed in: ${servers[*]} ($((SECONDS - t0)) s)"
