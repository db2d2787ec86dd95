#!/usr/bin/env bash
# Runs every example's suite in parallel against one pristine daemon on a
# fresh root under /dev/shm (the commands of examples/README.md), then
# stops the daemon and removes the root. Needs bin/pristine and .venv
# (scripts/test.sh makes both).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
GO="$(cat .go-path 2>/dev/null || command -v go)"
BIN="${PRISTINE_BIN:-$REPO/bin/pristine}"
W="$(mktemp -d /dev/shm/pristine-examples-test-XXXXXX)"
chmod 711 "$W" # pristine's servers (the account pristine, when run as root) pass through it
export PRISTINE_ROOT="$W/root"
"$BIN" serve --root "$PRISTINE_ROOT" 2>"$W/serve.log" &
SPID=$!
stop() {
  kill "$SPID" 2>/dev/null || true
  wait "$SPID" 2>/dev/null || true
  rm -rf "$W"
}
trap stop EXIT
for _ in $(seq 100); do [ -S "$PRISTINE_ROOT/pristine.sock" ] && break; sleep 0.1; done

echo "examples: go"
(cd examples/go && "$GO" test -count=1 .)
echo "examples: python (pytest -n 2)"
(cd examples/python && "$REPO/.venv/bin/pytest" -p no:cacheprovider -n 2)
echo "examples: django (manage.py test --parallel 2)"
(cd examples/django && PRISTINE=1 "$REPO/.venv/bin/python" manage.py test --parallel 2 --noinput)
echo "examples: php (3 phpunit processes)"
bash examples/php/run-parallel.sh 3
echo "examples: laravel (3 phpunit processes, as paratest runs them)"
bash examples/laravel/run-parallel.sh 3
echo "examples: laravel again with 4 processes: the pool of 3 grows to 4 (issue 22)"
PRISTINE_POOL_SIZE=2 bash examples/laravel/run-parallel.sh 4
# examples/rails (issue 24): Debian's Rails 6.1, bin/rails test with 3 parallelize workers.
echo "examples: rails (bin/rails test, parallelize(workers: 3))"
bash examples/rails/run-parallel.sh 3
# Node (issue 24): Jest with 3 workers and Vitest with 3 forks, each npm ci'd
# from its package-lock.json; knex migrations build their templates.
echo "examples: node-jest (3 workers)"
bash examples/node-jest/run.sh 3
echo "examples: node-vitest (3 forks)"
bash examples/node-vitest/run.sh
# Java (issue 24): the client's own tests (client, JUnit 5 extension; they run a
# daemon of their own), then the Spring Boot example (Flyway and Liquibase, JPA
# repository tests in parallel) against this one. Maven caches in ~/.m2.
echo "clients/java: mvn install (tests against a daemon of their own)"
(cd clients/java && PRISTINE_BIN="$BIN" mvn -B -q --no-transfer-progress -Dstyle.color=never install)
# The installed client depends on nothing at run time (its JSON is its own):
# every dependency its POM names is provided or test scope, and its jar holds
# its own classes only. The examples below run that jar.
if ! python3 - clients/java/pom.xml <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
deps = ET.parse(sys.argv[1]).getroot().findall("m:dependencies/m:dependency", ns)
bad = [d.findtext("m:artifactId", namespaces=ns) for d in deps if d.findtext("m:scope", namespaces=ns) not in ("provided", "test")]
if bad:
    sys.exit("clients/java: the POM has run-time dependencies: " + ", ".join(bad))
PY
then
  exit 1
fi
if jar tf clients/java/target/pristine-client-*-SNAPSHOT.jar | grep -v -e '^META-INF/' -e '^io/$' | grep -qv '^io/pristinedb/'; then
  echo "clients/java: the jar holds classes of other packages than io.pristinedb" >&2
  exit 1
fi
echo "examples: spring (JUnit parallel execution, a database per test)"
(cd examples/spring && mvn -B -q --no-transfer-progress -Dstyle.color=never test)
# The Flyway classes again through mysql-connector-j (each test checks its
# connection's driver); the jakarta.persistence settings tell Hibernate the
# server is MariaDB 10.11, which the 5.5.5- prefix hides from that driver.
echo "examples: spring with mysql-connector-j (-Dpristine.driver=mysql)"
(cd examples/spring && mvn -B -q --no-transfer-progress -Dstyle.color=never -Dpristine.driver=mysql \
  -Dspring.jpa.properties.jakarta.persistence.database-product-name=MariaDB \
  -Dspring.jpa.properties.jakarta.persistence.database-major-version=10 \
  -Dspring.jpa.properties.jakarta.persistence.database-minor-version=11 \
  '-Dshop.tests=PristineProducts*Test' test)
# Spring Boot 4 (issue 35): the client's Spring and JUnit integrations again
# on Boot 4.0 (Spring Framework 7, JUnit 6), then the shop's web test on it.
echo "clients/java on Spring Boot 4 (-Pboot4: SpringSupportTest, ExtensionTest)"
(cd clients/java && PRISTINE_BIN="$BIN" mvn -B -q --no-transfer-progress -Dstyle.color=never -Pboot4 \
  -Dtest='SpringSupportTest,ExtensionTest' test)
echo "examples: spring-boot4 (the shop's web test on Spring Boot 4)"
(cd examples/spring-boot4 && mvn -B -q --no-transfer-progress -Dstyle.color=never test)
