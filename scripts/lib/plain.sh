# shellcheck shell=bash
# The stock side of the Django scripts (bench-django.sh, parity-django.sh,
# bench-django-first.sh): a plain mariadbd on tmpfs with the settings of
# pristine's template builds, as a test run finds its server.
#
# start_plain W NAME: installs a data directory in W/plain, starts the
# server on the socket W/plain.sock (no TCP), makes the account NAME
# (password NAME, every privilege) and loads the time zone tables, as
# pristine's base (and MariaDB's official image) has them. Sets MPID to
# the server's pid; the caller kills it. Fails naming the cause.
start_plain() {
  local w="$1" name="$2" out
  # --skip-name-resolve --force: a machine whose host name does not resolve
  # (a fresh chroot) is fine.
  if ! out=$(mariadb-install-db --no-defaults --datadir="$w/plain" --auth-root-authentication-method=normal --skip-name-resolve --force 2>&1); then
    echo "$out" | tail -20 >&2
    echo "start_plain: mariadb-install-db failed (above)" >&2
    return 1
  fi
  mariadbd --no-defaults --datadir="$w/plain" --socket="$w/plain.sock" --skip-networking \
    --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
    --innodb-flush-method=nosync --skip-log-bin --performance-schema=0 --user=root \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
    --log-error="$w/plain.err" --pid-file="$w/plain.pid" 2>/dev/null &
  MPID=$!
  local _
  for _ in $(seq 100); do
    [ -S "$w/plain.sock" ] && mariadb --no-defaults -S "$w/plain.sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --no-defaults -S "$w/plain.sock" -uroot -e "CREATE USER $name@localhost IDENTIFIED BY '$name'; GRANT ALL ON *.* TO $name@localhost" ||
    { tail -20 "$w/plain.err" >&2; echo "start_plain: the plain server did not come up (its log above)" >&2; return 1; }
  mariadb-tzinfo-to-sql /usr/share/zoneinfo 2>/dev/null | mariadb --no-defaults -S "$w/plain.sock" -uroot mysql
}
