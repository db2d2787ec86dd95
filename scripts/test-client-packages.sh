#!/usr/bin/env bash
# Builds the client packages the release command builds
# (scripts/client-packages.sh), installs each into a clean environment from
# its artifact alone, and runs its example (testdata/client-packages)
# against a daemon of bin/pristine (or $PRISTINE_BIN) on a fresh root: a
# template built from a tiny SQL string, a pool of one, one lease, a query
# on it, its release. Each example says where its client was loaded from.
#
#   python  a fresh venv: pip install --no-index the wheel (PyMySQL from PyPI)
#   node    a new npm project: npm install the tarball (mysql2 from npm)
#   java    a new Maven project whose local repository is empty but for the
#           jar, its pom, sources and javadoc (mvn install:install-file);
#           everything else comes from ~/.m2 (the Java tests filled it) or
#           Maven Central
#   ruby    gem install --local into an empty GEM_HOME (Debian's mysql2)
#   php     a new Composer project whose only repository is an artifact
#           repository holding the archive
#
# Needs what scripts/install-deps.sh installs and bin/pristine
# (bash scripts/build.sh). Under a minute with warm caches on an idle
# machine (most of it Maven: the javadoc jar and the example project).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
# shellcheck source=lib/daemon.sh
source scripts/lib/daemon.sh
BIN="${PRISTINE_BIN:-$REPO/bin/pristine}"
[ -x "$BIN" ] || { echo "test-client-packages: no pristine binary at $BIN: run bash scripts/build.sh or set PRISTINE_BIN" >&2; exit 1; }
EX="$REPO/testdata/client-packages"
MVN=(mvn -B -q --no-transfer-progress -Dstyle.color=never)
W="$(mktemp -d /dev/shm/pristine-client-packages-test-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
export PRISTINE_ROOT="$W/root"
SPID=""
stop() {
  [ -z "$SPID" ] || stop_daemon "$BIN" "$PRISTINE_ROOT" "$SPID"
  rm -rf "$W"
}
trap stop EXIT
log() { echo "test-client-packages: $*"; }
t0=$SECONDS
step() { log "$1 ($((SECONDS - t0)) s)"; }

DIST="$W/dist"
step "building the packages"
bash scripts/client-packages.sh "$DIST"
one() { # one GLOB: the single artifact GLOB names in $DIST
  local f
  # shellcheck disable=SC2206 # the pattern is a glob
  f=("$DIST"/$1)
  if [ ${#f[@]} != 1 ] || ! [ -e "${f[0]}" ]; then
    echo "test-client-packages: want one $1 in the build, found: ${f[*]}" >&2
    exit 1
  fi
  echo "${f[0]}"
}

"$BIN" serve --root "$PRISTINE_ROOT" 2>"$W/serve.log" &
SPID=$!
for _ in $(seq 100); do [ -S "$PRISTINE_ROOT/pristine.sock" ] && break; sleep 0.1; done
[ -S "$PRISTINE_ROOT/pristine.sock" ] || { cat "$W/serve.log" >&2; echo "test-client-packages: the daemon did not start (above)" >&2; exit 1; }

step "python: the wheel into a fresh venv"
"$(command -v /usr/bin/python3 || command -v python3)" -m venv "$W/venv"
whl="$(one 'pristine_client-*.whl')"
"$W/venv/bin/pip" install -q --disable-pip-version-check --no-index "$whl"
"$W/venv/bin/pip" install -q --disable-pip-version-check pymysql
"$W/venv/bin/python" -c 'import importlib.resources as r, sys; sys.exit(not r.files("pristine_client").joinpath("py.typed").is_file() and "the wheel lacks pristine_client/py.typed")'
(cd "$W" && "$W/venv/bin/python" "$EX/example.py")

step "node: the tarball into a new npm project"
mkdir "$W/node"
echo '{"name": "pristine-package-example", "private": true, "type": "module"}' >"$W/node/package.json"
tgz="$(one 'pristine-client-*.tgz')"
(cd "$W/node" && npm install --no-audit --no-fund --prefer-offline --loglevel=error "$tgz" mysql2 >/dev/null)
cp "$EX/example.mjs" "$W/node/"
(cd "$W/node" && node example.mjs)

step "java: the jar into an empty local Maven repository"
jar="$(one 'pristine-client-*[0-9T].jar')"
base="${jar%.jar}"
jversion="${base##*/pristine-client-}"
# Repositories: the local one starts empty; ~/.m2 serves (as a read-only
# remote, releases only) what the Java tests fetched, Maven Central the rest.
cat >"$W/settings.xml" <<EOF
<settings>
  <profiles><profile><id>cache</id>
    <repositories><repository><id>m2-cache</id><url>file://$HOME/.m2/repository</url><snapshots><enabled>false</enabled></snapshots></repository></repositories>
    <pluginRepositories><pluginRepository><id>m2-cache</id><url>file://$HOME/.m2/repository</url><snapshots><enabled>false</enabled></snapshots></pluginRepository></pluginRepositories>
  </profile></profiles>
  <activeProfiles><activeProfile>cache</activeProfile></activeProfiles>
</settings>
EOF
M=("${MVN[@]}" -s "$W/settings.xml" -Dmaven.repo.local="$W/m2")
"${M[@]}" org.apache.maven.plugins:maven-install-plugin:3.1.2:install-file -Dfile="$jar" -DpomFile="$base.pom" \
  -Dsources="$base-sources.jar" -Djavadoc="$base-javadoc.jar" >"$W/mvn-install.log" 2>&1 || { cat "$W/mvn-install.log" >&2; exit 1; }
cp -r "$EX/java" "$W/java"
(cd "$W/java" && "${M[@]}" -Dpristine.version="$jversion" test >"$W/mvn-test.log" 2>&1) || { cat "$W/mvn-test.log" >&2; exit 1; }
grep '^java: ' "$W/mvn-test.log" || { cat "$W/mvn-test.log" >&2; echo "test-client-packages: the Java example said nothing" >&2; exit 1; }

step "ruby: the gem into an empty GEM_HOME"
gem="$(one 'pristine-[0-9]*.gem')"
gem install --silent --local --no-document --install-dir "$W/gems" "$gem"
(cd "$W" && env -u RUBYLIB -u RUBYOPT GEM_HOME="$W/gems" GEM_PATH="$W/gems" ruby "$EX/example.rb")

step "php: the archive from a Composer artifact repository"
mkdir -p "$W/php/artifacts"
zip="$(one 'pristine-client-*.zip')"
cp "$zip" "$W/php/artifacts/"
cat >"$W/php/composer.json" <<'EOF'
{
    "name": "example/pristine-package-example",
    "require": {"pristinedb/pristine-client": "*"},
    "repositories": [{"type": "artifact", "url": "artifacts/"}, {"packagist.org": false}]
}
EOF
cp "$EX/example.php" "$W/php/"
(cd "$W/php" && COMPOSER_ALLOW_SUPERUSER=1 COMPOSER_HOME="$W/composer" COMPOSER_CACHE_DIR="$W/composer/cache" \
  composer install --quiet --no-interaction --no-progress && php example.php)

step "done: every package built, installed from its artifact and run against the daemon"
