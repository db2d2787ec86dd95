"""The Django integration against testdata/django-parity (two aliases on
one server, a cross-database foreign key, an app whose models are a
package): the content key sees every schema input, and a real run through
a daemon rebuilds on a change and reuses on a non-change.

The server's version and options are in the daemon's hash of a template,
not in the client's key (internal/catalog key_test.go, "server" and
"profile")."""

import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("django")

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SUITE = os.path.join(REPO, "testdata", "django-parity")

KEY_SCRIPT = """
import django
django.setup()
from pristine_client.django.creation import group_of, schema_inputs
from pristine_client.key import content_key
g = group_of("default")
print(",".join(g.aliases), content_key(*schema_inputs(g.aliases)))
"""


@pytest.fixture
def project(tmp_path):
    dst = tmp_path / "suite"
    shutil.copytree(SUITE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def key(project):
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="paritysite.settings", PARITY_MODE="pristine",
               PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", KEY_SCRIPT], cwd=project, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0] == "default,other", "the two aliases of one server form one group"
    return out[1]


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


# (what changes, how, whether the key must change)
CASES = [
    ("a new migration", lambda p: (p / "catalog/migrations/0003_more.py").write_text(
        "from django.db import migrations\n\nclass Migration(migrations.Migration):\n"
        "    dependencies = [('catalog', '0002_seed')]\n    operations = []\n"), True),
    ("an edited migration", lambda p: append(p / "ledger/migrations/0002_seed.py", "\n# changed\n"), True),
    ("a module of a models package (app without migrations)",
     lambda p: append(p / "notes/models/base.py", "\n# changed\n"), True),
    ("a new module in a models package", lambda p: (p / "notes/models/extra.py").write_text("X = 1\n"), True),
    ("the router's module", lambda p: append(p / "paritysite/routers.py", "\n# changed\n"), True),
    ("DEFAULT_AUTO_FIELD", lambda p: append(p / "paritysite/settings.py",
                                            '\nDEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"\n'), True),
    ("MIGRATION_MODULES", lambda p: append(p / "paritysite/settings.py",
                                           '\nMIGRATION_MODULES = {"notes": None}\n'), True),
    ("a database OPTIONS entry", lambda p: append(p / "paritysite/settings.py",
                                                  '\nDATABASES["other"]["OPTIONS"] = {"charset": "utf8mb4"}\n'), True),
    ("a database TEST entry", lambda p: append(p / "paritysite/settings.py",
                                               '\nDATABASES["default"]["TEST"]["COLLATION"] = "utf8mb4_bin"\n'), True),
    ("TEST MIGRATE False", lambda p: append(p / "paritysite/settings.py",
                                            '\nDATABASES["default"]["TEST"]["MIGRATE"] = False\n'), True),
    ("an installed app", lambda p: append(p / "paritysite/settings.py",
                                          '\nINSTALLED_APPS = INSTALLED_APPS + ["django.contrib.sessions"]\n'), True),
    # Non-changes: nothing that shapes the schema.
    ("nothing", lambda p: None, False),
    ("a migration's mtime", lambda p: os.utime(p / "catalog/migrations/0001_initial.py", (1, 1)), False),
    ("compiled files", lambda p: (p / "notes/models/__pycache__").mkdir() or
     (p / "notes/models/__pycache__/base.cpython-311.pyc").write_bytes(b"x"), False),
    ("a test module", lambda p: append(p / "catalog/tests/test_setup.py", "\n# changed\n"), False),
    ("a setting that does not shape the schema", lambda p: append(p / "paritysite/settings.py",
                                                                  '\nSECRET_KEY = "other"\nDEBUG = True\n'), False),
    ("a run option (WAIT, POOL_SIZE)", lambda p: append(
        p / "paritysite/settings.py", '\nDATABASES["default"]["TEST"]["PRISTINE"].update(WAIT=5, POOL_SIZE=7)\n'),
     False),
]


@pytest.mark.parametrize("what,change,changes", CASES, ids=[c[0] for c in CASES])
def test_key_sees_every_schema_input(project, what, change, changes):
    before = key(project)
    change(project)
    after = key(project)
    if changes:
        assert after != before, f"{what} changed but the key did not: a stale template would be served"
    else:
        assert after == before, f"{what} changed the key: a needless rebuild"


def manage(project, daemon, *args):
    env = dict(os.environ, PARITY_MODE="pristine", PRISTINE_ROOT=daemon.root, PARITY_TEMPLATE="django-keytest",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PRISTINE_URL", None)
    return subprocess.run([sys.executable, "manage.py", "test", "--noinput", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


def test_a_change_rebuilds_a_non_change_reuses(project, daemon):
    label = "catalog.tests.test_setup.ModelsPackageTests"
    first = manage(project, daemon, label)
    assert first.returncode == 0, first.stderr
    assert "building template" in first.stderr
    again = manage(project, daemon, label)
    assert again.returncode == 0, again.stderr
    assert "building template" not in again.stderr, "nothing changed, yet the template was built again"
    # A new column in a module of the models package of an app without
    # migrations: served from the stale template, the insert would fail
    # with 1054 Unknown column.
    base = project / "notes/models/base.py"
    base.write_text(base.read_text().replace("text = models.CharField(max_length=80)",
                                             "text = models.CharField(max_length=80)\n"
                                             "    extra = models.CharField(max_length=5, default='x')"))
    changed = manage(project, daemon, label)
    assert changed.returncode == 0, changed.stderr
    assert "building template" in changed.stderr


def test_aliases_on_different_servers_naming_one_template(project):
    append(project / "paritysite/settings.py",
           '\nDATABASES["other"]["HOST"] = "127.0.0.2"\n'
           'DATABASES["other"]["TEST"] = {"PRISTINE": {"TEMPLATE": "django-parity"}}\n')
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="paritysite.settings", PARITY_MODE="pristine")
    p = subprocess.run([sys.executable, "-c", "import django; django.setup()\n"
                        "from pristine_client.django.creation import group_of\ngroup_of('default')"],
                       cwd=project, env=env, capture_output=True, text=True)
    assert p.returncode != 0
    assert "are on different servers" in p.stderr and "give each server's aliases a TEMPLATE" in p.stderr


def test_no_daemon_error_has_no_resource_warning(tmp_path):
    p = subprocess.run([sys.executable, "-W", "error::ResourceWarning", "-X", "dev", "-c",
                        "import gc\nfrom pristine_client import Client, NoDaemonError\n"
                        f"c = Client(socket={str(tmp_path / 'none.sock')!r})\n"
                        "try:\n    c.health()\nexcept NoDaemonError as e:\n    print(e)\ngc.collect()\n"],
                       capture_output=True, text=True)
    assert "no pristine daemon is running" in p.stdout
    assert "ResourceWarning" not in p.stderr, p.stderr


def test_aliases_of_one_server_naming_one_template_share_it(project):
    append(project / "paritysite/settings.py",
           '\nDATABASES["other"]["TEST"] = {"PRISTINE": {"TEMPLATE": "django-parity"}}\n')
    key(project)  # asserts the group default,other
