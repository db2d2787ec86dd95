"""Test databases from a pristine pool, in place of Django's CREATE
DATABASE, migrate and mysqldump | mysql clones."""

import json
import os
import re
import sys

import django
from django.apps import apps
from django.conf import settings
from django.db.backends.mysql.creation import DatabaseCreation as MySQLCreation

from ..client import Client, Lease, PristineError
from ..ensure import ensure_pool, ensure_template
from ..key import content_key

# The runner (optional) tells the creation how many processes run and
# whether failed runs keep their databases.
run_state = {"parallel": None, "keep": False}


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


class DatabaseCreation(MySQLCreation):
    def _opts(self):
        return (self.connection.settings_dict.get("TEST") or {}).get("PRISTINE") or {}

    def _client(self):
        return Client.from_env()

    def _template_name(self, test_name):
        name = self._opts().get("TEMPLATE") or "django-" + test_name
        return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]

    def _key(self, test_name):
        """A hash of what defines the test database: every installed app's
        migrations (or models, for apps without migrations), the extra FILES,
        Django's version and the database settings that shape the schema."""
        from django.db.migrations.loader import MigrationLoader

        patterns = []
        for app in apps.get_app_configs():
            module, _ = MigrationLoader.migrations_module(app.label)
            path = None
            if module:
                try:
                    mod = __import__(module, fromlist=["__name__"])
                    path = os.path.dirname(mod.__file__) if getattr(mod, "__file__", None) else None
                except ImportError:
                    path = None
            if path:
                patterns.append(os.path.join(path, "*.py"))
            elif app.models_module is not None and getattr(app.models_module, "__file__", None):
                patterns.append(app.models_module.__file__)
        base = str(getattr(settings, "BASE_DIR", os.getcwd()))
        for f in self._opts().get("FILES", []):
            patterns.append(f if os.path.isabs(f) else os.path.join(base, f))
        test = self.connection.settings_dict.get("TEST") or {}
        extra = ["django " + django.get_version(), "database " + test_name,
                 "charset %s collation %s" % (test.get("CHARSET"), test.get("COLLATION")),
                 "migrate %s" % test.get("MIGRATE", True)]
        return content_key(patterns, extra)

    def _point_at(self, conn, name=None):
        """Point this connection at a server pristine handed out."""
        sock = conn.get("socket") or ""
        host = sock if sock and os.path.exists(sock) else conn.get("host") or "127.0.0.1"
        sd = self.connection.settings_dict
        self.connection.close()
        sd.update({"HOST": host, "PORT": str(conn.get("port") or ""), "USER": conn["user"],
                   "PASSWORD": conn["password"]})
        if name:
            sd["NAME"] = name
            settings.DATABASES[self.connection.alias]["NAME"] = name

    def _fail(self, what, err):
        self.log(f"pristine: {what}: {err}")
        sys.exit(2)

    def create_test_db(self, verbosity=1, autoclobber=False, serialize=True, keepdb=False):
        test_name = self._get_test_db_name()
        template = self._template_name(test_name)
        client = self._client()
        self._pristine = {"client": client, "template": template, "clones": {},
                          "original": {k: self.connection.settings_dict.get(k)
                                       for k in ("HOST", "PORT", "USER", "PASSWORD")}}
        if verbosity >= 1:
            self.log(f"Leasing a pristine test database for alias {self._get_database_display_str(verbosity, test_name)}...")

        def build(conn):
            # Django's own creation, migrate included, against the template
            # server; the database exists there already (keepdb).
            self._point_at(conn)
            if verbosity >= 1:
                self.log(f"pristine: building template {template} (migrate runs once)...")
            super(DatabaseCreation, self).create_test_db(max(verbosity - 1, 0), True, False, True)
            self.connection.close()

        try:
            t = ensure_template(client, template, self._key(test_name), build, database=test_name,
                                wait=float(self._opts().get("BUILD_WAIT", 1800)))
            processes = run_state["parallel"] or _processes_from_argv(sys.argv)
            size = int(self._opts().get("POOL_SIZE") or os.environ.get("PRISTINE_POOL_SIZE") or processes + 1)
            ensure_pool(client, template, t["hash"], size)
            lease = client.lease(template, holder="django main process", wait=self._wait(), pid=os.getpid())
        except PristineError as e:
            self._fail(f"test database for alias {self.connection.alias}", e)
        self._pristine["main"] = lease
        self._point_at(lease.__dict__, lease.database)
        if serialize:
            self.connection._test_serialized_contents = self.serialize_db_to_string()
        self.connection.ensure_connection()
        return lease.database

    def _wait(self):
        return float(self._opts().get("WAIT", 120))

    def _clone_test_db(self, suffix, verbosity, keepdb=False):
        """A worker's database: one more lease, not a mysqldump copy."""
        p = self._pristine
        try:
            lease = p["client"].lease(p["template"], holder=f"django worker {suffix}", wait=self._wait(),
                                      pid=os.getpid())
        except PristineError as e:
            size_hint = ("the pool may be smaller than this run's processes + 1: "
                         f"`pristine pool down --template {p['template']}` or set TEST['PRISTINE']['POOL_SIZE']")
            self._fail(f"lease a database for worker {suffix}", f"{e} ({size_hint})")
        p["clones"][suffix] = lease
        # Workers started with spawn read their leases from the environment.
        env = "PRISTINE_DJANGO_CLONES_" + self.connection.alias
        os.environ[env] = json.dumps({k: v.__dict__ for k, v in p["clones"].items()})

    def _clone(self, suffix):
        p = getattr(self, "_pristine", None)
        if p and suffix in p["clones"]:
            return p["clones"][suffix]
        raw = os.environ.get("PRISTINE_DJANGO_CLONES_" + self.connection.alias)
        if raw:
            d = json.loads(raw).get(suffix)
            if d:
                return Lease(**d)
        return None

    def get_test_db_clone_settings(self, suffix):
        lease = self._clone(suffix)
        if lease is None:
            return super().get_test_db_clone_settings(suffix)
        sock = lease.socket if lease.socket and os.path.exists(lease.socket) else ""
        return {**self.connection.settings_dict, "HOST": sock or lease.host, "PORT": str(lease.port),
                "USER": lease.user, "PASSWORD": lease.password, "NAME": lease.database}

    def destroy_test_db(self, old_database_name=None, verbosity=1, keepdb=False, suffix=None):
        p = getattr(self, "_pristine", None)
        if p is None:
            return super().destroy_test_db(old_database_name, verbosity, keepdb, suffix)
        self.connection.close()
        lease = p["clones"].pop(suffix, None) if suffix is not None else p.pop("main", None)
        if lease is not None:
            self._done(p["client"], lease, verbosity)
        if suffix is None:
            self.connection.settings_dict.update(p["original"])
            if old_database_name is not None:
                settings.DATABASES[self.connection.alias]["NAME"] = old_database_name
                self.connection.settings_dict["NAME"] = old_database_name

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
