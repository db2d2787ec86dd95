#!/usr/bin/env bash
# Builds the client packages a registry would serve, from the clients'
# files of the checkout (tracked and new ones, never build output or
# node_modules), into OUT (default dist/):
#
#   bash scripts/client-packages.sh [OUT]
#   PRISTINE_VERSION=v1.2.0 bash scripts/client-packages.sh   # stamped 1.2.0
#
#   pristine_client-VERSION.tar.gz, pristine_client-VERSION-py3-none-any.whl
#       clients/python: sdist and wheel (python3 -m build; the wheel is built
#       from the sdist, so the sdist is complete)
#   pristine-client-VERSION.tgz              clients/node (npm pack)
#   pristine-client-VERSION.jar, -sources.jar, -javadoc.jar, .pom
#       clients/java (mvn -Prelease package)
#   pristine-VERSION.gem                     clients/ruby (gem build)
#   pristine-client-VERSION.zip              clients/php (composer archive;
#       its composer.json names the version, as a Composer artifact
#       repository needs)
#
# VERSION is each client's own version, or X.Y.Z for every client when
# PRISTINE_VERSION is a release tag vX.Y.Z. scripts/release.sh calls this;
# scripts/test-client-packages.sh builds, installs and runs each.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
MVN=(mvn -B -q --no-transfer-progress -Dstyle.color=never)
log() { echo "client-packages: $*"; }

missing=()
/usr/bin/python3 -c 'import build' 2>/dev/null || missing+=("python3-build (python3 -m build)")
for tool in npm mvn gem composer; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "client-packages: missing ${missing[*]}: run scripts/install-deps.sh as root" >&2
  exit 1
fi

version=""
if [[ "${PRISTINE_VERSION:-}" =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]]; then version="${BASH_REMATCH[1]}"; fi

W="$(mktemp -d /tmp/pristine-client-packages-XXXXXX)"
trap 'rm -rf "$W"' EXIT
# copy CLIENT: the client's files of the checkout, without what builds and
# tests left in the directory; prints the copy's path.
copy() {
  git ls-files -z -c -o --exclude-standard -- "clients/$1" |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -C "$W" -xf -
  echo "$W/clients/$1"
}

log "python: sdist and wheel"
d="$(copy python)"
[ -z "$version" ] || sed -i "s/^version = \".*\"/version = \"$version\"/" "$d/pyproject.toml"
# --no-isolation: Debian's setuptools and wheel build it, no index needed.
/usr/bin/python3 -m build --no-isolation --outdir "$OUT" "$d" >"$W/python.log" 2>&1 || { cat "$W/python.log" >&2; exit 1; }

log "node: npm pack"
d="$(copy node)"
[ -z "$version" ] || (cd "$d" && npm version --no-git-tag-version --allow-same-version "$version" >/dev/null)
(cd "$d" && npm pack --silent --pack-destination "$OUT" >/dev/null)

log "java: jar, sources and javadoc jars (mvn -Prelease package)"
d="$(copy java)"
[ -z "$version" ] || sed -i "0,/<version>.*<\/version>/s//<version>$version<\/version>/" "$d/pom.xml"
(cd "$d" && "${MVN[@]}" -Prelease -Dmaven.test.skip=true package >"$W/java.log" 2>&1) || { cat "$W/java.log" >&2; exit 1; }
for jar in "$d"/target/pristine-client-*.jar; do
  case "$jar" in *-sources.jar | *-javadoc.jar) ;; *) break ;; esac
done
cp "${jar%.jar}"{.jar,-sources.jar,-javadoc.jar} "$OUT/"
# Its own POM: every dependency it names is provided or test scope, so the
# published client depends on nothing (its JSON is its own).
cp "$d/pom.xml" "$OUT/$(basename "${jar%.jar}").pom"

log "ruby: gem build"
d="$(copy ruby)"
[ -z "$version" ] || sed -i "s/VERSION = \".*\"/VERSION = \"$version\"/" "$d/lib/pristine/version.rb"
gemversion="$(ruby -e 'load ARGV[0]; print Pristine::VERSION' "$d/lib/pristine/version.rb")"
(cd "$d" && gem build --silent pristine.gemspec --output "$OUT/pristine-$gemversion.gem")

log "php: composer archive"
d="$(copy php)"
# Composer takes versions from tags; until a release names one, the
# clients' common 0.1.0.
phpversion="${version:-0.1.0}"
(cd "$d" && COMPOSER_ALLOW_SUPERUSER=1 composer config version "$phpversion" &&
  COMPOSER_ALLOW_SUPERUSER=1 composer archive --quiet --no-interaction --format=zip --dir="$OUT" --file="pristine-client-$phpversion")

log "built into $OUT:"
(cd "$OUT" && ls -l -- pristine_client-* pristine-client-* pristine-*.gem)
