"""Fixtures loaded once per session, a fresh copy of them for every test.

    # conftest.py
    from pristine_client import content_key
    from pristine_client.fork import fork_fixture

    def load_users(lease):
        ...  # the expensive fixtures, into the database lease describes

    users_db = fork_fixture("users_db", "app-users", load_users,
                            key=content_key(["fixtures/users.json"]))

    # test_users.py
    def test_rename(users_db):
        ...  # users_db is a Lease of a fresh copy of the loaded state

The first test that asks for the fixture, in each process, leases a
database of the session's template (pristine_template, as pristine_db
does), runs the pytest_pristine_setup hooks and then load on it, forks it
as a template (Client.fork), releases it, and brings a pool of the fork up;
every test then leases the fork, as pristine_db leases the template, and
gets everything load committed (docs/architecture.md, "Fork"). With key,
processes and later runs that load the same fixtures reuse the fork made
first instead of making another (load still runs, once per process). The
pytest_pristine_setup hooks do not run again on the fork's leases: the
fork carries what they did.
"""

import os
from typing import Any, Callable, Dict, Optional

import pytest

from .client import Lease, PristineError
from .ensure import ensure_pool
from .pytest_plugin import PristineSetup, _setup


def fork_once(s: PristineSetup, name: str, load: Callable[[Lease], Any], key: Optional[str] = None,
              pool_size: Optional[int] = None) -> Dict[str, Any]:
    """Load fixtures into a lease of the session's template, fork it as
    template name, and bring a pool of the fork up: once per process and
    name. Returns the fork's template (as Client.fork's "template")."""
    forks = s.__dict__.setdefault("_forks", {})
    if name in forks:
        return forks[name]
    s.ensure()
    lease = s.lease(f"pristine fork {name}: loading")
    s.setup(lease)
    try:
        load(lease)
        t = s.client.fork(lease.id, name, key)["template"]
    finally:
        s.client.release(lease.id)
    ensure_pool(s.client, name, t["hash"], pool_size or s.pool_size())
    forks[name] = t
    return t


def fork_fixture(fixture: str, name: str, load: Callable[[Lease], Any], key: Optional[str] = None,
                 pool_size: Optional[int] = None):
    """A pytest fixture named fixture (assign it to that name in a
    conftest.py) that gives each test a fresh lease of template name, a
    fork of the session's template after load(lease) ran on it (fork_once).
    The lease is released when the test ends, or kept when it failed and
    --pristine-keep-failed is given, as pristine_db's."""

    @pytest.fixture(name=fixture)
    def forked_db(request):
        s = _setup(request.config)
        try:
            fork_once(s, name, load, key, pool_size)
            lease = s.client.lease(name, holder=request.node.nodeid, wait=s.wait, pid=os.getpid())
        except PristineError as e:
            pytest.fail(f"pristine: a database of the fork {name}: {e}", pytrace=False)
        request.node._pristine_lease = lease
        yield lease
        msg = s.done(lease, getattr(request.node, "_pristine_failed", False))
        if msg:
            request.node._pristine_kept = msg

    return forked_db
