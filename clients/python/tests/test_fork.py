from pristine_client import ensure_pool, ensure_template

from conftest import canary_sql, sql_client
from test_client import build_canary, canary, connect


def test_fork_makes_a_template_of_a_lease_and_the_lease_goes_on(daemon):
    c = daemon.client
    t = ensure_template(c, "pyforkbase", "pyforkbase-v1", build_canary)
    ensure_pool(c, "pyforkbase", t["hash"], 2)
    lease = c.lease("pyforkbase", holder="test_fork")
    with connect(lease) as db, db.cursor() as cur:
        cur.execute("UPDATE canary SET v = 'loaded' WHERE id = 1")
        a = c.fork(lease.id, "pyforked", key="fixtures-v1")
        assert a["built"] and a["template"]["name"] == "pyforked", a
        assert a["template"]["parent"] == t["hash"] and a["template"]["parent_name"] == "pyforkbase", a
        # The holder's connection survives the fork.
        cur.execute("SELECT v FROM canary WHERE id = 1")
        assert cur.fetchone()[0] == "loaded"
    # The same key again: the fork made before, at once.
    again = c.fork(lease.id, "pyforked", key="fixtures-v1")
    assert not again["built"] and again["template"]["hash"] == a["template"]["hash"], again
    c.release(lease.id)
    ensure_pool(c, "pyforked", a["template"]["hash"], 1)
    f = c.lease("pyforked")
    assert canary(f) == "loaded"
    c.release(f.id)
    c.pool_down("pyforked")
    c.pool_down("pyforkbase")


CONFTEST = '''
import pymysql

from pristine_client.fork import fork_fixture


def load(lease):
    with open("loads.log", "a") as f:
        f.write("loaded\\n")
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        c.execute("INSERT INTO canary VALUES (2, 'fixture')")


fixtures_db = fork_fixture("fixtures_db", "pyplugin-fixtures", load, key="fixtures-v1")
'''

INNER = '''
import pymysql
import pytest


def q(lease, sql):
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        c.execute(sql)
        return c.fetchone()


@pytest.mark.parametrize("i", range(3))
def test_each_test_gets_a_fresh_copy_of_the_fixtures(fixtures_db, i):
    assert fixtures_db.template == "pyplugin-fixtures"
    assert q(fixtures_db, "SELECT v FROM canary WHERE id = 2")[0] == "fixture"
    assert q(fixtures_db, "SELECT COUNT(*) FROM canary")[0] == 2
    q(fixtures_db, "INSERT INTO canary VALUES (%d, 'test')" % (10 + i))


def test_pristine_db_is_still_the_template(pristine_db):
    assert q(pristine_db, "SELECT COUNT(*) FROM canary")[0] == 1
'''


def test_fork_fixture_loads_once_per_session(pytester, in_root):
    (pytester.path / "migrations").mkdir()
    (pytester.path / "migrations" / "001.sql").write_text(canary_sql())
    pytester.makeini("""
[pytest]
pristine_template = pyplugin-base
pristine_files = migrations/*.sql
pristine_migrate = CLIENT -u"$MYSQL_USER" "$MYSQL_DATABASE" < migrations/001.sql
pristine_pool_size = 2
""".replace("CLIENT", sql_client()))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=4)
    assert (pytester.path / "loads.log").read_text() == "loaded\n"
    c = in_root.client
    templates = {t["name"]: t for t in c.request("GET", "/v1/templates")[1]}
    fork, base = templates["pyplugin-fixtures"], templates["pyplugin-base"]
    assert fork["parent"] == base["hash"] and fork["parent_name"] == "pyplugin-base", fork
    assert c.leases() == []
    c.pool_down("pyplugin-fixtures")
    c.pool_down("pyplugin-base")
