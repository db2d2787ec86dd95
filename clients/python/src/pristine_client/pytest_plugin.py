"""pytest plugin: a pristine database per test (pristine_db) or per worker
process (pristine_worker_db), from a pristine daemon.

Configure in pytest.ini / pyproject.toml ([tool.pytest.ini_options]):

    pristine_template = app              # the template's name
    pristine_files = migrations/*.sql    # the files that define it (its key)
    pristine_migrate = ./migrate up      # builds it; sees DATABASE_URL, MYSQL_*

pristine_files is what keys the template: a change to any of those files
builds a new one. It is required: without it the template would be keyed
by the migrate command's text alone, and after a migration changes every
run would still get the old template. pristine_allow_stale = true accepts
that risk (a template that goes stale, silently).
    pristine_pool_size = 4               # default: 2 per xdist worker, at least 2
    pristine_prefetch = false            # default true: each process leases the next
                                         # test's database while a test runs (one
                                         # lease more held) and releases in the
                                         # background

or implement the hook pytest_pristine_build(conn) in a conftest.py to build
the template in Python. With pytest-xdist every worker asks for the same
template: one builds it, the others wait. Each lease names its worker
process, so a worker that is killed has its leases reclaimed.

Parity by construction: a run that builds the template and one that
reuses it must give the same outcomes. The build (pristine_migrate,
pytest_pristine_build) runs in one process of one run, so it builds the
schema and nothing else; what a stock setup does besides building the
schema goes in two hooks that run in every process of every run, the
building one included, the same way: pytest_pristine_ready(config, hash)
once per process when the template is ready, and
pytest_pristine_setup(lease, config) on every database handed out, before
the test sees it.
"""

import os

import pytest

from .client import UNKEYED_BUILD, Client, Lease, PristineError
from .ensure import ensure_pool, ensure_template, run_command
from .key import content_key
from .prefetch import Prefetcher


class _Hooks:
    @pytest.hookspec(firstresult=True)
    def pytest_pristine_build(self, conn, config):
        """Build the template: run migrations and fixtures against the
        template server conn describes (host, port, socket, user, password,
        database, dsn, url, env). Return True when done. It runs once
        across processes and runs: build the schema here and nothing that
        this process or the tests rely on (pytest_pristine_ready and
        pytest_pristine_setup are for that)."""

    def pytest_pristine_ready(self, config, hash):
        """The template is ready (built by this process, another, or an
        earlier run): called once per process, in every process, before
        its first database is handed out. The place for process-side work
        a stock setup does besides building the schema (registering
        adapters, warming caches, reading the schema's version)."""

    def pytest_pristine_setup(self, lease, config):
        """A database was leased for a test (pristine_db) or a worker
        (pristine_worker_db): called on every one, in the process that uses
        it, before the test sees it. The place for per-database work a
        stock setup does after migrating (loading fixtures that are not
        part of the template, per-run settings)."""


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(_Hooks)


def pytest_addoption(parser):
    g = parser.getgroup("pristine", "pristine databases")
    g.addoption("--pristine-keep-failed", action="store_true", default=None,
                help="keep a failed test's database for debugging and print its DSN")
    g.addoption("--pristine-template", default=None, help="the template's name (default: app)")
    g.addoption("--pristine-pool-size", type=int, default=None, help="size of the pool brought up when none is")
    parser.addini("pristine_template", "the template's name", default="app")
    parser.addini("pristine_files", "files that define the template (globs, relative to rootdir)", type="linelist")
    parser.addini("pristine_migrate", "shell command that builds the template (sees DATABASE_URL, MYSQL_*)")
    parser.addini("pristine_allow_stale", "build with no pristine_files: the template is keyed by the migrate "
                  "command alone and goes stale when a file it reads changes", type="bool", default=False)
    parser.addini("pristine_database", "the template's database name (default: pristine's)")
    parser.addini("pristine_pool_size", "size of the pool brought up when none is")
    parser.addini("pristine_keep_failed", "keep failed tests' databases", type="bool", default=False)
    parser.addini("pristine_release", "release mode: unchanged (checked, reused if nothing was written) or dirty",
                  default="unchanged")
    parser.addini("pristine_wait", "seconds to wait for a free database", default="60")
    parser.addini("pristine_prefetch", "take each test's database while the previous test runs (one lease more "
                  "held per worker process); false: lease on the test's thread", type="bool", default=True)


_UNKEYED = ("pristine: set pristine_files in the pytest configuration to the files that define the template "
            "(the migrations, fixtures and schema dumps pristine_migrate or pytest_pristine_build reads): they key "
            "it, and without them the template would be keyed by the command's text alone, so after a migration "
            "changes every run would still get the old template. pristine_allow_stale = true accepts that risk")


class PristineSetup:
    """The session's template and pool, made ready once per process."""

    def __init__(self, config):
        self.config = config
        self.client = Client.from_env()
        self.name = config.getoption("pristine_template") or config.getini("pristine_template")
        self.keep_failed = bool(config.getoption("pristine_keep_failed") or config.getini("pristine_keep_failed"))
        self.unchanged = config.getini("pristine_release") != "dirty"
        self.wait = float(config.getini("pristine_wait"))
        self.hash = None
        # A failed test's kept database names its test (its lease's
        # holder): a run that keeps them leases on the test's thread.
        ahead = bool(config.getini("pristine_prefetch")) and not self.keep_failed
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.prefetcher = Prefetcher(self.client, self.name, holder=f"pytest worker {worker} (prefetched)",
                                     wait=self.wait, pid=os.getpid(), ahead=ahead)

    def pool_size(self) -> int:
        n = self.config.getoption("pristine_pool_size") or self.config.getini("pristine_pool_size")
        if n:
            return int(n)
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        return max(2, 2 * workers)

    def ensure(self) -> str:
        if self.hash:
            return self.hash
        cfg = self.config
        root = str(cfg.rootpath)
        files = [p if os.path.isabs(p) else os.path.join(root, p) for p in cfg.getini("pristine_files")]
        command = cfg.getini("pristine_migrate")
        allow_stale = bool(cfg.getini("pristine_allow_stale"))
        if not files and not allow_stale:
            raise pytest.UsageError(_UNKEYED)
        key = content_key(files, extra=[command])

        def build(conn):
            if command:
                run_command(command, conn, cwd=root)
            cfg.hook.pytest_pristine_build(conn=conn, config=cfg)

        try:
            t = ensure_template(self.client, self.name, key, build, database=cfg.getini("pristine_database") or None,
                                key_files=len(files), allow_stale=allow_stale)
        except PristineError as e:
            if e.code == UNKEYED_BUILD:
                raise pytest.UsageError(_UNKEYED) from e
            raise
        ensure_pool(self.client, self.name, t["hash"], self.pool_size())
        cfg.hook.pytest_pristine_ready(config=cfg, hash=t["hash"])
        self.hash = t["hash"]
        return self.hash

    def setup(self, lease: Lease):
        """Runs the pytest_pristine_setup hooks on a new lease; a failing
        one releases it and fails the test."""
        try:
            self.config.hook.pytest_pristine_setup(lease=lease, config=self.config)
        except BaseException:
            self.client.release(lease.id)
            raise

    def lease(self, holder: str) -> Lease:
        return self.client.lease(self.name, holder=holder, wait=self.wait, pid=os.getpid())

    def test_lease(self, holder: str) -> Lease:
        """A test's lease: the one taken ahead while the previous test ran
        (and the next one started), or, with prefetch off, one now."""
        if self.prefetcher.ahead:
            return self.prefetcher.lease()
        return self.lease(holder)

    def done(self, lease: Lease, failed: bool, background: bool = False) -> str:
        """Release a lease (background: off this thread, the session's end
        waits for it), or keep it when its test failed and keeping was
        asked for; returns what to tell the user, if anything."""
        if failed and self.keep_failed:
            self.client.keep(lease.id)
            return (f"pristine: kept the database of this failed test for debugging:\n"
                    f"  {lease.mysql_command()}\n  URL {lease.url}\n"
                    f"  release it with: pristine release {lease.id}")
        if background:
            self.prefetcher.release(lease.id, unchanged=self.unchanged)
        else:
            self.client.release(lease.id, unchanged=self.unchanged)
        return ""


def _setup(config) -> PristineSetup:
    s = getattr(config, "_pristine", None)
    if s is None:
        s = config._pristine = PristineSetup(config)
    return s


@pytest.fixture(scope="session")
def pristine_template(pytestconfig) -> str:
    """The hash of the session's template, built once across processes, with
    a pool of it up."""
    s = _setup(pytestconfig)
    try:
        return s.ensure()
    except PristineError as e:
        pytest.fail(f"pristine: {e}", pytrace=False)


@pytest.fixture
def pristine_db(request, pristine_template) -> Lease:
    """A pristine database for one test, released when it ends (kept, with
    its DSN printed, when it failed and --pristine-keep-failed is given)."""
    s = _setup(request.config)
    try:
        lease = s.test_lease(request.node.nodeid)
    except PristineError as e:
        pytest.fail(f"pristine: lease a database of {s.name}: {e}", pytrace=False)
    s.setup(lease)
    request.node._pristine_lease = lease
    yield lease
    failed = getattr(request.node, "_pristine_failed", False)
    msg = s.done(lease, failed, background=True)
    if msg:
        request.node._pristine_kept = msg


@pytest.fixture(scope="session")
def pristine_worker_db(request, pristine_template) -> Lease:
    """One pristine database for this worker process (each pytest-xdist
    worker has its own), released when the session ends; kept when a test
    failed and --pristine-keep-failed is given."""
    s = _setup(request.config)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    try:
        lease = s.lease(f"pytest worker {worker}")
    except PristineError as e:
        pytest.fail(f"pristine: lease a database of {s.name}: {e}", pytrace=False)
    s.setup(lease)
    yield lease
    msg = s.done(lease, request.session.testsfailed > 0)
    if msg:
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(msg)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Waits for the releases still in flight and releases the lease taken
    ahead that no test used (also on Ctrl-C: pytest runs this then too)."""
    s = getattr(session.config, "_pristine", None)
    if s is None:
        return
    errors = s.prefetcher.close()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for e in errors:
        if reporter is not None:
            reporter.write_line(f"pristine: {e}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        item._pristine_failed = True
    if rep.when == "teardown":
        msg = getattr(item, "_pristine_kept", "")
        if msg:
            rep.sections.append(("pristine", msg))


def pytest_terminal_summary(terminalreporter):
    kept = [(r.nodeid, text) for reps in terminalreporter.stats.values() for r in reps
            if hasattr(r, "sections") for (title, text) in r.sections if title == "pristine"]
    if kept:
        terminalreporter.section("pristine: kept databases")
        for nodeid, text in kept:
            terminalreporter.write_line(f"{nodeid}\n{text}")

