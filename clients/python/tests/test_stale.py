"""No silent stale templates: a build that runs code must be keyed by the
files it reads (docs/clients.md, "What keys a template")."""

import pymysql
import pytest

from pristine_client import UNKEYED_BUILD, PristineError, content_key, ensure_template

from conftest import canary_sql


def _migrate_from(path, runs):
    def build(conn):
        runs.append(1)
        with pymysql.connect(host=conn["host"], port=int(conn["port"]), user=conn["user"], password=conn["password"],
                             database=conn["database"], autocommit=True) as db, db.cursor() as c:
            for stmt in path.read_text().split(";"):
                if stmt.strip():
                    c.execute(stmt)
    return build


def test_a_build_no_file_keys_is_refused_and_a_changed_migration_gets_a_new_template(daemon, tmp_path):
    mig = tmp_path / "migrations"
    mig.mkdir()
    (mig / "001.sql").write_text(canary_sql())
    runs = []
    build = _migrate_from(mig / "001.sql", runs)
    # Keyed by the command alone: refused before anything is built.
    with pytest.raises(PristineError) as e:
        ensure_template(daemon.client, "pystale", content_key([], ["./migrate up"]), build, key_files=0)
    assert e.value.status == 400 and e.value.code == UNKEYED_BUILD and runs == []
    # Keyed by its migrations: a changed one gets a new template.
    first = ensure_template(daemon.client, "pystale", content_key([str(mig)]), build, key_files=1)
    (mig / "001.sql").write_text(canary_sql().replace("'pristine'", "'changed'"))
    second = ensure_template(daemon.client, "pystale", content_key([str(mig)]), build, key_files=1)
    assert len(runs) == 2 and first["hash"] != second["hash"]


def test_plugin_refuses_a_migrate_no_file_keys(pytester, in_root):
    pytester.makeini("[pytest]\npristine_migrate = ./migrate up\n")
    pytester.makepyfile(test_inner="def test_x(pristine_db):\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*set pristine_files*the old template*pristine_allow_stale = true*"])
