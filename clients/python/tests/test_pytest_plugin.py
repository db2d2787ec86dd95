from conftest import canary_sql, sql_client

INNER = '''
import pymysql
import pytest


def q(lease, sql):
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        c.execute(sql)
        return c.fetchone()


@pytest.mark.parametrize("i", range(6))
def test_each_test_gets_a_pristine_database(pristine_db, i):
    assert q(pristine_db, "SELECT v FROM canary")[0] == "pristine"
    q(pristine_db, "UPDATE canary SET v = 'w%d'" % i)
    assert q(pristine_db, "SELECT v FROM canary")[0] == "w%d" % i


def test_worker_database(pristine_worker_db, pristine_db):
    assert pristine_worker_db.id != pristine_db.id
    assert q(pristine_worker_db, "SELECT COUNT(*) FROM canary")[0] == 1


def test_fails_and_keeps_its_database(pristine_db):
    q(pristine_db, "UPDATE canary SET v = 'evidence'")
    assert False, "deliberate failure"
'''


def test_plugin_with_xdist_builds_once_and_keeps_the_failed(pytester, in_root):
    (pytester.path / "migrations").mkdir()
    (pytester.path / "migrations" / "001.sql").write_text(canary_sql())
    pytester.makeini("""
[pytest]
pristine_template = pyplugin
pristine_files = migrations/*.sql
pristine_migrate = echo built >> builds.log && CLIENT -u"$MYSQL_USER" "$MYSQL_DATABASE" < migrations/001.sql
pristine_pool_size = 3
""".replace("CLIENT", sql_client()))
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-n", "2", "--pristine-keep-failed")
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(["*pristine: kept the database of this failed test for debugging:*",
                                 "*%s -h127.0.0.1 -P*" % sql_client(), "*release it with: pristine release *"])
    assert (pytester.path / "builds.log").read_text() == "built\n"
    c = in_root.client
    leases = c.leases()
    # The failed test's database is kept; so is the worker database of the
    # worker it ran on, when that worker also ran the worker-database test.
    assert all(l["kept"] for l in leases), leases
    failed = [l for l in leases if l["holder"] == "test_inner.py::test_fails_and_keeps_its_database"]
    assert len(failed) == 1 and len(leases) <= 2, leases
    kept = c.get_lease(failed[0]["id"])
    import pymysql
    with pymysql.connect(**kept.connect_kwargs()) as db, db.cursor() as cur:
        cur.execute("SELECT v FROM canary")
        assert cur.fetchone()[0] == "evidence"
    for l in leases:
        c.release(l["id"])

    # A second run finds the template built: no migration runs.
    result = pytester.runpytest_subprocess("-n", "2", "-k", "not fails")
    result.assert_outcomes(passed=7)
    assert (pytester.path / "builds.log").read_text() == "built\n"
    assert c.leases() == []
    c.pool_down("pyplugin")


def test_plugin_reports_a_missing_daemon(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PRISTINE_ROOT", str(tmp_path / "nowhere"))
    (pytester.path / "schema.sql").write_text(canary_sql())
    pytester.makeini("[pytest]\npristine_files = schema.sql\n")
    pytester.makepyfile(test_inner="def test_x(pristine_db):\n    pass\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no pristine daemon is running on *pristine.sock: start one with `pristine pool up` or `pristine serve`*"])


PARITY_CONFTEST = '''
import pymysql


def _q(kw, *sql):
    with pymysql.connect(autocommit=True, **kw) as db, db.cursor() as c:
        for s in sql:
            c.execute(s)
        return c.fetchall()


def pytest_pristine_build(conn, config):
    # The schema, and nothing this process or the tests rely on.
    _q(dict(host=conn["host"], port=conn["port"], user=conn["user"], password=conn["password"],
            database=conn["database"]),
       "CREATE TABLE canary (id INT PRIMARY KEY, v VARCHAR(20))", "INSERT INTO canary VALUES (1, 'pristine')",
       "CREATE TABLE fixtures (v VARCHAR(20))")
    with open("builds.log", "a") as f:
        f.write("built\\n")
    return True


def pytest_pristine_ready(config, hash):
    config.pristine_ready = getattr(config, "pristine_ready", []) + [hash]


def pytest_pristine_setup(lease, config):
    _q(lease.connect_kwargs(), "INSERT INTO fixtures VALUES ('from setup')")
'''

PARITY_TESTS = '''
import pymysql
import pytest


def q(lease, sql):
    with pymysql.connect(autocommit=True, **lease.connect_kwargs()) as db, db.cursor() as c:
        c.execute(sql)
        return c.fetchall()


@pytest.mark.parametrize("i", range(4))
def test_a_test_database(pristine_db, request, i):
    assert len(request.config.pristine_ready) == 1, "pytest_pristine_ready ran %r times in this process" % request.config.pristine_ready
    assert q(pristine_db, "SELECT v FROM fixtures") == (("from setup",),)
    assert q(pristine_db, "SELECT v FROM canary") == (("pristine",),)
    q(pristine_db, "INSERT INTO fixtures VALUES ('test %d')" % i)


def test_a_worker_database(pristine_worker_db, request):
    assert len(request.config.pristine_ready) == 1
    assert q(pristine_worker_db, "SELECT v FROM fixtures") == (("from setup",),)
'''


def _outcomes(xml_path):
    import xml.etree.ElementTree as ET
    out = {}
    for tc in ET.parse(xml_path).iter("testcase"):
        state = "passed"
        for kind in ("failure", "error", "skipped"):
            if tc.find(kind) is not None:
                state = kind
        out[f"{tc.get('classname')}::{tc.get('name')}"] = state
    return out


def test_plugin_parity_building_and_reusing_runs(pytester, in_root):
    """Parity by construction: the run that builds the template and the run
    that reuses it give every test the same outcome, since what is not the
    schema runs in every process of every run (pytest_pristine_ready,
    pytest_pristine_setup)."""
    pytester.makeini("""
[pytest]
pristine_template = pyparity
pristine_files = conftest.py
pristine_pool_size = 3
""")
    pytester.makeconftest(PARITY_CONFTEST)
    pytester.makepyfile(test_parity=PARITY_TESTS)
    built = pytester.runpytest_subprocess("-n", "2", "--junitxml=built.xml")
    built.assert_outcomes(passed=5)
    assert (pytester.path / "builds.log").read_text() == "built\n"
    reused = pytester.runpytest_subprocess("-n", "2", "--junitxml=reused.xml")
    assert (pytester.path / "builds.log").read_text() == "built\n", "the second run built the template again"
    first, second = _outcomes(pytester.path / "built.xml"), _outcomes(pytester.path / "reused.xml")
    assert len(first) == 5 and set(first.values()) == {"passed"}, first
    assert first == second, "per-test outcomes differ between the building and the reusing run"
    reused.assert_outcomes(passed=5)
    c = in_root.client
    assert c.leases() == []
    c.pool_down("pyparity")
