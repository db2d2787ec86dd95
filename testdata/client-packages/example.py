"""The Python package's example, run from the installed wheel by
scripts/test-client-packages.sh: a template built from a tiny SQL string,
a pool of one, one lease, a query on it, its release."""

import pymysql

from pristine_client import Client
from pristine_client.ensure import ensure_pool, ensure_template

SQL = ["CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO t VALUES (1, 'pristine')"]


def build(conn):
    db = pymysql.connect(host=conn["host"], port=conn["port"], user=conn["user"],
                         password=conn["password"], database=conn["database"], autocommit=True)
    with db.cursor() as cur:
        for stmt in SQL:
            cur.execute(stmt)
    db.close()


client = Client.from_env()
tpl = ensure_template(client, "pkg-python", "client-packages-python-1", build)
ensure_pool(client, "pkg-python", tpl["hash"], 1)
lease = client.lease("pkg-python")
db = pymysql.connect(**lease.connect_kwargs())
with db.cursor() as cur:
    cur.execute("SELECT name FROM t WHERE id = 1")
    name = cur.fetchone()[0]
db.close()
client.release(lease.id)
client.pool_down("pkg-python")
assert name == "pristine", name
print(f"python: leased {lease.database} on port {lease.port}, read {name!r}, released")
