"""Leases taken ahead and releases off the test's thread (Prefetcher, and
the pytest plugin that uses it by default), against a real daemon."""

import time

import pymysql

from conftest import canary_sql, sql_client
from pristine_client import Client
from pristine_client.ensure import ensure_pool, ensure_template
from pristine_client.prefetch import Prefetcher


def _q(lease, *sql):
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        for s in sql:
            c.execute(s)
        return c.fetchall()


def _canary_pool(c: Client, name: str, size: int = 2) -> str:
    def build(conn):
        kw = dict(host=conn["host"], port=conn["port"], user=conn["user"], password=conn["password"],
                  database=conn["database"])
        with pymysql.connect(autocommit=True, **kw) as db, db.cursor() as cur:
            for s in canary_sql().split(";"):
                if s.strip():
                    cur.execute(s)
    t = ensure_template(c, name, "canary-" + name, build)
    ensure_pool(c, name, t["hash"], size)
    return t["hash"]


def test_prefetcher_hands_out_pristine_databases_and_returns_what_it_holds(daemon):
    c = daemon.client
    _canary_pool(c, "prefetch")
    before = c.pool("prefetch")["stats"]
    p = Prefetcher(c, "prefetch", holder="prefetch test", wait=60,
                   connect=lambda l: pymysql.connect(autocommit=True, **l.pymysql_kwargs()))
    for i in range(4):
        lease, conn = p.take()
        # The connection was opened ahead, to the lease handed out.
        assert conn is not None
        with conn.cursor() as cur:
            cur.execute("SELECT v FROM canary")
            assert cur.fetchone()[0] == "pristine", f"take {i} got a database a previous take wrote to"
            cur.execute("UPDATE canary SET v = 'w%d'" % i)
        conn.close()
        # A loopback lease: PyMySQL connects without TLS (no CA store
        # loaded on every connection).
        assert lease.pymysql_kwargs()["ssl_disabled"] is True
        # Released changed, in the background: the daemon resets it.
        p.release(lease.id, unchanged=True)
    # The fifth lease, asked for ahead at the fourth take, is taken before
    # close (a close that comes first stops it from asking: nothing to
    # prove then).
    deadline = time.monotonic() + 30
    while c.pool("prefetch")["stats"]["leases"] - before["leases"] < 5:
        assert time.monotonic() < deadline, "no lease was taken ahead after the fourth take"
        time.sleep(0.01)
    assert p.close() == []
    st = c.pool("prefetch")
    assert st["leased"] == 0, st
    assert c.leases() == []
    # Every lease, the one taken ahead and never used included, was
    # released, none reclaimed because its holder was gone.
    assert st["stats"]["holder_gone"] == before["holder_gone"]
    assert st["stats"]["leases"] - before["leases"] == 5
    c.pool_down("prefetch")


INNER = '''
import time

import pymysql
import pytest


def q(lease, sql):
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        c.execute(sql)
        return c.fetchone()


@pytest.mark.parametrize("i", range(4))
def test_writes_and_the_next_sees_none_of_it(pristine_db, i):
    assert q(pristine_db, "SELECT v FROM canary")[0] == "pristine"
    q(pristine_db, "UPDATE canary SET v = 'w%d'" % i)
    assert q(pristine_db, "SELECT v FROM canary")[0] == "w%d" % i
'''

INI = """
[pytest]
pristine_template = pyprefetch
pristine_files = migrations/*.sql
pristine_migrate = CLIENT -u"$MYSQL_USER" "$MYSQL_DATABASE" < migrations/001.sql
pristine_pool_size = 2
""".replace("CLIENT", sql_client())


def _project(pytester):
    (pytester.path / "migrations").mkdir(exist_ok=True)
    (pytester.path / "migrations" / "001.sql").write_text(canary_sql())
    pytester.makeini(INI)


def _no_lease_held(c: Client, before):
    st = c.pool("pyprefetch")
    assert st["leased"] == 0 and c.leases() == [], (st, c.leases())
    # Released by the plugin, not reclaimed by the daemon when the test
    # process exited.
    assert st["stats"]["holder_gone"] == before["holder_gone"], st["stats"]


def test_plugin_prefetches_by_default_each_test_pristine_in_either_order(pytester, in_root):
    _project(pytester)
    pytester.makepyfile(test_inner=INNER)
    c = in_root.client
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=4)
    before = c.pool("pyprefetch")["stats"]
    assert before["holder_gone"] == 0
    _no_lease_held(c, before)
    # The same tests the other way round, and with prefetch off.
    pytester.makepyfile(test_inner=INNER.replace("range(4)", "reversed(range(4))"))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=4)
    _no_lease_held(c, before)
    result = pytester.runpytest_subprocess("-o", "pristine_prefetch=false")
    result.assert_outcomes(passed=4)
    _no_lease_held(c, before)


def test_plugin_returns_the_lease_taken_ahead_on_ctrl_c(pytester, in_root):
    _project(pytester)
    pytester.makepyfile(test_inner='''
import os, signal


def test_a(pristine_db):
    pass


def test_b(pristine_db):
    # Ctrl-C: Python's own SIGINT handler, which a run started in the
    # background (SIGINT ignored, as a shell's background jobs are) lacks.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.kill(os.getpid(), signal.SIGINT)


def test_never_runs(pristine_db):
    pass
''')
    c = in_root.client
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    _no_lease_held(c, c.pool("pyprefetch")["stats"] | {"holder_gone": 0})


def test_prefetcher_closes_at_once_while_its_lease_ahead_waits_for_a_full_pool(daemon):
    c = daemon.client
    _canary_pool(c, "prefetchfull")
    other = c.lease("prefetchfull", holder="holds the other slot")
    p = Prefetcher(c, "prefetchfull", holder="prefetch full", wait=60)
    lease = p.lease()  # the last free slot; the lease ahead waits for one
    time.sleep(0.3)
    assert c.pool("prefetchfull")["leased"] == 2, "the pool is full: the lease ahead waits"
    t0 = time.monotonic()
    assert p.close() == []
    took = time.monotonic() - t0
    assert took < 5, f"close waited {took:.1f}s for a lease ahead that could not come"
    c.release(lease.id)
    c.release(other.id)
    # Nothing was taken after close: the pool's slots come back free and stay so.
    time.sleep(2)
    st = c.pool("prefetchfull")
    assert st["leased"] == 0 and c.leases() == [], (st, c.leases())
    c.pool_down("prefetchfull")
