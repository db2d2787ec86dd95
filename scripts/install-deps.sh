#!/usr/bin/env bash
# Installs what pristine needs on Debian 12 (run as root): MariaDB server and
# tools, the filesystems' tools, the baselines' tools, Chromium for the
# dashboard test, and a Go toolchain new enough for go.mod. Idempotent.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "$0")/lib/apt.sh"

need_go="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$(dirname "$0")/../go.mod")"
export DEBIAN_FRONTEND=noninteractive

pkgs=(mariadb-server mariadb-client mariadb-backup mydumper btrfs-progs xfsprogs zstd util-linux procps ca-certificates git python3 python3-venv chromium fonts-dejavu-core)
# issue 22: /usr/share/zoneinfo, which pristine loads into the base's time zone tables.
pkgs+=(tzdata)
# clients/php and examples/php (issue 8): PHP with PDO MySQL and curl, and Debian's PHPUnit.
pkgs+=(php-cli php-mysql php-curl phpunit)
# examples/laravel: Debian's Laravel 8 (with Illuminate\Testing\ParallelTesting); Mockery, which
# Laravel's RefreshDatabase and DatabaseMigrations need for their artisan calls (clients/php LaravelTest).
pkgs+=(php-laravel-framework php-mockery)
# clients/ruby and examples/rails (issue 24): Ruby with Debian's Rails 6.1 and mysql2 (rubygems.org is not needed);
# rake runs the gem's tests (clients/ruby/Rakefile).
pkgs+=(ruby ruby-rails ruby-mysql2 rake)
# clients/node and examples/node-* (issue 24): Node 20 and npm (Debian's, unless a Node with npm is
# installed already); the packages themselves come from the npm registry with npm ci.
{ command -v node && command -v npm; } >/dev/null 2>&1 || pkgs+=(nodejs npm)
# The tests run with Go's race detector, which needs cgo: a C compiler.
pkgs+=(gcc libc6-dev)
# internal/oci (issue 16): a real OCI registry (distribution 2.8) on loopback for the push/pull tests.
pkgs+=(docker-registry)
# docs/k8s manifests are checked with kubectl apply --dry-run=client (any kubectl will do).
command -v kubectl >/dev/null 2>&1 || pkgs+=(kubernetes-client)
# clients/java and examples/spring (issue 24): a JDK 17 and Maven; Maven fetches the
# Java dependencies from Maven Central into ~/.m2 on first use.
pkgs+=(openjdk-17-jdk-headless maven)
# The client packages (docs/packaging.md, scripts/client-packages.sh and its test): python3 -m build
# (with Debian's setuptools and wheel, no index), Composer with PHP's zip extension (composer archive
# and the artifact repository its test installs from); gem, npm and mvn come with the lines above.
pkgs+=(python3-build python3-setuptools python3-wheel composer php-zip)
# What the scripts call: curl (API calls), coreutils' timeout, procps' pgrep.
pkgs+=(curl coreutils)
# scripts/servers.sh (issue 21): Debian roots of MariaDB 11.8 and MySQL 9.7.
pkgs+=(debootstrap)
# The container image (scripts/build-image.sh, scripts/test-image.sh):
# podman, and runc for hosts whose cgroups crun refuses (v1 or hybrid).
pkgs+=(podman runc)
# internal/e2e's network-namespace test (issue 26): ip netns and veth pairs.
pkgs+=(iproute2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: ${missing[*]} missing; run as root to install them (sudo bash $0)" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  apt_step "apt-get update: reading the package lists of the configured sources" apt-get update
  # The Debian package starts a system MariaDB; pristine does not need it.
  apt_step "apt-get install: ${#missing[@]} packages (${missing[*]}), with their dependencies; a minute or two on a fresh machine" \
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
# The unprivileged system account pristine's database servers run as when
# pristine runs as root (docs/security.md); pristine creates it the same way
# when it is missing.
if [ "$(id -u)" -eq 0 ] && ! id -u pristine >/dev/null 2>&1; then
  echo "install-deps: creating the system account pristine"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pristine
fi
# Servers run as the unprivileged account pristine (docs/security.md), which
# must be able to pass through /. Debian's / is 0755; a root made by
# debootstrap into a mktemp directory is 0700, which keeps every
# unprivileged service out, so give it Debian's mode.
if [ "$(id -u)" -eq 0 ] && [ $(( $(stat -c '0%a' /) & 1 )) -eq 0 ]; then
  echo "install-deps: / is mode $(stat -c '%a' /), which no unprivileged account can pass through; setting Debian's 0755"
  chmod 0755 /
fi
# pristine starts its own servers; a system one only uses memory.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mariadb 2>/dev/null; then
  systemctl stop mariadb || true
fi

# Go: use the one on PATH or in /usr/local/go when new enough; otherwise
# Debian's backports Go, which fetches the toolchain go.mod asks for from the
# Go module proxy (GOTOOLCHAIN=auto).
go_ok() { "$1" version 2>/dev/null | awk -v want="$need_go" '{v=$3; sub(/^go/,"",v); split(v,a,"."); split(want,b,"."); exit !((a[1]>b[1]) || (a[1]==b[1] && a[2]>=b[2]))}'; }
GO=""
for cand in go /usr/local/go/bin/go; do
  if command -v "$cand" >/dev/null 2>&1 && go_ok "$cand"; then GO="$(command -v "$cand")"; break; fi
done
if [ -z "$GO" ]; then
  if ! [ -x /usr/lib/go-1.23/bin/go ]; then
    # bookworm-backports from the mirror the machine already uses.
    if ! has_suite /etc/apt bookworm-backports; then
      uri="$(debian_uri /etc/apt)"
      if [ -z "$uri" ]; then
        echo "install-deps: Go $need_go or later is needed and no Debian source is configured to fetch it from: install Go (https://go.dev/dl/) into /usr/local/go and run this again" >&2
        exit 1
      fi
      echo "install-deps: adding bookworm-backports from $uri (/etc/apt/sources.list.d/pristine-backports.list)"
      echo "deb $uri bookworm-backports main" > /etc/apt/sources.list.d/pristine-backports.list
    fi
    apt_step "apt-get update: for bookworm-backports" apt-get update
    apt_step "apt-get install: Go 1.23 from bookworm-backports" apt-get install -y -t bookworm-backports golang-1.23-go
  fi
  GO=/usr/lib/go-1.23/bin/go
  export GOTOOLCHAIN=auto
fi
echo "$GO" > "$(dirname "$0")/../.go-path"
echo "install-deps: ready ($("$GO" version), $(mariadbd --version | awk '{print $3}'))"
