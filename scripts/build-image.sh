#!/usr/bin/env bash
# Builds the container image localhost/pristine:VERSION (and :latest) with
# podman from packaging/container/Containerfile:
#
#   bash scripts/build-image.sh [PATH.deb]     (as root)
#
# The image holds the pristine Debian package of this checkout (built by
# scripts/release.sh for this machine's architecture unless given) and
# what it depends on, from Debian. Its base is BASE when set (say
# docker.io/library/debian:12, where a registry is reachable); otherwise a
# Debian 12 minbase root made by debootstrap from the machine's Debian
# mirror (cached as a tarball, as scripts/test-deb.sh does) is imported as
# localhost/pristine-base:bookworm, so that no registry is needed. The
# build runs in the host's network namespace (apt needs the mirror; it
# adds no address anywhere). Prints the image's name last.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "build-image: $(date -u +%T) $*" >&2; }
die() { echo "build-image: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (podman build of a root image, debootstrap): sudo bash $0"
command -v podman >/dev/null || die "needs podman (apt-get install podman)"
. scripts/lib/apt.sh
. scripts/lib/bookworm.sh

deb="$(package_deb build-image "${1:-}")"
version="$(dpkg-deb -f "$deb" Version)"
tag="${version//[^A-Za-z0-9_.-]/_}"

ctx="$(mktemp -d /var/tmp/pristine-build-image.XXXXXX)"
trap 'rm -rf --one-file-system "$ctx"' EXIT
trap 'exit 130' INT TERM

base="${BASE:-}"
if [ -z "$base" ]; then
  base=localhost/pristine-base:bookworm
  tarball="$(bookworm_tar "${PRISTINE_IMAGE_BASE_CACHE:-/var/cache/pristine-deb-test}")"
  stamp="$(stat -c %Y "$tarball")"
  if [ "$(podman image inspect --format '{{index .Labels "tarball"}}' "$base" 2>/dev/null)" != "$stamp" ]; then
    log "importing $tarball (with this machine's apt settings) as $base"
    mkdir "$ctx/base"
    tar -C "$ctx/base" -xf "$tarball"
    copy_apt_conf "$ctx/base"
    tar -C "$ctx/base" -c . | podman import --change "LABEL tarball=$stamp" --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
    rm -rf --one-file-system "$ctx/base"
  fi
fi

mkdir -p "$ctx/packaging/container"
cp packaging/container/Containerfile packaging/container/entrypoint.sh "$ctx/packaging/container/"
cp "$deb" "$ctx/pristine.deb"
log "podman build from $base with $(basename "$deb")"
podman build -q --isolation=chroot --network=host --build-arg BASE="$base" --build-arg DEB=pristine.deb \
  -f "$ctx/packaging/container/Containerfile" -t "localhost/pristine:$tag" -t localhost/pristine:latest "$ctx" >/dev/null
log "built localhost/pristine:$tag ($(podman image inspect --format '{{.Size}}' "localhost/pristine:$tag" | numfmt --to=iec) )"
echo "localhost/pristine:$tag"
