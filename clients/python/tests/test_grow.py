"""Pools that grow: a run that needs more slots than the pool has grows
it at once instead of waiting for slots that can never come, and growth
beyond the daemon's budget fails at once naming the limit."""

import os
import shutil
import subprocess
import sys

import pytest

from pristine_client import PristineError
from pristine_client.ensure import ensure_pool, ensure_template

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SUITE = os.path.join(REPO, "testdata", "django-parity")


def test_ensure_pool_grows_a_smaller_pool(daemon, capsys):
    c = daemon.client
    t = ensure_template(c, "grow", "k-grow", lambda conn: None)
    ensure_pool(c, "grow", t["hash"], 1)
    held = c.lease("grow", holder="held")
    ensure_pool(c, "grow", t["hash"], 3)
    assert "had 1 slots, this run needs 3: grew it to 3" in capsys.readouterr().err
    st = c.pool("grow")
    assert st["size"] == 3 and st["base_size"] == 1
    # Two more leases with nothing released: only the new slots can answer.
    got = [c.lease("grow", holder=f"new {i}", wait=3000) for i in range(2)]
    assert len({held.slot, *(l.slot for l in got)}) == 3
    # min_size on a lease grows too.
    extra = c.lease("grow", holder="min_size", wait=3000, min_size=4)
    assert c.pool("grow")["size"] == 4 and extra.slot not in {held.slot, *(l.slot for l in got)}
    # The daemon is the session's: leave nothing behind.
    for l in (held, *got, extra):
        c.release(l.id)
    c.pool_down("grow")


def test_growth_beyond_the_budget_fails_at_once(binary):
    from conftest import running_daemon, sql_client
    # Room for 2 slots: the daemon counts 40 MiB for a MariaDB server and
    # 120 MiB for a MySQL one (mariadb.Flavor.SlotMemory), each with its
    # 16 MiB buffer pool.
    slot = (120 if sql_client() == "mysql" else 40) + 16
    budget = 2 * slot + 8
    with running_daemon(binary, args=["--max-memory", f"{budget}M"]) as d:
        c = d.client
        t = ensure_template(c, "budget", "k-budget", lambda conn: None)
        ensure_pool(c, "budget", t["hash"], 2)
        c.lease("budget", holder="a")
        c.lease("budget", holder="b")
        # Every slot is leased and the wait is far longer than the test:
        # only an answer at once can come back.
        with pytest.raises(PristineError) as e:
            c.lease("budget", holder="c", wait=3000, min_size=5)
        assert e.value.status == 507
        assert f"--max-memory {budget} MiB" in str(e.value) and "at most 2 slots fit" in str(e.value)
        with pytest.raises(PristineError) as e:
            ensure_pool(c, "budget", t["hash"], 5)
        assert e.value.status == 507 and "--max-memory" in str(e.value)


@pytest.fixture
def project(tmp_path):
    pytest.importorskip("django")
    dst = tmp_path / "suite"
    shutil.copytree(SUITE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def manage(project, daemon, *args):
    env = dict(os.environ, PARITY_MODE="pristine", PRISTINE_ROOT=daemon.root, PARITY_TEMPLATE="django-grow",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PRISTINE_URL", None)
    return subprocess.run([sys.executable, "manage.py", "test", "--noinput", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


def test_django_parallel_run_grows_the_pool(project, daemon):
    """After a --parallel 2 run left a pool of 3, a --parallel 4 run grows
    it to 5 at setup instead of waiting for a fifth slot."""
    # The daemon may also grow the pool by a spare while a lease waits
    # behind a reset (serve --max-spares; MySQL's slow full resets make
    # waits likely): those slots are counted apart, in grown_for_waits.
    def by_client(st):
        spares = st["stats"].get("grown_for_waits", 0)
        return st["size"] - spares, st["stats"].get("grown", 0) - spares

    first = manage(project, daemon, "--parallel", "2")
    assert first.returncode == 0, first.stderr
    assert by_client(daemon.client.pool("django-grow"))[0] == 3
    second = manage(project, daemon, "--parallel", "4")
    assert second.returncode == 0, second.stderr
    assert "had 3 slots, this run needs 5: grew it to 5" in second.stderr
    st = daemon.client.pool("django-grow")
    assert by_client(st) == (5, 2) and st["base_size"] == 3, st
    daemon.client.pool_down("django-grow")


def test_ensure_pool_returns_at_the_first_slot(daemon):
    """A new pool: ensure_pool is back once its first slot answers (min_ready
    1), the others still starting, and the lease that follows takes a slot."""
    c = daemon.client
    t = ensure_template(c, "first", "k-first", lambda conn: None)
    # 12 slots start for a second or more even on MariaDB's reflinks, and
    # fit beside the other tests (MySQL's slots are copies of ~150 MiB).
    ensure_pool(c, "first", t["hash"], 12)
    st = c.pool("first")
    assert st["size"] == 12 and st["states"].get("ready", 0) < 12, st["states"]
    lease = c.lease("first", holder="first", wait=60)
    c.release(lease.id)
    c.pool_down("first")
