"""ForkTestCase: a test class whose expensive setUpTestData runs once, and
every test gets a copy of the state it left: a fresh lease of a fork.

    from pristine_client.django.testcases import ForkTestCase

    class ReportTests(ForkTestCase):
        fork_files = ["shop/factories.py"]  # more code setUpTestData runs

        @classmethod
        def setUpTestData(cls):
            ...  # thousands of rows: runs once per fork, not per test

        def test_totals(self):
            ...  # a database of its own holding those rows; may commit

With the pristine database backend (pristine_client.django), the first
time a class runs, setUpTestData (and nothing else) runs on a lease of the
run's template; the lease is forked (docs/architecture.md, "Fork": the
fork holds everything committed) into a template named after the class
and keyed by its module's source, fork_files and the run's template; a
pool of the fork comes up. Every test then runs on a fresh lease of the
fork, released (and reset by pristine) when it ends, so a test may commit,
use several connections or threads, and see none of another test's
writes. Later classes in other processes and later runs find the fork
and do not run setUpTestData at all; a change of the module, of
fork_files or of the schema (a new template) makes a new fork.

So setUpTestData must write its state to the database only: attributes it
sets on the class would be missing where the fork is reused, and are
refused. Look rows up in setUp or in the tests. `fixtures` are loaded into
every test's database, as TransactionTestCase does; call loaddata in
setUpTestData (with the fixture files in fork_files) to load them once.
"""

import hashlib
import inspect
import os
import re
from typing import Dict, List, Optional, Sequence

from django.db import connections
from django.test import TransactionTestCase

from ..client import Client, Lease, PristineError
from ..ensure import ensure_pool
from ..key import content_key
from .creation import group_of, lease_settings

# The settings a lease replaces in an alias's connection.
_KEYS = ("HOST", "PORT", "USER", "PASSWORD", "NAME", "OPTIONS")


class _Fork:
    """The fork of one class in this process: the client, the group's
    aliases, the fork's template name, and the lease a test runs on."""

    def __init__(self, client: Client, aliases: List[str], name: str):
        self.client, self.aliases, self.name = client, aliases, name
        self.lease: Optional[Lease] = None
        self.saved: Dict[str, dict] = {}

    def point(self, lease: Lease):
        """Point the aliases' connections at lease (their test databases'
        names stay: a slot holds every alias's database)."""
        for a in self.aliases:
            c = connections[a]
            c.close()
            self.saved[a] = {k: c.settings_dict.get(k) for k in _KEYS}
            c.settings_dict.update(lease_settings(c.settings_dict, lease, c.settings_dict["NAME"]))
        self.lease = lease

    def restore(self):
        """Point the aliases back at the process's own databases."""
        for a in self.aliases:
            c = connections[a]
            c.close()
            c.settings_dict.update(self.saved.pop(a, {}))
        self.lease = None


def _fork_name(template: str, cls, parent: str, key: str) -> str:
    """A template name that names the class, its parent and its key: a
    later process finds the fork by it before running setUpTestData."""
    tag = hashlib.sha256(f"{parent}\n{key}".encode()).hexdigest()[:12]
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{template}.{cls.__name__}")[:64 - len(tag) - 1]
    return f"{base}-{tag}"


def _key(cls) -> str:
    """The class's module source and fork_files: what setUpTestData runs."""
    files = [inspect.getfile(cls)] + [os.path.abspath(f) for f in cls.fork_files]
    return content_key(files, ["django ForkTestCase", f"{cls.__module__}.{cls.__qualname__}"])


class ForkTestCase(TransactionTestCase):
    """setUpTestData runs once per fork; every test runs on a fresh lease
    of the fork (module docstring)."""

    # Files (besides the class's module) whose content shapes what
    # setUpTestData writes: factories, fixture files, data it reads.
    fork_files: Sequence[str] = ()
    # Slots of the fork's pool: a class runs in one process at a time.
    fork_pool_size = 2
    # Seconds to wait for a database of the fork.
    fork_wait = 120.0

    _pristine_fork: Optional[_Fork] = None

    @classmethod
    def setUpTestData(cls):
        """Write the state every test starts from (runs once per fork)."""

    @classmethod
    def setUpClass(cls):
        cls._pristine_fork = cls._make_fork()
        try:
            super().setUpClass()  # a TransactionTestCase sets up its first test here
        except BaseException:
            cls._pristine_fork = None
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            cls._pristine_fork = None

    @classmethod
    def _make_fork(cls) -> _Fork:
        """Find the class's fork, or run setUpTestData on a lease of the
        run's template and fork it; bring a pool of it up."""
        databases = cls._validate_databases()  # "__all__" is every alias
        alias = next((a for a in ("default", *sorted(databases)) if a in databases), None)
        if alias is None:
            raise TypeError(f"{cls.__qualname__}: a ForkTestCase needs a database (databases = {cls.databases!r})")
        try:
            g = group_of(alias)
        except PristineError as e:
            raise TypeError(f"{cls.__qualname__}: a ForkTestCase needs the pristine database backend "
                            f"(ENGINE pristine_client.django) for alias {alias}: {e}") from e
        client = g.client or Client.from_env()
        template = g.template or g.template_name()
        parent = client.pool(template)["hash"]
        key = _key(cls)
        fork = _Fork(client, list(g.aliases), _fork_name(template, cls, parent, key))
        try:
            found = client.wait_template(fork.name, 0)
        except PristineError as e:
            if e.status != 404:
                raise
            found = None
        if found is None or found.get("status") != "ready":
            found = cls._load_and_fork(fork, template, key)["template"]
        ensure_pool(client, fork.name, found["hash"], cls.fork_pool_size)
        return fork

    @classmethod
    def _load_and_fork(cls, fork: _Fork, template: str, key: str) -> dict:
        """setUpTestData on a lease of template (one slot more than the
        run holds), committed, then forked as fork.name."""
        size = int(fork.client.pool(template).get("size") or 0)
        loading = fork.client.lease(template, holder=f"django {cls.__qualname__}: setUpTestData",
                                    wait=cls.fork_wait, pid=os.getpid(), min_size=size + 1)
        try:
            fork.point(loading)
            before = dict(cls.__dict__)
            try:
                cls.setUpTestData()
            finally:
                fork.restore()
            set_ = sorted(n for n, v in cls.__dict__.items() if before.get(n, object()) is not v)
            if set_:
                raise TypeError(f"{cls.__qualname__}.setUpTestData set {', '.join(set_)} on the class: a "
                                "ForkTestCase's setUpTestData runs once per fork, not in every process and run, "
                                "so those attributes would be missing where the fork is reused: write the state "
                                "to the database only, and look the rows up in setUp or in the tests")
            return fork.client.fork(loading.id, fork.name, key)
        finally:
            fork.client.release(loading.id)

    @classmethod
    def _fixture_setup(cls):
        """A fresh lease of the fork for the test, and its fixtures."""
        f = cls._pristine_fork
        f.point(f.client.lease(f.name, holder=f"django {cls.__qualname__}", wait=cls.fork_wait, pid=os.getpid()))
        if cls.fixtures:
            from django.core.management import call_command

            for db in cls._databases_names(include_mirrors=False):
                call_command("loaddata", *cls.fixtures, verbosity=0, database=db)

    def _fixture_teardown(self):
        """The test's lease goes back (reset by pristine): no flush."""
        f = type(self)._pristine_fork
        lease = f.lease
        f.restore()
        if lease is not None:
            f.client.release(lease.id)
