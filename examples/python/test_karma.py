"""Each test gets its own pristine database (the pristine_db fixture of the
pristine-client pytest plugin); run them in parallel with pytest -n 4."""

import pymysql
import pytest

from karma import give_karma, total_karma


@pytest.fixture
def db(pristine_db):
    conn = pymysql.connect(**pristine_db.connect_kwargs())
    yield conn
    conn.close()


@pytest.mark.parametrize("points", [1, 5, 50, -30])
def test_give_karma(db, points):
    assert total_karma(db) == 30  # the seed, whatever other tests wrote
    give_karma(db, "ada@example.com", points)
    assert total_karma(db) == 30 + points


def test_unknown_user(db):
    with pytest.raises(KeyError):
        give_karma(db, "nobody@example.com", 1)


def test_wipe_everything(db):
    with db.cursor() as c:
        c.execute("DELETE FROM users")
    db.commit()
    assert total_karma(db) == 0


def test_worker_database_is_shared_by_this_workers_tests(pristine_worker_db):
    conn = pymysql.connect(**pristine_worker_db.connect_kwargs())
    try:
        assert total_karma(conn) >= 0
    finally:
        conn.close()
