#!/usr/bin/env bash
# Builds pristine's release artifacts into dist/ from the checkout's
# committed state:
#
#   bash scripts/release.sh            # version from `git describe --tags`
#   PRISTINE_VERSION=v1.2.0 bash scripts/release.sh
#
# For linux/amd64 and linux/arm64 each:
#   dist/pristine_VERSION_linux_ARCH.tar.gz   static pristine and pristine-bench
#       (CGO_ENABLED=0, version and commit stamped: `pristine --version`),
#       man pages (man/man1) and bash, zsh and fish completions
#   dist/pristine_DEBVERSION_ARCH.deb         the Debian package: pristine, its
#       man pages and completions, the pristine service (packaging/deb)
# the client packages (scripts/client-packages.sh: the Python sdist and
# wheel, the npm tarball, the Maven jar with its sources, javadoc and pom,
# the gem, the Composer archive; RELEASE_CLIENTS=0 leaves them out),
# with RELEASE_IMAGE=1 (as root, with podman), the container image of this
# machine's architecture (scripts/build-image.sh, from the .deb above) as
# dist/pristine_DEBVERSION_ARCH.oci.tar (`podman load -i`),
# and dist/SHA256SUMS over them all (`cd dist && sha256sum -c SHA256SUMS`).
#
# DEBVERSION is VERSION without its leading "v", or 0.0.0~gitDATE.COMMIT
# when no tag names the commit. A checkout with uncommitted changes is
# stamped "-dirty" and said so. The .deb is made by nfpm (a pinned
# version, run with `go run`: the Go module proxy is all it needs).
# scripts/release_test.go (TestRelease) runs this in a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="$(cat .go-path 2>/dev/null || command -v go)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
NFPM="github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.44.0" # later versions need modules the proxy refuses
ARCHES="${RELEASE_ARCHES:-amd64 arm64}"
log() { echo "release: $*"; }

commit="$(git rev-parse HEAD)"
version="${PRISTINE_VERSION:-$(git describe --tags --always --dirty)}"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  log "WARNING: the checkout has uncommitted changes; the artifacts are stamped $version"
fi
debversion="${version#v}"
if ! [[ "$debversion" =~ ^[0-9] ]] || [[ "$version" != v* && -z "${PRISTINE_VERSION:-}" ]]; then
  debversion="0.0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d HEAD).${commit:0:12}"
fi
case "$version" in *-dirty) debversion="${debversion%-dirty}+dirty" ;; esac
debversion="${debversion//-/+}" # v1.2.0-3-gabc (describe past a tag) -> 1.2.0+3+gabc
date="$(git log -1 --format=%ct HEAD)"
export SOURCE_DATE_EPOCH="$date"

rm -rf dist
mkdir -p dist/build
log "version $version (Debian $debversion), commit ${commit:0:12}"
"$GO" run ./scripts/gendocs -out dist/build/docs -version "$version" -date "$date"
find dist/build/docs -name '*.1' -exec gzip -9n {} +

pkg=github.com/pristinedb/pristine/internal/cli
ldflags="-s -w -X $pkg.Version=$version -X $pkg.Commit=$commit"
for arch in $ARCHES; do
  name="pristine_${version}_linux_${arch}"
  b="dist/build/$name"
  mkdir -p "$b"
  for bin in pristine pristine-bench; do
    log "build $bin linux/$arch"
    CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$b/$bin" "./cmd/$bin"
    cp -r "dist/build/docs/$bin/." "$b/"
  done
  cp README.md "$b/"
  tar -C dist/build --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$date" -czf "dist/$name.tar.gz" "$name"
  log "package pristine_${debversion}_${arch}.deb"
  VERSION="$debversion" ARCH="$arch" BUILD="$b" DOCS=dist/build/docs/pristine \
    "$GO" run "$NFPM" package --config packaging/deb/nfpm.yaml --packager deb --target "dist/pristine_${debversion}_${arch}.deb" >/dev/null
done
if [ "${RELEASE_CLIENTS:-1}" != 0 ]; then
  PRISTINE_VERSION="$version" bash scripts/client-packages.sh dist
fi
if [ "${RELEASE_IMAGE:-0}" != 0 ]; then
  arch="$(dpkg --print-architecture)"
  deb="dist/pristine_${debversion}_${arch}.deb"
  [ -f "$deb" ] || { log "RELEASE_IMAGE=1 builds the image of this machine's architecture, $arch: RELEASE_ARCHES must include it"; exit 1; }
  log "container image from $deb (scripts/build-image.sh)"
  image="$(bash scripts/build-image.sh "$deb")"
  podman save -q --format oci-archive -o "dist/pristine_${debversion}_${arch}.oci.tar" "$image"
fi
(cd dist && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\0' | sort -z | xargs -0 sha256sum -- >SHA256SUMS)
log "done:"
(cd dist && find . -maxdepth 1 -type f -printf '%P\n' | sort | xargs ls -l --)
