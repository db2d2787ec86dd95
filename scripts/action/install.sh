#!/usr/bin/env bash
# The action's first step: installs the pristine release PRISTINE_VERSION
# (or the tarball at PRISTINE_URL_INPUT, an https URL or a local path),
# checked against the release's SHA256SUMS, puts it on $GITHUB_PATH, installs
# MariaDB and btrfs-progs when PRISTINE_INSTALL_SERVER is true, and exports
# PRISTINE_ROOT (PRISTINE_ROOT_INPUT, default .pristine in the workspace).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no pristine release for $(uname -m): linux/amd64 and linux/arm64 only" ;;
esac
version="${PRISTINE_VERSION:-}"
url="${PRISTINE_URL_INPUT:-}"
if [ -z "$url" ]; then
  [[ "$version" =~ ^v[0-9] ]] || die "no release to install: set 'with: version: v0.1.0' (the action's ref '$version' is not a release tag)"
  url="https://github.com/pristinedb/pristine/releases/download/$version/pristine_${version}_linux_${arch}.tar.gz"
fi
dir="${RUNNER_TEMP:-/tmp}/pristine-release"
rm -rf "$dir"
mkdir -p "$dir/bin"
tarball="$dir/$(basename "$url")"
case "$url" in
  https://*)
    curl -fsSL --retry 3 -o "$tarball" "$url" || die "download $url failed"
    curl -fsSL --retry 3 -o "$dir/SHA256SUMS" "$(dirname "$url")/SHA256SUMS" || die "download of the release's SHA256SUMS failed"
    ;;
  http://*) die "refusing $url: a release is fetched over https" ;;
  *)
    [ -f "$url" ] || die "no release tarball at $url"
    cp "$url" "$tarball"
    if [ -f "$(dirname "$url")/SHA256SUMS" ]; then cp "$(dirname "$url")/SHA256SUMS" "$dir/"; fi
    ;;
esac
if [ -f "$dir/SHA256SUMS" ]; then
  (cd "$dir" && grep " $(basename "$tarball")\$" SHA256SUMS | sha256sum -c --quiet -) ||
    die "$(basename "$tarball") does not match the release's SHA256SUMS"
fi
tar -C "$dir" -xzf "$tarball"
bin="$(find "$dir" -mindepth 2 -maxdepth 2 -type f -name pristine | head -1)"
[ -n "$bin" ] || die "$url holds no pristine binary"
install -m 0755 "$bin" "$dir/bin/pristine"
echo "$dir/bin" >>"$GITHUB_PATH"

if [ "${PRISTINE_INSTALL_SERVER:-true}" = true ]; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client btrfs-progs >/dev/null
  as_root systemctl stop mariadb 2>/dev/null || true # pristine starts its own servers
fi
root="${PRISTINE_ROOT_INPUT:-}"
root="${root:-${GITHUB_WORKSPACE:-$PWD}/.pristine}"
echo "PRISTINE_ROOT=$root" >>"$GITHUB_ENV"
"$dir/bin/pristine" --version
