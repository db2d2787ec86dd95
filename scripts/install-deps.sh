#!/usr/bin/env bash
# Installs what pristine needs on Debian 12 (run as root): MariaDB server and
# tools, the filesystems' tools, the baselines' tools, Chromium for the
# dashboard test, and a Go toolchain new enough for go.mod. Idempotent.
set -euo pipefail

need_go="$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$(dirname "$0")/../go.mod")"
export DEBIAN_FRONTEND=noninteractive

pkgs=(mariadb-server mariadb-client mariadb-backup mydumper btrfs-progs xfsprogs zstd util-linux procps ca-certificates git python3 python3-venv chromium fonts-dejavu-core)
# clients/php and examples/php (issue 8): PHP with PDO MySQL and curl, and Debian's PHPUnit.
pkgs+=(php-cli php-mysql php-curl phpunit)
# The tests run with Go's race detector, which needs cgo: a C compiler.
pkgs+=(gcc libc6-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: ${missing[*]} missing; run as root to install them (sudo bash $0)" >&2
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  apt-get update -qq
  # The Debian package starts a system MariaDB; pristine does not need it.
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The unprivileged system account pristine's database servers run as when
# pristine runs as root (docs/security.md); pristine creates it the same way
# when it is missing.
if [ "$(id -u)" -eq 0 ] && ! id -u pristine >/dev/null 2>&1; then
  echo "install-deps: creating the system account pristine"
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pristine
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
    echo "install-deps: installing Go from bookworm-backports"
    echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/pristine-backports.list
    apt-get update -qq
    apt-get install -y -qq -t bookworm-backports golang-1.23-go >/dev/null
  fi
  GO=/usr/lib/go-1.23/bin/go
  export GOTOOLCHAIN=auto
fi
echo "$GO" > "$(dirname "$0")/../.go-path"
echo "install-deps: ready ($("$GO" version), $(mariadbd --version | awk '{print $3}'))"
