"""Settings of the parity suite (scripts/parity-django.sh): the same suite
run the stock way and through pristine must give the same per-test
outcomes.

    PARITY_MODE=stock     Django creates, migrates and clones (mysqldump) on
                          the server of MYSQL_UNIX_PORT, MYSQL_USER, MYSQL_PWD
    PARITY_MODE=pristine  ENGINE pristine_client.django (a subclass of it)
    PARITY_OUTCOMES=FILE  where the runner writes {test id: outcome}

Two aliases on one server (default, other), a router, a cross-database
foreign key, a database cache, a post_migrate handler, an app without
migrations whose models are a package, and a backend whose features skip
and expect to fail tests (Django's mark_expected_failures_and_skips).
"""
import os
from pathlib import Path

import pymysql

pymysql.install_as_MySQLdb()

# Django runs mark_expected_failures_and_skips in create_test_db only then.
os.environ.setdefault("RUNNING_DJANGOS_TEST_SUITE", "true")

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "parity-only"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "catalog",
    "ledger",
    "notes",
]
DATABASE_ROUTERS = ["paritysite.routers.Router"]
CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "parity_cache"}}

MODE = os.environ.get("PARITY_MODE", "stock")
if MODE == "pristine":
    server = {"ENGINE": "paritysite.backends.pristine"}
    TEST_RUNNER = "paritysite.runner.PristineOutcomeRunner"
else:
    server = {
        "ENGINE": "paritysite.backends.stock",
        "HOST": os.environ.get("MYSQL_UNIX_PORT", "/run/mysqld/mysqld.sock"),
        "USER": os.environ.get("MYSQL_USER", "root"),
        "PASSWORD": os.environ.get("MYSQL_PWD", ""),
    }
    TEST_RUNNER = "paritysite.runner.StockOutcomeRunner"
DATABASES = {
    "default": {**server, "NAME": "parity", "TEST": {"NAME": "test_parity"}},
    # No TEST NAME: Django's test_parity_other.
    "other": {**server, "NAME": "parity_other"},
}
if MODE == "pristine":
    DATABASES["default"]["TEST"]["PRISTINE"] = {"TEMPLATE": os.environ.get("PARITY_TEMPLATE", "django-parity")}
