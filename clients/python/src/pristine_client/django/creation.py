"""Test databases from a pristine pool, in place of Django's CREATE
DATABASE, migrate and mysqldump | mysql clones.

Three rules (docs/clients.md, "Python: Django"):

* Aliases that share a server share a slot. The aliases whose settings
  name the same HOST and PORT form a group: one template holds all their
  test databases, one lease per process serves them all, so cross-database
  foreign keys and joins work as on the stock path. Aliases on other
  servers form groups of their own.
* Parity by construction. The first run builds the template by running
  Django's own create_test_db (migrate included) for every alias of the
  group against the template server. Every run, the building one
  included, then runs Django's own create_test_db again against its lease,
  with two parts replaced: CREATE DATABASE (the lease has the database) and
  migrate, of which only its process-side part runs (prepare_database and
  the pre_migrate and post_migrate signals, with plan=[] as a migrate on an
  up-to-date database sends them). Everything else Django does there runs
  as Django wrote it: serialization, createcachetable, the backend's hooks
  (mark_expected_failures_and_skips), whatever a later Django adds.
* Direct calls behave as Django documents: create_test_db and
  destroy_test_db called from anywhere but Django's setup_databases and
  teardown_databases (a test of test tooling) are Django's own, migrate
  included.
"""

import importlib
import json
import os
import re
import sys
from typing import Dict, List, Optional

import django
from django.apps import apps
from django.conf import settings
from django.db import connections
from django.db.backends.mysql.creation import DatabaseCreation as MySQLCreation

from ..client import UNKEYED_BUILD, Client, Lease, PristineError
from ..ensure import ensure_pool, ensure_template
from ..key import content_key

# The runner (optional) tells the creation how many processes run and
# whether failed runs keep their databases.
run_state = {"parallel": None, "keep": False}

# TEST["PRISTINE"] entries that only steer this run (not the schema): they
# stay out of the content key.
RUN_OPTIONS = ("WAIT", "POOL_SIZE", "BUILD_WAIT", "ALLOW_STALE")

# The groups of this process, by server (see _Group).
_groups: Dict[tuple, "_Group"] = {}


def _processes_from_argv(argv):
    """The --parallel of `manage.py test`, when the runner is not ours."""
    for i, a in enumerate(argv):
        v = None
        if a == "--parallel":
            v = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else "auto"
        elif a.startswith("--parallel="):
            v = a.split("=", 1)[1]
        if v is not None:
            if v == "auto":
                return int(os.environ.get("DJANGO_TEST_PROCESSES") or os.cpu_count() or 1)
            return int(v)
    return 1


def _called_from(name: str) -> bool:
    """Whether Django's django.test.utils.<name> is on the call stack: the
    runner's (or pytest-django's) setup or teardown of test databases."""
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == name and f.f_globals.get("__name__") == "django.test.utils":
            return True
        f = f.f_back
    return False


def server_of(settings_dict) -> tuple:
    """The server an alias's settings name: aliases with the same one share
    a slot. A unix socket in HOST counts as a server of its own."""
    return (settings_dict.get("HOST") or "", str(settings_dict.get("PORT") or ""))


def _opts(settings_dict) -> dict:
    return (settings_dict.get("TEST") or {}).get("PRISTINE") or {}


def _is_pristine(conn) -> bool:
    return isinstance(conn.creation, DatabaseCreation)


def _is_mirror(conn) -> bool:
    return bool((conn.settings_dict.get("TEST") or {}).get("MIRROR"))


def _package_files(module) -> List[str]:
    """The .py files of a module: every module of a package (recursively),
    or the one file of a plain module."""
    path = getattr(module, "__file__", None)
    if not path:
        return []
    if os.path.basename(path) != "__init__.py":
        return [path]
    out = []
    for d, dirs, files in os.walk(os.path.dirname(path)):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    return out


def schema_inputs(aliases) -> tuple:
    """(files, extra) of the content key of a group of aliases: what shapes
    their test databases. Files: every module of the migrations package of
    each app that has one, and of the models module or package of each app
    that does not (or of every app when an alias has TEST MIGRATE False),
    the modules of DATABASE_ROUTERS, and FILES. Extra: Django's version,
    the settings that shape the schema (DEFAULT_AUTO_FIELD and each app's,
    MIGRATION_MODULES, INSTALLED_APPS, DATABASE_ROUTERS, each alias's test
    database name, OPTIONS and TEST entries). The server's version and
    options are in the daemon's own hash of the template."""
    from django.db.migrations.loader import MigrationLoader

    files: List[str] = []
    extra = ["django " + django.get_version(),
             "DEFAULT_AUTO_FIELD " + str(getattr(settings, "DEFAULT_AUTO_FIELD", "")),
             "MIGRATION_MODULES " + json.dumps(getattr(settings, "MIGRATION_MODULES", {}) or {},
                                               sort_keys=True, default=str),
             "DATABASE_ROUTERS " + json.dumps([r if isinstance(r, str) else type(r).__module__ + "." +
                                               type(r).__qualname__ for r in settings.DATABASE_ROUTERS])]
    no_migrate = any((connections[a].settings_dict.get("TEST") or {}).get("MIGRATE") is False for a in aliases)
    for app in apps.get_app_configs():
        extra.append(f"app {app.label} {app.name} auto_field {getattr(app, 'default_auto_field', None)}")
        mods = []
        module, _ = MigrationLoader.migrations_module(app.label)
        if module and not no_migrate:
            try:
                mods.append(__import__(module, fromlist=["__name__"]))
            except ImportError:
                pass
        if not mods and app.models_module is not None:
            mods.append(app.models_module)
        for m in mods:
            fs = _package_files(m)
            root = os.path.dirname(m.__file__) if fs else ""
            extra.append(f"app {app.label} module {m.__name__}: " +
                         " ".join(os.path.relpath(f, root) for f in fs))
            files += fs
    for r in settings.DATABASE_ROUTERS:
        try:
            mod = importlib.import_module(r.rsplit(".", 1)[0] if isinstance(r, str) else type(r).__module__)
        except ImportError:
            continue  # Django names the broken router when it loads it
        if getattr(mod, "__file__", None):
            files.append(mod.__file__)
    base = str(getattr(settings, "BASE_DIR", os.getcwd()))
    for a in aliases:
        sd = connections[a].settings_dict
        test = {k: v for k, v in (sd.get("TEST") or {}).items() if k != "PRISTINE"}
        pr = {k: v for k, v in _opts(sd).items() if k not in RUN_OPTIONS}
        extra.append(f"alias {a} database {connections[a].creation._get_test_db_name()} "
                     f"options {json.dumps(sd.get('OPTIONS') or {}, sort_keys=True, default=str)} "
                     f"test {json.dumps(test, sort_keys=True, default=str)} "
                     f"pristine {json.dumps(pr, sort_keys=True, default=str)}")
        for f in _opts(sd).get("FILES", []):
            files.append(f if os.path.isabs(f) else os.path.join(base, f))
    return files, extra


class _Group:
    """The aliases of one server: one template, one lease per process."""

    def __init__(self, server, aliases):
        self.server = server
        self.aliases = aliases  # creation order: default first, then settings order
        self.names = {a: connections[a].creation._get_test_db_name() for a in aliases}
        self.original = {a: {k: connections[a].settings_dict.get(k) for k in ("HOST", "PORT", "USER", "PASSWORD",
                                                                             "NAME")}
                         for a in aliases}
        self.client: Optional[Client] = None
        self.template = ""
        self.main: Optional[Lease] = None
        self.built = False  # this process built the template (migrate and its signals ran here)
        self.main_users = set()
        self.clones: Dict[str, Lease] = {}
        self.clone_users: Dict[str, set] = {}

    def template_name(self):
        for a in self.aliases:
            t = _opts(connections[a].settings_dict).get("TEMPLATE")
            if t:
                return re.sub(r"[^A-Za-z0-9_.-]", "_", t)[:64]
        return re.sub(r"[^A-Za-z0-9_.-]", "_", "django-" + "+".join(self.names[a] for a in self.aliases))[:64]

    def opt(self, name, default):
        for a in self.aliases:
            v = _opts(connections[a].settings_dict).get(name)
            if v is not None:
                return v
        return default


def group_of(alias) -> _Group:
    """The group of alias, forming this process's groups on first use."""
    for g in _groups.values():
        if alias in g.aliases:
            return g
    by_server: Dict[tuple, List[str]] = {}
    seen_names = {}
    for a in connections:
        c = connections[a]
        if not _is_pristine(c) or _is_mirror(c) or any(a in g.aliases for g in _groups.values()):
            continue
        server = server_of(c.settings_dict)
        name = c.creation._get_test_db_name()
        if (server, name) in seen_names:
            continue  # the same test database: Django makes this alias a mirror of the first
        seen_names[(server, name)] = a
        by_server.setdefault(server, []).append(a)
    for server, aliases in by_server.items():
        aliases.sort(key=lambda a: (a != "default", list(connections).index(a) if a in connections else 0))
        _groups[server] = _Group(server, aliases)
    names = {}
    for g in _groups.values():
        t = g.template_name()
        if t in names and names[t] is not g:
            other = names[t]
            raise PristineError(f"aliases {', '.join(other.aliases)} and {', '.join(g.aliases)} are on different "
                                f"servers ({other.server} and {g.server}) but name one template {t!r}: give each "
                                "server's aliases a TEMPLATE of their own (aliases of one server share one)")
        names[t] = g
    for g in _groups.values():
        if alias in g.aliases:
            return g
    raise PristineError(f"alias {alias}: not a pristine alias")


def lease_settings(settings_dict, lease: Lease, name: str) -> dict:
    """An alias's settings pointed at database name of lease: its socket
    when it is here, else its host and port."""
    sock = lease.socket if lease.socket and os.path.exists(lease.socket) and not lease.ca else ""
    out = {**settings_dict, "HOST": sock or lease.host, "PORT": str(lease.port),
           "USER": lease.user, "PASSWORD": lease.password, "NAME": name}
    if lease.ca:
        # A slot over the network: TLS verified against the lease's CA
        # (PyMySQL also checks the host name; mysqlclient reads "ca").
        out["OPTIONS"] = {**out.get("OPTIONS", {}), "ssl": {"ca": lease.ca_file(), "check_hostname": True}}
    return out


def _clone_env(alias):
    return "PRISTINE_DJANGO_CLONES_" + alias


class DatabaseCreation(MySQLCreation):
    def _opts(self):
        return _opts(self.connection.settings_dict)

    def _client(self):
        return Client.from_env()

    def _template_name(self, test_name):
        return group_of(self.connection.alias).template_name()

    def _key(self, test_name=None):
        """A hash of what defines the group's test databases (schema_inputs)."""
        return self._key_and_files()[0]

    def _key_and_files(self):
        """The key and how many files it covers: the migrations Django's
        migrate runs (detected), the models modules and FILES."""
        files, extra = schema_inputs(group_of(self.connection.alias).aliases)
        return content_key(files, extra), len(files)

    def _point_at(self, conn, name=None, alias=None):
        """Point an alias's connection at a server pristine handed out."""
        c = connections[alias] if alias else self.connection
        sock = conn.get("socket") or ""
        host = sock if sock and os.path.exists(sock) else conn.get("host") or "127.0.0.1"
        sd = c.settings_dict
        c.close()
        sd.update({"HOST": host, "PORT": str(conn.get("port") or ""), "USER": conn["user"],
                   "PASSWORD": conn["password"]})
        if name:
            sd["NAME"] = name
            settings.DATABASES[c.alias]["NAME"] = name

    def _fail(self, what, err):
        self.log(f"pristine: {what}: {err}")
        sys.exit(2)

    def _wait(self):
        return float(self._opts().get("WAIT", 120))

    # --- setup ---

    def create_test_db(self, verbosity=1, autoclobber=False, serialize=True, keepdb=False):
        if not _called_from("setup_databases") or getattr(self, "_pristine_direct", False):
            # A direct call (a test of test tooling): Django's own, as
            # documented: CREATE DATABASE and migrate on the server this
            # connection points at.
            return super().create_test_db(verbosity, autoclobber, serialize, keepdb)
        alias = self.connection.alias
        try:
            g = group_of(alias)
        except PristineError as e:
            self._fail(f"test database for alias {alias}", e)
        if g.main is None:
            self._lease_group(g, verbosity)
        g.main_users.add(alias)
        # NAME stays the alias's own: Django's create_test_db derives the
        # test database's name from it, and sets it.
        self._point_at(g.main.__dict__)
        return self._create_on_lease(verbosity, autoclobber, serialize, keepdb, g.built)

    def _lease_group(self, g, verbosity):
        g.client = self._client()
        g.template = g.template_name()
        if verbosity >= 1:
            self.log(f"Leasing a pristine test database for alias{'es' if len(g.aliases) > 1 else ''} "
                     f"{', '.join(repr(a) for a in g.aliases)} (template {g.template})...")
        try:
            key, nfiles = self._key_and_files()
            try:
                t = ensure_template(g.client, g.template, key, lambda conn: self._build(g, conn, verbosity),
                                    database=g.names[g.aliases[0]], wait=float(g.opt("BUILD_WAIT", 1800)),
                                    key_files=nfiles, allow_stale=bool(g.opt("ALLOW_STALE", False)))
            except PristineError as e:
                if e.code == UNKEYED_BUILD:
                    raise PristineError(f"template {g.template}: no migrations, models module or FILES key it, so "
                                        "after the schema changes every run would still get the old template: "
                                        "name the files its build reads in TEST[\"PRISTINE\"][\"FILES\"], or set "
                                        "TEST[\"PRISTINE\"][\"ALLOW_STALE\"] = True to accept that risk", 400) from e
                raise
            processes = run_state["parallel"] or _processes_from_argv(sys.argv)
            size = int(g.opt("POOL_SIZE", 0) or os.environ.get("PRISTINE_POOL_SIZE") or processes + 1)
            ensure_pool(g.client, g.template, t["hash"], size)
            g.main = g.client.lease(g.template, holder="django main process", wait=self._wait(), pid=os.getpid())
        except PristineError as e:
            self._fail(f"test database for alias{'es' if len(g.aliases) > 1 else ''} {', '.join(g.aliases)}", e)

    def _build(self, g, conn, verbosity):
        """The template: Django's own create_test_db (CREATE DATABASE if
        missing, migrate, createcachetable) for every alias of the group,
        in order, against the template server."""
        if verbosity >= 1:
            self.log(f"pristine: building template {g.template} (migrate runs once)...")
        try:
            for a in g.aliases:
                # Each alias keeps its test database's name until all are
                # built, as on the stock path: a migration of one may name
                # another's database.
                c = connections[a]
                self._point_at(conn, alias=a)
                c.creation._pristine_direct = True
                try:
                    MySQLCreation.create_test_db(c.creation, max(verbosity - 1, 0), True, False, True)
                finally:
                    c.creation._pristine_direct = False
            g.built = True
        finally:
            for a in g.aliases:
                connections[a].close()
                connections[a].settings_dict.update(g.original[a])
                settings.DATABASES[a]["NAME"] = g.original[a]["NAME"]

    def _create_on_lease(self, verbosity, autoclobber, serialize, keepdb, built):
        """Django's own create_test_db against the lease, with CREATE
        DATABASE skipped (the lease has it) and migrate reduced to its
        process-side part (_migrate_on_lease). When this process built
        the template (built), migrate ran here already, its signals
        included, against the data the lease holds a copy of: it does not
        run twice, and the first run costs what a stock run does."""
        from django.core import management

        real = management.call_command
        creation = self

        def call_command(command_name, *args, **options):
            if command_name == "migrate" and options.get("database") == creation.connection.alias:
                return None if built else creation._migrate_on_lease(options)
            return real(command_name, *args, **options)

        self._create_test_db = lambda *a, **k: self._get_test_db_name()
        management.call_command = call_command
        try:
            # keepdb: Django says "Using existing test database", which the
            # lease is; create_test_db uses it for nothing else.
            return super().create_test_db(verbosity, autoclobber, serialize, True)
        finally:
            management.call_command = real
            del self._create_test_db

    def _migrate_on_lease(self, options):
        """What `migrate` does on a database that is up to date, apart from
        reading its migrations: the backend's prepare_database and the
        pre_migrate and post_migrate signals (plan [], the app registry, as
        Django's flush sends post_migrate), so handlers' process-side work
        runs in every run, not only in the one that built the template."""
        from django.core.management.sql import emit_post_migrate_signal, emit_pre_migrate_signal

        verbosity = options.get("verbosity", 1)
        self.connection.prepare_database()
        kw = {"apps": apps, "plan": []}
        emit_pre_migrate_signal(verbosity, False, self.connection.alias, **kw)
        emit_post_migrate_signal(verbosity, False, self.connection.alias, **kw)

    def _clone_test_db(self, suffix, verbosity, keepdb=False):
        """A worker's databases: one more lease per group, not mysqldump copies."""
        if getattr(self, "_pristine_direct", False) or not _called_from("setup_databases"):
            return super()._clone_test_db(suffix, verbosity, keepdb)
        alias = self.connection.alias
        g = group_of(alias)
        if g.main is None:
            return super()._clone_test_db(suffix, verbosity, keepdb)
        if suffix not in g.clones:
            try:
                g.clones[suffix] = g.client.lease(g.template, holder=f"django worker {suffix}", wait=self._wait(),
                                                  pid=os.getpid())
            except PristineError as e:
                size_hint = ("the pool was grown to this run's processes + 1 (or POOL_SIZE) at setup, so another run "
                             f"may hold its slots: see `pristine pool status --template {g.template}`")
                self._fail(f"lease a database for worker {suffix}", f"{e} ({size_hint})")
        g.clone_users.setdefault(suffix, set()).add(alias)
        # Workers started with spawn read their leases from the environment.
        for a in g.aliases:
            os.environ[_clone_env(a)] = json.dumps(
                {k: {**v.__dict__, "database": g.names[a]} for k, v in g.clones.items()})

    def _clone(self, suffix):
        alias = self.connection.alias
        for g in _groups.values():
            if alias in g.aliases and suffix in g.clones:
                return Lease(**{**g.clones[suffix].__dict__, "database": g.names[alias]})
        raw = os.environ.get(_clone_env(alias))
        if raw:
            d = json.loads(raw).get(suffix)
            if d:
                return Lease(**d)
        return None

    def get_test_db_clone_settings(self, suffix):
        lease = self._clone(suffix)
        if lease is None:
            return super().get_test_db_clone_settings(suffix)
        return lease_settings(self.connection.settings_dict, lease, lease.database)

    # --- teardown ---

    def destroy_test_db(self, old_database_name=None, verbosity=1, keepdb=False, suffix=None):
        alias = self.connection.alias
        g = next((g for g in _groups.values() if alias in g.aliases), None)
        if g is None or g.main is None or getattr(self, "_pristine_direct", False) or \
                not _called_from("teardown_databases"):
            return super().destroy_test_db(old_database_name, verbosity, keepdb, suffix)
        self.connection.close()
        if suffix is not None:
            users = g.clone_users.get(suffix, set())
            users.discard(alias)
            if not users and suffix in g.clones:
                self._done(g.client, g.clones.pop(suffix), verbosity)
            return
        g.main_users.discard(alias)
        self.connection.settings_dict.update({k: v for k, v in g.original[alias].items() if k != "NAME"})
        if old_database_name is not None:
            settings.DATABASES[alias]["NAME"] = old_database_name
            self.connection.settings_dict["NAME"] = old_database_name
        if not g.main_users:
            lease, g.main = g.main, None
            self._done(g.client, lease, verbosity)

    def _done(self, client, lease, verbosity):
        try:
            if run_state["keep"]:
                client.keep(lease.id)
                self.log(f"pristine: kept test database {lease.database} for debugging: {lease.mysql_command()}\n"
                         f"  release it with: pristine release {lease.id}")
            else:
                client.release(lease.id)
        except PristineError as e:
            self.log(f"pristine: return lease {lease.id}: {e}")
