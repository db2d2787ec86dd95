#!/bin/sh
# Run inside a MySQL root by scripts/bench-servers.sh --capture (issue 21,
# "Numbers to reach"): the demo schema at --scale $SCALE (default 9, about
# 1 GB of data and indexes) loaded into a MySQL started by hand with the
# clone plugin and an account with BACKUP_ADMIN, then, $RUNS times (default
# 3): pristine's physical capture through the clone plugin (a whole template
# build: clone, start, accounts, clean stop) beside mysqldump | mysql of the
# same schema into an empty server (its start, the load, its clean stop).
# Everything lives under $CAPDIR (default /dev/shm/cap, the run's private
# tmpfs) and goes with the run.
set -eu
B=${CAPDIR:-/dev/shm/cap}
SCALE=${SCALE:-9}
RUNS=${RUNS:-3}
mkdir -p "$B"
chmod 711 "$B"
chown pristine:pristine "$B"
load() { cut -d' ' -f1-3 /proc/loadavg; }
ts() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(ts)" 'BEGIN { printf "%.2f", b - a }'; }
MY="--no-defaults --secure-file-priv=$B --skip-log-bin --mysqlx=OFF --innodb-use-native-aio=0 --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0 --innodb-flush-method=O_DIRECT_NO_FSYNC"
init() { su -s /bin/sh pristine -c "mysqld $MY --datadir=$B/$1 --tmpdir=$B --initialize-insecure" >/dev/null 2>&1; }
start() { # start NAME PORT [options]: a server as the pristine account, ready
  n=$1 port=$2
  shift 2
  su -s /bin/sh pristine -c "exec mysqld $MY --datadir=$B/$n --tmpdir=$B --socket=$B/$n.sock --pid-file=$B/$n.pid --log-error=$B/$n.err --bind-address=127.0.0.1 --port=$port --innodb-buffer-pool-size=512M --innodb-redo-log-capacity=512M --max-connections=50 $*" &
  until mysql -uroot -S "$B/$n.sock" -e 'SELECT 1' >/dev/null 2>&1; do sleep 0.1; done
}
stop() { mysqladmin -uroot -S "$B/$1.sock" shutdown; while [ -e "$B/$1.pid" ]; do sleep 0.1; done; }
echo "capture: $(mysqld --no-defaults --version); load $(load) at $(date -u +%T)"
pristine demo-sql --mysql --scale "$SCALE" >"$B/big.sql"
init src
init empty
start src 34001 --plugin-load-add=mysql_clone.so
t=$(ts)
mysql -uroot -S "$B/src.sock" -e 'CREATE DATABASE shop'
mysql -uroot -S "$B/src.sock" shop <"$B/big.sql"
echo "capture: source loaded (demo schema, scale $SCALE) in $(el "$t") s; load $(load)"
# The capture's account: what docs/capture.md lists, and BACKUP_ADMIN for the clone plugin.
mysql -uroot -S "$B/src.sock" -e "CREATE USER cap@'127.0.0.1' IDENTIFIED BY 'cap-secret-1'; GRANT SELECT, RELOAD, PROCESS, SHOW VIEW, TRIGGER, EVENT, LOCK TABLES, BACKUP_ADMIN ON *.* TO cap@'127.0.0.1'"
mysql -uroot -S "$B/src.sock" -N -e "SELECT CONCAT('capture: schema shop: ', COUNT(*), ' tables, ', SUM(TABLE_ROWS), ' rows (estimate), ', ROUND(SUM(DATA_LENGTH + INDEX_LENGTH) / 1048576), ' MiB of data and indexes') FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'"
echo "capture: source data directory: $(du -sm "$B/src" | cut -f1) MiB, of which the schema's tablespace files (shop/): $(du -sm "$B/src/shop" | cut -f1) MiB"
R=$B/root
# The base data directory, once per server version, as any first build makes it.
echo 'CREATE TABLE t (id INT PRIMARY KEY);' >"$B/tiny.sql"
pristine --root "$R" template build warm --from-sql "$B/tiny.sql" >/dev/null
i=1
while [ "$i" -le "$RUNS" ]; do
  echo "capture: run $i: load before $(load)"
  t=$(ts)
  PRISTINE_SOURCE_PASSWORD=cap-secret-1 pristine --root "$R" template build "big$i" --from-server mysql://cap@127.0.0.1:34001/ --databases shop --method physical 2>&1 | tail -1
  echo "capture: run $i: pristine physical (clone plugin): $(el "$t") s; load after $(load)"
  pristine --root "$R" template rm "big$i" >/dev/null 2>&1 || true
  rm -rf "$B/dst"
  cp -a "$B/empty" "$B/dst"
  t=$(ts)
  start dst 34002
  mysqldump -uroot -S "$B/src.sock" --single-transaction --routines --triggers --events --databases shop | mysql -uroot -S "$B/dst.sock"
  stop dst
  echo "capture: run $i: mysqldump | mysql (target start, load, clean stop): $(el "$t") s; load after $(load)"
  rm -rf "$B/dst"
  i=$((i + 1))
done
stop src
