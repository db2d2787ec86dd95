from conftest import canary_sql

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
pristine_migrate = echo built >> builds.log && mariadb -u"$MYSQL_USER" "$MYSQL_DATABASE" < migrations/001.sql
pristine_pool_size = 3
""")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-n", "2", "--pristine-keep-failed")
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(["*pristine: kept the database of this failed test for debugging:*",
                                 "*mariadb -h127.0.0.1 -P*", "*release it with: pristine release *"])
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
